"""``LoopScope``: the endpoint and tool handlers a ``HermesAgentLoop`` built with the
reference framework's keywords runs with.

The reference's environments build their loop as ``HermesAgentLoop(server=self.server,
tool_schemas=tools, valid_tool_names=names, ...)``: plain OpenAI tool schemas (the
handlers lived in a process-wide registry) and Atropos' server manager. Here an
environment binds a ``LoopScope`` (its model endpoint and its tools by name) for the
duration of a run with ``bind_loop_scope``; a loop built inside reads it from a context
variable, so concurrent runs in one process each see their own, and nothing global is
kept.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from hermes_loop._tools import ToolLike
from hermes_loop.endpoints._base import ChatServer

__all__ = ["LoopScope", "bind_loop_scope", "current_loop_scope"]


@dataclass(frozen=True, slots=True)
class LoopScope:
    """What a ``HermesAgentLoop`` inside a running environment uses by default.

    Attributes:
        server: the endpoint used when the loop's ``server`` is not a ``ChatServer``
            (e.g. Atropos' server manager, as the reference's environments pass).
        tools: every tool the environment offers, by name: the handlers behind
            ``tool_schemas``.
        options: further ``AgentLoop`` keywords (e.g. ``executor``, ``tool_timeout``,
            ``infra_exceptions``); keywords given to the loop win.
    """

    server: ChatServer
    tools: Mapping[str, ToolLike]
    options: Mapping[str, Any] = field(default_factory=dict)


_SCOPE: ContextVar[LoopScope | None] = ContextVar("hermes_loop_scope", default=None)


@contextmanager
def bind_loop_scope(scope: LoopScope) -> Iterator[LoopScope]:
    """Make ``scope`` the current one in this context (and in tasks started inside it)
    until the block ends."""
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def current_loop_scope() -> LoopScope | None:
    """The scope bound in this context, or ``None``."""
    return _SCOPE.get()
