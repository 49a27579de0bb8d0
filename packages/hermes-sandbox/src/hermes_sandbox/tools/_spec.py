"""``SandboxTool``: one tool the model can call, bound to sandboxes, browsers or the web.

A ``SandboxTool`` has the shape an agent loop takes as it is (hermes-loop's ``ToolLike``
protocol, which this package does not import): a name, a description, a JSON schema of
the arguments, an ``async`` handler ``handler(arguments, invocation)``, its toolset, an
optional call timeout and ``schema()``. A handler reads only ``invocation.task_id`` (the
rollout, and so the sandbox), so it is typed with :class:`InvocationLike`: an agent
loop's own invocation object is one, and so is :class:`Invocation`.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes_sandbox._base import Sandbox

__all__ = ["Invocation", "InvocationLike", "SandboxSource", "SandboxTool", "ToolHandler"]


class InvocationLike(Protocol):
    """What a handler reads from the call it serves: the rollout's task id."""

    @property
    def task_id(self) -> str:
        """The rollout (and sandbox) this call belongs to."""
        ...


class SandboxSource(Protocol):
    """Where tools find a task's sandbox: a ``SandboxPool``, or anything with its ``get``."""

    async def get(self, task_id: str) -> Sandbox:
        """The started sandbox of ``task_id``."""
        ...


#: A sandbox tool's handler: ``async handler(arguments, invocation)`` returning a
#: JSON-serialisable value (a ``dict`` for every built-in tool); it raises an exception
#: with a readable message when the call cannot be done.
ToolHandler = Callable[[dict[str, Any], InvocationLike], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Invocation:
    """An invocation for calling a handler outside an agent loop (``ToolContext.call_tool``
    uses it), with the fields an agent loop's invocation has, so the handler of a loop's
    own tool can be called with it too."""

    task_id: str
    turn: int = 0
    call_id: str = ""
    cancelled: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True, slots=True)
class SandboxTool:
    """A tool with an OpenAI function schema and an async handler.

    Args:
        name: the function name the model calls.
        description: what the tool does, for the model.
        parameters: JSON schema (type ``object``) of the arguments.
        handler: ``async handler(arguments, invocation)``; reads ``invocation.task_id``.
        toolset: the group the tool belongs to (``terminal``, ``file``, ``web``,
            ``browser``); an agent loop's tool registry files the tool under it.
        timeout: seconds an agent loop gives one call of the tool; ``None`` (every
            built-in tool) leaves it to the loop's default.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: ToolHandler
    toolset: str
    timeout: float | None = None

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }
