"""The progress of a run as it goes: a live rich bar in a terminal, plain lines elsewhere.

:class:`RunDisplay` is the ``on_progress`` callback of
:func:`~hermes_benchmarks.run.run_benchmark`. On an interactive terminal it draws a live
bar (done/total, passed, failed, infra errors, trials per minute, elapsed time and the
time left) that ticks every half second, with one line per finished trial printed above
it, in two lines that fit an 80-column terminal:

    ━━━━━━━━━╺━━━━━━━━━━━━━━━━━━━━ 12/40 done · elapsed 0:03:45 · ETA 0:08:45
    10 passed · 1 failed · 1 infra errors · 3.2 trials/min

When the console is not a terminal (a pipe, a CI log, ``TERM=dumb``) it prints no
control codes: one line per finished trial, each followed by the counts (never wrapped).

The bar starts with the run's first report (so an error before the run starts prints
nothing of it) and stops when the display is closed or its ``with`` block ends, however
it ends (Ctrl-C and SIGTERM included): the cursor is shown again, the last counts stay
on screen and ``sys.stdout`` / ``sys.stderr`` are restored.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from hermes_benchmarks._results import TrialResult
from hermes_benchmarks.run import RunProgress

__all__ = ["RunDisplay", "counts_line", "trial_line"]

#: Width of the live bar, in cells.
BAR_WIDTH = 30


def _clock_text(seconds: float) -> str:
    whole = max(0, int(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def _timing(progress: RunProgress, now: float) -> tuple[float, str, str]:
    """Trials per minute, elapsed time and time left (``-`` while unknown)."""
    elapsed = max(now - progress.started_at, 0.0)
    finished_here = progress.done - progress.skipped
    rate = finished_here * 60.0 / elapsed if elapsed > 0 else 0.0
    left = progress.total - progress.done
    if left <= 0:
        eta = _clock_text(0)
    elif rate > 0:
        eta = _clock_text(left * 60.0 / rate)
    else:
        eta = "-"
    return rate, _clock_text(elapsed), eta


def _verdicts(progress: RunProgress) -> str:
    return (
        f"[green]{progress.passed} passed[/] · [red]{progress.failed} failed[/] · "
        f"[yellow]{progress.infra_errors} infra errors[/]"
    )


def counts_line(progress: RunProgress, now: float) -> str:
    """The run's counts as rich markup, e.g. ``12/40 done · 10 passed · 1 failed ·
    1 infra errors · 3.2 trials/min · elapsed 0:03:45 · ETA 0:08:45``.

    ``now`` is a reading of the clock ``progress.started_at`` was taken with. The rate
    counts only the trials this process finished (resumed ones excluded); the time left
    is the trials left at that rate (``ETA -`` before the first trial finishes).
    """
    rate, elapsed, eta = _timing(progress, now)
    return (
        f"{progress.done}/{progress.total} done · {_verdicts(progress)} · "
        f"{rate:.1f} trials/min · elapsed {elapsed} · ETA {eta}"
    )


def trial_line(result: TrialResult) -> str:
    """One finished trial as rich markup: ``task #trial: pass|fail|infra_error (kind)``."""
    verdict = {"pass": "[green]pass[/]", "fail": "[red]fail[/]"}.get(
        result.status, f"[yellow]infra_error ({result.error_kind})[/]"
    )
    return f"{result.task} #{result.trial}: {verdict}"


class RunDisplay:
    """An ``on_progress`` callback that shows a run's progress on ``console``.

    Use it as a context manager around the run (or call :meth:`close` after it) so the
    live bar is stopped however the run ends.

    Args:
        console: where to draw. A live bar is drawn when it is an interactive terminal
            (``console.is_terminal`` and not a dumb one); otherwise plain lines.
        clock: the clock ``RunProgress.started_at`` is read from (``time.monotonic``).
        auto_refresh: redraw the bar twice a second between reports (elapsed time and
            time left tick); without it the bar is redrawn at each report only.
    """

    def __init__(
        self,
        console: Console,
        *,
        clock: Callable[[], float] = time.monotonic,
        auto_refresh: bool = True,
    ) -> None:
        self.console = console
        self._clock = clock
        self._latest: RunProgress | None = None
        self._live: Live | None = None
        if console.is_terminal and not console.is_dumb_terminal:
            self._live = Live(
                console=console,
                auto_refresh=auto_refresh,
                refresh_per_second=2,
                transient=False,
                get_renderable=self._render,
            )

    @property
    def live(self) -> bool:
        """Whether this display draws a live bar (else plain lines)."""
        return self._live is not None

    @property
    def drawing(self) -> bool:
        """Whether the live bar is on screen now (started and not yet stopped)."""
        return self._live is not None and self._live.is_started

    def _render(self) -> RenderableType:
        progress = self._latest
        if progress is None:
            return Text("")
        rate, elapsed, eta = _timing(progress, self._clock())
        top = Table.grid(padding=(0, 1))
        top.add_row(
            ProgressBar(total=max(progress.total, 1), completed=progress.done, width=BAR_WIDTH),
            Text(f"{progress.done}/{progress.total} done · elapsed {elapsed} · ETA {eta}"),
        )
        counts = Text.from_markup(f"{_verdicts(progress)} · {rate:.1f} trials/min")
        return Group(top, counts)

    def __call__(self, progress: RunProgress, result: TrialResult | None) -> None:
        """Show ``result`` (when there is one) and the run's counts."""
        self._latest = dataclasses.replace(progress)
        if self._live is None:
            lines = [trial_line(result)] if result is not None else []
            for line in [*lines, counts_line(progress, self._clock())]:
                self.console.print(line, highlight=False, soft_wrap=True)
            return
        if self._live.is_started:
            self._live.refresh()
        else:
            self._live.start(refresh=True)
        if result is not None:  # printed above the (already updated) bar
            self.console.print(trial_line(result), highlight=False)

    def close(self) -> None:
        """Stop the live bar, leaving its last counts on screen (idempotent)."""
        if self._live is not None and self._live.is_started:
            self._live.stop()

    def __enter__(self) -> RunDisplay:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
