"""Meituan LongCat-Flash tool calls (LongCat-Flash-Chat, LongCat-Flash-Thinking).

Format (the model card's tool-call instructions; several calls are placed one after the
other with nothing between them)::

    Some text
    <longcat_tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </longcat_tool_call><longcat_tool_call>
    {"name": "get_time", "arguments": {}}
    </longcat_tool_call>

This is the Hermes format with its own tag, as vLLM's ``longcat`` parser (a subclass of its
Hermes parser) and SGLang's LongCat detector read it. One block per call; whitespace around
the JSON is optional; a final block whose closing tag is missing (the generation stopped
early) is still read when its JSON is complete.

LongCat-Flash-Lite and some LongCat API models write the body as GLM-style key/value
tags instead of JSON; a body holding ``<longcat_arg_key>`` is read that way::

    <longcat_tool_call>get_weather
    <longcat_arg_key>city</longcat_arg_key>
    <longcat_arg_value>Paris</longcat_arg_value>
    </longcat_tool_call>

Those values are untyped text. With ``tools`` given, a value is converted to its
parameter's declared type; without them (or for an undeclared parameter) it is read as
JSON when it is valid JSON, else kept as text — what LongCat-Flash-Lite's own
``parse_model_response.py`` and mlx-lm's LongCat parser do (vLLM and SGLang have no reader
for this variant).

Reasoning is ``<longcat_think>...</longcat_think>`` (plain ``<think>...</think>`` is read
too). LongCat-Flash-Thinking's template ends the prompt with ``<longcat_think>\\n``, so
``think_prefilled`` means the text starts in reasoning and ``</longcat_think>`` ends it.

Rendering writes the JSON form exactly as above (content, a newline, then the blocks with
no separator), and reasoning as ``<longcat_think>\\n{reasoning}\\n</longcat_think>\\n``.
"""

from __future__ import annotations

from typing import Any

from hermes_parsers._api import register_parser
from hermes_parsers._arguments import load_json
from hermes_parsers._base import ToolCallParser
from hermes_parsers._errors import RenderError
from hermes_parsers._result import ParseResult
from hermes_parsers._scanner import MarkerScanner, Region, RegionSet, Scanner, reasoning_region
from hermes_parsers._segments import Malformed, RawCall, Segment
from hermes_parsers._tool_call import ToolCall
from hermes_parsers.formats._json_calls import (
    dump_call_object,
    quick_json_blocks,
    read_json_object_body,
)
from hermes_parsers.formats._xml_params import read_value, skip_space

__all__ = ["LongcatParser"]

CALL_OPEN = "<longcat_tool_call>"
CALL_CLOSE = "</longcat_tool_call>"
THINK_OPEN = "<longcat_think>"
THINK_CLOSE = "</longcat_think>"
KEY_OPEN = "<longcat_arg_key>"
KEY_CLOSE = "</longcat_arg_key>"
VALUE_OPEN = "<longcat_arg_value>"
VALUE_CLOSE = "</longcat_arg_value>"

_LONGCAT_THINK = reasoning_region(THINK_OPEN, THINK_CLOSE)
_THINK = reasoning_region()
_ESCAPE = (
    CALL_OPEN,
    CALL_CLOSE,
    THINK_OPEN,
    THINK_CLOSE,
    KEY_OPEN,
    KEY_CLOSE,
    VALUE_OPEN,
    VALUE_CLOSE,
    "<think>",
    "</think>",
)


def _tagged(body: str) -> bool:
    """Whether a block's body is the key/value-tag variant (see ``_read_body``)."""
    return KEY_OPEN in body and not body.lstrip().startswith("{")


@register_parser("longcat")
class LongcatParser(ToolCallParser):
    """``<longcat_tool_call>{"name": ..., "arguments": {...}}</longcat_tool_call>`` blocks."""

    markers = (CALL_OPEN, THINK_OPEN)
    vocabulary = _ESCAPE
    reasoning_tags = (THINK_OPEN, THINK_CLOSE)
    after_reasoning = "\n"

    # parsing ------------------------------------------------------------------------
    def _scanner(self) -> Scanner:
        regions = self._regions
        if regions is None:
            regions = self._regions = RegionSet((*self._call_regions(), _LONGCAT_THINK, _THINK))
        return MarkerScanner(regions, open_region=_LONGCAT_THINK if self.think_prefilled else None)

    def _call_regions(self) -> list[Region]:
        return [Region(CALL_OPEN, CALL_CLOSE, self._read_body)]

    def _parse_quick(self, text: str) -> ParseResult | None:
        if self.think_prefilled:
            return None
        return quick_json_blocks(
            text,
            CALL_OPEN,
            CALL_CLOSE,
            (THINK_OPEN, "<think>"),
            strict=self.strict,
            other_body=_tagged,
        )

    def _read_body(self, body: str, raw: str, offset: int, terminated: bool) -> list[Segment]:
        """A block's body: a JSON call object, or the key/value-tag variant."""
        if _tagged(body):
            return [self._read_tagged(body, raw, offset, terminated)]
        return read_json_object_body(body, raw, offset, terminated)

    def _read_tagged(self, body: str, raw: str, offset: int, terminated: bool) -> Segment:
        """``name`` then ``<longcat_arg_key>k</longcat_arg_key><longcat_arg_value>v...`` pairs."""
        if not terminated:
            return Malformed(raw, f"tool call cut off before {CALL_CLOSE!r}", offset)
        first = body.find(KEY_OPEN)
        name = body[:first].strip()
        arguments: dict[str, Any] = {}
        pos = first
        while pos < len(body):
            key_end = body.find(KEY_CLOSE, pos)
            if not body.startswith(KEY_OPEN, pos) or key_end < 0:
                return Malformed(
                    raw, f"expected {KEY_OPEN!r}...{KEY_CLOSE!r} in the tool call", offset
                )
            key = body[pos + len(KEY_OPEN) : key_end].strip()
            pos = skip_space(body, key_end + len(KEY_CLOSE))
            value_end = body.find(VALUE_CLOSE, pos)
            if not body.startswith(VALUE_OPEN, pos) or value_end < 0:
                return Malformed(
                    raw, f"argument {key!r} has no {VALUE_OPEN!r}...{VALUE_CLOSE!r}", offset
                )
            text = body[pos + len(VALUE_OPEN) : value_end]
            arguments[key] = read_value(text, self.schemas.param(name, key))
            pos = skip_space(body, value_end + len(VALUE_CLOSE))
        return RawCall(name, arguments, raw, offset)

    # rendering ----------------------------------------------------------------------
    def _render_calls(self, calls: list[ToolCall]) -> str:
        blocks = []
        for call in calls:
            try:
                value = load_json(call.function.arguments)
            except ValueError as exc:
                raise RenderError(
                    f"{self.name}: arguments of {call.function.name!r} are not valid JSON ({exc})",
                    kind="call",
                ) from None
            if not isinstance(value, dict):
                raise RenderError(
                    f"{self.name}: arguments of {call.function.name!r} must be a JSON object",
                    kind="call",
                )
            blocks.append(f"{CALL_OPEN}\n{dump_call_object(call, _ESCAPE)}\n{CALL_CLOSE}")
        return "".join(blocks)
