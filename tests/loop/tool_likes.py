"""A caller's own tool class for the loop's tests: the ``ToolLike`` shape without a
``Tool`` behind it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


def _noop(arguments: dict[str, Any], call: Any) -> str:
    return "ok"


@dataclass
class OwnTool:
    """A caller's own tool class: the ``ToolLike`` shape, no ``Tool`` behind it (mutable,
    so a test can spoil it after a registry took it)."""

    name: str
    parameters: Mapping[str, Any]
    description: str = ""
    handler: Callable[[dict[str, Any], Any], str] = _noop
    timeout: float | None = None
    toolset: str = "own"

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "strict": True}}
