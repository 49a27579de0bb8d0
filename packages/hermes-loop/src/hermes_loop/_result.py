"""What a rollout returns: ``AgentResult`` and the ``ToolError``s recorded on the way."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from hermes_loop._errors import EndpointErrorKind, ResultFormatError

__all__ = [
    "AgentResult",
    "InfraError",
    "InfraErrorKind",
    "RolloutProgress",
    "StopReason",
    "ToolError",
    "ToolErrorKind",
    "TurnRecord",
]

StopReason = Literal["natural", "max_turns", "infra_error", "budget"]

ToolErrorKind = Literal["unknown_tool", "invalid_arguments", "exception", "timeout"]
"""How a tool call failed, as the model is told."""

InfraErrorKind = EndpointErrorKind | Literal["tool_not_started", "tool_infra"]
"""How the infrastructure failed: an ``EndpointErrorKind``, ``tool_not_started`` (a
blocking tool handler got no thread within its timeout) or ``tool_infra`` (a handler
raised ``ToolInfrastructureError`` or one of the loop's ``infra_exceptions``)."""


@dataclass(frozen=True, slots=True)
class ToolError:
    """A tool call that did not produce a normal result (the model saw the error text).

    ``kind`` is one of ``unknown_tool``, ``invalid_arguments``, ``exception``,
    ``timeout``; ``arguments`` is the raw argument text as the model sent it;
    ``tool_result`` the tool message's text the model was shown (the reference's field).
    """

    turn: int
    tool_name: str
    arguments: str
    error: str
    kind: ToolErrorKind = "exception"
    call_id: str = ""
    tool_result: str = ""


@dataclass(frozen=True, slots=True)
class InfraError:
    """The infrastructure failed: not the model's fault, never scored as 0.

    ``kind`` is an ``InfraErrorKind``: how the model endpoint failed after its retries
    (``rate_limited``, ``server_error``, ``timeout``, ``connection``, ``bad_request``,
    ``bad_response``), or ``tool_not_started``; ``status`` is the HTTP status when there
    was one; ``turn`` the model call (0-based) during or after which it happened.
    """

    kind: InfraErrorKind
    message: str
    turn: int
    status: int | None = None


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """When one model call happened, how long it and its tool calls took, what it cost.

    ``started_at``: Unix time the request was sent; ``model_seconds``: until the answer
    arrived; ``tools_seconds``: the turn's tool calls, all of them (0 when it had none);
    ``usage``: the ``prompt_tokens`` / ``completion_tokens`` (and any other counts) the
    server reported for this call.
    """

    started_at: float
    model_seconds: float
    tools_seconds: float = 0.0
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class AgentResult:
    """The outcome of ``AgentLoop.run``.

    Attributes:
        messages: the whole conversation in OpenAI chat format, including the input.
        turns_used: model calls that returned an answer.
        finished_naturally: the model stopped calling tools on its own.
        reasoning_per_turn: one entry per turn (``None`` where the turn had none).
        tool_errors: every tool call that failed, in order.
        managed_state: token-level data of a raw-generation (Phase 2) server:
            ``{"nodes": [{"tokens", "masked_tokens", "logprobs", "full_text",
            "finish_reason"}], "turns": [...]}``; ``None`` for Phase 1 servers.
        stop_reason: ``natural``, ``max_turns``, ``infra_error`` or ``budget``.
        infra_error: set when ``stop_reason == "infra_error"``.
        usage: summed ``prompt_tokens`` / ``completion_tokens`` reported by the server.
        task_id: the id the rollout ran under.
        turns: one ``TurnRecord`` per answered model call (timings and usage per turn).
    """

    messages: list[dict[str, Any]]
    turns_used: int
    finished_naturally: bool
    reasoning_per_turn: list[str | None]
    tool_errors: list[ToolError]
    managed_state: dict[str, Any] | None = None
    stop_reason: StopReason = "natural"
    infra_error: InfraError | None = None
    usage: dict[str, int] = field(default_factory=dict)
    task_id: str = ""
    turns: list[TurnRecord] = field(default_factory=list)

    @property
    def final_response(self) -> str | None:
        """The content of the last assistant message, if any."""
        for message in reversed(self.messages):
            if message.get("role") == "assistant":
                content = message.get("content")
                return content if isinstance(content, str) else None
        return None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentResult:
        """Rebuild a result from ``to_dict()`` output.

        Raises:
            ResultFormatError: (a ``ValueError``) if a required field is missing or has
                the wrong type.
        """
        try:
            infra = data.get("infra_error")
            return cls(
                messages=list(data["messages"]),
                turns_used=int(data["turns_used"]),
                finished_naturally=bool(data["finished_naturally"]),
                reasoning_per_turn=list(data["reasoning_per_turn"]),
                tool_errors=[ToolError(**e) for e in data.get("tool_errors", [])],
                managed_state=data.get("managed_state"),
                stop_reason=data.get("stop_reason", "natural"),
                infra_error=InfraError(**infra) if infra else None,
                usage=dict(data.get("usage", {})),
                task_id=str(data.get("task_id", "")),
                turns=[TurnRecord(**turn) for turn in data.get("turns", [])],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ResultFormatError(f"not an AgentResult record: {exc!r}") from exc

    def save(self, path: str | Path) -> None:
        """Write the result as JSON (replay it with the model server's ``Replay``).

        The file is UTF-8. A lone surrogate (``"\\ud800"``, which UTF-8 cannot hold) is
        written as its JSON escape ``\\ud800`` (``errors="backslashreplace"``, which can
        only meet such characters inside JSON strings), so saving never fails on the text
        and ``load`` gives back the same strings. The JSON goes to a temporary file
        beside ``path`` that replaces ``path`` only once it is complete: a failed save
        leaves no partial file, and an earlier file at ``path`` stays as it was.

        Raises:
            OSError: if the file cannot be written (the temporary file is removed).
        """
        target = Path(path)
        data = json.dumps(self.to_dict(), ensure_ascii=False, indent=1)
        encoded = data.encode("utf-8", errors="backslashreplace")
        aside = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            with aside.open("xb") as file:
                file.write(encoded)
                file.flush()
                os.fsync(file.fileno())
            os.replace(aside, target)
        except BaseException:
            aside.unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | Path) -> AgentResult:
        """Read a result written by ``save``.

        Raises:
            OSError: if the file cannot be read.
            ResultFormatError: (a ``ValueError``) if it is not a saved ``AgentResult``.
        """
        try:
            data = json.loads(Path(path).read_bytes())
        except ValueError as exc:  # not JSON, or not UTF-8
            raise ResultFormatError(f"{path}: not JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise ResultFormatError(f"{path}: not a saved AgentResult (top level is not an object)")
        return cls.from_dict(data)


@dataclass(slots=True)
class RolloutProgress:
    """What a rollout has done so far, kept up to date by ``AgentLoop.run`` as it goes.

    Pass one to ``run(..., progress=...)`` to keep the conversation of a rollout that is
    cancelled (a caller's time budget ran out): every message, answered turn, reasoning
    and tool error is here the moment it happens, and :meth:`result` makes an
    ``AgentResult`` of them.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    reasoning_per_turn: list[str | None] = field(default_factory=list)
    tool_errors: list[ToolError] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    task_id: str = ""

    def result(self, stop_reason: StopReason = "budget") -> AgentResult:
        """The rollout so far as an ``AgentResult`` (``stop_reason`` default
        ``budget``: stopped from outside)."""
        return AgentResult(
            messages=list(self.messages),
            turns_used=len(self.reasoning_per_turn),
            finished_naturally=False,
            reasoning_per_turn=list(self.reasoning_per_turn),
            tool_errors=list(self.tool_errors),
            stop_reason=stop_reason,
            usage=dict(self.usage),
            task_id=self.task_id,
            turns=list(self.turns),
        )
