"""Re-verifying a finished run from the artifacts it kept, without running the agent again.

``hermes-bench <suite> rescore OUT``: every line of ``OUT/results.jsonl`` whose trial kept
its artifacts (``OUT/artifacts/<task>/<trial>``) is verified again in a fresh verifier
sandbox that receives only those artifacts (as in ``environment_mode = "separate"``),
with the task's tests as they are now. The new lines go to ``OUT/rescore/results.jsonl``
and their summary to ``OUT/rescore/summary.json``; the run's own files are not touched.

What can be re-verified:

- a trial of a separate-mode task: always (its verdict came from the kept artifacts);
- a trial of a shared-mode task that declares ``artifacts``: its tests run in a fresh
  copy of the task's image holding the kept artifacts — faithful as far as the declared
  artifacts cover what the tests read;
- not a shared-mode task that declares none (its tests read the agent's sandbox, which is
  gone), nor a trial that kept nothing (it stopped before the agent's turn ended). Those
  lines are carried over unchanged with ``extra["rescore"]`` saying why, so the summary
  covers the same trials; a run where no trial can be re-verified is refused.

Task folders are found where the run read them (recorded in each trial's
``artifacts.json``), or in ``tasks_dir`` when given (a run whose tasks moved).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from rich.console import Console

from hermes_benchmarks._config import BenchConfig
from hermes_benchmarks._errors import (
    ArtifactsError,
    OutputFolderError,
    RescoreError,
    ResultsFileError,
    TaskError,
)
from hermes_benchmarks._image_map import ImageMap
from hermes_benchmarks._report import results_tables
from hermes_benchmarks._results import ResultsLog, TrialResult
from hermes_benchmarks._summary import RunSummary, summarize
from hermes_benchmarks._task import Task, load_task
from hermes_benchmarks._trial import TrialSettings, reverify_trial
from hermes_benchmarks.artifacts import ArtifactManifest
from hermes_benchmarks.progress import RunDisplay
from hermes_benchmarks.run import (
    RESULTS_FILE,
    SUMMARY_FILE,
    RunProgress,
    open_results,
    run_jobs,
)
from hermes_sandbox.backends.docker import RUN_ID

__all__ = ["RESCORE_DIR", "RescorePlan", "plan_rescore", "rescore_command", "rescore_run"]

#: The folder of a run's ``output_dir`` that a rescore writes to.
RESCORE_DIR = "rescore"


@dataclass
class RescorePlan:
    """What a rescore does: the trials to verify again (task, original result, artifact
    folder) and the lines carried over unchanged (each with ``extra["rescore"]``)."""

    verify: list[tuple[Task, TrialResult, Path]] = field(default_factory=list)
    carried: list[TrialResult] = field(default_factory=list)


def _carry(result: TrialResult, reason: str) -> TrialResult:
    return result.model_copy(update={"extra": {**result.extra, "rescore": reason}})


class _Tasks:
    """Task folders by name, each read once: from ``tasks_dir`` or where the run read it."""

    def __init__(self, tasks_dir: Path | None) -> None:
        self.tasks_dir = tasks_dir
        self.loaded: dict[str, Task] = {}

    def get(self, manifest: ArtifactManifest) -> Task:
        name = manifest.task
        if name in self.loaded:
            return self.loaded[name]
        if self.tasks_dir is not None:
            folder = self.tasks_dir / name
            if not folder.is_dir():
                raise RescoreError(
                    f"task {name} is not in tasks_dir {self.tasks_dir}: pass the folder that "
                    "holds the run's task folders"
                )
        else:
            folder = Path(manifest.task_path)
            if not folder.is_dir():
                raise RescoreError(
                    f"task {name}: its folder {folder} (where the run read it) is gone: pass "
                    "--env.tasks_dir DIR, the folder that now holds the run's task folders"
                )
        try:
            task = load_task(folder)
        except TaskError as error:
            raise RescoreError(f"task {name}: {error}") from None
        self.loaded[name] = task
        return task


def plan_rescore(
    output_dir: str | os.PathLike[str], *, tasks_dir: str | os.PathLike[str] | None = None
) -> RescorePlan:
    """Read a finished run and decide what a rescore verifies again (blocking).

    Raises:
        RescoreError: ``output_dir`` is not a hermes-bench run (no folder, no
            ``results.jsonl``, a foreign file), holds no finished trial, names an artifact
            folder that is gone, a task folder cannot be found or read, or no trial can be
            re-verified (the message says why). Every message is one line.
    """
    folder = Path(output_dir)
    if not folder.is_dir():
        raise RescoreError(f"{folder} is not a folder: give the output_dir of a hermes-bench run")
    results_file = folder / RESULTS_FILE
    try:
        finished = ResultsLog.read(results_file)
    except FileNotFoundError:
        raise RescoreError(
            f"{folder} is not a hermes-bench run: it holds no {RESULTS_FILE}"
        ) from None
    except ResultsFileError as error:
        raise RescoreError(str(error)) from None
    except OSError as error:
        raise RescoreError(
            f"{results_file} cannot be read ({error.strerror or error}): give the output_dir "
            "of a hermes-bench run"
        ) from None
    if not finished:
        raise RescoreError(f"{results_file} holds no finished trial: nothing to rescore")
    tasks = _Tasks(Path(tasks_dir) if tasks_dir is not None else None)
    plan = RescorePlan()
    for key in sorted(finished):
        result = finished[key]
        if result.artifacts is None:
            plan.carried.append(_carry(result, "not re-verified: the trial kept no artifacts"))
            continue
        kept = folder / result.artifacts
        try:
            manifest = ArtifactManifest.load(kept)
        except ArtifactsError as error:
            raise RescoreError(
                f"task {result.task} trial {result.trial}: {error}; the run folder is damaged"
            ) from None
        task = tasks.get(manifest)
        config = task.config
        if config.verifier.environment_mode == "shared" and not config.artifacts:
            plan.carried.append(
                _carry(
                    result,
                    "not re-verified: a shared-mode task that declares no artifacts (its "
                    "tests read the agent's sandbox, which is gone)",
                )
            )
            continue
        plan.verify.append((task, result, kept))
    if not plan.verify:
        prefix = "not re-verified: "
        reasons = Counter(str(r.extra["rescore"]).removeprefix(prefix) for r in plan.carried)
        why = "; ".join(f"{n} trial(s): {reason}" for reason, n in reasons.items())
        raise RescoreError(
            f"{folder}: no trial of this run can be re-verified ({why}); rescore needs the "
            'artifacts of tasks with environment_mode = "separate" or declared artifacts'
        )
    return plan


async def rescore_run(
    output_dir: str | os.PathLike[str],
    settings: TrialSettings,
    *,
    tasks_dir: str | os.PathLike[str] | None = None,
    max_concurrent_tasks: int = 4,
    resume: bool = False,
    on_progress: Callable[[RunProgress, TrialResult | None], None] | None = None,
) -> RunSummary:
    """Re-verify the run in ``output_dir`` (see the module docstring); its summary.

    Results stream to ``output_dir/rescore/results.jsonl`` as each trial ends; the summary
    goes to ``output_dir/rescore/summary.json``, also when cancelled (then re-raised).
    ``resume`` finishes an interrupted rescore, first removing the containers a killed
    one left (their run ids are kept in ``output_dir/rescore/runs.txt``).

    Raises:
        RescoreError: as :func:`plan_rescore`.
        ValueError: ``max_concurrent_tasks`` is below 1.
        RescoreError: ``rescore/results.jsonl`` holds results and ``resume`` is false.
        ResultsFileError: resuming a ``rescore/results.jsonl`` with a corrupt line.
        OutputFolderError: ``rescore/`` is in use by another rescore or cannot be
            written (said as such, not as a rescore already there).
    """
    if max_concurrent_tasks < 1:
        raise ValueError(f"max_concurrent_tasks must be at least 1, got {max_concurrent_tasks}")
    plan = await asyncio.to_thread(plan_rescore, output_dir, tasks_dir=tasks_dir)
    target = Path(output_dir) / RESCORE_DIR
    base_url = settings.sandbox_options.get("base_url")
    try:
        log = await open_results(
            target,
            TrialResult,
            resume=resume,
            base_url=base_url,
            backend=settings.backend,
            options=settings.sandbox_options,
            option=None,  # the rescore folder is the run's: no setting chooses another
        )
    except OutputFolderError:  # in use by another rescore, or not writable: its own words
        raise
    except ResultsFileError as error:
        if resume:
            raise
        raise RescoreError(
            f"{target / RESULTS_FILE} already holds a rescore: pass --env.resume true to "
            f"finish it, or remove {target} to start again"
        ) from error
    progress = RunProgress.resuming(len(plan.verify) + len(plan.carried), log)
    for result in plan.carried:
        if await log.append_async(result):
            progress.add(result)
    if on_progress is not None:
        on_progress(progress, None)
    jobs = [
        partial(reverify_trial, task, folder, original, settings, run_id=RUN_ID)
        for task, original, folder in plan.verify
        if not log.is_finished(task.name, original.trial)
    ]
    notes = [
        f"rescore of {output_dir}: {len(plan.verify)} trial(s) re-verified from their "
        f"artifacts, {len(plan.carried)} carried over unchanged"
    ]
    return await run_jobs(
        log,
        jobs,
        max_concurrent=max_concurrent_tasks,
        summarize=lambda results: summarize(results, notes=notes),
        summary_file=target / SUMMARY_FILE,
        on_result=progress.reporter(on_progress),
    )


async def rescore_command(output_dir: str, config: BenchConfig, console: Console) -> int:
    """``hermes-bench <suite> rescore OUT``: re-verify, print the tables; the exit status.

    Uses ``config``'s ``tasks_dir`` (where the tasks now are, when they moved),
    ``terminal_backend``, ``image_map``, ``timeout_multiplier``, ``infra_retries``,
    ``max_concurrent_tasks`` and ``resume``.

    Raises:
        RescoreError: as :func:`rescore_run` (one line).
        ResultsFileError: as :func:`rescore_run`.
    """
    settings = TrialSettings(
        backend=config.terminal_backend,
        image_map=ImageMap.parse(config.image_map),
        timeout_multiplier=config.timeout_multiplier,
        infra_retries=config.infra_retries,
    )
    with RunDisplay(console) as display:
        summary = await rescore_run(
            output_dir,
            settings,
            tasks_dir=config.tasks_dir,
            max_concurrent_tasks=config.max_concurrent_tasks,
            resume=config.resume,
            on_progress=display,
        )
    for table in results_tables(summary):
        console.print(table)
    for note in summary.notes:
        console.print(note, highlight=False)
    target = Path(output_dir) / RESCORE_DIR
    console.print(
        f"results: {target / RESULTS_FILE}  summary: {target / SUMMARY_FILE}", highlight=False
    )
    return 0
