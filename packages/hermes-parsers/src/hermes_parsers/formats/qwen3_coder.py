"""Qwen3-Coder tool calls: XML-style functions and parameters.

Used by Qwen3-Coder (480B-A35B, 30B-A3B, Next) and the later Qwen models that adopted its
format (Qwen3.5 and after). Format, as the chat template writes an assistant turn::

    I'll look that up.

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    <parameter=days>
    3
    </parameter>
    </function>
    </tool_call>
    <tool_call>
    <function=get_time>
    </function>
    </tool_call>

Reading a value: the text between ``<parameter=NAME>`` and ``</parameter>`` loses one
leading and one trailing newline (the template writes them around every value); the rest
is kept exactly (as vLLM and SGLang do). With ``tools`` schemas the text is converted to
the parameter's declared type (``schema.coerce_value``). Without a schema (no ``tools``,
or a parameter the schema does not declare) the value is decoded the way hermes-agent and
SGLang's original detector do: stripped text that is valid JSON becomes that value; the
Python constants ``True``/``False``/``None`` (the template writes booleans and null with
Jinja's ``| string``) become ``true``/``false``/``null``; a Python-literal list or dict
becomes an array or object; anything else stays the string, unchanged. (vLLM instead keeps
undeclared parameters as strings; it always has the request's schemas.)

Leniently recovered, as vLLM, SGLang and hermes-agent do (``strict=True`` raises
``ParseError`` instead): a ``<parameter=...>`` whose ``</parameter>`` is missing (the value
then ends at the next ``<parameter=`` or ``</function>``); a ``</function>`` missing before
``</tool_call>``; a ``</tool_call>`` missing between two calls; stray text inside
``<tool_call>`` (kept as content); a ``<function=...>`` block with no ``<tool_call>``
around it (a ``</tool_call>`` after it is still consumed). Well-formed in both modes:
several ``<function=...>`` blocks in one ``<tool_call>``; a last ``<tool_call>`` whose
``</tool_call>`` is missing (generation stopped at it) if its function is complete; a
``<tool_call>`` holding a Hermes JSON object (``{"name": ..., "arguments": ...}``), since
Qwen instruct models share the tag. Malformed (kept as content when lenient): a call cut
off by the end of the text before its ``</function>`` (its last value may be partial), a
function or parameter name not closed by ``>``, an empty ``<tool_call>``.

Writing (``render``) follows the Qwen3-Coder chat template (as shipped in vLLM's
``examples/tool_chat_template_qwen3coder.jinja``) byte for byte: content, a blank line,
then one ``<tool_call>`` block per call, separated by newlines; strings are written as they
are, objects and arrays with ``tojson``, other scalars with ``| string`` (``True``,
``None``, ``2.5``). A value whose template spelling would read back differently (without a
schema, a string that looks like JSON or a Python constant: ``"42"``, ``"true"``, ``"None"``)
or would contain this format's markup (``</parameter>``, ``<parameter=``, ``</function>``,
``</tool_call>``) is written as JSON instead (``"42"``, with the markup's ``<`` escaped as
``\\u003c``), which reads back exactly without a schema. If even that does not read back
(a parameter declared as a string whose value contains ``</parameter>``), or a name holds
``<``, ``>``, a newline or surrounding spaces, ``render`` raises ``RenderError`` (a ``ValueError``).
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from hermes_parsers._api import register_parser
from hermes_parsers._arguments import _LONG_STRING
from hermes_parsers._base import ToolCallParser
from hermes_parsers._errors import RenderError
from hermes_parsers._quick import Block, quick_blocks
from hermes_parsers._result import ParseResult
from hermes_parsers._scanner import Region
from hermes_parsers._segments import Content, Malformed, RawCall, Segment
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
from hermes_parsers.formats._json_calls import read_json_object_body
from hermes_parsers.formats._xml_params import (
    _UNTYPED_STARTS,
    MarkerFinder,
    read_untyped,
    read_value,
    skip_space,
    spell_value,
    template_text,
    trim_newlines,
)

__all__ = ["Qwen3CoderParser"]

_new = object.__new__
_crc32 = zlib.crc32
_quick_result = ParseResult._quick

_CALL_START = "<tool_call>"
_CALL_END = "</tool_call>"
_FUNC_START = "<function="
_FUNC_END = "</function>"
_THINK_START = "<think>"
_PARAM_START = "<parameter="
_PARAM_END = "</parameter>"
_NAME_STOPS = (">", "<", "\n")
_VALUE_STOPS = (_PARAM_END, _PARAM_START, _FUNC_END)
_FUNC_STOPS = (_PARAM_START, _FUNC_END)
_OPENERS = (_FUNC_START, _CALL_START)
# A written value must not contain these: each would end the value, call or block early.
_FORBIDDEN = (_PARAM_END, _PARAM_START, _FUNC_END, _CALL_END)

# The well-formed common case, read with these patterns and ``str.find``
# (``_read_simple``): one function, names closed by '>' (never '<' or a newline first),
# every value closed by its own </parameter>. Python's ``\s`` is ``str.isspace``, as
# ``skip_space`` uses.
_SIMPLE_FUNCTION = re.compile(r"\s*<function=([^<>\n]*)>")
# A whole parameter, its value running to the first </parameter> and holding neither
# <parameter= nor </function> (a value that does is not simple); the value's leading
# newline is not in the group.
_SIMPLE_PARAMETER = re.compile(
    r"\s*<parameter=([^<>\n]*)>\n?"
    r"([^<]*+(?:<(?!/parameter>|parameter=|/function>)[^<]*+)*+)</parameter>"
)
_SIMPLE_END = re.compile(r"\s*</function>\s*\Z")


_AtEnd = Literal["implicit", "truncated"]


@dataclass(slots=True)
class _Item:
    """One piece of a region body: a call, a broken function, or stray text/markup."""

    kind: Literal["call", "broken", "text"]
    start: int
    end: int
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    #: What was wrong (a broken item's reason, or what a call/text was recovered from).
    problem: str = ""
    #: Where the problem is, as a position in the body.
    at: int = -1

    def flag(self, problem: str, at: int) -> None:
        if not self.problem:
            self.problem, self.at = problem, at


def _snippet(text: str, limit: int = 30) -> str:
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")


@register_parser("qwen3_coder")
class Qwen3CoderParser(ToolCallParser):
    """``<tool_call><function=NAME><parameter=KEY>value</parameter></function></tool_call>``.

    Values are untyped text: pass ``tools`` to convert them to the declared types (see the
    module docstring for the rule without schemas).
    """

    markers = (_CALL_START, _FUNC_START)
    vocabulary = (*_FORBIDDEN, _CALL_START, _FUNC_START, "<think>", "</think>")

    def _call_regions(self) -> list[Region]:
        return [
            Region(_CALL_START, _CALL_END, self._read_tool_call, retry_nested=False),
            # A function block the model forgot to wrap; it runs to the </tool_call> the
            # model usually still writes (or to the end of the text).
            Region(_FUNC_START, _CALL_END, self._read_bare_function, retry_nested=False),
        ]

    # reading ----------------------------------------------------------------------
    def _read_tool_call(self, body: str, raw: str, offset: int, terminated: bool) -> list[Segment]:
        if body.lstrip().startswith("{"):
            try:
                return read_json_object_body(body, raw, offset, terminated)
            except RecursionError:
                return [Malformed(raw, "tool call JSON is nested too deeply", offset)]
        if terminated:
            simple = self._read_simple(body, raw, offset)
            if simple is not None:
                return simple
        finder = MarkerFinder(body)
        items = self._read_items(finder, 0, terminated)
        return self._segments(items, body, raw, offset, terminated)

    def _read_simple(self, body: str, raw: str, offset: int) -> list[Segment] | None:
        """The segments of a terminated ``<tool_call>`` body holding one well-formed
        function, or ``None`` when it is anything else (then the general reader, which
        gives the same result for what this accepts, takes over)."""
        found = self._simple_call(body)
        if found is None:
            return None
        origin = offset - (len(raw) - len(body) - len(_CALL_END))
        return [RawCall(found[0], found[1], raw, origin)]

    def _parse_quick(self, text: str) -> ParseResult | None:
        """Closed ``<tool_call>`` blocks that ``_simple_call`` reads, and no other markup
        (``<function=``, ``<think>``) outside them: what the scanner and
        ``_read_tool_call`` give without a ``Malformed`` (inside a block the scanner looks
        for nothing but ``</tool_call>``, as here)."""
        if self.think_prefilled:
            return None
        if self.schemas:  # typed values: each read through the schemas
            return quick_blocks(
                text, (_CALL_START, _CALL_END), (_FUNC_START, _THINK_START), self._quick_block
            )
        return self._parse_quick_untyped(text)

    def _parse_quick_untyped(self, text: str) -> ParseResult | None:
        """``quick_blocks`` with ``_simple_call`` (untyped values) and ``quick_result``
        inlined: the same checks in the same order, without a call and a tuple per step
        (what the parse of a turn of small calls mostly costs besides the regex matches)."""
        start = text.find(_CALL_START)
        if start < 0:
            return None
        parameter = _SIMPLE_PARAMETER.match
        outside: list[str] = []
        calls: list[ToolCall] = []
        position = 0
        while start >= 0:
            if start != position:
                gap = text[position:start]
                if _FUNC_START in gap or _THINK_START in gap:
                    return None
                outside.append(gap)
            at = start + len(_CALL_START)
            end = text.find(_CALL_END, at)
            if end < 0:
                return None
            head = _SIMPLE_FUNCTION.match(text, at, end)
            if head is None:
                return None
            name = head[1].strip()
            if not name:
                return None
            arguments: dict[str, Any] = {}
            pos = head.end()
            while (param := parameter(text, pos, end)) is not None:
                key = param[1].strip()
                if not key:
                    return None
                # trim_newlines of the value: the pattern took the leading newline.
                value = param[2]
                if value[-1:] == "\n":
                    value = value[:-1]
                if (first := value[:1]) not in _UNTYPED_STARTS and first.strip():
                    arguments[key] = value  # prose, as read_untyped returns it
                else:
                    arguments[key] = read_untyped(value)
                pos = param.end()
            if _SIMPLE_END.match(text, pos, end) is None:
                return None
            position = end + len(_CALL_END)
            try:
                data = text[start:position].encode()  # the id's checksum covers the call's UTF-8
            except UnicodeEncodeError:  # a lone surrogate
                return None
            function = _new(FunctionCall)
            _SET_NAME(function, name)
            _SET_TEXT(function, UNWRITTEN_SHORT if len(data) < _LONG_STRING else None)
            _SET_VALUE(function, arguments)
            call = _new(ToolCall)
            _SET_ID(call, "call_%d_%08x" % (len(calls), _crc32(data)))  # noqa: UP031
            _SET_FUNCTION(call, function)
            _SET_TYPE(call, "function")
            calls.append(call)
            start = text.find(_CALL_START, position)
        tail = text[position:]
        if _FUNC_START in tail or _THINK_START in tail:
            return None
        outside.append(tail)
        return _quick_result("".join(outside).strip() or None, calls)

    def _quick_block(self, text: str, at: int, end: int) -> Block:
        """The call ``_simple_call`` reads in ``text[at:end]``, else ``None``."""
        found = self._simple_call(text, at, end)
        return None if found is None else (found[0], found[1], None)

    def _simple_call(
        self, text: str, begin: int = 0, stop: int | None = None
    ) -> tuple[str, dict[str, Any]] | None:
        """``(name, arguments)`` of a ``<tool_call>`` body (``text[begin:stop]``) holding
        one well-formed function (see ``_read_simple``), else ``None``."""
        if stop is None:
            stop = len(text)
        head = _SIMPLE_FUNCTION.match(text, begin, stop)
        if head is None:
            return None
        name = head[1].strip()
        if not name:
            return None
        arguments: dict[str, Any] = {}
        untyped = not self.schemas  # then _value is read_untyped
        parameter = _SIMPLE_PARAMETER.match
        pos = head.end()
        while (param := parameter(text, pos, stop)) is not None:
            key = param[1].strip()
            if not key:
                return None
            # trim_newlines of the value: the pattern took the leading newline.
            value = param[2]
            if value[-1:] == "\n":
                value = value[:-1]
            if not untyped:
                arguments[key] = self._value(name, key, value)
            elif (first := value[:1]) not in _UNTYPED_STARTS and first.strip():
                arguments[key] = value  # prose, as read_untyped returns it
            else:
                arguments[key] = read_untyped(value)
            pos = param.end()
        if _SIMPLE_END.match(text, pos, stop) is None:
            return None
        return name, arguments

    def _read_bare_function(
        self, body: str, raw: str, offset: int, terminated: bool
    ) -> list[Segment]:
        finder = MarkerFinder(body)
        head, pos = self._read_function(finder, 0, 0, "implicit" if terminated else "truncated")
        if head.kind == "call":
            # Reported first, at the <function= marker itself (just before the body).
            head.problem = f"<function={head.name}> is not inside {_CALL_START}"
            head.at = -len(_FUNC_START)
        items = [head, *self._read_items(finder, pos, terminated)]
        return self._segments(items, body, raw, offset, terminated)

    def _read_items(self, finder: MarkerFinder, pos: int, terminated: bool) -> list[_Item]:
        """Functions, stray openers and stray text in a region body, from ``pos``."""
        text = finder.text
        at_end: _AtEnd = "implicit" if terminated else "truncated"
        items: list[_Item] = []
        while True:
            pos = skip_space(text, pos)
            if pos >= len(text):
                return items
            if text.startswith(_FUNC_START, pos):
                item, end = self._read_function(finder, pos, pos + len(_FUNC_START), at_end)
                items.append(item)
                pos = max(end, pos + len(_FUNC_START))  # always move on
            elif text.startswith(_CALL_START, pos):
                item = _Item("text", pos, pos + len(_CALL_START))
                item.flag(f"{_CALL_START} inside {_CALL_START} (a {_CALL_END} is missing)", pos)
                items.append(item)
                pos = item.end
            else:
                stop, _ = finder.first(_OPENERS, pos)
                end = stop if stop >= 0 else len(text)
                item = _Item("text", pos, end, text=text[pos:end])
                # Text after the last call of a block the text ended in is plain content.
                trailing = stop < 0 and not terminated and any(i.kind == "call" for i in items)
                if not trailing:
                    item.flag(f"unexpected text {_snippet(item.text)} inside {_CALL_START}", pos)
                items.append(item)
                pos = end

    def _read_function(
        self, finder: MarkerFinder, start: int, pos: int, at_end: _AtEnd
    ) -> tuple[_Item, int]:
        """Read a function whose name starts at ``pos`` (just after ``<function=``)."""
        text = finder.text
        stop, _ = finder.first(_NAME_STOPS, pos)
        if stop < 0 or text[stop] != ">":
            where = stop if stop >= 0 else len(text)
            return self._broken(
                finder,
                start,
                pos,
                f"function name {_snippet(text[pos:where])} is not closed by '>'",
            )
        item = _Item("call", start, stop + 1, name=text[pos:stop].strip())
        pos = stop + 1
        while True:
            pos = skip_space(text, pos)
            if pos >= len(text):
                if at_end == "truncated":
                    # No </function> follows (this read would have stopped at it), so no
                    # function after this one can be a call either: the broken item runs to
                    # the end, and the rest is not read again function by function (which
                    # made repeated unclosed functions quadratic).
                    broken = _Item("broken", start, len(text))
                    broken.flag(f"the text ended inside <function={item.name}>", start)
                    return broken, len(text)
                if at_end == "implicit":
                    item.flag(f"<function={item.name}> is not closed by {_FUNC_END}", pos)
                break
            if text.startswith(_FUNC_END, pos):
                pos += len(_FUNC_END)
                break
            if not text.startswith(_PARAM_START, pos):
                stop, _ = finder.first(_FUNC_STOPS, pos)
                end = stop if stop >= 0 else len(text)
                item.flag(
                    f"unexpected text {_snippet(text[pos:end])} inside <function={item.name}>",
                    pos,
                )
                pos = end
                continue
            name_at = pos + len(_PARAM_START)
            stop, _ = finder.first(_NAME_STOPS, name_at)
            key = text[name_at:stop].strip() if stop >= 0 else ""
            if stop < 0 or text[stop] != ">" or not key:
                where = stop if stop >= 0 else len(text)
                return self._broken(
                    finder,
                    start,
                    pos,
                    f"parameter name {_snippet(text[name_at:where])} in <function={item.name}> "
                    "is missing or not closed by '>'",
                )
            value_at = stop + 1
            stop, marker = finder.first(_VALUE_STOPS, value_at)
            if stop < 0:
                if at_end == "truncated":
                    # Nothing after can close a value or a function: the rest is this item.
                    broken = _Item("broken", start, len(text))
                    broken.flag(f"the text ended inside <parameter={key}>", pos)
                    return broken, len(text)
                item.flag(f"<parameter={key}> is not closed by {_PARAM_END}", len(text))
                stop = len(text)
            elif marker != _PARAM_END:
                item.flag(f"<parameter={key}> is not closed by {_PARAM_END}", stop)
            item.arguments[key] = self._value(item.name, key, trim_newlines(text[value_at:stop]))
            pos = stop + len(_PARAM_END) if marker == _PARAM_END else stop
        item.end = pos
        return item, pos

    @staticmethod
    def _broken(finder: MarkerFinder, start: int, at: int, reason: str) -> tuple[_Item, int]:
        """A function that cannot be read; it runs to its </function> or the next opener."""
        close = finder.find(_FUNC_END, at)
        opener, _ = finder.first(_OPENERS, max(at, start + 1))  # not its own <function=
        ends = [e for e in (close + len(_FUNC_END) if close >= 0 else -1, opener) if e >= 0]
        end = min(ends) if ends else len(finder.text)
        return _Item("broken", start, end, problem=reason, at=at), end

    def _value(self, function: str, key: str, text: str) -> Any:
        schema = self.schemas.param(function, key) if self.schemas else None
        return read_value(text, schema)

    def _segments(
        self, items: list[_Item], body: str, raw: str, offset: int, terminated: bool
    ) -> list[Segment]:
        """Segments for a region's items; ``offset`` is where ``body`` starts in the text."""
        start_len = len(raw) - len(body) - (len(_CALL_END) if terminated else 0)
        origin = offset - start_len  # where ``raw`` starts in the text

        def malformed(a: int, b: int, reason: str, at: int) -> Malformed:
            # ``raw[a:b]`` becomes content (lenient); strict mode quotes the text at ``at``.
            at = min(max(at, origin + a), origin + b - 1)
            return Malformed(raw[at - origin : b] if self.strict else raw[a:b], reason, at)

        if not any(item.kind == "call" for item in items):
            first = next((item for item in items if item.problem), None)
            if first is None:
                return [
                    malformed(0, len(raw), f"{_CALL_START} holds no <function=NAME> block", origin)
                ]
            return [malformed(0, len(raw), first.problem, offset + first.at)]
        # Each item owns the text up to the next item, so the pieces cover ``raw``.
        bounds = [0] + [item.start + start_len for item in items[1:]] + [len(raw)]
        segments: list[Segment] = []
        for item, a, b in zip(items, bounds, bounds[1:], strict=False):
            if item.kind == "broken" or (item.problem and self.strict):
                segments.append(malformed(a, b, item.problem, offset + item.at))
            elif item.kind == "call":
                segments.append(RawCall(item.name, item.arguments, raw[a:b], origin + a))
            elif item.text:
                segments.append(Content(item.text))
        return segments

    # rendering --------------------------------------------------------------------
    def _render_body(self, content: str, calls: list[ToolCall]) -> str:
        # The template writes content, a newline, then "\n<tool_call>..." per call.
        rendered = self._render_calls(calls)
        return f"{content}\n\n{rendered}" if content else rendered

    def _render_calls(self, calls: list[ToolCall]) -> str:
        return "\n".join(self._render_call(call) for call in calls)

    def _render_call(self, call: ToolCall) -> str:
        name = call.function.name
        self._check_name(name, "function name")
        parts = [f"{_CALL_START}\n{_FUNC_START}{name}>\n"]
        for key, value in json.loads(call.function.arguments).items():
            self._check_name(key, f"parameter name in a call to {name!r}")
            schema = self.schemas.param(name, key) if self.schemas else None
            text = spell_value(
                value,
                partial(read_value, schema=schema),
                template=template_text(value, "python"),
                forbidden=_FORBIDDEN,
            )
            if text is None:
                raise RenderError(
                    f"{self.name}: the value of {key!r} in a call to {name!r} cannot be "
                    f"written so that it reads back unchanged: {value!r:.80}",
                    kind="call",
                )
            parts.append(f"{_PARAM_START}{key}>\n{text}\n{_PARAM_END}\n")
        parts.append(f"{_FUNC_END}\n{_CALL_END}")
        return "".join(parts)

    def _check_name(self, name: str, what: str) -> None:
        if not name or name != name.strip() or any(c in name for c in "<>\n"):
            raise RenderError(
                f"{self.name}: {what} {name!r} cannot be written "
                "(it must be non-empty, without surrounding space, '<', '>' or newlines)",
                kind="call",
            )
