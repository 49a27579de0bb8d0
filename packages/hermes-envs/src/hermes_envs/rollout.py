"""One rollout: a sandbox for its task id, the agent loop, the reward, the sandbox closed.

Whatever breaks outside the model (the sandbox would not start or died, the model
endpoint failed after its retries) becomes an ``InfraFailure``: recorded, retried by the
caller, never scored as the model's 0. Reward code that raises (or returns no number) is
the environment's bug: a ``RewardError``, never retried and never scored
(``hermes_envs.reward_errors``); a ``SandboxError`` it raises (the sandbox died under
it) is still the infrastructure's.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_envs.reward_errors import RewardError
from hermes_loop import AgentLoop, AgentResult
from hermes_sandbox import SandboxError, SandboxPool, ToolContext

__all__ = ["InfraFailure", "RewardFunction", "RolloutOutcome", "run_rollout"]

RewardFunction = Callable[[AgentResult, ToolContext], "Awaitable[float] | float"]


@dataclass(frozen=True, slots=True)
class InfraFailure:
    """Why a rollout could not be scored.

    ``stage`` is ``sandbox_start`` (the sandbox would not start), ``model_endpoint``
    (``stop_reason == "infra_error"``), ``sandbox_lost`` (the sandbox closed before or
    while the reward looked at it) or ``collect_trajectory`` (an environment's own
    ``collect_trajectory`` returned no scored item).
    """

    task_id: str
    stage: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """A JSON-ready dict."""
        return {"task_id": self.task_id, "stage": self.stage, "message": self.message}


@dataclass(frozen=True, slots=True)
class RolloutOutcome:
    """A scored rollout (``score`` set), an infrastructure failure (``failure`` set) or
    a rollout whose reward code raised (``reward_error`` set)."""

    task_id: str
    result: AgentResult | None
    score: float | None = None
    failure: InfraFailure | None = None
    reward_error: RewardError | None = None

    @property
    def ok(self) -> bool:
        """Whether the rollout was scored."""
        return self.failure is None and self.reward_error is None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def run_rollout(
    messages: Sequence[Mapping[str, Any]],
    *,
    loop: AgentLoop,
    pool: SandboxPool,
    task_id: str,
    reward: RewardFunction,
) -> RolloutOutcome:
    """Run one rollout in its own sandbox and score it.

    The sandbox is started before the first model call, handed to the reward through a
    ``ToolContext`` on the same task id, and released afterwards however the rollout
    ends (cancellation included).

    Raises:
        asyncio.CancelledError: when cancelled (the sandbox is released first).
    """

    def failed(stage: str, message: str, result: AgentResult | None = None) -> RolloutOutcome:
        return RolloutOutcome(task_id, result, None, InfraFailure(task_id, stage, message))

    try:
        try:
            await pool.get(task_id)
        except SandboxError as exc:
            return failed("sandbox_start", _describe(exc))
        result = await loop.run(messages, task_id=task_id)
        if result.stop_reason == "infra_error":
            error = result.infra_error
            text = f"{error.kind}: {error.message}" if error else "the model endpoint failed"
            # A tool that found its sandbox gone (kind tool_infra) is the sandbox's failure.
            stage = "sandbox_lost" if error and error.kind == "tool_infra" else "model_endpoint"
            return failed(stage, text, result)
        try:
            await pool.get(task_id, recreate=False)
        except SandboxError as exc:
            return failed("sandbox_lost", _describe(exc), result)
        ctx = ToolContext(task_id, pool)
        try:
            value = reward(result, ctx)
            if inspect.isawaitable(value):
                value = await value
            if isinstance(value, bool) or not isinstance(value, int | float):
                wrong = TypeError(f"compute_reward returned {value!r}, not a number")
                return RolloutOutcome(task_id, result, reward_error=RewardError(task_id, wrong))
            return RolloutOutcome(task_id, result, float(value))
        except SandboxError as exc:
            return failed("sandbox_lost", _describe(exc), result)
        except Exception as exc:
            return RolloutOutcome(task_id, result, reward_error=RewardError(task_id, exc))
        finally:
            await ctx.acleanup()
    finally:
        await pool.release(task_id)
