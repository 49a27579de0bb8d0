"""The run's progress display: a live bar on a terminal, plain lines elsewhere, and a
terminal left clean however the run ends."""

from __future__ import annotations

import re
import sys
import threading
import time
from io import StringIO

import pytest
from rich.console import Console

from hermes_benchmarks._results import Attempt, TrialResult
from hermes_benchmarks.progress import RunDisplay, counts_line
from hermes_benchmarks.run import RunProgress

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def result(task: str, trial: int, status: str, kind: str | None = None) -> TrialResult:
    if status == "infra_error":
        attempt = Attempt.model_validate({"status": status, "error_kind": kind, "error": "boom"})
    else:
        attempt = Attempt.model_validate({"status": status, "reward": float(status == "pass")})
    return TrialResult.from_attempts(task, trial, [attempt])


class Screen:
    """A console writing to memory. ``shown()`` is what a terminal shows after that output
    (carriage return, erase line, cursor up and newline played), ``since_last()`` the text
    written since the previous call, control codes removed."""

    def __init__(self, *, terminal: bool) -> None:
        self.file = StringIO()
        self.console = Console(
            file=self.file, force_terminal=terminal, width=80, color_system=None, _environ={}
        )
        self._seen = 0

    def raw(self) -> str:
        return self.file.getvalue()

    def shown(self) -> list[str]:
        lines, row = [""], 0
        for token in re.split(r"(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)", self.file.getvalue()):
            if token == "\n":
                row += 1
                if row == len(lines):
                    lines.append("")
            elif token == "\x1b[1A":
                row -= 1
            elif token == "\x1b[2K":
                lines[row] = ""
            elif token and token != "\r" and not token.startswith("\x1b"):
                lines[row] += token
        return [line.rstrip() for line in lines if line.strip()]

    def since_last(self) -> str:
        text = self.file.getvalue()
        new, self._seen = text[self._seen :], len(text)
        return ANSI.sub("", new)


def run_steps(
    display: RunDisplay, clock: Clock, screen: Screen, steps: list[TrialResult]
) -> list[list[str]]:
    """Drive ``display`` as run_benchmark does: once at the start, then once per trial
    (a minute apart); what the screen shows after each step."""
    progress = RunProgress(total=4, started_at=clock.now)
    shown = []
    display(progress, None)
    shown.append(screen.shown())
    for step in steps:
        clock.now += 60.0
        progress.add(step)
        display(progress, step)
        shown.append(screen.shown())
    return shown


STEPS = [
    result("alpha", 0, "pass"),
    result("beta", 0, "fail"),
    result("gamma", 0, "infra_error", "sandbox_start"),
]


def test_counts_line_rate_and_time_left() -> None:
    progress = RunProgress(total=10, started_at=100.0)
    assert counts_line(progress, 100.0) == (
        "0/10 done · [green]0 passed[/] · [red]0 failed[/] · [yellow]0 infra errors[/] · "
        "0.0 trials/min · elapsed 0:00:00 · ETA -"
    )
    for status in ("pass", "pass", "fail", "infra_error"):
        progress.add(result("t", 0, status, "agent_crash"))
    # 4 trials in 2 minutes: 2.0/min; 6 left: 3 minutes.
    line = counts_line(progress, 220.0)
    assert line.startswith("4/10 done · [green]2 passed[/] · [red]1 failed[/] · ")
    assert line.endswith("2.0 trials/min · elapsed 0:02:00 · ETA 0:03:00")


def test_resumed_trials_are_not_counted_in_the_rate() -> None:
    progress = RunProgress(total=10, started_at=0.0)
    for _ in range(6):
        progress.add(result("t", 0, "pass"))
    progress.skipped = 6
    assert "0.0 trials/min" in counts_line(progress, 60.0)
    assert counts_line(progress, 60.0).endswith("ETA -")
    progress.add(result("t", 1, "pass"))
    # One trial in 2 minutes here: 0.5/min, 3 left: 6 minutes.
    assert counts_line(progress, 120.0).endswith("0.5 trials/min · elapsed 0:02:00 · ETA 0:06:00")


def test_a_terminal_gets_a_live_bar_with_the_counts_at_each_step() -> None:
    screen = Screen(terminal=True)
    clock = Clock()
    with RunDisplay(screen.console, clock=clock, auto_refresh=False) as display:
        assert display.live
        drawn = run_steps(display, clock, screen, STEPS)
        assert display.drawing
    assert not display.drawing
    raw = screen.raw()
    assert "\x1b[?25l" in raw, "the live display hides the cursor"
    assert raw.endswith("\x1b[?25h"), "and shows it again when it stops"
    # After each step: the trial lines so far, and the bar below them in two lines that
    # fit 80 columns, always with the latest counts.
    assert drawn[0] == [
        " " * 31 + "0/4 done · elapsed 0:00:00 · ETA -",
        "0 passed · 0 failed · 0 infra errors · 0.0 trials/min",
    ]
    assert drawn[1] == [
        "alpha #0: pass",
        "━" * 7 + "╸" + " " * 23 + "1/4 done · elapsed 0:01:00 · ETA 0:03:00",
        "1 passed · 0 failed · 0 infra errors · 1.0 trials/min",
    ]
    assert drawn[2] == [
        "alpha #0: pass",
        "beta #0: fail",
        "━" * 15 + " " * 16 + "2/4 done · elapsed 0:02:00 · ETA 0:02:00",
        "1 passed · 1 failed · 0 infra errors · 1.0 trials/min",
    ]
    assert drawn[3] == [
        "alpha #0: pass",
        "beta #0: fail",
        "gamma #0: infra_error (sandbox_start)",
        "━" * 22 + "╸" + " " * 8 + "3/4 done · elapsed 0:03:00 · ETA 0:01:00",
        "1 passed · 1 failed · 1 infra errors · 1.0 trials/min",
    ]
    assert max(len(line) for line in drawn[3]) <= 80
    # No stale counts are ever drawn: each frame shows the counts of its step.
    assert "0/4 done" not in raw[raw.index("alpha #0") :]
    # The trial lines are printed once each, above the bar (not re-drawn with it).
    assert ANSI.sub("", raw).count("alpha #0: pass") == 1


def test_the_bar_ticks_between_reports() -> None:
    screen = Screen(terminal=True)
    clock = Clock()
    with RunDisplay(screen.console, clock=clock) as display:
        progress = RunProgress(total=2, started_at=clock.now)
        display(progress, None)
        clock.now += 75.0
        deadline = time.monotonic() + 30
        while "elapsed 0:01:15" not in ANSI.sub("", screen.raw()):
            assert time.monotonic() < deadline, "the bar was not redrawn without a report"
            time.sleep(0.05)


def test_a_pipe_gets_one_line_per_trial_and_no_control_codes() -> None:
    screen = Screen(terminal=False)
    clock = Clock()
    with RunDisplay(screen.console, clock=clock) as display:
        assert not display.live
        run_steps(display, clock, screen, STEPS)
    raw = screen.raw()
    assert "\x1b" not in raw
    assert raw.splitlines() == [
        "0/4 done · 0 passed · 0 failed · 0 infra errors · 0.0 trials/min · elapsed 0:00:00 "
        "· ETA -",
        "alpha #0: pass",
        "1/4 done · 1 passed · 0 failed · 0 infra errors · 1.0 trials/min · elapsed 0:01:00 "
        "· ETA 0:03:00",
        "beta #0: fail",
        "2/4 done · 1 passed · 1 failed · 0 infra errors · 1.0 trials/min · elapsed 0:02:00 "
        "· ETA 0:02:00",
        "gamma #0: infra_error (sandbox_start)",
        "3/4 done · 1 passed · 1 failed · 1 infra errors · 1.0 trials/min · elapsed 0:03:00 "
        "· ETA 0:01:00",
    ]


def test_a_dumb_terminal_gets_plain_lines() -> None:
    file = StringIO()
    console = Console(file=file, force_terminal=True, _environ={"TERM": "dumb"})
    with RunDisplay(console) as display:
        assert not display.live
        display(RunProgress(total=1, started_at=0.0), None)
    assert "\x1b[?25l" not in file.getvalue()


def test_nothing_is_drawn_before_the_run_reports() -> None:
    screen = Screen(terminal=True)
    with pytest.raises(RuntimeError), RunDisplay(screen.console):
        raise RuntimeError("the tasks folder does not exist")  # fails before the run starts
    assert screen.raw() == ""


def test_an_interrupted_run_leaves_the_terminal_clean() -> None:
    screen = Screen(terminal=True)
    clock = Clock()
    threads = set(threading.enumerate())
    stdout, stderr = sys.stdout, sys.stderr
    display = RunDisplay(screen.console, clock=clock)

    def interrupted_run() -> None:
        with display:
            progress = RunProgress(total=3, started_at=clock.now)
            display(progress, None)
            assert display.drawing
            assert sys.stdout is not stdout, "the live display takes over stdout while it runs"
            clock.now += 30.0
            progress.add(STEPS[0])
            display(progress, STEPS[0])
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        interrupted_run()
    assert not display.drawing
    assert (sys.stdout, sys.stderr) == (stdout, stderr)
    raw = screen.raw()
    assert raw.endswith("\x1b[?25h")
    assert screen.shown()[-3:] == [
        "alpha #0: pass",
        "━" * 10 + " " * 21 + "1/3 done · elapsed 0:00:30 · ETA 0:01:00",
        "1 passed · 0 failed · 0 infra errors · 2.0 trials/min",
    ], "the last counts stay on screen"
    for thread in set(threading.enumerate()) - threads:  # told to stop: it ends at once
        thread.join(timeout=30)
        assert not thread.is_alive(), f"the refresh thread outlived the display: {thread}"
    display.close()  # closing again is harmless
