"""One way to run an agent: an ``AgentLoop`` on a task's sandbox, its failure classified.

Every caller that plays an agent runs it through :func:`run_agent`: the rollouts of
``HermesAgentBaseEnv`` (``hermes_envs._rollout``), hermes-bench's ``HermesAgent`` and the
YC-Bench environment. The rule they share: what the model did is the result (scored by
the caller); what broke outside it is an :class:`InfraFailure` (retried by the caller,
never scored), and each ``InfraError`` kind of the loop has one class
(:func:`infra_stage`):

- the model endpoint's kinds (``rate_limited``, ``server_error``, ``timeout``,
  ``connection``, ``bad_request``, ``bad_response``): ``model_endpoint``;
- the tools' kinds (``tool_infra``: a handler found its sandbox gone; ``tool_not_started``:
  a blocking handler got no thread): ``sandbox_lost``, the tools' side of the rollout
  broke under the agent.

A loop built for :func:`run_agent` passes ``infra_exceptions=SANDBOX_FAILURES`` so that
a tool whose sandbox died ends the run as ``tool_infra`` instead of showing the model an
error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from hermes_loop import AgentLoop, AgentResult, EndpointErrorKind, InfraErrorKind, RolloutProgress
from hermes_sandbox import SandboxClosedError, SandboxError, SandboxStartError
from hermes_sandbox.tools import SandboxSource

__all__ = [
    "SANDBOX_FAILURES",
    "AgentRun",
    "InfraFailure",
    "InfraStage",
    "infra_stage",
    "run_agent",
]

#: Where a rollout broke: the sandbox would not start, the model endpoint failed, the
#: sandbox (or the tools' machinery) failed under the agent or the reward, or an
#: environment's own ``collect_trajectory`` returned no scored item.
InfraStage = Literal["sandbox_start", "model_endpoint", "sandbox_lost", "collect_trajectory"]

#: What a tool handler raises when its sandbox is gone: the loop's ``infra_exceptions``
#: for every agent run (the run ends as ``tool_infra``, never as the model's error).
SANDBOX_FAILURES: Final[tuple[type[BaseException], ...]] = (SandboxClosedError, SandboxStartError)

_ENDPOINT_KINDS: Final = frozenset(get_args(EndpointErrorKind))


def infra_stage(kind: InfraErrorKind) -> InfraStage:
    """The class of a loop's ``InfraError`` kind: ``model_endpoint`` for the endpoint's
    kinds, ``sandbox_lost`` for the tools' (``tool_infra``, ``tool_not_started``).

    Raises:
        ValueError: ``kind`` is not an ``InfraErrorKind``.
    """
    if kind in _ENDPOINT_KINDS:
        return "model_endpoint"
    if kind in ("tool_infra", "tool_not_started"):
        return "sandbox_lost"
    raise ValueError(f"{kind!r} is not an InfraError kind of hermes_loop")


@dataclass(frozen=True, slots=True)
class InfraFailure:
    """Why a rollout could not be scored.

    ``stage`` is an :data:`InfraStage`: ``sandbox_start`` (the sandbox would not start),
    ``model_endpoint`` (the endpoint failed after its retries), ``sandbox_lost`` (a tool
    found its sandbox gone or could not start, or the sandbox closed before or while the
    reward looked at it) or ``collect_trajectory`` (an environment's own
    ``collect_trajectory`` returned no scored item).
    """

    task_id: str
    stage: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """A JSON-ready dict."""
        return {"task_id": self.task_id, "stage": self.stage, "message": self.message}


@dataclass(frozen=True, slots=True)
class AgentRun:
    """What :func:`run_agent` gave.

    ``result``: the conversation (``None`` only when the sandbox would not start; the
    conversation so far, ``stop_reason`` ``budget``, when the time limit ended it);
    ``failure``: set when infrastructure stopped the run (the result is then not the
    model's to score); ``timed_out``: the time limit ended the run.
    """

    task_id: str
    result: AgentResult | None
    failure: InfraFailure | None = None
    timed_out: bool = False


def describe(exc: BaseException) -> str:
    """``Type: message`` (or only the type when the message is empty)."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def run_agent(
    loop: AgentLoop,
    messages: Sequence[Mapping[str, Any]],
    *,
    task_id: str,
    sandboxes: SandboxSource,
    time_limit: float | None = None,
    progress: RolloutProgress | None = None,
) -> AgentRun:
    """Run ``loop`` on ``messages`` in ``task_id``'s sandbox and classify how it ended.

    The sandbox is had from ``sandboxes`` before the first model call (a
    ``SandboxError`` there is a ``sandbox_start`` failure); its tools reach it through
    the same task id. ``time_limit`` (seconds, ``None`` for none) stops the run and
    returns the conversation so far with ``timed_out``; pass ``progress`` to keep the
    conversation when the caller cancels the run itself.

    Raises:
        InvalidMessagesError: as ``AgentLoop.run``, for messages that are not a chat.
        asyncio.CancelledError: when cancelled (``progress`` holds the run so far).
    """
    try:
        await sandboxes.get(task_id)
    except SandboxError as exc:
        return AgentRun(task_id, None, InfraFailure(task_id, "sandbox_start", describe(exc)))
    progress = progress if progress is not None else RolloutProgress()
    limit = asyncio.timeout(time_limit)
    try:
        async with limit:
            result = await loop.run(messages, task_id=task_id, progress=progress)
    except TimeoutError:
        if not limit.expired():  # not the time limit's
            raise
        return AgentRun(task_id, progress.result("budget"), timed_out=True)
    if result.stop_reason != "infra_error":
        return AgentRun(task_id, result)
    error = result.infra_error
    if error is None:
        failure = InfraFailure(task_id, "model_endpoint", "the model endpoint failed")
    else:
        failure = InfraFailure(task_id, infra_stage(error.kind), f"{error.kind}: {error.message}")
    return AgentRun(task_id, result, failure)
