"""What a run shows: a live progress line while it goes, tables when it ends (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from hermes_benchmarks.results import TrialResult
from hermes_benchmarks.run import RunProgress
from hermes_benchmarks.summary import GroupSummary, RunSummary

__all__ = ["ProgressPrinter", "results_tables"]


def _progress_line(progress: RunProgress) -> str:
    return (
        f"{progress.done}/{progress.total} done · [green]{progress.passed} passed[/] · "
        f"[red]{progress.failed} failed[/] · [yellow]{progress.infra_errors} infra errors[/] · "
        f"{progress.per_minute:.1f} trials/min"
    )


class ProgressPrinter:
    """An ``on_progress`` callback printing one line per finished trial and the counts."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, progress: RunProgress, result: TrialResult | None) -> None:
        """Print ``result`` (when there is one) and the run's counts."""
        if result is not None:
            verdict = {"pass": "[green]pass[/]", "fail": "[red]fail[/]"}.get(
                result.status, f"[yellow]infra_error ({result.error_kind})[/]"
            )
            self.console.print(f"{result.task} #{result.trial}: {verdict}", highlight=False)
        self.console.print(_progress_line(progress), highlight=False)


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _group_row(table: Table, name: str, group: GroupSummary, ks: list[int]) -> None:
    table.add_row(
        name,
        str(group.trials),
        str(group.passed),
        str(group.failed),
        str(group.infra_errors),
        _mean(group.mean_reward),
        *(_mean(group.pass_at_k.get(k)) for k in ks),
    )


def results_tables(summary: RunSummary) -> list[Table]:
    """The per-task table, and the per-tier table when the tasks have tiers."""
    ks = sorted(summary.overall.pass_at_k)
    tasks = Table(title="results per task")
    for column in ("task", "tier", "trials", "passed", "infra", "mean", *(f"pass@{k}" for k in ks)):
        tasks.add_column(column)
    for task in summary.tasks:
        tasks.add_row(
            task.task,
            task.difficulty or "-",
            str(task.trials),
            str(task.passed),
            str(task.infra_errors),
            _mean(task.mean_reward),
            *(_mean(task.pass_at_k.get(k)) for k in ks),
        )
    groups = Table(title="results per tier" if summary.tiers else "overall")
    for column in (
        "tier",
        "trials",
        "passed",
        "failed",
        "infra",
        "mean",
        *(f"pass@{k}" for k in ks),
    ):
        groups.add_column(column)
    for tier, group in summary.tiers.items():
        _group_row(groups, tier, group, ks)
    _group_row(groups, "overall", summary.overall, ks)
    return [tasks, groups]
