"""Turning argument values into the JSON object string OpenAI's shape requires."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from json.encoder import c_make_encoder as _c_make_encoder  # type: ignore[attr-defined]
from json.encoder import encode_basestring as _encode_basestring
from typing import Any

from hermes_parsers._errors import ArgumentsError

__all__ = [
    "ArgumentsError",
    "decode_arguments",
    "decode_json_prefix",
    "dump_arguments",
    "encode_arguments",
    "encode_object",
    "find_lone_surrogate",
    "holds_long_string",
    "json_end",
    "load_json",
    "object_at",
    "object_prefix",
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
# The decoders' scanners, called directly: ``raw_decode`` only wraps them in a Python frame.
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
_LAX_SCAN: Callable[[str, int], tuple[Any, int]] = _LAX_DECODER.scan_once  # type: ignore[attr-defined]
_JSON_SPACE = frozenset(" \t\n\r")
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
# The C encoder behind it, called directly: ``JSONEncoder.encode`` builds a new one on
# every call. No circular-reference memo (``markers=None``): a value that contains itself
# ends in a RecursionError instead of a ValueError, and both are refused below.
_ENCODE: Callable[[Any, int], Any] | None = (
    None
    if _c_make_encoder is None
    else _c_make_encoder(
        None, _ENCODER.default, _encode_basestring, None, ": ", ", ", False, False, False
    )
)
#: A top-level string value at least this long, all ASCII, is written by
#: ``_long_ascii_string`` (below it the C encoder costs less than that function's fixed
#: cost, about a microsecond).
_LONG_STRING = 4096
#: Every character ``encode_basestring`` escapes, with its escape; the backslash first,
#: so that the escapes written for the others are not escaped again.
_ESCAPES: tuple[tuple[str, str], ...] = (
    ("\\", "\\\\"),
    ('"', '\\"'),
    *((char, "\\" + letter) for char, letter in zip("\n\r\t\b\f", "nrtbf", strict=True)),
    *((chr(code), f"\\u{code:04x}") for code in range(32) if chr(code) not in "\n\r\t\b\f"),
)
#: With more kinds of escaped characters than this in a long string, the C encoder's one
#: pass costs less than one ``str.replace`` pass per kind.
_MOST_REPLACED = 3
_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's own whitespace
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # \uD800..\uDFFF in JSON text


def find_lone_surrogate(text: str, start: int = 0, end: int | None = None) -> int:
    """Where a lone surrogate (a code point U+D800..U+DFFF, which no UTF-8 text can hold)
    is in ``text[start:end]``, or -1. Pure-ASCII text is answered without a scan."""
    if text.isascii():
        return -1
    piece = text if start == 0 and end is None else text[start:end]
    try:
        piece.encode("utf-8")  # the C encoder is several times faster than a regex scan
    except UnicodeEncodeError as exc:
        return start + exc.start
    return -1


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


def _check_escapes(value: Any) -> None:
    """Raise if ``value`` (decoded from text holding a ``\\uD800``..``\\uDFFF`` escape)
    holds a lone surrogate. Called only when such an escape occurs: other text pays one
    regex search."""
    if _holds_lone_surrogate(value):
        raise ValueError(
            "a \\u escape gives a lone surrogate (\\ud800-\\udfff without its pair), "
            "which no UTF-8 text can hold"
        )


def load_json(text: str, *, control_characters: bool = False) -> Any:
    """Decode strict JSON that must span the whole of ``text``: no NaN or Infinity, no
    number too large for a float (``1e999``), no ``\\u`` escape that leaves a lone
    surrogate. ``control_characters`` allows raw control characters inside strings.

    Raises:
        ValueError: if ``text`` is not exactly one such JSON value (surrounding
            whitespace allowed), or is nested too deeply to decode.
    """
    start = _SPACE.match(text).end() if text[:1] in _JSON_SPACE else 0  # type: ignore[union-attr]
    try:
        value, end = (_LAX_SCAN if control_characters else _SCAN)(text, start)
    except StopIteration as stop:  # what JSONDecoder.raw_decode turns into its error
        raise json.JSONDecodeError("Expecting value", text, stop.value) from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text) is not None:
        _check_escapes(value)
    if end != len(text) and _SPACE.match(text, end).end() != len(text):  # type: ignore[union-attr]
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
    try:
        value, end = (_LAX_SCAN if control_characters else _SCAN)(text, start)
    except StopIteration as stop:
        raise json.JSONDecodeError("Expecting value", text, stop.value) from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text, start, end) is not None:
        _check_escapes(value)
    return value, end


def json_end(text: str, start: int = 0, *, control_characters: bool = False) -> int:
    """The index just past the JSON value that begins at ``text[start]``, as
    ``decode_json_prefix`` reads it but without looking for lone surrogates in it; -1
    when no such value begins there (or it is one that function refuses otherwise: NaN,
    ``1e999``, nested too deeply). Never raises."""
    try:
        return (_LAX_SCAN if control_characters else _SCAN)(text, start)[1]
    except (StopIteration, ValueError, RecursionError):
        return -1


def object_at(text: str, start: int, stop: int) -> dict[str, Any] | None:
    """The JSON object that spans exactly ``text[start:stop]`` (no surrounding
    whitespace), read without slicing it out: what ``load_json(text[start:stop])`` gives
    when that is an object and the text holds no ``\\u`` escape of a surrogate; ``None``
    for anything else (an error, another type, such an escape), which the caller's
    general path then judges. Never raises."""
    if not text.startswith("{", start):
        return None
    try:
        value, end = _SCAN(text, start)
    except (StopIteration, ValueError, RecursionError):
        return None
    if end != stop or type(value) is not dict:
        return None
    if _SURROGATE_ESCAPE.search(text, start, stop) is not None:
        return None
    return value


def object_prefix(text: str, start: int, stop: int) -> tuple[dict[str, Any], int] | None:
    """The JSON object that begins exactly at ``text[start]`` and ends at or before
    ``stop``, and the index just past it: what ``decode_json_prefix(text, start)`` gives
    when that is an object ending there whose decoded strings hold no lone surrogate
    (and, for an object of many parts, whose text holds no ``\\u`` escape of a
    surrogate); ``None`` for anything else, which the caller's general path then judges.
    Never raises."""
    if not text.startswith("{", start):
        return None
    try:
        value, end = _SCAN(text, start)
    except (StopIteration, ValueError, RecursionError):
        return None
    if end > stop or type(value) is not dict:
        return None
    if _may_hold_lone_surrogate(value, text, start, end):
        return None
    return value, end


#: How many decoded strings and containers ``_may_hold_lone_surrogate`` looks at before it
#: falls back to searching the text for escapes of surrogates.
_WALK_BUDGET = 32
#: An ASCII span up to this long is searched for escapes of surrogates (a C search of
#: about 0.3 us at this length) rather than walked (about 0.08 us a part).
_SEARCHED_SPAN = 1024


def _may_hold_lone_surrogate(value: dict[str, Any], text: str, start: int, end: int) -> bool:
    """``False`` when ``value`` (decoded from ``text[start:end]``) certainly holds no lone
    surrogate: every string in it is ASCII (``str.isascii`` costs nothing) or free of
    surrogates. A value with more than ``_WALK_BUDGET`` parts is answered instead by
    searching the text for a ``\\u`` escape of a surrogate (``True`` if there is one,
    which the caller's general path then judges), so a small value costs a few steps and
    a large one a single C search, never both. A value decoded from a span of ASCII text
    at most ``_SEARCHED_SPAN`` long (whose strings can get a surrogate only from an
    escape) is first searched that way: ``False`` at once when the span holds no such
    escape, the walk otherwise."""
    if (
        end - start <= _SEARCHED_SPAN
        and text.isascii()
        and _SURROGATE_ESCAPE.search(text, start, end) is None
    ):
        return False
    stack: list[Any] = [value]
    budget = _WALK_BUDGET
    while stack:
        budget -= 1
        if budget < 0:
            return _SURROGATE_ESCAPE.search(text, start, end) is not None
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and _SURROGATE.search(item):
                return True
        elif kind is dict:
            for key in item:
                if not key.isascii() and _SURROGATE.search(key):
                    return True
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return False


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


def _long_ascii_string(text: str) -> str:
    """``encode_basestring(text)`` for a long ASCII string, written with one ``in`` test
    per character JSON escapes (a ``memchr`` over the text each) and one ``str.replace``
    per such character the text holds: about half the C encoder's time, whose loop reads
    every character twice. With more than ``_MOST_REPLACED`` kinds of such characters, the
    C encoder."""
    present = [pair for pair in _ESCAPES if pair[0] in text]
    if len(present) > _MOST_REPLACED:
        return _encode_basestring(text)
    for char, escape in present:
        text = text.replace(char, escape)
    return "".join(('"', text, '"'))


def holds_long_string(value: dict[str, Any]) -> bool:
    """Whether ``value`` (a dict of at most 16 keys) has a top-level string value that
    ``encode_object`` writes with ``_long_ascii_string``: a cheap test (a few steps for
    a few keys) that callers make before choosing ``encode_object`` over the C encoder."""
    if len(value) <= 16:
        for item in value.values():
            if type(item) is str and len(item) >= _LONG_STRING and item.isascii():
                return True
    return False


def encode_object(value: dict[str, Any]) -> str:
    """The C encoder's text for a dict holding long ASCII strings at its top level (see
    ``holds_long_string``), with those strings written by ``_long_ascii_string`` and
    everything else by the C encoder: the same text, in about half the time for a long
    file body.

    Raises:
        TypeError: if a key is not a string, or a value is not JSON-serializable.
        ValueError: if a float is NaN or infinite.
        RecursionError: if the value contains itself or is nested too deeply.
    """
    assert _ENCODE is not None  # callers check
    parts = []
    for key, item in value.items():
        if type(key) is not str:
            return "".join(_ENCODE(value, 0))  # the C encoder's own rules for other keys
        if type(item) is str and len(item) >= _LONG_STRING and item.isascii():
            written = _long_ascii_string(item)
        else:
            written = "".join(_ENCODE(item, 0))
        parts.append(_encode_basestring(key) + ": " + written)
    return "{" + ", ".join(parts) + "}"


def encode_arguments(value: dict[str, Any]) -> str:
    """The canonical JSON text of an arguments object (``json.dumps``, non-ASCII kept).

    Raises:
        ArgumentsError: if the value cannot be written as strict JSON.
    """
    try:
        if _ENCODE is not None and type(value) is dict:
            if holds_long_string(value):
                return encode_object(value)
            return "".join(_ENCODE(value, 0))
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
