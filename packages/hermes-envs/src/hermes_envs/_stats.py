"""A run's counters (``RunStats``) and who is told when they change (``ProgressReporter``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["ProgressReporter", "RunStats"]


@dataclass(slots=True)
class RunStats:
    """Counters of a run, shown by the progress display and logged as metrics."""

    groups_done: int = 0
    rollouts_done: int = 0
    infra_failures: int = 0
    groups_requeued: int = 0
    groups_dropped: int = 0
    token_drift: int = 0
    reward_errors: int = 0
    failures_by_stage: dict[str, int] = field(default_factory=dict)
    #: Items ``evaluate_and_log`` scored (None: the env's ``evaluate`` scores its own).
    eval_scored: int | None = None

    def as_metrics(self, prefix: str = "train") -> dict[str, float]:
        """The counters as ``{prefix}/name`` metrics."""
        metrics = {
            f"{prefix}/groups_done": float(self.groups_done),
            f"{prefix}/rollouts_done": float(self.rollouts_done),
            f"{prefix}/infra_failures": float(self.infra_failures),
            f"{prefix}/groups_requeued": float(self.groups_requeued),
            f"{prefix}/token_drift": float(self.token_drift),
            f"{prefix}/reward_errors": float(self.reward_errors),
        }
        for stage, count in self.failures_by_stage.items():
            metrics[f"{prefix}/infra_failures_{stage}"] = float(count)
        return metrics


class ProgressReporter(Protocol):
    """Told whenever the run's counters change (the CLI's progress display)."""

    def update(self, stats: RunStats) -> None:
        """Show ``stats``."""
        ...
