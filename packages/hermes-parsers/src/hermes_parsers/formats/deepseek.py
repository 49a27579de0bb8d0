"""DeepSeek tool calls: DeepSeek-V3 / R1 (``deepseek_v3``) and DeepSeek-V3.1 (``deepseek_v3_1``).

Both families put their calls in one section of special tokens (fullwidth ``｜`` bars and
``▁`` word marks) at the end of the turn::

    Some text<｜tool▁calls▁begin｜>CALL CALL ...<｜tool▁calls▁end｜>

DeepSeek-V3, V3-0324, R1 and R1-0528 write each call with a type word, the name on its
own line and the arguments in a fenced JSON block; calls are separated by a newline::

    <｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
    ```json
    {"city": "Paris"}
    ```<｜tool▁call▁end｜>

DeepSeek-V3.1 writes the name before the separator and bare JSON after it, and chains
calls with no separator::

    <｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>

Both emit reasoning as ``<think>...</think>``; R1-0528 and V3.1 in thinking mode end the
prompt with ``<think>``, so use ``think_prefilled=True`` for those.

What the parsers accept besides the canonical spelling:

* text before, between and after sections, all kept as content;
* whitespace around names, fences and JSON (the V3 type word is ignored; the fence's
  ``json`` tag is optional);
* truncation: a section without ``<｜tool▁calls▁end｜>`` is read to the end of the text,
  and a final call without ``<｜tool▁call▁end｜>`` (or without its closing fence) is kept
  when its JSON is complete;
* the end-of-turn token ``<｜end▁of▁sentence｜>`` (text decoded with special tokens
  kept): dropped from content, and from the end of a section or of reasoning;
* a section inside reasoning that never closed (V3.1 in thinking mode may call tools
  before ``</think>``): its calls are read, the text around them is reasoning, and
  broken markup there stays reasoning.

A broken call (no ``<｜tool▁sep｜>``, no name, invalid or non-object JSON, a call not
closed before the next one) and stray text inside a section are malformed: kept as
content (or a ``ParseError`` in strict mode) while the good calls beside them are kept.
A section holding no good call is kept as content whole. Arguments are JSON, so given
``tools`` schemas change nothing.
"""

from __future__ import annotations

import re
import zlib
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

from hermes_parsers._api import register_parser
from hermes_parsers._arguments import _LONG_STRING, _SCAN, _SURROGATE_ESCAPE, load_json
from hermes_parsers._base import ToolCallParser
from hermes_parsers._errors import RenderError
from hermes_parsers._quick import quick_call, quick_calls_result, quick_named_call, quick_section
from hermes_parsers._result import _SET_CALLS, _SET_CONTENT, _SET_REASONING, ParseResult
from hermes_parsers._scanner import MarkerScanner, Region, RegionSet, Scanner
from hermes_parsers._segments import Malformed, RawCall, Reasoning, Segment
from hermes_parsers._tool_call import (
    _SET_FUNCTION,
    _SET_ID,
    _SET_NAME,
    _SET_TEXT,
    _SET_TYPE,
    _SET_VALUE,
    UNWRITTEN_SHORT,
    FunctionCall,
    ToolCall,
)
from hermes_parsers.formats._json_calls import escape_markers

__all__ = ["DeepSeekV3Parser", "DeepSeekV31Parser"]

CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
EOS = "<｜end▁of▁sentence｜>"
_FENCE = "```"
_WHITESPACE = re.compile(r"\s")  # what str.isspace() is true for
_THINK_START = "<think>"
_THINK_END = "</think>"
# Spelled with an escaped first character wherever they occur inside JSON strings.
_ESCAPE = (CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP, EOS, _THINK_START, _THINK_END)
# A call's markers and what both start with, for ``quick_section``.
_CALL_MARKERS = (CALL_BEGIN, CALL_END, "<｜tool▁call▁")
# For the checksum of a V3.1 call's text, taken piece by piece.
_BEGIN_CRC = zlib.crc32(CALL_BEGIN.encode())
_SEP_UTF8 = SEP.encode()
_CALL_END_UTF8 = CALL_END.encode()
_crc32 = zlib.crc32
_join_bytes = b"".join
_new = object.__new__

#: Reads the text between ``<｜tool▁call▁begin｜>`` and ``<｜tool▁call▁end｜>``:
#: ``(name, arguments)`` or the reason it is malformed.
CallReader = Callable[[str], tuple[str, dict[str, Any]] | str]


# reading --------------------------------------------------------------------------------
def _decode_arguments(name: str, text: str) -> tuple[str, dict[str, Any]] | str:
    """``(name, arguments)`` from the arguments' JSON text, or why it is not an object."""
    if _WHITESPACE.search(name):
        return f"function name {name!r} contains whitespace"
    if "<｜" in name:
        return f"function name {name!r} contains a special token"
    if not text:
        return name, {}
    try:
        value = load_json(text)
        if isinstance(value, str):  # double-encoded arguments
            value = load_json(value)
    except (ValueError, RecursionError) as exc:
        return f"arguments of {name!r} are not valid JSON ({exc})"
    if not isinstance(value, dict):
        return f"arguments of {name!r} must be a JSON object, got {type(value).__name__}"
    return name, value


def read_v3_call(body: str) -> tuple[str, dict[str, Any]] | str:
    """``TYPE<｜tool▁sep｜>NAME`` + newline + a ```` ```json ```` block (the type is ignored)."""
    sep = body.find(SEP)
    if sep < 0:
        return f"tool call has no {SEP!r} after its type"
    name_at = sep + len(SEP)
    fence = body.find(_FENCE, name_at)
    if fence < 0:
        return "tool call arguments are not in a ```json code block"
    name = body[name_at:fence].strip()
    if not name:
        return "tool call without a function name"
    at = fence + len(_FENCE)
    if body[at : at + 4].lower() == "json":
        at += 4
    arguments = body[at:].strip()
    if arguments.endswith(_FENCE):
        arguments = arguments[: -len(_FENCE)].rstrip()
    return _decode_arguments(name, arguments)


def read_v31_call(body: str) -> tuple[str, dict[str, Any]] | str:
    """``NAME<｜tool▁sep｜>{...}``."""
    sep = body.find(SEP)
    if sep < 0:
        return f"tool call has no {SEP!r} between its name and arguments"
    name = body[:sep].strip()
    if not name:
        return "tool call without a function name"
    return _decode_arguments(name, body[sep + len(SEP) :].strip())


class _Finder:
    """Next occurrence of ``needle`` at or after a position that only moves forward.

    Remembers the last hit, so scanning a text with many queries stays linear.
    """

    __slots__ = ("_at", "_needle", "_text")

    def __init__(self, text: str, needle: str) -> None:
        self._text = text
        self._needle = needle
        self._at = -2  # -1: none left; below the position asked: not searched yet

    def next(self, position: int) -> int:
        if self._at != -1 and self._at < position:
            self._at = self._text.find(self._needle, position)
        return self._at


def _cut_eos(body: str) -> str:
    """``body`` without a final ``<｜end▁of▁sentence｜>`` (and the whitespace before it)."""
    trimmed = body.rstrip()
    if trimmed.endswith(EOS):
        return trimmed[: -len(EOS)]
    return body


def _stray(text: str, offset: int, out: list[Segment]) -> None:
    if text.strip():
        out.append(Malformed(text, "text inside the tool-calls section outside any call", offset))


def read_section(
    body: str, raw: str, offset: int, terminated: bool, read_call: CallReader
) -> list[Segment]:
    """Segments for one tool-calls section.

    Args:
        body: the text between ``<｜tool▁calls▁begin｜>`` and ``<｜tool▁calls▁end｜>``.
        raw: the whole section as written.
        offset: where ``body`` starts in the whole text.
        terminated: False when the text ended before ``<｜tool▁calls▁end｜>``.
        read_call: reads one call's text.
    """
    body = _cut_eos(body)
    start_offset = offset - len(CALLS_BEGIN)
    out: list[Segment] = []
    first_reason = "tool-calls section holds no tool call"
    begins = _Finder(body, CALL_BEGIN)
    ends = _Finder(body, CALL_END)
    position = 0
    while True:
        start = begins.next(position)
        gap = body[position:] if start < 0 else body[position:start]
        if position == 0:
            _leading(gap, offset, out)
        else:
            _stray(gap, offset + position, out)
        if start < 0:
            break
        inner = start + len(CALL_BEGIN)
        end = ends.next(inner)
        following = begins.next(inner)
        if end >= 0 and (following < 0 or end < following):
            stop = end + len(CALL_END)
            found = read_call(body[inner:end])
        else:
            stop = following if following >= 0 else len(body)
            if following >= 0:
                found = f"tool call not closed by {CALL_END!r} before the next call"
            else:  # the text (or the section) ended inside the last call
                found = read_call(body[inner:stop])
        if isinstance(found, str):
            out.append(Malformed(body[start:stop], found, offset + start))
        else:
            out.append(RawCall(found[0], found[1], body[start:stop], offset + start))
        position = stop
    if not any(isinstance(segment, RawCall) for segment in out):
        reason = next((s.reason for s in out if isinstance(s, Malformed)), first_reason)
        if not terminated:
            reason = f"{reason} (the tool-calls section was never closed)"
        return [Malformed(raw, reason, start_offset)]
    return out


def _leading(text: str, offset: int, out: list[Segment]) -> None:
    """Text before a section's first call. A second ``<｜tool▁calls▁begin｜>`` there means
    the first one was stray: keep it, and what follows it up to the second, as content."""
    nested = text.rfind(CALLS_BEGIN)
    if nested < 0:
        _stray(text, offset, out)
        return
    out.append(
        Malformed(
            CALLS_BEGIN + text[:nested],
            f"{CALLS_BEGIN!r} opened but never closed",
            offset - len(CALLS_BEGIN),
        )
    )
    after = nested + len(CALLS_BEGIN)
    _stray(text[after:], offset + after, out)


def read_reasoning(body: str, offset: int, read_call: CallReader) -> list[Segment]:
    """Reasoning text, with any tool-calls sections in it read as calls.

    Broken markup inside reasoning stays reasoning: it is not an error to think aloud.
    """
    body = _cut_eos(body)
    out: list[Segment] = []
    position = 0
    while True:
        begin = body.find(CALLS_BEGIN, position)
        if begin < 0:
            out.append(Reasoning(body[position:]))
            return out
        if begin > position:
            out.append(Reasoning(body[position:begin]))
        inner = begin + len(CALLS_BEGIN)
        end = body.find(CALLS_END, inner)
        stop = end if end >= 0 else len(body)
        after = stop + len(CALLS_END) if end >= 0 else stop
        section = read_section(
            body[inner:stop], body[begin:after], offset + inner, end >= 0, read_call
        )
        for segment in section:
            out.append(Reasoning(segment.raw) if isinstance(segment, Malformed) else segment)
        position = after


def _drop(body: str, raw: str, offset: int, terminated: bool) -> list[Segment]:
    return []


# the parsers ----------------------------------------------------------------------------
class _DeepSeekParser(ToolCallParser):
    """What the DeepSeek formats share: the section, reasoning, and the end-of-turn token."""

    markers = (CALLS_BEGIN, EOS)
    # Sections inside reasoning are read as calls; a final end-of-turn token is dropped.
    reasoning_forbidden = (CALLS_BEGIN, EOS)
    vocabulary = (*_ESCAPE, _FENCE)

    @abstractmethod
    def _read_call(self, body: str) -> tuple[str, dict[str, Any]] | str:
        """One call's text (between its begin and end tokens): ``(name, arguments)`` or
        the reason it is malformed."""

    def _read_section(self, body: str, raw: str, offset: int, terminated: bool) -> list[Segment]:
        return read_section(body, raw, offset, terminated, self._read_call)

    def _parse_quick(self, text: str) -> ParseResult | None:
        """One closed section of well-formed calls, separated by whitespace only, with
        no markup before or after it (no second section, end-of-turn token or
        ``<think>``): what ``read_section`` reads without a ``Malformed``. Inside the
        section the scanner looks for nothing but its end, as here."""
        begin = text.find(CALLS_BEGIN)
        if begin < 0 or self.think_prefilled:
            return None
        inner = begin + len(CALLS_BEGIN)
        close = text.find(CALLS_END, inner)
        if close < 0:
            return None
        head = text[:begin]
        tail = text[close + len(CALLS_END) :]
        if (head and (EOS in head or _THINK_START in head)) or (
            tail and (CALLS_BEGIN in tail or EOS in tail or _THINK_START in tail)
        ):
            return None
        calls = quick_section(text, inner, close, _CALL_MARKERS, self._quick_call)
        return None if calls is None else quick_calls_result(head + tail, calls)

    def _quick_call(self, text: str, index: int, start: int, at: int, end: int) -> ToolCall | None:
        """The call at ``index`` in the section, ``text[at:end]`` between its markers
        (its begin marker at ``start``), as ``_read_call`` reads it; ``None`` if that does
        not read a call."""
        found = self._read_call(text[at:end])
        if isinstance(found, str):
            return None
        name, arguments = found
        return quick_named_call(index, name, arguments, text[start : end + len(CALL_END)])

    def _read_reasoning(self, body: str, raw: str, offset: int, terminated: bool) -> list[Segment]:
        return read_reasoning(body, offset, self._read_call)

    def _call_regions(self) -> list[Region]:
        return [
            Region(CALLS_BEGIN, CALLS_END, self._read_section, retry_nested=False),
            # A zero-width region: the end-of-turn token is dropped, scanning goes on.
            Region(EOS, "", _drop, retry_nested=False),
        ]

    def _scanner(self) -> Scanner:
        regions = self._regions
        if regions is None:
            think = Region(_THINK_START, _THINK_END, self._read_reasoning, retry_nested=False)
            regions = self._regions = RegionSet((*self._call_regions(), think))
        return MarkerScanner(regions, open_region=regions[-1] if self.think_prefilled else None)

    # rendering --------------------------------------------------------------------------
    def _render_body(self, content: str, calls: list[ToolCall]) -> str:
        # The templates write the section straight after the content.
        return content + self._render_calls(calls)

    def _checked(self, call: ToolCall, forbidden: tuple[str, ...]) -> tuple[str, str]:
        """The call's name and its arguments text, markers escaped; refuses what cannot
        be spelled."""
        name = call.function.name
        if (
            not name
            or any(char.isspace() for char in name)
            or "<｜" in name
            or any(token in name for token in forbidden)
        ):
            raise RenderError(
                f"{self.name}: function name {name!r} cannot be written in this format",
                kind="call",
            )
        try:
            value = load_json(call.function.arguments)
        except (ValueError, RecursionError) as exc:
            raise RenderError(
                f"{self.name}: arguments of {name!r} are not valid JSON ({exc})",
                kind="call",
            ) from None
        if not isinstance(value, dict):
            raise RenderError(
                f"{self.name}: arguments of {name!r} must be a JSON object", kind="call"
            )
        # The templates insert the arguments string as given: keep it, markers escaped.
        return name, escape_markers(call.function.arguments.strip(), _ESCAPE)


@register_parser("deepseek_v3")
class DeepSeekV3Parser(_DeepSeekParser):
    """DeepSeek-V3 / R1: ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`` then a
    ```` ```json ```` block, inside ``<｜tool▁calls▁begin｜>...<｜tool▁calls▁end｜>``."""

    def _read_call(self, body: str) -> tuple[str, dict[str, Any]] | str:
        return read_v3_call(body)

    def _render_calls(self, calls: list[ToolCall]) -> str:
        parts = []
        for call in calls:
            name, arguments = self._checked(call, (*_ESCAPE, _FENCE))
            parts.append(
                f"{CALL_BEGIN}{call.type}{SEP}{name}\n{_FENCE}json\n{arguments}\n{_FENCE}{CALL_END}"
            )
        return CALLS_BEGIN + "\n".join(parts) + CALLS_END


@register_parser("deepseek_v3_1", "deepseek_v31")
class DeepSeekV31Parser(_DeepSeekParser):
    """DeepSeek-V3.1: ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>``
    chained inside ``<｜tool▁calls▁begin｜>...<｜tool▁calls▁end｜>``."""

    def _read_call(self, body: str) -> tuple[str, dict[str, Any]] | str:
        return read_v31_call(body)

    def _parse_quick(self, text: str) -> ParseResult | None:
        """The base class's quick reading with its steps inlined for the common case, the
        section as the template writes it: calls chained straight after
        ``<｜tool▁calls▁begin｜>`` and each other, ``NAME<｜tool▁sep｜>{...}`` (a name that
        is an identifier) whose JSON is ASCII, so that it holds no marker, and ends just
        before ``<｜tool▁call▁end｜>``, the last one just before ``<｜tool▁calls▁end｜>``.
        Nothing in such a section can hold a marker, so each marker found in place is
        where the base class's searches would find it: no search runs ahead of the
        calls. Anything else is left to the base class's reading."""
        begin = text.find(CALLS_BEGIN)
        if begin < 0 or self.think_prefilled:
            return None
        position = begin + len(CALLS_BEGIN)
        calls: list[ToolCall] = []
        while text.startswith(CALL_BEGIN, position):
            at = position + len(CALL_BEGIN)
            sep = text.find(SEP, at)
            name_text = text[at:sep]
            name = name_text.strip()
            json_at = sep + len(SEP)
            if sep < 0 or not name.isidentifier() or not text.startswith("{", json_at):
                return super()._parse_quick(text)
            stop = text.find(CALL_END, json_at)
            body = text[json_at:stop]
            if stop < 0 or not body.isascii():
                return super()._parse_quick(text)
            try:  # ASCII text decodes faster than the wide-character text around it
                value, end = _SCAN(body, 0)
            except (StopIteration, ValueError, RecursionError):
                return None
            if end != len(body) or type(value) is not dict or _SURROGATE_ESCAPE.search(body):
                return super()._parse_quick(text)
            # quick_call, inlined; the id's checksum of the call's UTF-8 put together from
            # its pieces (see _quick_call), in one pass.
            checksum = _crc32(
                _join_bytes((name_text.encode(), _SEP_UTF8, body.encode(), _CALL_END_UTF8)),
                _BEGIN_CRC,
            )
            function = _new(FunctionCall)
            _SET_NAME(function, name)
            _SET_TEXT(function, UNWRITTEN_SHORT if len(body) < _LONG_STRING else None)
            _SET_VALUE(function, value)
            call = _new(ToolCall)
            _SET_ID(call, "call_%d_%08x" % (len(calls), checksum))  # noqa: UP031
            _SET_FUNCTION(call, function)
            _SET_TYPE(call, "function")
            calls.append(call)
            position = stop + len(CALL_END)
        if not calls or not text.startswith(CALLS_END, position):
            return super()._parse_quick(text)  # whitespace in the section, or no call
        head = text[:begin]
        if head and (EOS in head or _THINK_START in head):
            return None
        after = position + len(CALLS_END)
        if after != len(text):
            tail = text[after:]
            if CALLS_BEGIN in tail or EOS in tail or _THINK_START in tail:
                return None
            head += tail
        result = _new(ParseResult)  # ParseResult._quick, inlined
        _SET_CONTENT(result, head.strip() or None)
        _SET_CALLS(result, calls)
        _SET_REASONING(result, None)
        return result

    def _quick_call(self, text: str, index: int, start: int, at: int, end: int) -> ToolCall | None:
        # ``read_v31_call`` in place: NAME, the separator, a JSON object; the base class's
        # reading for anything else. The id's checksum is taken piece by piece, so the
        # call's text (wide characters in its markers) is neither sliced nor encoded
        # whole.
        sep = text.find(SEP, at, end)
        if sep < 0:
            return None
        head = text[at:sep]
        name = head.strip()
        if not name.isidentifier() and (not name or _WHITESPACE.search(name) or "<｜" in name):
            return None
        json_at = sep + len(SEP)
        if json_at == end or text[json_at] != "{":
            return super()._quick_call(text, index, start, at, end)  # no arguments, or space
        body = text[json_at:end]
        try:
            value, stop = _SCAN(body, 0)
        except (StopIteration, ValueError, RecursionError):
            return None
        if stop != len(body) or type(value) is not dict or _SURROGATE_ESCAPE.search(body):
            return None
        try:  # the crc32 of the call's UTF-8, as quick_call takes it of the whole text
            checksum = _crc32(
                _CALL_END_UTF8,
                _crc32(body.encode(), _crc32(_SEP_UTF8, _crc32(head.encode(), _BEGIN_CRC))),
            )
        except UnicodeEncodeError:  # a lone surrogate
            return None
        return quick_call(index, name, value, body, checksum=checksum)

    def _render_calls(self, calls: list[ToolCall]) -> str:
        parts = []
        for call in calls:
            name, arguments = self._checked(call, _ESCAPE)
            parts.append(f"{CALL_BEGIN}{name}{SEP}{arguments}{CALL_END}")
        return CALLS_BEGIN + "".join(parts) + CALLS_END
