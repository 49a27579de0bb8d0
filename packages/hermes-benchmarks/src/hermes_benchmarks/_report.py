"""What a run shows when it ends: the results tables (rich).

The display while it goes is :class:`~hermes_benchmarks.progress.RunDisplay`.
"""

from __future__ import annotations

from rich.table import Table

from hermes_benchmarks._summary import GroupSummary, RunSummary

__all__ = ["results_tables"]


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _group_row(table: Table, name: str, group: GroupSummary, ks: list[int]) -> None:
    table.add_row(
        name,
        str(group.trials),
        str(group.passed),
        str(group.suspect_passed),
        str(group.failed),
        str(group.infra_errors),
        _mean(group.pass_rate),
        _mean(group.clean_pass_rate),
        _mean(group.mean_reward),
        *(_mean(group.pass_at_k.get(k)) for k in ks),
    )


def results_tables(summary: RunSummary) -> list[Table]:
    """The per-task table, and the per-tier table when the tasks have tiers (else the
    overall one). ``suspect``: passes of suspect trials (counted among the passes too);
    ``clean``: the pass rate without them, beside the pass rate."""
    ks = sorted(summary.overall.pass_at_k)
    tasks = Table(title="results per task")
    for column in (
        "task",
        "tier",
        "trials",
        "passed",
        "suspect",
        "infra",
        "mean",
        *(f"pass@{k}" for k in ks),
    ):
        tasks.add_column(column)
    for task in summary.tasks:
        tasks.add_row(
            task.task,
            task.difficulty or "-",
            str(task.trials),
            str(task.passed),
            str(task.suspect_passed),
            str(task.infra_errors),
            _mean(task.mean_reward),
            *(_mean(task.pass_at_k.get(k)) for k in ks),
        )
    groups = Table(title="results per tier" if summary.tiers else "overall")
    for column in (
        "tier",
        "trials",
        "passed",
        "suspect",
        "failed",
        "infra",
        "pass rate",
        "clean",
        "mean",
        *(f"pass@{k}" for k in ks),
    ):
        groups.add_column(column)
    for tier, group in summary.tiers.items():
        _group_row(groups, tier, group, ks)
    _group_row(groups, "overall", summary.overall, ks)
    return [tasks, groups]
