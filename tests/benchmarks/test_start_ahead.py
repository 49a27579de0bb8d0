"""A run starts the next trial's sandbox while the trials before it run: the trial takes
it instead of starting one, its failure is the trial's own start failure, and nothing
started ahead outlives the run (also when it is cancelled or a sandbox waited too long)."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest

from hermes_benchmarks import OracleAgent, Task, TrialResult, TrialSettings, load_task
from hermes_benchmarks._clock import Clock
from hermes_benchmarks._start_ahead import StartedAhead, StartsAhead
from hermes_benchmarks._teardowns import Teardowns
from hermes_benchmarks.run import RESULTS_FILE, run_benchmark
from hermes_sandbox import Sandbox
from hermes_sandbox.backends.docker import LABEL_TASK, RUN_ID, list_containers
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason

REASON = docker_skip_reason()
needs_docker = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def test_a_wait_is_counted_as_the_steps_that_ran_during_it() -> None:
    other = Clock()
    now = time.monotonic()
    other.timings = {"image": 0.5, "sandbox_start": 0.3}
    other.ends = {"image": now - 0.2, "sandbox_start": now - 0.1}
    mine = Clock()
    mine.waited(now - 0.3, other, ("image", "services", "sandbox_start"))
    # 0.1 s of the wait while the image was prepared, 0.1 s while the sandbox started,
    # and the rest (about 0.1 s since it ended, the hand-over) counted as the start's.
    assert mine.timings["image"] == pytest.approx(0.1, abs=0.01)
    assert mine.timings["sandbox_start"] == pytest.approx(0.2, abs=0.02)
    assert "services" not in mine.timings


def test_a_wait_for_steps_ended_before_it_costs_them_nothing() -> None:
    other = Clock()
    before = time.monotonic() - 5.0
    other.timings = {"image": 1.0, "sandbox_start": 1.0}
    other.ends = {"image": before, "sandbox_start": before}
    mine = Clock()
    mine.waited(time.monotonic(), other, ("image", "services", "sandbox_start"))
    assert mine.timings["image"] == 0.0
    assert mine.timings["sandbox_start"] == pytest.approx(0.0, abs=0.01)


def test_the_docker_backend_starts_one_ahead_by_default_and_others_none() -> None:
    assert TrialSettings().sandboxes_ahead == 1
    assert TrialSettings(backend="modal").sandboxes_ahead == 0
    assert TrialSettings(backend="local", start_ahead=2).sandboxes_ahead == 2
    assert TrialSettings(start_ahead=0).sandboxes_ahead == 0
    with pytest.raises(ValueError, match="start_ahead must be 0 or more, got -1"):
        TrialSettings(start_ahead=-1)


class SeesTheNext(OracleAgent):
    """The oracle, noting for each trial whether the next trial's container (``order``:
    the trials' task ids in the run's order) was there while it worked (waiting up to
    10 s for it to be made)."""

    def __init__(self, order: list[str]) -> None:
        super().__init__()
        self.order = order
        self.seen: dict[str, bool] = {}

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        await super().run(task, sandbox, timeout=timeout)
        at = self.order.index(sandbox.task_id)
        if at + 1 == len(self.order):
            return
        following = self.order[at + 1]
        deadline = time.monotonic() + 10.0
        while True:
            found = await asyncio.to_thread(_there, following)
            if found or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        self.seen[sandbox.task_id] = found


def _there(task_id: str) -> bool:
    """Whether a container of this process's run holds the sandbox of ``task_id``."""
    return bool(list_containers(run_id=RUN_ID, labels={LABEL_TASK: task_id}))


def _tasks() -> list[Task]:
    return [load_task(SHIPPED / name) for name in ("write-greeting", "count-errors")]


@needs_docker
@pytest.mark.parametrize("ahead", [1, 0])
async def test_a_run_finds_the_next_trials_sandbox_started_while_a_trial_works(
    tmp_path: Path, ahead: int
) -> None:
    order = [f"{RUN_ID}-{t}-{k}-0" for k in (0, 1) for t in ("write-greeting", "count-errors")]
    agent = SeesTheNext(order)
    settings = TrialSettings(infra_retries=0, start_ahead=ahead)
    summary = await run_benchmark(
        _tasks(), agent, settings, output_dir=tmp_path, n_trials=2, max_concurrent_tasks=1
    )
    assert (summary.overall.trials, summary.overall.passed) == (4, 4)
    lines = (tmp_path / RESULTS_FILE).read_text().splitlines()
    results = [TrialResult.model_validate_json(line) for line in lines]
    assert [r.status for r in results] == ["pass"] * 4, [r.error for r in results]
    assert agent.seen == dict.fromkeys(order[:-1], bool(ahead))
    assert all(set(r.timings) >= {"image", "sandbox_start", "agent"} for r in results)
    assert await asyncio.to_thread(list_containers, run_id=RUN_ID) == []


@needs_docker
async def test_a_start_ahead_that_fails_is_the_trials_own_start_failure(tmp_path: Path) -> None:
    broken = tmp_path / "tasks" / "too-many-cpus"
    shutil.copytree(SHIPPED / "write-greeting", broken)
    toml = broken / "task.toml"
    text = toml.read_text()
    assert "cpus = 1" in text
    toml.write_text(text.replace("cpus = 1", "cpus = 4096"))
    tasks = [load_task(SHIPPED / "count-errors"), load_task(broken)]
    settings = TrialSettings(infra_retries=0, start_ahead=1)
    await run_benchmark(
        tasks, OracleAgent(), settings, output_dir=tmp_path / "out", max_concurrent_tasks=1
    )
    lines = (tmp_path / "out" / RESULTS_FILE).read_text().splitlines()
    results = {r.task: r for r in map(TrialResult.model_validate_json, lines)}
    assert results["count-errors"].status == "pass"
    failed = results["too-many-cpus"]
    assert (failed.status, failed.error_kind) == ("infra_error", "sandbox_start")
    assert failed.error is not None
    assert "cpus" in failed.error.lower()
    assert await asyncio.to_thread(list_containers, run_id=RUN_ID) == []


@needs_docker
async def test_a_sandbox_that_waited_too_long_is_closed_and_the_trial_starts_its_own() -> None:
    task = load_task(SHIPPED / "write-greeting")
    teardowns = Teardowns()
    ahead = StartedAhead(task, TrialSettings(), f"{RUN}-stale", max_wait=0.0)
    await asyncio.wait_for(ahead.ended(), 60)
    await asyncio.sleep(0.01)
    assert await ahead.take(Clock(), teardowns) is None
    await teardowns.wait()
    assert await asyncio.to_thread(list_containers, run_id=RUN_ID) == []


@needs_docker
async def test_what_no_trial_took_is_closed_when_the_run_ends_also_mid_start() -> None:
    tasks = [load_task(SHIPPED / "write-greeting")] * 3
    order = [(task, trial) for trial, task in enumerate(tasks)]
    starts = StartsAhead(TrialSettings(start_ahead=2), order, run_id=RUN)
    assert starts.begin(0) is None  # nothing was started ahead for the first
    assert starts.waiting == 2  # the next two are starting
    await asyncio.sleep(0.05)  # one may be done, the other still under way
    await starts.aclose()
    assert starts.waiting == 0
    assert await asyncio.to_thread(list_containers, run_id=RUN_ID) == []


async def test_a_task_with_services_is_not_started_ahead() -> None:
    plain = load_task(SHIPPED / "write-greeting")
    composed = load_task(Path(__file__).parent / "tasks_harbor" / "multi-container")
    assert composed.compose is not None
    starts = StartsAhead(TrialSettings(), [(plain, 0), (composed, 0)], run_id=RUN)
    assert starts.begin(0) is None
    assert starts.waiting == 0
    assert starts.begin(1) is None
    await starts.aclose()


RUN = "start-ahead-test"
