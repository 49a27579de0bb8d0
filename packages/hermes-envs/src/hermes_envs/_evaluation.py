"""Evaluation of an agent environment: one rollout per item, scored, and what Atropos'
``evaluate_log`` writes of it.

The bodies of ``HermesAgentBaseEnv.evaluate_items``, ``evaluate_and_log`` and
``eval_sample``; an environment's own ``evaluate`` calls those methods.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from hermes_envs._env_config import HermesAgentEnvConfig
from hermes_envs._records import RolloutRecords
from hermes_envs._reference import GroupPath, outcome_of_collect_trajectory
from hermes_envs._rollout import RolloutOutcome
from hermes_envs._stats import ProgressReporter, RunStats
from hermes_envs.scoring._group import wire_messages

__all__ = ["eval_sample", "evaluate_and_log", "evaluate_items"]

ItemT = TypeVar("ItemT")
ItemT_contra = TypeVar("ItemT_contra", contravariant=True)


class Evaluated(Protocol[ItemT_contra]):
    """What evaluation needs of an environment (``HermesAgentBaseEnv`` has it)."""

    config: HermesAgentEnvConfig
    stats: RunStats
    reporter: ProgressReporter

    @property
    def group_path(self) -> GroupPath:
        """How the environment's groups (and so its rollouts) are made."""
        ...

    @property
    def rollout_records(self) -> RolloutRecords:
        """Where evaluated items' records go (``hermes_envs._records``)."""
        ...

    async def run_rollouts(self, item: ItemT_contra, count: int) -> list[RolloutOutcome]:
        """``count`` rollouts of ``item``."""
        ...

    def eval_sample(self, item: ItemT_contra, outcome: RolloutOutcome) -> dict[str, Any]:
        """The JSON-ready record of one evaluated item."""
        ...

    async def log_evaluation(
        self,
        metrics: Mapping[str, float],
        samples: Sequence[Mapping[str, Any]],
        *,
        start_time: float,
    ) -> None:
        """Write an evaluation with Atropos' ``evaluate_log``."""
        ...


async def evaluate_items(
    env: Evaluated[ItemT], items: Sequence[ItemT]
) -> list[tuple[ItemT, RolloutOutcome]]:
    """One rollout per item (at most ``max_eval_workers`` at once), retried on
    infrastructure failure; ``(item, outcome)`` in the order of ``items``. An environment
    that overrides ``collect_trajectory`` gets each item's rollout from it.

    Raises:
        RewardFunctionError, RunAbortedError: as ``run_rollouts``.
    """
    gate = asyncio.Semaphore(max(1, env.config.max_eval_workers))

    async def one(index: int, item: ItemT) -> tuple[ItemT, RolloutOutcome]:
        async with gate:
            if env.group_path is GroupPath.COLLECT_TRAJECTORY:
                outcome = await outcome_of_collect_trajectory(env, item)
            else:
                (outcome,) = await env.run_rollouts(item, 1)
            await env.rollout_records.evaluated(index, item, outcome)
            env.stats.groups_done += 1
            env.reporter.update(env.stats)
            return item, outcome

    return list(await asyncio.gather(*(one(i, item) for i, item in enumerate(items))))


async def evaluate_and_log(
    env: Evaluated[ItemT], items: Sequence[ItemT], score_metric: str
) -> None:
    """Evaluate ``items`` (``evaluate_items``) and write, with ``log_evaluation``, the
    mean score as ``eval/{score_metric}`` (over scored items; infrastructure failures
    counted apart; left out when no item was scored) and one sample per item.

    Raises:
        RewardFunctionError, RunAbortedError: as ``run_rollouts``.
    """
    start = time.time()
    pairs = await evaluate_items(env, items)
    scores = [outcome.score for _, outcome in pairs if outcome.score is not None]
    metrics = {
        "eval/scored": float(len(scores)),
        "eval/infra_failures": float(sum(1 for _, outcome in pairs if not outcome.ok)),
    }
    if scores:  # no score at all is not a mean of 0: the metric is left out
        metrics[f"eval/{score_metric}"] = sum(scores) / len(scores)
    env.stats.eval_scored = len(scores)
    samples = [json.loads(json.dumps(env.eval_sample(i, o), default=str)) for i, o in pairs]
    await env.log_evaluation(metrics, samples, start_time=start)


def eval_sample(item: Any, outcome: RolloutOutcome) -> dict[str, Any]:
    """A JSON-ready record of one evaluated item (for ``samples.jsonl``)."""
    result = outcome.result
    return {
        "item": item,
        "task_id": outcome.task_id,
        "score": outcome.score,
        "infra_failure": outcome.failure.to_dict() if outcome.failure else None,
        "stop_reason": result.stop_reason if result else None,
        "turns_used": result.turns_used if result else 0,
        "messages": wire_messages(result.messages) if result else [],
    }
