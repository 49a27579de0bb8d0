"""Turning argument values into the JSON object string OpenAI's shape requires."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from hermes_parsers.errors import ArgumentsError

__all__ = [
    "ArgumentsError",
    "decode_arguments",
    "decode_json_prefix",
    "dump_arguments",
    "encode_arguments",
    "find_lone_surrogate",
    "load_json",
]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"{text} is out of range for a JSON number")
    return value


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
# The same, accepting raw control characters (newlines) inside strings, as Llama writes them.
_LAX_DECODER = json.JSONDecoder(
    strict=False, parse_constant=_reject_constant, parse_float=_finite_float
)
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's own whitespace
_SURROGATE = re.compile("[\ud800-\udfff]")


def find_lone_surrogate(text: str, start: int = 0, end: int | None = None) -> int:
    """Where a lone surrogate (a code point U+D800..U+DFFF, which no UTF-8 text can hold)
    is in ``text[start:end]``, or -1. Pure-ASCII text is answered without a scan."""
    if text.isascii():
        return -1
    found = _SURROGATE.search(text, start, len(text) if end is None else end)
    return -1 if found is None else found.start()


def _escapes_surrogate(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` may hold a ``\\uD800``..``\\uDFFF`` escape."""
    return text.find("\\ud", start, end) >= 0 or text.find("\\uD", start, end) >= 0


def _holds_lone_surrogate(value: Any) -> bool:
    """Whether a decoded JSON value holds a string with a lone surrogate (a ``\\ud800``
    escape not paired with a low surrogate decodes to one)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is str:
            if _SURROGATE.search(item):
                return True
        elif type(item) is list:
            stack.extend(item)
        elif type(item) is dict:
            for key, inner in item.items():
                if _SURROGATE.search(key):
                    return True
                stack.append(inner)
    return False


def _raw_decode(text: str, start: int, lax: bool) -> tuple[Any, int]:
    try:
        value, end = (_LAX_DECODER if lax else _DECODER).raw_decode(text, start)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if _escapes_surrogate(text, start, end) and _holds_lone_surrogate(value):
        raise ValueError(
            "a \\u escape gives a lone surrogate (\\ud800-\\udfff without its pair), "
            "which no UTF-8 text can hold"
        )
    return value, end


def _skip_space(text: str, pos: int) -> int:
    if pos >= len(text) or text[pos] not in " \t\n\r":
        return pos
    match = _SPACE.match(text, pos)
    return match.end() if match else pos


def load_json(text: str, *, control_characters: bool = False) -> Any:
    """Decode strict JSON that must span the whole of ``text``: no NaN or Infinity, no
    number too large for a float (``1e999``), no ``\\u`` escape that leaves a lone
    surrogate. ``control_characters`` allows raw control characters inside strings.

    Raises:
        ValueError: if ``text`` is not exactly one such JSON value (surrounding
            whitespace allowed), or is nested too deeply to decode.
    """
    value, end = _raw_decode(text, _skip_space(text, 0), control_characters)
    if end != len(text) and _skip_space(text, end) != len(text):
        raise ValueError(f"extra data after the JSON value at char {end}")
    return value


def decode_json_prefix(
    text: str, start: int = 0, *, control_characters: bool = False
) -> tuple[Any, int]:
    """Decode the one strict JSON value (as ``load_json`` reads it) that begins at
    ``text[start]``.

    Returns:
        The value and the index just past it; text after it is left alone.

    Raises:
        json.JSONDecodeError: (a ValueError) if no complete JSON value starts there.
        ValueError: if the value is one ``load_json`` refuses, or is nested too deeply.
    """
    return _raw_decode(text, start, control_characters)


def decode_arguments(arguments: Any) -> dict[str, Any]:
    """Return ``arguments`` as a dict that is a JSON object.

    Accepts a mapping, ``None`` or empty text (meaning ``{}``), JSON text of an object,
    or JSON text of a string that itself holds an object (double-encoded arguments).

    Raises:
        ArgumentsError: if the value is not, and does not decode to, a JSON object.
    """
    if type(arguments) is dict:
        return arguments
    value = arguments
    if value is None:
        return {}
    for _ in range(2):
        if not isinstance(value, str):
            break
        if not value.strip():
            return {}
        try:
            value = load_json(value)
        except ValueError as exc:
            raise ArgumentsError(
                f"arguments are not valid JSON ({exc})", problem="invalid_json"
            ) from None
    if not isinstance(value, dict):
        raise ArgumentsError(
            f"arguments must be a JSON object, got {type(value).__name__}", problem="not_object"
        )
    return value


def encode_arguments(value: dict[str, Any]) -> str:
    """The canonical JSON text of an arguments object (``json.dumps``, non-ASCII kept).

    Raises:
        ArgumentsError: if the value cannot be written as strict JSON.
    """
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ArgumentsError(
            f"arguments cannot be written as JSON ({exc})", problem="unencodable"
        ) from None


def dump_arguments(arguments: Any) -> str:
    """``encode_arguments(decode_arguments(arguments))``: a JSON object string.

    Raises:
        ArgumentsError: if the value is not a JSON object or cannot be written as JSON.
    """
    return encode_arguments(decode_arguments(arguments))
