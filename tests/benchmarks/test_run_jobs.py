"""The results stream every run shares (``open_results`` and ``run_jobs``): resuming a
results file, the concurrency gate, and a summary that always counts exactly the lines
in ``results.jsonl`` (cancelled or failed runs included). No sandboxes: the jobs here
return results directly."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from pathlib import Path

import pytest

from hermes_benchmarks import Attempt, ResultsFileError, TrialResult
from hermes_benchmarks._summary import RunSummary, summarize
from hermes_benchmarks.run import (
    RESULTS_FILE,
    RUNS_FILE,
    SUMMARY_FILE,
    open_results,
    run_jobs,
)
from hermes_benchmarks.yc_bench._results import YCRunResult, YCSummary, summarize_runs
from hermes_sandbox.backends.docker import RUN_ID


def result(task: str, trial: int = 0) -> TrialResult:
    return TrialResult.from_attempts(task, trial, [Attempt(status="pass", reward=1.0)])


def lines(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / RESULTS_FILE).read_text().splitlines()]


def summary_trials(folder: Path) -> int:
    trials = json.loads((folder / SUMMARY_FILE).read_text())["overall"]["trials"]
    assert isinstance(trials, int)
    return trials


async def cancel_after_the_first_result(folder: Path, jobs: int) -> int:
    """Run ``jobs`` quick jobs, cancel the run once a first result is reported; how many
    results were reported."""
    log = await open_results(folder, TrialResult, resume=False)
    reported: list[TrialResult] = []
    first = asyncio.Event()

    def on_result(done: TrialResult) -> None:
        reported.append(done)
        first.set()

    async def job(n: int) -> TrialResult:
        await asyncio.sleep(0)
        return result(f"task-{n:02d}")

    run = asyncio.create_task(
        run_jobs(
            log,
            [partial(job, n) for n in range(jobs)],
            max_concurrent=8,
            summarize=summarize,
            summary_file=folder / SUMMARY_FILE,
            on_result=on_result,
        )
    )
    await first.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert len(log) == len(lines(folder))
    return len(reported)


async def test_a_cancelled_run_writes_a_summary_counting_exactly_the_lines_in_its_file(
    tmp_path: Path,
) -> None:
    # Cancelled as soon as a first result is reported: the other jobs are then mostly
    # between their result and its line, which is the moment a summary could miss one.
    for attempt in range(10):
        folder = tmp_path / str(attempt)
        reported = await cancel_after_the_first_result(folder, 40)
        written = lines(folder)
        assert 1 <= len(written) < 40
        assert summary_trials(folder) == len(written)
        assert reported <= len(written)


async def test_a_failing_job_keeps_the_other_lines_and_still_writes_the_summary(
    tmp_path: Path,
) -> None:
    log = await open_results(tmp_path, TrialResult, resume=False)
    release = asyncio.Event()

    async def passing(n: int) -> TrialResult:
        await release.wait()
        return result(f"task-{n}")

    async def failing() -> TrialResult:
        release.set()
        await asyncio.sleep(0.05)
        raise RuntimeError("the job broke")

    with pytest.raises(ExceptionGroup) as caught:
        await run_jobs(
            log,
            [partial(passing, 0), partial(passing, 1), failing],
            max_concurrent=3,
            summarize=summarize,
            summary_file=tmp_path / SUMMARY_FILE,
        )
    assert caught.group_contains(RuntimeError, match="the job broke")
    assert {row["task"] for row in lines(tmp_path)} == {"task-0", "task-1"}
    assert summary_trials(tmp_path) == 2


async def test_no_more_than_max_concurrent_jobs_run_at_once(tmp_path: Path) -> None:
    log = await open_results(tmp_path, TrialResult, resume=False)
    running = 0
    most = 0

    async def job(n: int) -> TrialResult:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1
        return result(f"task-{n}")

    summary = await run_jobs(
        log,
        [partial(job, n) for n in range(9)],
        max_concurrent=3,
        summarize=summarize,
        summary_file=tmp_path / SUMMARY_FILE,
    )
    assert most == 3
    assert isinstance(summary, RunSummary)
    assert summary.overall.trials == summary_trials(tmp_path) == len(lines(tmp_path)) == 9


async def test_max_concurrent_below_one_is_refused_before_any_job_runs(tmp_path: Path) -> None:
    log = await open_results(tmp_path, TrialResult, resume=False)
    started: list[int] = []

    async def job() -> TrialResult:
        started.append(1)
        return result("task")

    with pytest.raises(ValueError, match="max_concurrent must be at least 1, got 0"):
        await run_jobs(
            log,
            [job],
            max_concurrent=0,
            summarize=summarize,
            summary_file=tmp_path / SUMMARY_FILE,
        )
    assert started == []


def yc_run(preset: str, seed: int, score: float) -> YCRunResult:
    run = YCRunResult.from_attempts(
        preset,
        seed,
        [Attempt(status="pass", reward=score)],
        preset=preset,
        seed=seed,
        survival=1.0,
        score=score,
    )
    assert isinstance(run, YCRunResult)
    return run


async def test_resuming_reads_the_finished_lines_back_as_their_model_and_drops_a_cut_tail(
    tmp_path: Path,
) -> None:
    earlier = [yc_run("fast_test", 1, 0.25), yc_run("fast_test", 2, 0.75)]
    (tmp_path / RESULTS_FILE).write_text(
        "".join(run.model_dump_json() + "\n" for run in earlier) + '{"task": "fast_te'
    )
    (tmp_path / RUNS_FILE).write_text("an-earlier-run\n")

    with pytest.raises(ResultsFileError, match="already holds results: pass --resume"):
        await open_results(tmp_path, YCRunResult, resume=False)
    log = await open_results(tmp_path, YCRunResult, resume=True)

    assert list(log) == earlier, "read back whole, the YC-Bench fields kept"
    assert log.dropped_tail == len('{"task": "fast_te')
    assert (tmp_path / RESULTS_FILE).read_text().endswith("}\n")
    assert (tmp_path / RUNS_FILE).read_text().split() == ["an-earlier-run", RUN_ID]

    async def play(seed: int) -> YCRunResult:
        return yc_run("fast_test", seed, 1.0)

    items = [("fast_test", seed) for seed in (1, 2, 3)]
    jobs = [partial(play, seed) for preset, seed in items if not log.is_finished(preset, seed)]
    summary = await run_jobs(
        log,
        jobs,
        max_concurrent=2,
        summarize=summarize_runs,
        summary_file=tmp_path / SUMMARY_FILE,
    )
    assert isinstance(summary, YCSummary)
    assert [(r.seed, r.score) for r in log] == [(1, 0.25), (2, 0.75), (3, 1.0)]
    on_disk = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert on_disk == summary.model_dump(mode="json")
    assert on_disk["overall"]["runs"] == 3
    assert on_disk["overall"]["mean_score"] == pytest.approx(2.0 / 3.0)


async def test_resuming_a_file_of_other_results_names_the_line_and_what_it_should_be(
    tmp_path: Path,
) -> None:
    plain = [result("fast_test", 1), result("fast_test", 2)]
    (tmp_path / RESULTS_FILE).write_text("".join(r.model_dump_json() + "\n" for r in plain))
    with pytest.raises(ResultsFileError, match=r"line 1 is not a YC-Bench run result \(preset"):
        await open_results(tmp_path, YCRunResult, resume=True)
    assert "line_name" not in yc_run("fast_test", 1, 0.5).model_dump()
