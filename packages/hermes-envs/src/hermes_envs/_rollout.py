"""One rollout: a sandbox for its task id, the agent run, the reward, the sandbox closed.

The agent runs through ``hermes_envs._agent_run.run_agent`` (as hermes-bench's agents
do): whatever breaks outside the model (the sandbox would not start or died, the model
endpoint failed after its retries) becomes an ``InfraFailure``: recorded, retried by the
caller, never scored as the model's 0. Reward code that raises (or returns no number) is
the environment's bug: a ``RewardError``, never retried and never scored
(``hermes_envs._reward_errors``); a ``SandboxError`` it raises (the sandbox died under
it) is still the infrastructure's.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hermes_envs._agent_run import InfraFailure, describe, run_agent
from hermes_envs._reward_errors import RewardError
from hermes_loop import AgentLoop, AgentResult
from hermes_sandbox import SandboxError, SandboxPool, ToolContext

__all__ = ["InfraFailure", "RewardFunction", "RolloutOutcome", "run_rollout"]

RewardFunction = Callable[[AgentResult, ToolContext], "Awaitable[float] | float"]


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


async def run_rollout(
    messages: Sequence[Mapping[str, Any]],
    *,
    loop: AgentLoop,
    pool: SandboxPool,
    task_id: str,
    reward: RewardFunction,
) -> RolloutOutcome:
    """Run one rollout in its own sandbox (``run_agent``) and score it.

    The sandbox is started before the first model call, handed to the reward through a
    ``ToolContext`` on the same task id, and released afterwards however the rollout
    ends (cancellation included).

    Raises:
        asyncio.CancelledError: when cancelled (the sandbox is released first).
    """

    def failed(stage: str, message: str, result: AgentResult | None = None) -> RolloutOutcome:
        return RolloutOutcome(task_id, result, None, InfraFailure(task_id, stage, message))

    try:
        run = await run_agent(loop, messages, task_id=task_id, sandboxes=pool)
        result = run.result
        if run.failure is not None or result is None:
            return RolloutOutcome(task_id, result, None, run.failure)
        try:
            await pool.get(task_id, recreate=False)
        except SandboxError as exc:
            return failed("sandbox_lost", describe(exc), result)
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
            return failed("sandbox_lost", describe(exc), result)
        except Exception as exc:
            return RolloutOutcome(task_id, result, reward_error=RewardError(task_id, exc))
        finally:
            await ctx.acleanup()
    finally:
        await pool.release(task_id)
