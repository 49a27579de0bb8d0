"""``ParsedRequest``: a request body read by its dialect, before a model answers it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes_loop.server._responders import ModelRequest
from hermes_parsers import ToolCallParser

__all__ = ["ParsedRequest"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedRequest:
    """What every dialect reads from a request: enough to choose and count the turn.

    Attributes:
        endpoint: ``"chat"``, ``"responses"`` or ``"generate"``.
        body: the decoded JSON body.
        model: the ``model`` field as sent (``None`` when absent).
        turn_index: the number of assistant turns the conversation already holds.
        conversation: a key naming the conversation (fault attempts are counted per key).
        messages, tools: the conversation, for chat and Responses requests.
        prompt_text, prompt_token_ids: the prompt, for ``/generate`` requests.
    """

    endpoint: str
    body: Mapping[str, Any]
    model: object
    turn_index: int
    conversation: str
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    prompt_text: str | None = None
    prompt_token_ids: list[int] | None = None

    def for_model(self, model: str, parser: ToolCallParser) -> ModelRequest:
        """The request as the responder of ``model`` sees it."""
        return ModelRequest(
            endpoint=self.endpoint,
            model=model,
            turn_index=self.turn_index,
            body=self.body,
            parser=parser,
            messages=self.messages,
            tools=self.tools,
            prompt_text=self.prompt_text,
            prompt_token_ids=self.prompt_token_ids,
        )
