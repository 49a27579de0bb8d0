"""Hermes / ChatML tool calls (NousResearch Hermes 2 Pro, Hermes 3, and Qwen 2.5+).

Format::

    Some text
    <tool_call>
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    </tool_call>

One ``<tool_call>`` block per call. A final block whose closing tag is missing (the
generation stopped early) is still read.
"""

from __future__ import annotations

from hermes_parsers._api import register_parser
from hermes_parsers._base import ToolCallParser
from hermes_parsers._result import ParseResult
from hermes_parsers._scanner import Region
from hermes_parsers._tool_call import ToolCall
from hermes_parsers.formats._json_calls import (
    dump_call_object,
    quick_json_blocks,
    read_json_object_body,
)

__all__ = ["HermesParser", "QwenParser"]

_START = "<tool_call>"
_END = "</tool_call>"
_THINK = "<think>"
_ESCAPE = (_START, _END, _THINK, "</think>")


@register_parser("hermes")
class HermesParser(ToolCallParser):
    """``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks."""

    markers = (_START,)
    vocabulary = _ESCAPE

    def _call_regions(self) -> list[Region]:
        return [Region(_START, _END, read_json_object_body)]

    def _parse_quick(self, text: str) -> ParseResult | None:
        if self.think_prefilled:
            return None
        return quick_json_blocks(text, _START, _END, (_THINK,), strict=self.strict)

    def _render_calls(self, calls: list[ToolCall]) -> str:
        return "\n".join(f"{_START}\n{dump_call_object(call, _ESCAPE)}\n{_END}" for call in calls)


@register_parser("qwen")
class QwenParser(HermesParser):
    """Qwen 2.5 / Qwen 3 instruct models: the Hermes ``<tool_call>`` JSON format."""
