"""Kimi K2 tool calls (Moonshot AI: Kimi-K2-Instruct, Kimi-K2-Thinking and their updates).

Format (the chat template's ``render_toolcalls`` macro writes it with no whitespace; it is
wrapped here for reading)::

    <think>reasoning</think>Some text<|tool_calls_section_begin|>
    <|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}
    <|tool_call_end|><|tool_calls_section_end|>

Every call of a turn sits in one section. A call is an id, ``<|tool_call_argument_begin|>``
and a JSON object of arguments. The id is ``functions.{name}:{index}`` (``{name}:{index}``
is accepted too); the function name is the id without the ``functions.`` prefix and the
final ``:{index}``, so names holding dots or colons survive (vLLM keeps only the text after
the last dot, Moonshot's guide only the segment after the first dot; all three agree on
``functions.get_weather:0``). Parsed calls keep the id as written (``carries_ids``).

What the parser accepts besides the template's exact spelling:

* whitespace around ids, arguments and markers, and between calls;
* the singular ``<|tool_call_section_begin|>`` / ``<|tool_call_section_end|>`` variants
  vLLM accepts, in any combination with the plural ones;
* a call outside any section (``<|tool_call_begin|>`` on its own);
* a section opened inside ``<think>`` (Kimi-K2-Thinking sometimes calls tools without
  closing its reasoning): the calls are read and the reasoning goes on after the section;
  ``</think>`` also ends a section left open;
* a section or final call cut off by the end of the text: complete calls are kept, and a
  final call whose arguments are complete JSON is kept without its ``<|tool_call_end|>``;
* a bare counter id (``0``) as newer vLLM does, when ``tools`` are given and they tell
  which function is meant: the only tool offered, else the only tool whose parameters
  include every argument given.

Kimi-K2-Thinking output that begins inside its reasoning without a ``<think>`` (vLLM's
Kimi reasoning parser reads the text before ``</think>`` as reasoning either way) needs
``think_prefilled=True``.

Malformed pieces stay in the content (or raise in strict mode), each on its own: a call
with an id not of the form above, no ``<|tool_call_argument_begin|>``, arguments that are
not a JSON object, or no ``<|tool_call_end|>`` before the next call or the section end; text
inside a section outside any call; an empty section.

Rendering follows the chat template: content, then the section with each call's arguments
string as given (markers inside strings are ``\\u``-escaped), reasoning as
``<think>{reasoning}</think>`` before the content (Kimi-K2-Thinking). A call keeps its id
when the id is ``functions.{name}:{n}`` or ``{name}:{n}`` for its own name; any other id
(an OpenAI ``call_...`` id, a bare counter) is replaced by ``functions.{name}:{i}``, ``i``
being the call's position in the message.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hermes_parsers._api import register_parser
from hermes_parsers._arguments import decode_json_prefix, load_json, object_at
from hermes_parsers._base import ToolCallParser
from hermes_parsers._errors import RenderError
from hermes_parsers._quick import QuickCall, quick_result, quick_section
from hermes_parsers._result import ParseResult
from hermes_parsers._scanner import Scanner
from hermes_parsers._segments import Content, Malformed, RawCall, Reasoning, Segment
from hermes_parsers._tool_call import ToolCall
from hermes_parsers.formats._json_calls import escape_markers

__all__ = ["KimiK2Parser"]

SECTION_BEGIN = "<|tool_calls_section_begin|>"
SECTION_END = "<|tool_calls_section_end|>"
SECTION_BEGIN_SINGULAR = "<|tool_call_section_begin|>"
SECTION_END_SINGULAR = "<|tool_call_section_end|>"
CALL_BEGIN = "<|tool_call_begin|>"
ARGUMENT_BEGIN = "<|tool_call_argument_begin|>"
CALL_END = "<|tool_call_end|>"
# A call's markers and what both start with, for ``quick_section``.
_CALL_MARKERS = (CALL_BEGIN, CALL_END, "<|tool_call_")
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

_SECTION_BEGINS = (SECTION_BEGIN, SECTION_BEGIN_SINGULAR)
_SECTION_ENDS = (SECTION_END, SECTION_END_SINGULAR)
_ALL_MARKERS = (
    *_SECTION_BEGINS,
    *_SECTION_ENDS,
    CALL_BEGIN,
    ARGUMENT_BEGIN,
    CALL_END,
    THINK_OPEN,
    THINK_CLOSE,
)
_ID_PREFIX = "functions."


def split_call_id(call_id: str) -> tuple[str, str] | None:
    """``(name, index)`` from ``functions.{name}:{index}`` or ``{name}:{index}``, else None.

    The index is the ASCII digits after the last colon; the name may be empty.
    """
    head, colon, index = call_id.rpartition(":")
    if not colon or not index.isascii() or not index.isdigit():
        return None
    return head.removeprefix(_ID_PREFIX), index


class _State(enum.Enum):
    CONTENT = "content"
    THINK = "think"
    SECTION = "section"
    CALL = "call"


def _watch_table() -> dict[tuple[_State, bool, bool], tuple[str, ...]]:
    """The markers each state looks for, by (state, inside reasoning, inside a section).

    A section or call opened inside ``<think>`` also stops at ``</think>``; a call outside
    any section does not stop at a section end.
    """
    table: dict[tuple[_State, bool, bool], tuple[str, ...]] = {}
    for in_think in (False, True):
        close = (THINK_CLOSE,) if in_think else ()
        for in_section in (False, True):
            ends = _SECTION_ENDS if in_section else ()
            table[_State.CONTENT, in_think, in_section] = (*_SECTION_BEGINS, CALL_BEGIN, THINK_OPEN)
            table[_State.THINK, in_think, in_section] = (*_SECTION_BEGINS, CALL_BEGIN, THINK_CLOSE)
            table[_State.SECTION, in_think, in_section] = (CALL_BEGIN, *_SECTION_ENDS, *close)
            table[_State.CALL, in_think, in_section] = (CALL_END, CALL_BEGIN, *ends, *close)
    return table


_WATCH = _watch_table()


def _pending(text: str, start: int, markers: Sequence[str]) -> int:
    """Length of the suffix of ``text[start:]`` that may still grow into one of ``markers``.

    Every marker starts with ``<`` and holds no other ``<``, so only the suffix from the
    last ``<`` can be a marker's beginning.
    """
    last = text.rfind("<", start)
    if last < 0:
        return 0
    size = len(text) - last
    for marker in markers:
        if size < len(marker) and marker.startswith(text[last:]):
            return size
    return 0


#: Resolves a call id and its arguments' JSON text to a function name (None: cannot).
NameResolver = Callable[[str, str], str | None]


class _KimiScanner:
    """Incremental scanner for the Kimi K2 markup (see the module docstring).

    A state machine over content, reasoning, a tool-call section and a call. Each feed
    searches only the new text plus at most one marker's length held back; each marker's
    next occurrence is remembered within a feed, so time is linear in the input.
    """

    def __init__(self, resolve: NameResolver, *, in_reasoning: bool) -> None:
        self._resolve = resolve
        self._outer = _State.THINK if in_reasoning else _State.CONTENT
        self._state = self._outer
        self._carry = ""  # text that may still become a marker
        self._pos = 0  # absolute offset of the first character of _carry
        self._in_section = False
        self._section_marker = ""
        self._section_start = 0
        self._section_calls = 0
        self._gap: list[str] = []  # text between markers inside a section
        self._gap_start = 0
        self._gap_junk = False
        self._body: list[str] = []  # the current call, after <|tool_call_begin|>
        self._call_start = 0

    # the Scanner protocol ---------------------------------------------------------
    def feed(self, text: str) -> list[Segment]:
        out: list[Segment] = []
        if self._state is _State.CONTENT and not self._carry and "<" not in text:
            # Every marker starts with "<": a chunk without one is all content.
            if text:
                out.append(Content(text))
                self._pos += len(text)
            return out
        s = self._carry + text
        base = self._pos
        start = 0
        known: dict[str, int] = {}  # marker -> next index in s (-1: none left)
        while True:
            watch = self._watch()
            found, marker = len(s), ""
            for candidate in watch:
                index = known.get(candidate, -2)
                if index == -2 or 0 <= index < start:
                    index = s.find(candidate, start)
                    known[candidate] = index
                if 0 <= index < found:
                    found, marker = index, candidate
            if not marker:
                end = len(s) - _pending(s, start, watch)
                self._take(s[start:end], base + start, out)
                self._carry = s[end:]
                self._pos = base + end
                return out
            self._take(s[start:found], base + start, out)
            self._on_marker(marker, base + found, out)
            start = found + len(marker)

    def finish(self) -> list[Segment]:
        out: list[Segment] = []
        self._take(self._carry, self._pos, out)
        self._pos += len(self._carry)
        self._carry = ""
        if self._state is _State.CALL:
            self._end_call(out, terminated=False)
        if self._state is _State.SECTION:
            gap = "".join(self._gap)
            if self._section_calls == 0:
                out.append(
                    Malformed(
                        self._section_marker + gap,
                        "tool-call section cut off before any tool call",
                        self._section_start,
                    )
                )
            elif self._gap_junk:
                out.append(self._outer_text(gap))
            self._state = self._outer
        return out

    # states -----------------------------------------------------------------------
    def _watch(self) -> tuple[str, ...]:
        return _WATCH[self._state, self._outer is _State.THINK, self._in_section]

    def _outer_text(self, text: str) -> Segment:
        return Reasoning(text) if self._outer is _State.THINK else Content(text)

    def _take(self, text: str, at: int, out: list[Segment]) -> None:
        """Text between markers, in the current state."""
        if not text:
            return
        if self._state is _State.CONTENT:
            out.append(Content(text))
        elif self._state is _State.THINK:
            out.append(Reasoning(text))
        elif self._state is _State.CALL:
            self._body.append(text)
        else:
            if not self._gap:
                self._gap_start = at
            self._gap.append(text)
            if not self._gap_junk and not text.isspace():
                self._gap_junk = True

    def _on_marker(self, marker: str, at: int, out: list[Segment]) -> None:
        state = self._state
        if state is _State.CONTENT or state is _State.THINK:
            if marker in (THINK_OPEN, THINK_CLOSE):
                self._state = self._outer = _State.THINK if marker == THINK_OPEN else _State.CONTENT
            elif marker == CALL_BEGIN:
                self._in_section = False
                self._begin_call(at)
            else:
                self._in_section = True
                self._section_marker = marker
                self._section_start = at
                self._section_calls = 0
                self._state = _State.SECTION
            return
        if state is _State.CALL:
            if marker == CALL_END:
                self._end_call(out, terminated=True)
                return
            out.append(
                Malformed(
                    CALL_BEGIN + "".join(self._body),
                    f"tool call not closed by {CALL_END!r}",
                    self._call_start,
                )
            )
            self._body = []
            if marker == CALL_BEGIN:
                self._begin_call(at)
                return
            if not self._in_section:  # </think> after a call outside any section
                self._state = self._outer = _State.CONTENT
                return
            self._state = _State.SECTION
        # In a section: a call begins, or the section ends (its end marker or </think>).
        gap = self._flush_gap(out)
        if marker == CALL_BEGIN:
            self._begin_call(at)
            return
        if self._section_calls == 0 and not gap.strip():
            closing = marker if marker in _SECTION_ENDS else ""
            out.append(
                Malformed(
                    self._section_marker + gap + closing,
                    "tool-call section holds no tool call",
                    self._section_start,
                )
            )
        self._in_section = False
        if marker == THINK_CLOSE:
            self._outer = _State.CONTENT
        self._state = self._outer

    def _flush_gap(self, out: list[Segment]) -> str:
        """End the text between two markers in a section; anything but space is malformed."""
        gap = "".join(self._gap)
        if self._gap_junk:
            lead = len(gap) - len(gap.lstrip())
            out.append(
                Malformed(
                    gap[lead:],
                    "text inside the tool-call section, outside any tool call",
                    self._gap_start + lead,
                )
            )
        self._gap = []
        self._gap_junk = False
        return gap

    def _begin_call(self, at: int) -> None:
        self._state = _State.CALL
        self._body = []
        self._call_start = at
        if self._in_section:
            self._section_calls += 1

    def _end_call(self, out: list[Segment], *, terminated: bool) -> None:
        body = "".join(self._body)
        self._body = []
        self._state = _State.SECTION if self._in_section else self._outer
        out.extend(self._read_call(body, terminated=terminated))

    def _read_call(self, body: str, *, terminated: bool) -> list[Segment]:
        """One call's body: ``{id}<|tool_call_argument_begin|>{arguments}``."""
        offset = self._call_start
        raw = CALL_BEGIN + body + (CALL_END if terminated else "")
        split = body.find(ARGUMENT_BEGIN)
        if split < 0:
            reason = (
                f"tool call has no {ARGUMENT_BEGIN!r}"
                if terminated
                else "tool call cut off before its arguments"
            )
            return [Malformed(raw, reason, offset)]
        call_id = body[:split].strip()
        arguments_at = split + len(ARGUMENT_BEGIN)
        tail = ""
        if terminated:
            arguments = body[arguments_at:].strip()
        else:
            lead = arguments_at + len(body[arguments_at:]) - len(body[arguments_at:].lstrip())
            if lead == len(body):
                return [Malformed(raw, "tool call cut off before its arguments", offset)]
            try:
                _, end = decode_json_prefix(body, lead)
            except ValueError as exc:
                return [Malformed(raw, f"tool call cut off inside its arguments ({exc})", offset)]
            arguments, tail = body[lead:end], body[end:]
            raw = CALL_BEGIN + body[:end]
        name = self._resolve(call_id, arguments)
        if name is None:
            reason = (
                f"tool call id {call_id!r} names no function, and the tools offered do not "
                "tell which"
                if call_id.isascii() and call_id.isdigit()
                else f"tool call id {call_id!r} is not of the form functions.NAME:INDEX"
            )
            return [Malformed(raw, reason, offset)]
        segments: list[Segment] = [RawCall(name, arguments, raw, offset, call_id or None)]
        if tail:
            segments.append(self._outer_text(tail))
        return segments


def _tool_parameters(tools: Sequence[Mapping[str, Any]]) -> dict[str, frozenset[str]]:
    """Declared parameter names by tool name, from OpenAI ``tools`` entries."""
    found: dict[str, frozenset[str]] = {}
    for tool in tools:
        function = tool.get("function", tool)
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            continue
        parameters = function.get("parameters")
        props = parameters.get("properties") if isinstance(parameters, Mapping) else None
        names = (
            frozenset(k for k in props if isinstance(k, str))
            if isinstance(props, Mapping)
            else frozenset()
        )
        found[function["name"]] = names
    return found


@register_parser("kimi_k2")
class KimiK2Parser(ToolCallParser):
    """Kimi K2 ``<|tool_calls_section_begin|>...<|tool_calls_section_end|>`` sections."""

    markers = (SECTION_BEGIN, SECTION_BEGIN_SINGULAR, CALL_BEGIN)
    vocabulary = _ALL_MARKERS
    # Kimi-K2-Thinking writes <think>{reasoning}</think> straight before the content, and
    # reads sections and calls inside reasoning.
    reasoning_padding = ""
    after_reasoning = ""
    reasoning_forbidden = (*_SECTION_BEGINS, CALL_BEGIN)
    carries_ids = True

    def __init__(
        self,
        *,
        strict: bool = False,
        tools: Sequence[Mapping[str, Any]] | None = None,
        think_prefilled: bool = False,
    ) -> None:
        super().__init__(strict=strict, tools=tools, think_prefilled=think_prefilled)
        self._tool_parameters = _tool_parameters(tools or ())

    # parsing ------------------------------------------------------------------------
    def _openers(self) -> tuple[str, ...]:
        return _WATCH[_State.CONTENT, False, False]

    def _scanner(self) -> Scanner:
        return _KimiScanner(self._function_name, in_reasoning=self.think_prefilled)

    def _parse_quick(self, text: str) -> ParseResult | None:
        """One closed ``<|tool_calls_section_begin|>`` section of well-formed calls,
        separated by whitespace only, with no markup before or after it (no other
        section or call marker, no ``<think>``): what ``_KimiScanner`` reads without a
        ``Malformed``. Inside the section it looks for the same markers as here."""
        begin = text.find(SECTION_BEGIN)
        if begin < 0 or self.think_prefilled:
            return None
        inner = begin + len(SECTION_BEGIN)
        close = text.find(SECTION_END, inner)
        if close < 0 or text.find(SECTION_END_SINGULAR, inner, close) >= 0:
            return None
        head = text[:begin]
        tail = text[close + len(SECTION_END) :]
        # Every marker starts with "<|tool_call"; outside the section only "<think>",
        # the section and call openers are read, so this refuses a little more.
        if (head and ("<|tool_call" in head or THINK_OPEN in head)) or (
            tail and ("<|tool_call" in tail or THINK_OPEN in tail)
        ):
            return None
        calls = quick_section(text, inner, close, _CALL_MARKERS, self._quick_call)
        return None if calls is None else quick_result(head + tail, calls)

    def _quick_call(self, text: str, index: int, start: int, at: int, end: int) -> QuickCall | None:
        """The call ``text[at:end]`` between its markers (its begin marker at ``start``):
        an id naming a function, then arguments that are empty or a JSON object."""
        del index  # the call carries its own id
        split = text.find(ARGUMENT_BEGIN, at, end)
        if split < 0:
            return None
        call_id = text[at:split].strip()
        arguments_text = text[split + len(ARGUMENT_BEGIN) : end].strip()
        name = self._function_name(call_id, arguments_text)
        if name is None or not call_id:
            return None
        if arguments_text:
            arguments = object_at(arguments_text, 0, len(arguments_text))
            if arguments is None:
                return None
        else:
            arguments = {}
        return (name, arguments, text[start : end + len(CALL_END)], call_id)

    def _function_name(self, call_id: str, arguments: str) -> str | None:
        """The function a call id names; a bare counter is resolved from the tools."""
        split = split_call_id(call_id)
        if split is not None:
            return split[0]
        if not (call_id.isascii() and call_id.isdigit()) or not self._tool_parameters:
            return None
        if len(self._tool_parameters) == 1:
            return next(iter(self._tool_parameters))
        try:
            value = load_json(arguments) if arguments.strip() else {}
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        keys = set(value)
        fits = [name for name, params in self._tool_parameters.items() if keys <= params]
        return fits[0] if len(fits) == 1 else None

    # rendering ----------------------------------------------------------------------
    def _render_body(self, content: str, calls: list[ToolCall]) -> str:
        return content + self._render_calls(calls)

    def _render_calls(self, calls: list[ToolCall]) -> str:
        parts = [SECTION_BEGIN]
        for index, call in enumerate(calls):
            name = call.function.name
            if not name or name != name.strip() or any(m in name for m in _ALL_MARKERS):
                raise RenderError(
                    f"{self.name}: function name {name!r} cannot be written in a call id",
                    kind="call",
                )
            split = split_call_id(call.id)
            call_id = (
                call.id if split is not None and split[0] == name else f"{_ID_PREFIX}{name}:{index}"
            )
            try:
                value = load_json(call.function.arguments)
            except ValueError as exc:
                raise RenderError(
                    f"{self.name}: arguments of {name!r} are not valid JSON ({exc})",
                    kind="call",
                ) from None
            if not isinstance(value, dict):
                raise RenderError(
                    f"{self.name}: arguments of {name!r} must be a JSON object", kind="call"
                )
            arguments = escape_markers(call.function.arguments.strip(), _ALL_MARKERS)
            parts.append(f"{CALL_BEGIN}{call_id}{ARGUMENT_BEGIN}{arguments}{CALL_END}")
        parts.append(SECTION_END)
        return "".join(parts)
