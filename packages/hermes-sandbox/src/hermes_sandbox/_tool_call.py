"""How ``ToolContext.call_tool`` runs any tool as the model would: the shape of a tool it
takes (``CallableTool``), the sandbox source the built-in tools get (``OwnSandbox``:
the context's own sandbox), and one call of a handler with its refusals made answers
(``call_handler``)."""

from __future__ import annotations

import asyncio
import inspect
import weakref
from typing import Any, Protocol

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import BrowserPageError, SandboxError, ToolContextError
from hermes_sandbox.tools._spec import Invocation

__all__ = ["CallableTool", "OwnSandbox", "SandboxOwner", "call_handler", "error_text"]


class CallableTool(Protocol):
    """Any tool ``call_tool`` can run: a name and ``handler(arguments, invocation)``
    (sync or async), e.g. a ``SandboxTool`` or an agent loop's tool."""

    @property
    def name(self) -> str:
        """The tool's name."""
        ...

    @property
    def handler(self) -> Any:
        """``handler(arguments, invocation)``."""
        ...


class SandboxOwner(Protocol):
    """What ``OwnSandbox`` asks for the sandbox (a ``ToolContext``)."""

    async def get_sandbox(self) -> Sandbox:
        """The owner's sandbox."""
        ...


class OwnSandbox:
    """The ``SandboxSource`` ``call_tool`` gives the tools: the context's own sandbox
    (held weakly: the tools do not keep the context alive)."""

    def __init__(self, context: SandboxOwner) -> None:
        self._context = weakref.ref(context)

    async def get(self, task_id: str) -> Sandbox:
        context = self._context()
        if context is None:
            raise ToolContextError(
                "the ToolContext these tools belong to is gone", kind="cleaned_up"
            )
        return await context.get_sandbox()


def error_text(exc: BaseException) -> str:
    """An exception's message, or its type's name when it has none."""
    return str(exc) or type(exc).__name__


async def call_handler(handler: Any, args: dict[str, Any] | None, invocation: Invocation) -> Any:
    """``handler(arguments, invocation)``'s answer, ``arguments`` a copy of ``args`` (a
    sync handler runs in a thread), or ``{"error": ...}`` if the tool refused the call
    (any exception but an infrastructure failure).

    Raises:
        SandboxError: infrastructure failures (a dead sandbox, ``WebProviderError``,
            ``BrowserUnavailableError``; ``ToolContextError`` but ``reentrant``).
    """
    try:
        if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
            getattr(handler, "__call__", None)  # noqa: B004 - async callable objects
        ):
            value = await handler(dict(args or {}), invocation)
        else:
            value = await asyncio.to_thread(handler, dict(args or {}), invocation)
            if inspect.isawaitable(value):
                value = await value
    except BrowserPageError as exc:  # the page's problem, reported like any tool refusal
        return {"error": f"{type(exc).__name__}: {error_text(exc)}"}
    except ToolContextError as exc:
        if exc.kind != "reentrant":
            raise
        # The tool called a blocking method of this context: a bug of that tool,
        # reported as its answer (as any other exception of a tool is).
        return {"error": f"{type(exc).__name__}: {error_text(exc)}"}
    except SandboxError:  # infrastructure: a dead sandbox, no provider, no browser
        raise
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {error_text(exc)}"}
    return value
