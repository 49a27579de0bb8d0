"""Mistral tool calls: the ``[TOOL_CALLS]`` token, in every spelling Mistral's tokenizers use.

Accepted anywhere in one output, in any mix (several groups may follow one another):

* JSON array, tokenizers v2, v3 and v7 (e.g. Mistral 7B Instruct v0.3, Mixtral 8x22B,
  Mistral Small 3.1). One array holds all the calls; ``"id"`` is present when the template
  wrote one, and sentencepiece models decode a space after the token::

      [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1B2c3D4e"}]

  A single object in place of the array is read too, and the keys may come in any order.
* Per call, tokenizers v11 and later (e.g. Mistral Small 3.2 and the later Magistral,
  Devstral and Ministral 3 releases). One ``[TOOL_CALLS]`` per call; mistral-common's v11
  encoding writes the call id when the call has one, v13 and later never do::

      [TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"}
      [TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}

  Decoded with special tokens skipped, ``[ARGS]`` disappears: ``[TOOL_CALLS]get_weather{...}``
  is read the same way.

Reasoning: Magistral and the v13+ "think" models write ``[THINK]...[/THINK]``; it becomes
``reasoning`` like ``<think>...</think>`` (which Magistral 2506 wrote as plain text). An
unclosed ``[THINK]`` makes the rest of the text reasoning. With ``think_prefilled`` the
text starts in reasoning and the first ``[/THINK]`` or ``</think>`` ends it (``render``
writes ``[/THINK]``).

Content is all text outside calls and reasoning: before the first ``[TOOL_CALLS]``, and any
text after a call's JSON (``"[TOOL_CALLS] [...]\\nextra text"`` keeps ``extra text``).

Mistral has no closing marker, so everything after the first ``[TOOL_CALLS]`` is read when
the text ends (a stream emits its calls at ``close()``). A call's JSON is decoded from where
it starts, so ``[TOOL_CALLS]`` written inside a JSON string stays part of the string; when
the JSON is broken, the broken call runs to the next ``[TOOL_CALLS]`` and the calls after it
are still read. A per-call name must be non-empty and free of whitespace.

Ids: a call's id is returned when the text holds one (``[CALL_ID]`` or the array's
``"id"``); otherwise it is a deterministic 9-character alphanumeric id (``mistral_call_id``),
the shape Mistral's chat templates demand when the turn is rendered again. ``carries_ids``
is False because the default rendering (``style="args"``, v13+) writes no ids.

Rendering (``style`` option, default ``"args"``), as the chat templates write a turn::

    "args"     content[TOOL_CALLS]name[ARGS]{...}[TOOL_CALLS]name[ARGS]{...}   (v13+)
    "call_id"  content[TOOL_CALLS]name[CALL_ID]id[ARGS]{...}                   (v11)
    "array"    content[TOOL_CALLS] [{"name": ..., "arguments": {...}, "id": ...}]  (v3)

("array" follows the sentencepiece v3 template of Mistral 7B v0.3 and Mixtral 8x22B; those
templates allow no content beside calls, so content goes before the token as in v7), with
reasoning as ``[THINK]reasoning[/THINK]`` before the content. ``"call_id"`` and
``"array"`` write a call's id when it has one (Mistral's templates insist on 9 alphanumeric
characters; ids are written as given). Markers inside JSON strings are written with their
first character ``\\u``-escaped. Arguments are typed JSON, so ``tools`` schemas change
nothing here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, get_args

from hermes_parsers._api import register_parser
from hermes_parsers._arguments import decode_json_prefix, object_prefix
from hermes_parsers._base import ToolCallParser
from hermes_parsers._errors import OptionError, RenderError
from hermes_parsers._quick import QuickCall, quick_result
from hermes_parsers._result import ParseResult
from hermes_parsers._scanner import MarkerScanner, Region, RegionSet, Scanner, reasoning_region
from hermes_parsers._segments import Content, Malformed, RawCall, Reasoning, Segment
from hermes_parsers._tool_call import ToolCall
from hermes_parsers.formats._json_calls import escape_markers

__all__ = ["MistralParser", "MistralStyle", "mistral_call_id"]

#: How ``render`` writes calls: see the module docstring.
MistralStyle = Literal["args", "call_id", "array"]

_CALLS = "[TOOL_CALLS]"
_ARGS = "[ARGS]"
_CALL_ID = "[CALL_ID]"
_THINK_OPEN = "[THINK]"
_THINK_CLOSE = "[/THINK]"
_MARKUP = (_CALLS, _ARGS, _CALL_ID, _THINK_OPEN, _THINK_CLOSE, "<think>", "</think>")
_BRACKET_THINK = reasoning_region(_THINK_OPEN, _THINK_CLOSE)
_ANGLE_THINK = reasoning_region()
_JSON_SPACE = re.compile(r"[ \t\r\n]*")
_MARKER_RUN = re.compile(r"(?:\[TOOL_CALLS\])+")
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\[\s\S])*+"')  # a whole string literal
_STYLES: tuple[str, ...] = get_args(MistralStyle)
# Maps each byte of a digest to one of the 62 alphanumerics (the slight bias is harmless).
_ID_TABLE = bytes((string.ascii_letters + string.digits).encode()[i % 62] for i in range(256))
_blake2b = hashlib.blake2b


def mistral_call_id(index: int, name: Any, source: str) -> str:
    """A deterministic 9-character alphanumeric id, the shape Mistral's templates require,
    for a call the text gave none (same text, same id; calls at different positions of a
    response get different ids).

    The digest covers the position, the name and the call's text: all of it up to 1023
    bytes of UTF-8; beyond that its length, its first and last 64 bytes and about a
    thousand bytes taken at even steps through the whole, so a long argument costs a
    bounded hash rather than one over every byte."""
    if source.isascii():  # a character a byte: sample the text, encode only the sample
        size = len(source)
        step = size // 1024 + 1
        data = (source if step == 1 else source[::step]).encode()
        ends = source[:64].encode() + source[-64:].encode()
    else:
        whole = source.encode("utf-8", "surrogatepass")
        size = len(whole)
        data = whole[:: size // 1024 + 1]
        ends = whole[:64] + whole[-64:]
    head = f"{index}\0{name}\0{size}\0".encode("utf-8", "surrogatepass")
    digest = _blake2b(b"".join((head, data, ends)), digest_size=9).digest()
    return digest.translate(_ID_TABLE).decode("ascii")


def _reasoning_aware(text: str) -> list[Segment]:
    """``text`` (between or after calls) as content, with any think blocks as reasoning."""
    if _THINK_OPEN not in text and "<think>" not in text:
        return [Content(text)]
    scanner = MarkerScanner([_BRACKET_THINK, _ANGLE_THINK])
    return scanner.feed(text) + scanner.finish()


class _GroupReader:
    """Reads everything after the first ``[TOOL_CALLS]`` (the text has ended by then).

    ``text`` starts with the marker; ``base`` is where ``text`` starts in the whole output.
    Each step reads one group starting at a marker and returns the position of the next
    marker (or the end). Every search is bounded by that next marker and JSON is decoded
    in windows that grow geometrically (see ``_decode``), so the work is linear in the text.
    """

    __slots__ = ("bad", "base", "calls", "marker_at", "marker_from", "out", "text")

    def __init__(self, text: str, base: int) -> None:
        self.text = text
        self.base = base
        self.out: list[Segment] = []
        self.calls = 0
        # Malformed text not yet emitted: (start, stop, reason). Adjacent pieces merge into
        # one segment that keeps the first reason, so 100k stray markers make one segment.
        self.bad: tuple[int, int, str] | None = None
        # The last marker search: from where, and what it found (len(text): none left).
        self.marker_from = -1
        self.marker_at = -1

    def _call(self, name: Any, arguments: Any, start: int, end: int, call_id: str | None) -> None:
        raw = self.text[start:end]
        call_id = call_id or mistral_call_id(self.calls, name, raw)
        self.calls += 1
        self._emit([RawCall(name, arguments, raw, self.base + start, call_id)])

    def _call_from_object(self, value: Any, start: int, end: int) -> None:
        """One decoded object of the JSON form."""
        if not isinstance(value, dict):
            reason = "a tool call in the [TOOL_CALLS] list must be a JSON object"
            self._malformed(start, end, reason)
        elif "name" not in value:
            self._malformed(start, end, 'tool call JSON has no "name"')
        else:
            call_id = value.get("id")
            call_id = call_id.strip() if isinstance(call_id, str) else None
            self._call(value["name"], value.get("arguments"), start, end, call_id)

    def run(self) -> list[Segment]:
        text = self.text
        pos = text.find(_CALLS)
        if pos < 0:  # cannot happen: the scanner opened the region on the marker
            return [Content(text)]
        if pos:
            self._emit(_reasoning_aware(text[:pos]))
        while pos < len(text):
            pos = self._group(pos)
        self._emit([])
        return self.out

    # helpers ------------------------------------------------------------------------
    def _next_marker(self, start: int) -> int:
        """The next ``[TOOL_CALLS]`` at or after ``start`` (``len(text)``: none). A group
        asks from its body, its JSON and its end: the last answer serves every start
        between the last search and what it found, so the text is searched once."""
        if self.marker_from <= start <= self.marker_at:
            return self.marker_at
        found = self.text.find(_CALLS, start)
        found = len(self.text) if found < 0 else found
        self.marker_from, self.marker_at = start, found
        return found

    def _emit(self, segments: list[Segment]) -> None:
        if self.bad is not None:
            start, stop, reason = self.bad
            self.out.append(Malformed(self.text[start:stop], reason, self.base + start))
            self.bad = None
        self.out.extend(segments)

    def _malformed(self, start: int, stop: int, reason: str) -> int:
        if self.bad is not None and self.bad[1] == start:
            self.bad = (self.bad[0], stop, self.bad[2])
        else:
            self._emit([])
            self.bad = (start, stop, reason)
        return stop

    def _trailing(self, start: int) -> int:
        """Text after a group's JSON, up to the next marker, is content."""
        stop = self._next_marker(start)
        if stop > start:
            self._emit(_reasoning_aware(self.text[start:stop]))
        return stop

    def _decode(self, start: int) -> tuple[Any, int]:
        """The JSON value at ``start`` and the index just past it.

        Decoded first on the text up to the next ``[TOOL_CALLS]`` (a marker can only sit
        inside a JSON string, so a value that ends before it is final). Only when a string
        runs on to that marker is the window widened, doubling to the next marker each
        time, so no text is decoded more than a constant number of times and a decoding
        error never costs more than its window.

        Raises:
            ValueError: if no complete JSON value starts at ``start``.
        """
        text = self.text
        stop = self._next_marker(start + 1)
        while True:
            window = text[start:stop]
            try:
                value, end = decode_json_prefix(window)
            except json.JSONDecodeError as exc:
                if stop >= len(text) or not _string_runs_to_end(window, exc.pos):
                    raise
                stop = self._next_marker(start + 2 * (stop - start))
                continue
            return value, start + end

    def _skip_space(self, start: int) -> int:
        if start >= len(self.text) or self.text[start] not in " \t\r\n":
            return start
        match = _JSON_SPACE.match(self.text, start)
        return match.end() if match else start

    # one group ------------------------------------------------------------------------
    def _group(self, start: int) -> int:
        """Read the group whose ``[TOOL_CALLS]`` is at ``start``."""
        text = self.text
        body = start + len(_CALLS)
        stop = self._next_marker(body)
        first = self._skip_space(body)
        if first >= stop:
            # Nothing but whitespace before the next marker: take the whole run of such
            # empty groups at once (the last marker of the run starts the next group).
            run = _MARKER_RUN.match(text, start)
            run_end = run.end() if run else stop
            if run_end == len(text):
                stop = run_end
            elif run_end - start > len(_CALLS):
                stop = run_end - len(_CALLS)
            return self._malformed(start, stop, "[TOOL_CALLS] is not followed by a tool call")
        if not text.startswith((_ARGS, _CALL_ID), first) and text[first] in "[{":
            return self._json_group(start, first, stop)
        return self._per_call(start, body, stop)

    def _per_call(self, start: int, body: int, stop: int) -> int:
        """``name[CALL_ID]id[ARGS]{...}``, ``name[ARGS]{...}`` or ``name{...}``."""
        text = self.text
        end, marker = _first_of(text, body, stop, ("{", _ARGS, _CALL_ID))
        name = text[body:end].strip()
        if marker is None:
            reason = (
                f"tool call {name!r} has no [ARGS] and no JSON arguments"
                if name
                else "[TOOL_CALLS] is not followed by a tool call"
            )
            return self._malformed(start, stop, reason)
        if not name:
            return self._malformed(start, stop, "tool call without a function name")
        if len(name.split()) != 1:
            return self._malformed(start, stop, f"function name {name!r} contains whitespace")
        call_id: str | None = None
        args = end + len(marker) if marker != "{" else end
        if marker == _CALL_ID:
            id_end, marker = _first_of(text, args, stop, ("{", _ARGS))
            if marker is None:
                reason = f"tool call {name!r}: [CALL_ID] is not followed by [ARGS]"
                return self._malformed(start, stop, reason)
            call_id = text[args:id_end].strip() or None
            args = id_end + len(marker) if marker != "{" else id_end
        args = self._skip_space(args)
        if args >= len(text) or text.startswith(_CALLS, args):
            return self._malformed(start, stop, f"tool call {name!r} has no JSON arguments")
        try:
            value, end = self._decode(args)
        except ValueError as exc:
            reason = f"arguments of {name!r} are not valid JSON ({exc})"
            return self._malformed(start, stop, reason)
        self._call(name, value, start, end, call_id)
        return self._trailing(end)

    def _json_group(self, start: int, first: int, stop: int) -> int:
        """``[{"name": ..., "arguments": ...}, ...]`` or one such object."""
        text = self.text
        if text[first] == "{":
            try:
                value, end = self._decode(first)
            except ValueError as exc:
                return self._malformed(start, stop, f"tool call is not valid JSON ({exc})")
            self._call_from_object(value, start, end)
            return self._trailing(end)
        # An array: decode element by element, so one broken call keeps the others.
        found: list[tuple[Any, int, int]] = []  # value, raw start, raw end
        raw_start = start
        pos = self._skip_space(first + 1)
        if text.startswith("]", pos):
            self._malformed(start, pos + 1, "[TOOL_CALLS] list is empty")
            return self._trailing(pos + 1)
        while True:
            try:
                value, end = self._decode(pos)
            except ValueError as exc:
                self._flush(found)
                stop = self._next_marker(pos)
                return self._malformed(
                    raw_start, stop, f"tool call in the [TOOL_CALLS] list is not valid JSON ({exc})"
                )
            found.append((value, raw_start, end))
            raw_start = end
            pos = self._skip_space(end)
            if text.startswith(",", pos):
                pos = self._skip_space(pos + 1)
                continue
            if text.startswith("]", pos):
                value, begin, _ = found[-1]
                found[-1] = (value, begin, pos + 1)  # the last call's text takes the bracket
                self._flush(found)
                return self._trailing(pos + 1)
            self._flush(found)
            stop = self._next_marker(pos)
            if pos >= stop:
                # The list was left open where the text or the group ends: the calls in it
                # are complete, so they stand (like an unclosed final block elsewhere).
                return self._trailing(end)
            return self._malformed(
                pos, stop, "expected ',' or ']' after a tool call in the [TOOL_CALLS] list"
            )

    def _flush(self, found: list[tuple[Any, int, int]]) -> None:
        for value, begin, end in found:
            self._call_from_object(value, begin, end)
        found.clear()


def _string_runs_to_end(window: str, at: int) -> bool:
    """Whether the JSON decoder stopped at a string (``window[at]`` is its opening quote)
    that does not close before the window ends: the window cut a string short."""
    return at < len(window) and window[at] == '"' and _JSON_STRING.match(window, at) is None


def _first_of(text: str, start: int, stop: int, needles: Sequence[str]) -> tuple[int, str | None]:
    """The earliest of ``needles`` in ``text[start:stop]``: (index, needle) or (stop, None)."""
    best, which = stop, None
    for needle in needles:  # each search stops where the best match so far begins
        index = text.find(needle, start, best)
        if index >= 0:
            best, which = index, needle
    return best, which


def _read_calls(body: str, raw: str, offset: int, terminated: bool) -> list[Segment]:
    """``BodyReader`` for the region that runs from the first ``[TOOL_CALLS]`` to the end."""
    del terminated  # the region has no closing marker: it always runs to the end
    start = len(raw) - len(body)
    return _GroupReader(raw, offset - start).run()


_CALL_REGION = Region(_CALLS, None, _read_calls, retry_nested=False)
_THINK_ENDS = (_THINK_CLOSE, "</think>")


class _PrefilledScanner:
    """For ``think_prefilled``: the text starts in reasoning, which the first ``[/THINK]``
    or ``</think>`` ends; the rest goes to ``inner`` with its offsets moved along.

    Each feed searches only the new text and the few characters before it, so the work
    is linear and the cut is the same however the text is chunked.
    """

    __slots__ = ("_inner", "_parts", "_shift", "_tail")

    def __init__(self, inner: Scanner) -> None:
        self._inner = inner
        self._parts: list[str] = []
        self._tail = ""  # the last characters of the reasoning so far, to find split ends
        self._shift = -1  # where ``inner``'s text starts; -1 while still in reasoning

    def feed(self, text: str) -> list[Segment]:
        if self._shift >= 0:
            return self._moved(self._inner.feed(text))
        window = self._tail + text
        cut, end = _first_of(window, 0, len(window), _THINK_ENDS)
        if end is None:
            self._parts.append(text)
            self._tail = window[-(len(_THINK_CLOSE) - 1) :]
            return []
        reasoning = "".join(self._parts) + text
        cut += len(reasoning) - len(window)
        self._parts = []
        self._shift = cut + len(end)
        return [
            Reasoning(reasoning[:cut]),
            *self._moved(self._inner.feed(reasoning[self._shift :])),
        ]

    def finish(self) -> list[Segment]:
        if self._shift < 0:
            self._shift = 0
            return [Reasoning("".join(self._parts))]
        return self._moved(self._inner.finish())

    def _moved(self, segments: list[Segment]) -> list[Segment]:
        return [
            dataclasses.replace(s, offset=s.offset + self._shift)
            if isinstance(s, RawCall | Malformed)
            else s
            for s in segments
        ]


def _check_free_text(what: str, text: str) -> None:
    """Refuse a name or id that the per-call form could not spell back."""
    if (
        not text
        or len(text.split()) != 1
        or text != text.strip()
        or "{" in text
        or text.startswith("[")
        or any(marker in text for marker in _MARKUP)
    ):
        raise RenderError(
            f"mistral: {what} {text!r} cannot be written in the per-call form "
            "(it must be non-empty, without whitespace, '{', markers or a leading '[')",
            kind="call",
        )


def _arguments_json(call: ToolCall) -> str:
    try:
        arguments = json.loads(call.function.arguments)
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        raise RenderError(
            f"mistral: arguments of {call.function.name!r} are not a JSON object", kind="call"
        )
    return escape_markers(json.dumps(arguments, ensure_ascii=False), _MARKUP)


@register_parser("mistral")
class MistralParser(ToolCallParser):
    """Mistral ``[TOOL_CALLS]`` calls: the JSON-array form (tokenizers up to v7) and the
    per-call ``name[CALL_ID]id[ARGS]{...}`` / ``name[ARGS]{...}`` forms (v11+), with
    ``[THINK]`` reasoning. See the module docstring for details.

    Options: those of ``ToolCallParser`` plus ``style``, how ``render`` writes calls
    (``"args"``, the default; ``"call_id"``; ``"array"``). Parsing accepts every form
    whatever the style.
    """

    markers = (_CALLS, _THINK_OPEN)
    vocabulary = _MARKUP
    # [THINK]reasoning[/THINK], then the content and calls with no separators.
    reasoning_tags = (_THINK_OPEN, _THINK_CLOSE)
    reasoning_padding = ""
    after_reasoning = ""
    carries_ids = False
    #: The rendering style used when ``style`` is not given.
    default_style: ClassVar[MistralStyle] = "args"

    def __init__(
        self,
        *,
        strict: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        think_prefilled: bool = False,
        style: MistralStyle | None = None,
    ) -> None:
        """Create a parser; ``style`` picks the rendering (see the class docstring).

        Raises:
            OptionError: if ``style`` is not one of ``"args"``, ``"call_id"``, ``"array"``.
        """
        super().__init__(strict=strict, tools=tools, think_prefilled=think_prefilled)
        chosen = self.default_style if style is None else style
        if chosen not in _STYLES:
            raise OptionError(f"mistral: style must be one of {_STYLES}, got {chosen!r}")
        self.style: MistralStyle = chosen

    # parsing --------------------------------------------------------------------------
    def _call_regions(self) -> list[Region]:
        return [_CALL_REGION]

    def _scanner(self) -> Scanner:
        regions = self._regions
        if regions is None:
            regions = self._regions = RegionSet(
                (*self._call_regions(), _BRACKET_THINK, _ANGLE_THINK)
            )
        scanner = MarkerScanner(regions)
        return _PrefilledScanner(scanner) if self.think_prefilled else scanner

    def _parse_quick(self, text: str) -> ParseResult | None:
        """Per-call groups ``name{...}`` or ``name[ARGS]{...}`` (no ``[CALL_ID]``, no
        JSON-array form) and no reasoning markup anywhere outside the JSON: what
        ``_GroupReader`` reads without a ``Malformed``, with the same ids.

        Each group's JSON is decoded from where it starts, not up to the next
        ``[TOOL_CALLS]`` first: a marker can only sit inside a JSON string of a value
        that decodes, and ``_GroupReader._decode`` widens its window over such markers
        to the same value. So the next marker is searched for only after the JSON, and
        a long argument is read once (by the decoder) rather than twice."""
        start = text.find(_CALLS)
        if start < 0 or self.think_prefilled:
            return None
        head = text[:start]
        if head and (_THINK_OPEN in head or "<think>" in head):
            return None
        outside = [head]
        calls: list[QuickCall] = []
        size = len(text)
        while start < size:
            body = start + len(_CALLS)
            # The name runs to the first '{' or '['; a '[' must open [ARGS] (any other:
            # [CALL_ID], [TOOL_CALLS], a '[' in the name, is left to the general path).
            at = text.find("{", body)
            if at < 0:
                at = size
            end = text.find("[", body, at)
            if end < 0:
                end = at
            elif text.startswith(_ARGS, end):
                at = end + len(_ARGS)
            else:
                return None
            name = text[body:end].strip()
            # No name: the JSON form (or a nameless call).
            if not name or len(name.split()) != 1:
                return None
            found = object_prefix(text, at, size)
            if found is None:
                return None
            arguments, end = found
            raw = text[start:end]
            calls.append((name, arguments, raw, mistral_call_id(len(calls), name, raw)))
            stop = text.find(_CALLS, end)
            if stop < 0:
                stop = size
            after = text[end:stop]
            if after:
                if _THINK_OPEN in after or "<think>" in after:
                    return None
                outside.append(after)
            start = stop
        return quick_result("".join(outside), calls)

    # rendering ------------------------------------------------------------------------
    def _reasoning_stops(self) -> tuple[str, ...]:
        # A prefilled reasoning ends at either closing tag.
        return _THINK_ENDS if self.think_prefilled else (_THINK_CLOSE,)

    def _render_body(self, content: str, calls: list[ToolCall]) -> str:
        return content + self._render_calls(calls)

    def _render_calls(self, calls: list[ToolCall]) -> str:
        if self.style == "array":
            items = []
            for call in calls:
                name = escape_markers(json.dumps(call.function.name, ensure_ascii=False), _MARKUP)
                item = f'{{"name": {name}, "arguments": {_arguments_json(call)}'
                if call.id:
                    item += f', "id": {escape_markers(json.dumps(call.id), _MARKUP)}'
                items.append(item + "}")
            return f"{_CALLS} [{', '.join(items)}]"
        parts = []
        for call in calls:
            _check_free_text("function name", call.function.name)
            head = _CALLS + call.function.name
            if self.style == "call_id" and call.id:
                _check_free_text("call id", call.id)
                head += _CALL_ID + call.id
            parts.append(f"{head}{_ARGS}{_arguments_json(call)}")
        return "".join(parts)
