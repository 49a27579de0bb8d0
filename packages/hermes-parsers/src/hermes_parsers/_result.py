"""``ParseResult``: what a parser returns for one piece of model text."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hermes_parsers._tool_call import ToolCall

__all__ = ["ParseResult"]


@dataclass(frozen=True, slots=True)
class ParseResult:
    """Content, tool calls and reasoning taken out of raw model text.

    Unpacks as ``content, tool_calls = result``; ``reasoning`` is an attribute only.

    ``content`` is the text outside tool-call and reasoning markup, stripped, or ``None``
    when nothing is left. ``tool_calls`` is ``None`` when there are no calls, never ``[]``.
    """

    content: str | None
    tool_calls: list[ToolCall] | None
    reasoning: str | None = None

    @classmethod
    def _content_only(cls, content: str | None) -> ParseResult:
        """``ParseResult(content, None)``, built without the frozen ``__init__``'s
        per-field ``object.__setattr__`` calls (what ``parse`` returns for plain text)."""
        result = _new(cls)
        _SET_CONTENT(result, content)
        _SET_CALLS(result, None)
        _SET_REASONING(result, None)
        return result

    @classmethod
    def _quick(cls, content: str | None, tool_calls: list[ToolCall] | None) -> ParseResult:
        """``ParseResult(content, tool_calls)``, built as ``_content_only`` is."""
        result = _new(cls)
        _SET_CONTENT(result, content)
        _SET_CALLS(result, tool_calls)
        _SET_REASONING(result, None)
        return result

    def __iter__(self) -> Iterator[Any]:
        yield self.content
        yield self.tool_calls

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> Any:
        return (self.content, self.tool_calls)[index]

    def to_message(self) -> dict[str, Any]:
        """Return an OpenAI assistant message (``reasoning_content`` only if there is reasoning)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.reasoning is not None:
            message["reasoning_content"] = self.reasoning
        return message


_new = object.__new__
_SET_CONTENT: Callable[[Any, Any], None] = ParseResult.__dict__["content"].__set__
_SET_CALLS: Callable[[Any, Any], None] = ParseResult.__dict__["tool_calls"].__set__
_SET_REASONING: Callable[[Any, Any], None] = ParseResult.__dict__["reasoning"].__set__
