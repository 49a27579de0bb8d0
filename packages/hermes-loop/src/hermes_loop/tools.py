"""``Tool``: a name, a description, a JSON schema for its parameters, and a handler.

The one tool type of the workspace: hermes-sandbox builds its tools (terminal, files,
web, browser) as ``Tool`` objects with their ``toolset``, which the loop takes as they
are.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from hermes_loop.errors import ToolDefinitionError

__all__ = ["Handler", "Tool", "ToolInvocation"]

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ToolInvocation:
    """What a handler is told about the call it is serving.

    ``cancelled`` is set when the call timed out or the rollout was cancelled; a
    blocking handler that runs long should check it and return early. ``turn`` and
    ``call_id`` default to ``0`` and ``""`` for a call made outside a loop (reward code's
    ``ToolContext.call_tool``).
    """

    task_id: str
    turn: int = 0
    call_id: str = ""
    cancelled: threading.Event = field(default_factory=threading.Event)


Handler = Callable[[dict[str, Any], ToolInvocation], Any | Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the model can call.

    Args:
        name: 1-64 characters of letters, digits, ``_``, ``.`` or ``-`` (OpenAI's rule).
        description: what the tool does, for the model.
        parameters: JSON schema (an ``object`` schema) of the arguments.
        handler: ``handler(arguments, invocation)``; ``async def`` handlers run on the
            event loop, plain functions in the loop's thread pool. The return value
            becomes the tool message: ``str`` as is, ``bytes`` decoded as UTF-8 (bad
            bytes replaced), ``None`` as empty, anything else as JSON.
        timeout: seconds before the call is abandoned; ``None`` uses the loop's default.
        toolset: the group the tool belongs to (``terminal``, ``file``, ``web``,
            ``browser`` for hermes-sandbox's tools; ``""`` for none), which
            ``ToolRegistry.add`` files it under when given no other.

    Raises:
        ToolDefinitionError: (a ``ValueError``) at construction, if the name is invalid
            or ``parameters`` is not a valid JSON schema of type object.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Handler
    timeout: float | None = None
    toolset: str = ""
    _validator: Draft202012Validator = field(init=False, repr=False, compare=False)
    _is_async: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ToolDefinitionError(
                f"tool name {self.name!r} is invalid: use 1-64 letters, digits, '_', '.' or '-'"
            )
        if self.parameters.get("type", "object") != "object":
            raise ToolDefinitionError(
                f"tool {self.name!r}: parameters must be a JSON schema of type object"
            )
        try:
            Draft202012Validator.check_schema(dict(self.parameters))
        except SchemaError as exc:
            raise ToolDefinitionError(
                f"tool {self.name!r}: invalid parameters schema: {exc.message}"
            ) from exc
        object.__setattr__(self, "_validator", Draft202012Validator(dict(self.parameters)))
        target = self.handler
        is_async = inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
            getattr(target, "__call__", None)  # noqa: B004 - callable objects with async __call__
        )
        object.__setattr__(self, "_is_async", is_async)

    @property
    def is_async(self) -> bool:
        """Whether the handler is a coroutine function (runs on the event loop)."""
        return self._is_async

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

    def argument_errors(self, arguments: Any) -> list[str]:
        """Human-readable reasons ``arguments`` does not fit the schema (empty if it does)."""
        errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.path))
        messages = []
        for error in errors[:5]:
            where = "/".join(str(p) for p in error.absolute_path)
            messages.append(f"{where}: {error.message}" if where else error.message)
        return messages
