"""The tool shape the loop takes (``ToolLike``) and its own tool type (``Tool``).

``ToolSet``, ``ToolRegistry`` and ``AgentLoop`` take any object of the ``ToolLike`` shape
as it is: ``Tool``, hermes-sandbox's ``SandboxTool`` (which imports nothing of this
package), or a caller's own class. A ``Tool`` checks its definition when built; another
``ToolLike`` is checked (``check_tool``) when it is put into a ``ToolSet`` or a
``ToolRegistry`` (the ``ToolSet`` a registry selects is not checked again).
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from hermes_loop._errors import ToolDefinitionError

__all__ = [
    "Handler",
    "Tool",
    "ToolCheck",
    "ToolInvocation",
    "ToolLike",
    "check_tool",
    "tool_check",
]

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ToolInvocation:
    """What a handler is told about the call it is serving.

    ``cancelled`` is set when the call timed out or the rollout was cancelled; a
    blocking handler that runs long should check it and return early.
    """

    task_id: str
    turn: int
    call_id: str
    cancelled: threading.Event = field(default_factory=threading.Event)


Handler = Callable[[dict[str, Any], ToolInvocation], Any | Awaitable[Any]]


class ToolLike(Protocol):
    """What the loop reads from a tool: any object with these attributes and ``schema()``
    (a frozen dataclass's fields will do).

    ``handler`` may be typed for a narrower invocation than ``ToolInvocation`` (e.g. a
    protocol with only ``task_id``): a handler that accepts less still accepts the
    loop's invocation.
    """

    @property
    def name(self) -> str:
        """The function name the model calls (1-64 letters, digits, ``_``, ``.``, ``-``)."""
        ...

    @property
    def description(self) -> str:
        """What the tool does, for the model."""
        ...

    @property
    def parameters(self) -> Mapping[str, Any]:
        """JSON schema (type ``object``) the call's arguments are checked against."""
        ...

    @property
    def handler(self) -> Handler:
        """``handler(arguments, invocation)``, a coroutine function or a plain one."""
        ...

    @property
    def timeout(self) -> float | None:
        """Seconds before a call is abandoned; ``None`` for the loop's default."""
        ...

    @property
    def toolset(self) -> str:
        """The toolset ``ToolRegistry.add`` files the tool under when given none."""
        ...

    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry sent to the model."""
        ...


def check_tool(tool: ToolLike) -> None:
    """Check ``tool``'s name and parameters schema.

    Raises:
        ToolDefinitionError: (a ``ValueError``) if the name is invalid or ``parameters``
            is not a valid JSON schema of type object.
    """
    if not isinstance(tool.name, str) or not _NAME.match(tool.name):
        raise ToolDefinitionError(
            f"tool name {tool.name!r} is invalid: use 1-64 letters, digits, '_', '.' or '-'"
        )
    if not isinstance(tool.parameters, Mapping) or tool.parameters.get("type", "object") != (
        "object"
    ):
        raise ToolDefinitionError(
            f"tool {tool.name!r}: parameters must be a JSON schema of type object"
        )
    try:
        Draft202012Validator.check_schema(dict(tool.parameters))
    except SchemaError as exc:
        raise ToolDefinitionError(
            f"tool {tool.name!r}: invalid parameters schema: {exc.message}"
        ) from exc


class ToolCheck:
    """What running a tool's calls needs, derived once from a checked tool: whether its
    handler runs on the event loop, and the check of a call's arguments."""

    __slots__ = ("_validator", "is_async")

    def __init__(self, tool: ToolLike) -> None:
        self._validator = Draft202012Validator(dict(tool.parameters))
        handler = tool.handler
        #: Whether the handler is a coroutine function (or an object with an async
        #: ``__call__``): it runs on the event loop, a plain function in a thread.
        self.is_async: bool = inspect.iscoroutinefunction(handler) or (
            inspect.iscoroutinefunction(getattr(handler, "__call__", None))  # noqa: B004 - async __call__
        )

    def argument_errors(self, arguments: Any) -> list[str]:
        """Human-readable reasons ``arguments`` does not fit the schema (empty if it does)."""
        errors = sorted(self._validator.iter_errors(arguments), key=lambda e: list(e.path))
        messages = []
        for error in errors[:5]:
            where = "/".join(str(p) for p in error.absolute_path)
            messages.append(f"{where}: {error.message}" if where else error.message)
        return messages


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
        toolset: the group the tool belongs to (``""`` for none), which
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
    _check: ToolCheck = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_tool(self)
        object.__setattr__(self, "_check", ToolCheck(self))

    @property
    def is_async(self) -> bool:
        """Whether the handler is a coroutine function (runs on the event loop)."""
        return self._check.is_async

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
        return self._check.argument_errors(arguments)


def tool_check(tool: ToolLike) -> ToolCheck:
    """The ``ToolCheck`` of ``tool``: a ``Tool``'s own, made once when it was built (a
    loop made per rollout then builds no schema validator of its own), else a new one."""
    if isinstance(tool, Tool):
        return tool._check
    return ToolCheck(tool)
