"""The tool-call value types, in the shape of OpenAI's chat-completions API."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hermes_parsers._arguments import _ENCODE, encode_arguments, encode_object, holds_long_string
from hermes_parsers._errors import ArgumentsError, ToolCallError

__all__ = ["UNWRITTEN_SHORT", "FunctionCall", "ToolCall"]


class _Unwritten:
    """The type of ``UNWRITTEN_SHORT``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNWRITTEN_SHORT"


#: What a parser that builds a ``FunctionCall`` from a decoded value stores as its text
#: when the value came from JSON text shorter than ``_LONG_STRING`` characters, so that
#: no string in it is long enough for ``encode_object``: ``arguments`` then goes straight
#: to the C encoder, without looking through the value (``None``: it looks).
UNWRITTEN_SHORT = _Unwritten()


class FunctionCall:
    """The function half of a tool call: a name and its arguments as a JSON object string.

    Immutable. A parser builds it from the decoded arguments and writes the canonical
    JSON text (``json.dumps`` with non-ASCII kept) the first time ``arguments`` is read,
    so code that only needs ``parsed_arguments()`` never pays for encoding.
    """

    __slots__ = ("_text", "_value", "name")

    name: str
    #: The arguments' text; until it is written, ``None`` or ``UNWRITTEN_SHORT``.
    _text: str | _Unwritten | None
    _value: dict[str, Any] | None

    def __init__(self, name: str, arguments: str) -> None:
        _SET_NAME(self, name)
        _SET_TEXT(self, arguments)
        _SET_VALUE(self, None)

    @classmethod
    def from_value(cls, name: str, value: dict[str, Any]) -> FunctionCall:
        """A call whose arguments are the already-decoded JSON object ``value``.

        ``value`` must hold only JSON types (as ``json.loads`` returns); it is not copied,
        so do not change it afterwards.
        """
        call = _new(cls)
        _SET_NAME(call, name)
        _SET_TEXT(call, None)
        _SET_VALUE(call, value)
        return call

    @property
    def arguments(self) -> str:
        """The arguments as a JSON object string."""
        text = self._text
        if type(text) is str:
            return text
        value = self._value or {}
        if _ENCODE is not None and type(value) is dict:
            try:  # encode_arguments(value), without its frame
                if text is None and holds_long_string(value):
                    written = encode_object(value)
                else:  # UNWRITTEN_SHORT: no string in it is long enough to matter
                    written = "".join(_ENCODE(value, 0))
            except (TypeError, ValueError, RecursionError):
                written = encode_arguments(value)  # raises, as the encoder did
        else:
            written = encode_arguments(value)
        _SET_TEXT(self, written)
        return written

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"FunctionCall is immutable (cannot set {name!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FunctionCall):
            return NotImplemented
        return self.name == other.name and self.arguments == other.arguments

    def __hash__(self) -> int:
        return hash((self.name, self.arguments))

    def __repr__(self) -> str:
        return f"FunctionCall(name={self.name!r}, arguments={self.arguments!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FunctionCall, (self.name, self.arguments))

    def to_dict(self) -> dict[str, str]:
        """Return ``{"name": ..., "arguments": ...}`` as OpenAI sends it."""
        return {"name": self.name, "arguments": self.arguments}

    def parsed_arguments(self) -> dict[str, Any]:
        """Return the arguments decoded into a new dict.

        Raises:
            ArgumentsError: (a ValueError) if ``arguments`` is not a JSON object (only
                possible for a ``FunctionCall`` built by hand; parsers always produce
                objects).
        """
        if self._value is not None:
            return copy.deepcopy(self._value)
        try:
            value = json.loads(self.arguments)
        except ValueError as exc:
            raise ArgumentsError(
                f"arguments of {self.name!r} are not valid JSON ({exc})", problem="invalid_json"
            ) from None
        if not isinstance(value, dict):
            raise ArgumentsError(
                f"arguments of {self.name!r} are not a JSON object: {self.arguments!r}",
                problem="not_object",
            )
        return value


# Slot setters: writing through the member descriptors skips the immutability guard in
# __setattr__ and is several times faster than object.__setattr__ (parsers make many calls).
_new = object.__new__
_SET_NAME: Callable[[Any, Any], None] = FunctionCall.__dict__["name"].__set__
_SET_TEXT: Callable[[Any, Any], None] = FunctionCall.__dict__["_text"].__set__
_SET_VALUE: Callable[[Any, Any], None] = FunctionCall.__dict__["_value"].__set__


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call: ``.id``, ``.type``, ``.function.name``, ``.function.arguments``."""

    id: str
    function: FunctionCall
    type: Literal["function"] = "function"

    def to_dict(self) -> dict[str, Any]:
        """Return the OpenAI ``tool_calls`` entry for this call."""
        return {"id": self.id, "type": self.type, "function": self.function.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """Build a call from an OpenAI-shaped mapping.

        ``function.arguments`` may be a JSON string or an already-decoded mapping.

        Raises:
            ToolCallError: (a ValueError) if the mapping lacks ``function.name``;
                ``ArgumentsError`` (its subclass) if the arguments are not a JSON object.
        """
        function = data.get("function", data)
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ToolCallError(
                f"a tool call needs function.name (a string); got {dict(data)!r}", kind="name"
            )
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                decoded = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise ArgumentsError(
                    f"arguments of {function['name']!r} are not valid JSON: {exc}",
                    problem="invalid_json",
                ) from exc
        else:
            decoded = arguments
        if not isinstance(decoded, Mapping):
            raise ArgumentsError(
                f"arguments of {function['name']!r} must be a JSON object", problem="not_object"
            )
        text = json.dumps(dict(decoded), ensure_ascii=False)
        return cls(id=str(data.get("id") or ""), function=FunctionCall(function["name"], text))

    @classmethod
    def _build(cls, call_id: str, function: FunctionCall) -> ToolCall:
        """Internal fast constructor used by the parsers (same result as ``cls(...)``)."""
        call = _new(cls)
        _SET_ID(call, call_id)
        _SET_FUNCTION(call, function)
        _SET_TYPE(call, "function")
        return call


_SET_ID: Callable[[Any, Any], None] = ToolCall.__dict__["id"].__set__
_SET_FUNCTION: Callable[[Any, Any], None] = ToolCall.__dict__["function"].__set__
_SET_TYPE: Callable[[Any, Any], None] = ToolCall.__dict__["type"].__set__
