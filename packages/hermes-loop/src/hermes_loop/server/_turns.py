"""What the scripted model says: ``Turn`` (one assistant reply), ``Call`` and ``Fault``.

A ``Turn`` is one assistant message: content, tool calls, reasoning, an optional
``finish_reason`` override, and the faults to inject before it is answered. Faults are a
sequence of phases: with ``faults=[Fault(status=429, times=2), Fault(status=500, times=1)]``
the first two attempts at the turn get 429, the third gets 500, and the fourth is answered.
A fault with ``times=None`` (the default) applies to every remaining attempt, so it can
only be the last phase: ``Fault(status=500)`` alone means the turn always fails.

Attempts are counted by the server per conversation (a hash of the request's messages up
to and including the first user message), per model and per turn index, so retries of
one rollout see the phases in order while other rollouts keep their own count.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes_loop._errors import HermesLoopError
from hermes_loop.server._json_limits import TooDeep, json_problem, text_problem

__all__ = ["FINISH_REASONS", "Call", "Fault", "ScriptError", "Turn"]

#: The ``finish_reason`` values a turn may force.
FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter")


class ScriptError(HermesLoopError, ValueError):
    """A script, turn, call or fault that does not follow the schema.

    The message names where: the file, the script, the turn and the field, e.g.
    ``"chat.json: script 'default': turn 2: field 'faults[0].status': ..."``.
    ``problem``, ``field`` and ``where`` hold the parts.
    """

    def __init__(self, problem: str, *, field: str | None = None, where: str | None = None):
        self.problem = problem
        self.field = field
        self.where = where
        text = problem if field is None else f"field {field!r}: {problem}"
        super().__init__(f"{where}: {text}" if where else text)

    def nested(self, parent: str) -> ScriptError:
        """The same error, with its field inside ``parent`` (e.g. ``tool_calls[0]``)."""
        name = parent if self.field is None else f"{parent}.{self.field}"
        return ScriptError(self.problem, field=name, where=self.where)

    def at(self, where: str) -> ScriptError:
        """The same error, located at ``where`` (e.g. ``"x.json: turn 3"``)."""
        located = where if self.where is None else f"{where}: {self.where}"
        return ScriptError(self.problem, field=self.field, where=located)


def _bad(name: str, problem: str) -> ScriptError:
    return ScriptError(problem, field=name)


def _type_name(value: Any) -> str:
    if isinstance(value, TooDeep):
        return repr(value)
    return "null" if value is None else type(value).__name__


def _check_text(name: str, value: str | None) -> None:
    if value is not None:
        problem = text_problem(value)
        if problem is not None:
            raise _bad(name, problem)


def _check_arguments(arguments: Mapping[str, Any] | str) -> None:
    """Raise a ``ScriptError`` naming the part of ``arguments`` JSON cannot carry."""
    value: Any = arguments
    if isinstance(arguments, str):
        _check_text("arguments", arguments)
        try:
            value = json.loads(arguments) if arguments.strip() else None
        except RecursionError:
            raise _bad("arguments", "the JSON text is nested too deeply to decode") from None
        except ValueError:
            return  # not JSON: sent verbatim, as a model writing broken arguments would
    found = json_problem(value)
    if found is not None:
        # A path into a too-deep value is as long as the value is deep: name the arguments.
        inside = not isinstance(arguments, str) and not found.too_deep
        raise _bad("arguments" + found.path if inside else "arguments", found.problem)


@dataclass(frozen=True, slots=True)
class Call:
    """One scripted tool call.

    Args:
        name: the function name.
        arguments: a mapping (sent as its JSON text) or a string sent verbatim as the
            OpenAI ``arguments`` field (which need not be valid JSON: that is how a test
            plays a model that writes broken arguments).
        id: the call id to send; by default the server makes a ``call_...`` id.

    Raises:
        ScriptError: if ``name`` is not a non-empty string, ``arguments`` is neither a
            mapping nor a string, or any of them holds what JSON and a tokenizer cannot
            carry: nesting past ``json_limits.MAX_DEPTH`` levels, a lone surrogate
            (``"\\ud800"``), a non-JSON value (a set, ``NaN``) or a non-string key. The
            error names the field inside the arguments (``arguments.k[1]``).
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise _bad("name", f"must be a non-empty string, got {self.name!r}")
        if not isinstance(self.arguments, Mapping | str):
            raise _bad(
                "arguments",
                f"must be an object or a JSON string, got {_type_name(self.arguments)}",
            )
        if self.id is not None and (not isinstance(self.id, str) or not self.id):
            raise _bad("id", f"must be a non-empty string, got {self.id!r}")
        _check_text("name", self.name)
        _check_text("id", self.id)
        _check_arguments(self.arguments)

    @property
    def arguments_json(self) -> str:
        """The OpenAI ``function.arguments`` string."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments), ensure_ascii=False)

    def decoded_arguments(self) -> dict[str, Any] | None:
        """The arguments as a dict, or ``None`` when they are a string that is not a JSON object."""
        if not isinstance(self.arguments, str):
            return dict(self.arguments)
        try:
            value = json.loads(self.arguments) if self.arguments.strip() else {}
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None

    @classmethod
    def from_dict(cls, data: Any) -> Call:
        """Build a call from ``{"name", "arguments", "id"}`` or the OpenAI ``tool_calls`` shape.

        Raises:
            ScriptError: naming the bad field.
        """
        if not isinstance(data, Mapping):
            raise ScriptError(f"a tool call must be an object, got {_type_name(data)}")
        function = data.get("function")
        if function is not None:
            if not isinstance(function, Mapping):
                raise _bad("function", f"must be an object, got {_type_name(function)}")
            _only(data, ("id", "type", "function"))
            _only(function, ("name", "arguments"), prefix="function.")
            name: Any = function.get("name")
            arguments: Any = function.get("arguments", {})
        else:
            _only(data, ("name", "arguments", "id"))
            name, arguments = data.get("name"), data.get("arguments", {})
        if arguments is None:
            arguments = {}
        return cls(name=name, arguments=arguments, id=data.get("id") or None)


@dataclass(frozen=True, slots=True)
class Fault:
    """A failure injected before a turn is answered.

    At most one of ``status``, ``hang``, ``truncate`` and ``disconnect``; ``delay`` may go
    with any of them (or stand alone: answer normally, late).

    Args:
        status: answer with this HTTP error status (e.g. 429, 500, 503) and an OpenAI
            error body.
        retry_after: with ``status``: seconds sent as ``Retry-After`` (and
            ``retry-after-ms``).
        delay: seconds to wait first.
        hang: never answer; the request ends when the client gives up or the server
            shuts down (the connection is then dropped).
        truncate: send a ``Content-Length`` larger than the body, half the body, and
            close the connection.
        disconnect: close the connection without any response.
        times: how many attempts this phase covers; ``None`` (the default): every
            remaining attempt.
        message: the error message for ``status`` faults.

    Raises:
        ScriptError: naming the bad field.
    """

    status: int | None = None
    retry_after: float | None = None
    delay: float = 0.0
    hang: bool = False
    truncate: bool = False
    disconnect: bool = False
    times: int | None = None
    message: str | None = None

    def __post_init__(self) -> None:
        if self.status is not None and (
            isinstance(self.status, bool)
            or not isinstance(self.status, int)
            or not 400 <= self.status <= 599
        ):
            raise _bad("status", f"must be an HTTP error status 400-599, got {self.status!r}")
        if self.retry_after is not None:
            if not _is_number(self.retry_after) or self.retry_after < 0:
                raise _bad("retry_after", f"must be seconds >= 0, got {self.retry_after!r}")
            if self.status is None:
                raise _bad("retry_after", "only applies with 'status'")
        if not _is_number(self.delay) or self.delay < 0:
            raise _bad("delay", f"must be seconds >= 0, got {self.delay!r}")
        for flag in ("hang", "truncate", "disconnect"):
            if not isinstance(getattr(self, flag), bool):
                raise _bad(flag, f"must be true or false, got {getattr(self, flag)!r}")
        kinds = [k for k in ("status", "hang", "truncate", "disconnect") if self._has(k)]
        if len(kinds) > 1:
            raise ScriptError(f"a fault can do only one of {kinds}; use two fault phases")
        if not kinds and not self.delay:
            raise ScriptError(
                "a fault needs one of 'status', 'hang', 'truncate', 'disconnect' or 'delay'"
            )
        if self.times is not None and (
            isinstance(self.times, bool) or not isinstance(self.times, int) or self.times < 1
        ):
            raise _bad("times", f"must be an integer >= 1 or null (always), got {self.times!r}")
        if self.message is not None and not isinstance(self.message, str):
            raise _bad("message", f"must be a string, got {_type_name(self.message)}")
        _check_text("message", self.message)

    def _has(self, kind: str) -> bool:
        return self.status is not None if kind == "status" else bool(getattr(self, kind))

    @property
    def kind(self) -> str:
        """``"status"``, ``"hang"``, ``"truncate"``, ``"disconnect"`` or ``"delay"``."""
        for kind in ("status", "hang", "truncate", "disconnect"):
            if self._has(kind):
                return kind
        return "delay"

    @classmethod
    def from_dict(cls, data: Any) -> Fault:
        """Build a fault from its schema object (the fields of this class).

        Raises:
            ScriptError: naming the bad field.
        """
        if not isinstance(data, Mapping):
            raise ScriptError(f"a fault must be an object, got {_type_name(data)}")
        _only(data, _FAULT_FIELDS)
        return cls(**dict(data))


_FAULT_FIELDS = (
    "status",
    "retry_after",
    "delay",
    "hang",
    "truncate",
    "disconnect",
    "times",
    "message",
)
_TURN_FIELDS = ("content", "reasoning", "reasoning_content", "tool_calls", "finish_reason")
_TURN_FIELDS_ALL = (*_TURN_FIELDS, "faults", "fault")


@dataclass(frozen=True)
class Turn:
    """One scripted assistant reply.

    Args:
        content: the message text (``None``: no content, as with a pure tool-call turn).
        tool_calls: ``Call`` objects (mappings are converted with ``Call.from_dict``).
        reasoning: returned as ``reasoning_content`` on ``/v1/chat/completions`` and as a
            ``<think>`` block in raw ``/generate`` text.
        finish_reason: overrides the computed one (``"tool_calls"`` when there are calls,
            else ``"stop"``; ``"length"`` when ``max_tokens`` cuts the reply).
        faults: ``Fault`` phases applied to the first attempts at this turn (mappings
            are converted with ``Fault.from_dict``).

    Raises:
        ScriptError: naming the bad field (text holding a lone surrogate included).
    """

    content: str | None = None
    tool_calls: Sequence[Call] = ()
    reasoning: str | None = None
    finish_reason: str | None = None
    faults: Sequence[Fault] = ()

    def __post_init__(self) -> None:
        if self.content is not None and not isinstance(self.content, str):
            raise _bad("content", f"must be a string or null, got {_type_name(self.content)}")
        if self.reasoning is not None and not isinstance(self.reasoning, str):
            raise _bad("reasoning", f"must be a string or null, got {_type_name(self.reasoning)}")
        _check_text("content", self.content)
        _check_text("reasoning", self.reasoning)
        if self.finish_reason is not None and self.finish_reason not in FINISH_REASONS:
            raise _bad(
                "finish_reason", f"must be one of {FINISH_REASONS}, got {self.finish_reason!r}"
            )
        object.__setattr__(self, "tool_calls", _items(self.tool_calls, "tool_calls", Call))
        object.__setattr__(self, "faults", _items(self.faults, "faults", Fault))
        for index, fault in enumerate(self.faults[:-1]):
            if fault.times is None:
                raise _bad(
                    f"faults[{index}].times",
                    "null (always) is only allowed on the last fault phase",
                )

    def fault_for(self, attempt: int) -> Fault | None:
        """The fault for the ``attempt``-th try at this turn (0-based), or ``None``."""
        for fault in self.faults:
            if fault.times is None or attempt < fault.times:
                return fault
            attempt -= fault.times
        return None

    def to_message(self) -> dict[str, Any]:
        """The OpenAI assistant message (tool calls carry their ``id`` only if scripted)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json},
                }
                for call in self.tool_calls
            ]
        if self.reasoning is not None:
            message["reasoning_content"] = self.reasoning
        return message

    @classmethod
    def coerce(cls, value: Any) -> Turn:
        """A ``Turn`` from a ``Turn``, a string (content only) or a schema mapping.

        Raises:
            ScriptError: if ``value`` is none of these or breaks the schema.
        """
        if isinstance(value, Turn):
            return value
        if isinstance(value, str):
            return cls(content=value)
        if isinstance(value, Mapping):
            return cls.from_dict(value)
        raise ScriptError(f"a turn must be a Turn, a string or an object, got {_type_name(value)}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Turn:
        """Build a turn from its schema object.

        Fields: ``content``, ``reasoning`` (or ``reasoning_content``), ``tool_calls``
        (list of ``{"name", "arguments", "id"?}`` or OpenAI-shaped calls),
        ``finish_reason``, ``faults`` (list of fault objects) or ``fault`` (one).

        Raises:
            ScriptError: naming the bad field.
        """
        _only(data, _TURN_FIELDS_ALL)
        if "faults" in data and "fault" in data:
            raise ScriptError("give 'faults' (a list) or 'fault' (one object), not both")
        reasoning = data.get("reasoning", data.get("reasoning_content"))
        calls = data.get("tool_calls") or ()
        if not isinstance(calls, Sequence) or isinstance(calls, str):
            raise _bad("tool_calls", f"must be a list, got {_type_name(calls)}")
        faults: Any = data.get("faults") or ()
        if "fault" in data:
            faults = [data["fault"]]
        if not isinstance(faults, Sequence) or isinstance(faults, str):
            raise _bad("faults", f"must be a list, got {_type_name(faults)}")
        return cls(
            content=data.get("content"),
            tool_calls=[_item(Call, call, f"tool_calls[{i}]") for i, call in enumerate(calls)],
            reasoning=reasoning,
            finish_reason=data.get("finish_reason"),
            faults=[_item(Fault, fault, f"faults[{i}]") for i, fault in enumerate(faults)],
        )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _only(data: Mapping[str, Any], allowed: Sequence[str], prefix: str = "") -> None:
    for key in data:
        if key not in allowed:
            raise ScriptError(
                f"unknown field; expected one of: {', '.join(allowed)}", field=prefix + str(key)
            )


def _item(kind: type[Call] | type[Fault], value: Any, where: str) -> Any:
    if isinstance(value, kind):
        return value
    try:
        return kind.from_dict(value)
    except ScriptError as exc:
        raise exc.nested(where) from None


def _items(values: Any, name: str, kind: type[Call] | type[Fault]) -> tuple[Any, ...]:
    if isinstance(values, str | Mapping) or not isinstance(values, Sequence):
        raise _bad(name, f"must be a list, got {_type_name(values)}")
    return tuple(_item(kind, value, f"{name}[{i}]") for i, value in enumerate(values))
