"""The tool shape of the sandbox tools: hermes-loop's ``Tool``, and what a handler reads.

Every sandbox tool is a ``hermes_loop.Tool`` (name, description, JSON schema of the
arguments, ``async`` handler ``handler(arguments, invocation)``, ``toolset``): an agent
loop takes it as it is. A handler reads only ``invocation.task_id`` (the rollout, and so
the sandbox), so it is typed with :class:`InvocationLike`; the loop's
``ToolInvocation`` is one, and so is any object with a ``task_id``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from hermes_loop.tools import Tool, ToolInvocation
from hermes_sandbox.base import Sandbox

__all__ = ["Invocation", "InvocationLike", "SandboxSource", "SandboxTool", "ToolHandler"]

#: The sandbox tools' type: hermes-loop's ``Tool`` (the name kept for earlier code).
SandboxTool = Tool

#: A call made outside an agent loop (``ToolContext.call_tool``): the loop's
#: ``ToolInvocation`` (the name kept for earlier code).
Invocation = ToolInvocation


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
