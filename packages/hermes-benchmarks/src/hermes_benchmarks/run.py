"""A benchmark run: every (task, trial) not yet finished, at most N at a time, results
streamed to ``results.jsonl`` and summed up in ``summary.json``.

A run is resumable at any moment: each finished trial is one fsynced line of
``results.jsonl`` (:class:`~hermes_benchmarks._results.ResultsLog`), and the sandbox
run ids (``hermes_sandbox.RUN_ID``) of every process that wrote to the folder
are kept in ``runs.txt``. With ``resume`` what those runs left (killed with ``kill -9``,
say) is removed by the run backend's ``reap_run`` (docker: their containers, by run
label), and only the trials without a line run again. Cancelling the run (Ctrl-C,
SIGTERM through ``stop_on_sigterm``) closes every sandbox and keeps every line already
written.

The stream itself (:func:`open_results`, :func:`run_jobs`) is shared by every run that
writes results: :func:`run_benchmark`, the rescore
(:func:`~hermes_benchmarks._rescore.rescore_run`) and YC-Bench's ``evaluate``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from hermes_benchmarks._agents import Agent
from hermes_benchmarks._errors import OutputFolderError, ResultsFileError
from hermes_benchmarks._results import FolderLock, ResultsLog, ResultT, TrialResult
from hermes_benchmarks._start_ahead import StartsAhead
from hermes_benchmarks._summary import RunSummary, summarize
from hermes_benchmarks._task import Task
from hermes_benchmarks._teardowns import Teardowns
from hermes_benchmarks._trial import TrialSettings, run_trial
from hermes_envs import EnvSetupError, check_writable, write_whole
from hermes_sandbox import RUN_ID, default_backends

__all__ = [
    "PLAN_FILE",
    "RESULTS_FILE",
    "RUNS_FILE",
    "SUMMARY_FILE",
    "RunProgress",
    "check_plan",
    "clean_leftovers",
    "open_results",
    "record_run",
    "run_benchmark",
    "run_jobs",
    "write_summary",
]

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
#: One sandbox run id per line: every process that ran trials into this output folder.
RUNS_FILE = "runs.txt"
#: The setting that chooses a run's output folder (``--env.output_dir`` of hermes-bench
#: and of the suite environments), named when the folder cannot be written.
_OUTPUT_OPTION = "--env.output_dir"
#: What a benchmark run asked for (its trials per task and its tasks), for resuming.
PLAN_FILE = "run.json"

#: The summary a run writes (:class:`~hermes_benchmarks._summary.RunSummary` or another).
SummaryT = TypeVar("SummaryT", bound=BaseModel)


@dataclass
class RunProgress:
    """Counts of a run as it goes (what the progress display shows)."""

    total: int
    done: int = 0
    passed: int = 0
    failed: int = 0
    infra_errors: int = 0
    skipped: int = 0
    started_at: float = 0.0

    @classmethod
    def resuming(cls, total: int, finished: Iterable[TrialResult]) -> RunProgress:
        """The counts at the start of a run of ``total`` trials, ``finished`` already done
        (counted as done and as skipped); the clock starts now."""
        progress = cls(total=total, started_at=time.monotonic())
        for result in finished:
            progress.add(result)
        progress.skipped = progress.done
        return progress

    def reporter(
        self, on_progress: Callable[[RunProgress, TrialResult | None], None] | None
    ) -> Callable[[TrialResult], None]:
        """A callback for each finished trial: counts it, then calls ``on_progress``."""

        def report(result: TrialResult) -> None:
            self.add(result)
            if on_progress is not None:
                on_progress(self, result)

        return report

    def add(self, result: TrialResult) -> None:
        """Count one finished trial."""
        self.done += 1
        if result.status == "pass":
            self.passed += 1
        elif result.status == "fail":
            self.failed += 1
        else:
            self.infra_errors += 1


def record_run(folder: Path) -> list[str]:
    """The run ids already in ``runs.txt``; this process's id appended (fsynced)."""
    file = folder / RUNS_FILE
    earlier = file.read_text().split() if file.exists() else []
    fd = os.open(file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{RUN_ID}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return [run for run in earlier if run != RUN_ID]


def clean_leftovers(
    run_ids: Sequence[str], *, backend: str = "docker", options: Mapping[str, Any] | None = None
) -> int:
    """Remove what the sandboxes of ``run_ids`` left on ``backend`` (its ``reap_run``
    class method, given the run's sandbox ``options``); how many sandboxes were removed.
    Blocking; a backend that cannot be reached removes nothing.

    Raises:
        UnknownBackendError: no backend of that name.
    """
    reap = default_backends.get(backend).reap_run
    return sum(asyncio.run(reap(run_id, options)) for run_id in run_ids)


def write_summary(file: Path, summary: BaseModel) -> None:
    """Write ``summary`` as ``summary.json`` (its JSON form, indented) in one rename
    (blocking).

    Raises:
        OSError: the folder cannot be written.
    """
    write_whole(file, (json.dumps(summary.model_dump(mode="json"), indent=2) + "\n").encode())


def _open_results(
    folder: Path,
    model: type[ResultT],
    resume: bool,
    backend: str,
    options: Mapping[str, Any] | None,
    option: str | None,
) -> ResultsLog[ResultT]:
    try:
        check_writable(folder, option)
    except EnvSetupError as error:
        raise OutputFolderError(str(error)) from None
    lock = FolderLock.acquire(folder)
    try:
        log = ResultsLog.open(folder / RESULTS_FILE, resume=resume, model=model)
        earlier_runs = record_run(folder)
    except OSError as error:
        lock.release()
        raise OutputFolderError(
            f"output folder {folder} cannot be written ({error.strerror}): free space or make "
            "it writable, then run again"
        ) from None
    except BaseException:
        lock.release()
        raise
    log.folder_lock = lock
    if resume:
        clean_leftovers(earlier_runs, backend=backend, options=options)
    return log


async def open_results(
    folder: Path,
    model: type[ResultT],
    *,
    resume: bool,
    base_url: str | None = None,
    backend: str = "docker",
    options: Mapping[str, Any] | None = None,
    option: str | None = _OUTPUT_OPTION,
) -> ResultsLog[ResultT]:
    """Open ``folder/results.jsonl`` for a run, holding the folder's lock, and note this
    process in ``runs.txt``.

    First the folder is made and a file written in it (:func:`hermes_envs.check_writable`:
    the one check that the output folder is writable, before any trial; its one-line
    error names ``option``, the setting that chooses another folder, if any).

    Only one run writes into a folder at a time: the lock (``flock`` on
    ``.hermes-bench.lock``) is held until the log is closed (:func:`run_jobs` closes it)
    or this process ends, a crash included. With ``resume`` the results already in the
    file are read back (each as a ``model``), a last line cut short by a kill is removed,
    and what the earlier runs into ``folder`` left on ``backend`` is removed
    (:func:`clean_leftovers`, with the run's sandbox ``options``; ``base_url`` is added to
    them when given). Without it the file must hold none.

    Raises:
        OutputFolderError: another run holds the folder, or it cannot be written.
        ResultsFileError: the file holds results and ``resume`` is false, a line other
            than the last is not a ``model``, or a trial has two lines.
    """
    chosen = {**(options or {}), **({"base_url": base_url} if base_url else {})}
    return await asyncio.to_thread(_open_results, folder, model, resume, backend, chosen, option)


def check_plan(folder: Path, plan: Mapping[str, Any], *, resume: bool) -> None:
    """Keep ``plan`` (what the run is: ``n_trials`` per task and its ``tasks``) in
    ``folder/run.json``; a resumed run must ask for the same tasks and at least as many
    trials (more trials run the new ones: the file then holds the larger number).
    Blocking.

    Raises:
        ResultsFileError: resuming a folder whose run asked for other tasks or more trials
            (the message says what changed).
        OutputFolderError: the folder cannot be written.
    """
    file = folder / PLAN_FILE
    if resume and file.exists():
        try:
            earlier = json.loads(file.read_text())
        except (OSError, ValueError):
            earlier = None
        if isinstance(earlier, dict):
            same_tasks = earlier.get("tasks") == plan["tasks"]
            more_trials = int(earlier.get("n_trials", 0)) <= int(plan["n_trials"])
            if not (same_tasks and more_trials):
                changed = [key for key in plan if earlier.get(key) != plan[key]]
                what = ", ".join(
                    f"{key} {_brief(earlier.get(key))} -> {_brief(plan[key])}" for key in changed
                )
                raise ResultsFileError(
                    f"{folder} holds a run of other settings ({what}): resume it with the "
                    "same tasks and at least its n_trials, or choose another output_dir"
                )
            if earlier == dict(plan):
                return
    try:
        write_whole(file, (json.dumps(dict(plan), indent=2) + "\n").encode())
    except OSError as error:
        raise OutputFolderError(
            f"output folder {folder} cannot be written ({error.strerror}): free space or make "
            "it writable, then run again"
        ) from None


def _brief(value: object) -> str:
    if isinstance(value, list):
        return f"[{len(value)} tasks]"
    return str(value)


async def run_jobs(
    log: ResultsLog[ResultT],
    jobs: Iterable[Callable[[], Awaitable[ResultT]]],
    *,
    max_concurrent: int,
    summarize: Callable[[list[ResultT]], SummaryT],
    summary_file: Path,
    on_result: Callable[[ResultT], None] | None = None,
) -> SummaryT:
    """Run every job, at most ``max_concurrent`` at once; the summary of the log.

    Each job's result is appended to ``log`` as it returns (one fsynced line; a line
    being written when the run is cancelled is finished first), then given to
    ``on_result``. At the end ``summarize(results)``, over every result in ``log`` (those
    read back on resume included), is written to ``summary_file``, also when a job
    raises or the run is cancelled: that summary counts exactly the lines in the file.

    Raises:
        ValueError: ``max_concurrent`` is below 1.
        OutputFolderError: a line or the summary could not be written (a full or
            read-only folder): the other jobs are cancelled, every line already written
            is kept.
        ExceptionGroup: a job or ``on_result`` raised (the other jobs are cancelled; the
            summary is still written).
        asyncio.CancelledError: the run was cancelled (after the summary is written).

    The log is closed at the end (its folder's lock released).
    """
    if max_concurrent < 1:
        raise ValueError(f"max_concurrent must be at least 1, got {max_concurrent}")
    gate = asyncio.Semaphore(max_concurrent)

    async def one(job: Callable[[], Awaitable[ResultT]]) -> None:
        async with gate:
            result = await job()
            try:
                await log.append_async(result)
            except OSError as error:
                raise OutputFolderError(
                    f"cannot write {log.path} ({error.strerror}): the run stopped; the "
                    f"{len(log)} finished trials are kept in it; free space or make it "
                    "writable, then finish with --env.resume true"
                ) from None
        if on_result is not None:
            on_result(result)

    failure: OutputFolderError | None = None
    try:
        async with asyncio.TaskGroup() as group:
            for job in jobs:
                group.create_task(one(job))
    except* OutputFolderError as group_error:
        failure = cast(OutputFolderError, group_error.exceptions[0])
    finally:
        try:
            summary = summarize(list(log))
            await asyncio.shield(asyncio.to_thread(write_summary, summary_file, summary))
        except OSError as error:
            failure = failure or OutputFolderError(
                f"cannot write {summary_file} ({error.strerror}): the {len(log)} finished "
                f"trials are kept in {log.path}; free space or make it writable, then "
                "finish with --env.resume true"
            )
        finally:
            log.close()
    if failure is not None:
        raise failure
    return summary


async def run_benchmark(
    tasks: Sequence[Task],
    agent: Agent,
    settings: TrialSettings,
    *,
    output_dir: str | os.PathLike[str],
    n_trials: int = 1,
    max_concurrent_tasks: int = 4,
    resume: bool = False,
    notes: Sequence[str] = (),
    on_progress: Callable[[RunProgress, TrialResult | None], None] | None = None,
) -> RunSummary:
    """Run ``n_trials`` of every task with ``agent``; the run's summary.

    Results stream to ``output_dir/results.jsonl`` as each trial ends; the summary of
    every finished trial (earlier runs' included when resuming) goes to
    ``output_dir/summary.json``, also when the run is cancelled (then re-raised).
    ``on_progress`` is called with the counts once at the start and after each trial.
    Each trial's sandbox is closed in the background while the next trials run, and
    the next trials' sandboxes are started while the trials before them run
    (``settings.start_ahead``; one on docker by default): all of them are closed before
    this returns (or re-raises).

    Raises:
        ValueError: ``n_trials`` or ``max_concurrent_tasks`` is below 1.
        ResultsFileError: ``results.jsonl`` holds results and ``resume`` is false, it
            holds a line that is not a trial result or two lines for one trial, or the
            run resumed asks for other trials or tasks than the folder's run
            (``run.json``).
        OutputFolderError: another run writes into the folder, or it cannot be written
            (then the run stops, every finished line kept).
    """
    if n_trials < 1:
        raise ValueError(f"n_trials must be at least 1, got {n_trials}")
    if max_concurrent_tasks < 1:
        raise ValueError(f"max_concurrent_tasks must be at least 1, got {max_concurrent_tasks}")
    folder = Path(output_dir)
    log = await open_results(
        folder,
        TrialResult,
        resume=resume,
        backend=settings.backend,
        options=settings.sandbox_options,
    )
    names = sorted(task.name for task in tasks)
    plan = {"n_trials": n_trials, "tasks": names}
    try:
        await asyncio.to_thread(check_plan, folder, plan, resume=resume)
        stray = sorted({key for key in log.finished if key[0] not in names})
        stray += [key for key in log.finished if key[1] >= n_trials and key not in stray]
        if stray:
            task_name, trial = stray[0]
            raise ResultsFileError(
                f"{folder / RESULTS_FILE} holds trial {trial} of {task_name}, which this run "
                "does not ask for: resume with the same n_trials and tasks, or choose "
                "another output_dir"
            )
    except BaseException:
        log.close()
        raise
    progress = RunProgress.resuming(len(tasks) * n_trials, log)
    if on_progress is not None:
        on_progress(progress, None)
    teardowns = Teardowns()  # sandboxes closed while the next trials start
    order = [
        (task, trial)
        for trial in range(n_trials)
        for task in tasks
        if not log.is_finished(task.name, trial)
    ]
    # the next trials' sandboxes started while the trials before them run
    starts = StartsAhead(settings, order, run_id=RUN_ID)

    async def trial_job(index: int) -> TrialResult:
        task, trial = order[index]
        return await run_trial(
            task,
            agent,
            settings,
            trial=trial,
            run_id=RUN_ID,
            output_dir=folder,
            teardowns=teardowns,
            ahead=starts.begin(index),
        )

    jobs = [partial(trial_job, index) for index in range(len(order))]
    difficulties = {task.name: task.difficulty for task in tasks}
    try:
        return await run_jobs(
            log,
            jobs,
            max_concurrent=max_concurrent_tasks,
            summarize=lambda results: summarize(results, difficulties=difficulties, notes=notes),
            summary_file=folder / SUMMARY_FILE,
            on_result=progress.reporter(on_progress),
        )
    finally:
        try:
            await starts.aclose()
        finally:
            await teardowns.wait()
