"""Events a streaming parser emits as soon as they are certain."""

from __future__ import annotations

from dataclasses import dataclass

from hermes_parsers._tool_call import ToolCall

__all__ = ["ContentDelta", "ReasoningDelta", "StreamEvent", "ToolCallEvent"]


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """More content text. The deltas joined and stripped equal the final ``content``."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """More reasoning text. The deltas joined and stripped equal the final ``reasoning``."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A complete, validated tool call; ``index`` is its place in the final ``tool_calls``."""

    index: int
    tool_call: ToolCall


StreamEvent = ContentDelta | ReasoningDelta | ToolCallEvent
