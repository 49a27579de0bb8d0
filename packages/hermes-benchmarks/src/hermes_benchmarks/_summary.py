"""What a run amounts to: per task, per difficulty tier and overall, infra failures apart.

Scores are computed over *scored* trials only (``pass`` or ``fail``); a trial that ended
in ``infra_error`` has no verdict, is counted on its own, and never lowers a mean. A pass
whose trial is ``suspect`` (the agent changed what the tests run; shared mode) is counted
among the passes and again apart (``suspect_passed``); ``clean_pass_rate`` is the share
of scored trials that passed without being suspect.
``pass@k`` is the unbiased estimator ``1 - C(n-c, k) / C(n, k)`` over a task's ``n``
scored trials of which ``c`` passed, averaged over the tasks with at least ``k`` of them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from math import comb
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hermes_benchmarks._results import TrialResult

__all__ = ["GroupSummary", "RunSummary", "TaskSummary", "pass_at_k", "summarize"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` trials drawn from ``n`` (``c`` passing) passes.

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


class TaskSummary(BaseModel):
    """One task over its trials."""

    model_config = ConfigDict(frozen=True)

    task: str
    difficulty: str | None
    trials: int
    scored: int
    passed: int
    infra_errors: int
    mean_reward: float | None
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    error_kinds: dict[str, int] = Field(default_factory=dict)
    suspect_passed: int = 0
    failure_kinds: dict[str, int] = Field(default_factory=dict)


class GroupSummary(BaseModel):
    """Several tasks together (a difficulty tier, or the whole run)."""

    model_config = ConfigDict(frozen=True)

    tasks: int
    trials: int
    scored: int
    passed: int
    failed: int
    infra_errors: int
    mean_reward: float | None
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    suspect_passed: int = 0
    pass_rate: float | None = None
    clean_pass_rate: float | None = None


class RunSummary(BaseModel):
    """The whole run: overall, per tier, per task, and what kept trials from a verdict."""

    model_config = ConfigDict(frozen=True)

    overall: GroupSummary
    tiers: dict[str, GroupSummary]
    tasks: list[TaskSummary]
    error_kinds: dict[str, int]
    unscored_tasks: list[str]
    failure_kinds: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A plain dict for ``summary.json``."""
        return self.model_dump(mode="json")


def _task_summary(task: str, results: Sequence[TrialResult], ks: Sequence[int]) -> TaskSummary:
    scored = [r for r in results if r.status != "infra_error"]
    passed = sum(1 for r in scored if r.status == "pass")
    rewards = [r.reward for r in scored if r.reward is not None]
    difficulty = next((r.difficulty for r in results if r.difficulty), None)
    kinds = Counter(
        str(r.error_kind) for r in results if r.status == "infra_error" and r.error_kind
    )
    failures = Counter(str(r.error_kind) for r in scored if r.error_kind)
    return TaskSummary(
        task=task,
        difficulty=difficulty,
        trials=len(results),
        scored=len(scored),
        passed=passed,
        infra_errors=len(results) - len(scored),
        mean_reward=sum(rewards) / len(rewards) if rewards else None,
        pass_at_k={k: pass_at_k(len(scored), passed, k) for k in ks if k <= len(scored)},
        error_kinds=dict(kinds),
        suspect_passed=sum(1 for r in scored if r.status == "pass" and r.suspect),
        failure_kinds=dict(failures),
    )


def _group(tasks: Sequence[TaskSummary], results: Sequence[TrialResult]) -> GroupSummary:
    scored = [r for r in results if r.status != "infra_error"]
    rewards = [r.reward for r in scored if r.reward is not None]
    ks = sorted({k for t in tasks for k in t.pass_at_k})
    at_k = {}
    for k in ks:
        values = [t.pass_at_k[k] for t in tasks if k in t.pass_at_k]
        at_k[k] = sum(values) / len(values)
    passed = sum(1 for r in scored if r.status == "pass")
    suspect = sum(1 for r in scored if r.status == "pass" and r.suspect)
    return GroupSummary(
        tasks=len(tasks),
        trials=len(results),
        scored=len(scored),
        passed=passed,
        failed=sum(1 for r in scored if r.status == "fail"),
        infra_errors=len(results) - len(scored),
        mean_reward=sum(rewards) / len(rewards) if rewards else None,
        pass_at_k=at_k,
        suspect_passed=suspect,
        pass_rate=passed / len(scored) if scored else None,
        clean_pass_rate=(passed - suspect) / len(scored) if scored else None,
    )


def summarize(
    results: Iterable[TrialResult],
    *,
    ks: Sequence[int] | None = None,
    difficulties: Mapping[str, str | None] | None = None,
    notes: Sequence[str] = (),
) -> RunSummary:
    """Summarize finished trials.

    ``ks``: the ``k`` of pass@k to report (default 1 up to the most trials any task has).
    ``difficulties``: a task's tier when its results carry none.
    """
    by_task: dict[str, list[TrialResult]] = defaultdict(list)
    for result in results:
        by_task[result.task].append(result)
    most = max((len(v) for v in by_task.values()), default=0)
    wanted = list(ks) if ks is not None else list(range(1, most + 1))
    summaries = []
    for task in sorted(by_task):
        summary = _task_summary(task, by_task[task], wanted)
        if summary.difficulty is None and difficulties and difficulties.get(task):
            summary = summary.model_copy(update={"difficulty": difficulties[task]})
        summaries.append(summary)
    all_results = [r for task in sorted(by_task) for r in by_task[task]]
    tiers: dict[str, GroupSummary] = {}
    for tier in sorted({s.difficulty for s in summaries if s.difficulty}):
        members = [s for s in summaries if s.difficulty == tier]
        names = {s.task for s in members}
        tiers[tier] = _group(members, [r for r in all_results if r.task in names])
    kinds = Counter(
        str(r.error_kind) for r in all_results if r.status == "infra_error" and r.error_kind
    )
    return RunSummary(
        overall=_group(summaries, all_results),
        tiers=tiers,
        tasks=summaries,
        error_kinds=dict(kinds),
        unscored_tasks=[s.task for s in summaries if s.scored == 0],
        failure_kinds=dict(
            Counter(
                str(r.error_kind) for r in all_results if r.status != "infra_error" and r.error_kind
            )
        ),
        notes=list(notes),
    )
