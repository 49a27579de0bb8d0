"""The progress display of long runs: groups done, rollouts per second, infra failures."""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

if TYPE_CHECKING:
    from hermes_envs._stats import RunStats

__all__ = ["RichProgress"]


class RichProgress:
    """A rich progress bar on stderr, updated from the run's counters.

    The bar appears at the first :meth:`update`, not when the block is entered: a run
    tells it once its checks passed (``evaluate``, ``process``), so that a check that
    fails prints its one line with no bar above it. A block left before any update
    draws nothing.

    Args:
        label: what is counted (``groups``, ``items``).
        total: how many are wanted (``None``: unknown).
        console: where to draw (default: stderr).
    """

    def __init__(self, label: str, total: int | None, console: Console | None = None) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
            console=console or Console(stderr=True),
            transient=False,
        )
        self._label = label
        self._total = total
        self._task: TaskID | None = None
        self._start = time.monotonic()
        self._inside = False

    def update(self, stats: RunStats) -> None:
        """Show ``stats`` (the first call, inside the block, draws the bar)."""
        if self._task is None:
            self._task = self._progress.add_task(self._label, total=self._total, info="")
            self._start = time.monotonic()
            if self._inside:
                self._progress.start()
        elapsed = max(time.monotonic() - self._start, 1e-6)
        info = (
            f"{stats.rollouts_done / elapsed:.2f} rollouts/s · "
            f"infra failures {stats.infra_failures} · requeued {stats.groups_requeued}"
        )
        self._progress.update(self._task, completed=stats.groups_done, info=info)

    def __enter__(self) -> RichProgress:
        self._inside = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._inside = False
        if self._task is not None:
            self._progress.stop()
