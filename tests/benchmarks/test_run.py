"""Whole runs on a real dockerd: streamed results, resume after kill -9, clean stops."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_benchmarks import OracleAgent, Task, TrialResult, TrialSettings, load_tasks
from hermes_benchmarks.run import (
    RESULTS_FILE,
    RUNS_FILE,
    SUMMARY_FILE,
    RunProgress,
    run_benchmark,
)
from hermes_sandbox import Sandbox
from hermes_sandbox.backends.docker import RUN_ID, list_containers
from tests.benchmarks.docker_support import FAULTY, SHIPPED, docker_skip_reason, hermes_bench

REASON = docker_skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

SETTINGS = TrialSettings(infra_retries=0)


def verdicts(folder: Path) -> set[tuple[str, int, str, float | None]]:
    lines = (folder / RESULTS_FILE).read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    keys = [(row["task"], row["trial"]) for row in rows]
    assert len(keys) == len(set(keys)), "a trial was written twice"
    return {(row["task"], row["trial"], row["status"], row["reward"]) for row in rows}


class CountingEcho:
    """Writes the greeting on trial runs it counts (passes write-greeting only)."""

    name = "counting"

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        self.runs += 1
        await sandbox.exec("echo 'hello, world' > /app/greeting.txt")


async def test_a_run_streams_results_summarizes_and_resumes_only_what_is_missing(
    tmp_path: Path,
) -> None:
    tasks = load_tasks(SHIPPED, ["write-greeting", "unique-words"])
    agent = CountingEcho()
    summary = await run_benchmark(
        tasks, agent, SETTINGS, output_dir=tmp_path, n_trials=2, max_concurrent_tasks=2
    )
    assert agent.runs == 4
    assert verdicts(tmp_path) == {
        ("write-greeting", 0, "pass", 1.0),
        ("write-greeting", 1, "pass", 1.0),
        ("unique-words", 0, "fail", 0.0),
        ("unique-words", 1, "fail", 0.0),
    }
    on_disk = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert on_disk["overall"]["passed"] == summary.overall.passed == 2
    assert set(on_disk["tiers"]) == {"easy", "medium"}
    again = await run_benchmark(
        tasks,
        agent,
        SETTINGS,
        output_dir=tmp_path,
        n_trials=3,
        max_concurrent_tasks=2,
        resume=True,
    )
    assert agent.runs == 6, "only the third trial of each task runs again"
    assert again.overall.trials == 6


async def test_a_cancelled_run_closes_every_sandbox_and_keeps_what_finished(
    tmp_path: Path,
) -> None:
    tasks = load_tasks(SHIPPED)
    first = asyncio.Event()

    def on_progress(progress: RunProgress, result: TrialResult | None) -> None:
        if result is not None:
            first.set()

    run = asyncio.create_task(
        run_benchmark(
            tasks,
            OracleAgent(),
            SETTINGS,
            output_dir=tmp_path,
            max_concurrent_tasks=2,
            on_progress=on_progress,
        )
    )
    await asyncio.wait_for(first.wait(), 300)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    finished = verdicts(tmp_path)
    assert 1 <= len(finished) < len(tasks)
    assert all(status == "pass" for _, _, status, _ in finished)
    assert await asyncio.to_thread(list_containers, run_id=RUN_ID) == []
    assert json.loads((tmp_path / SUMMARY_FILE).read_text())["overall"]["trials"] == len(finished)


def _check(output: Path, *more: str) -> subprocess.Popen[str]:
    return hermes_bench(
        "terminalbench2",
        "check",
        "--env.tasks_dir",
        str(SHIPPED),
        "--env.output_dir",
        str(output),
        "--env.max_concurrent_tasks",
        "2",
        "--env.infra_retries",
        "0",
        *more,
    )


def test_a_run_killed_with_sigkill_and_resumed_matches_an_uninterrupted_one(
    tmp_path: Path,
) -> None:
    whole = tmp_path / "whole"
    done = _check(whole)
    _, err = done.communicate(timeout=600)
    assert done.returncode == 0, err
    expected = verdicts(whole)
    assert len(expected) == len(load_tasks(SHIPPED))

    killed = tmp_path / "killed"
    victim = _check(killed)
    results = killed / RESULTS_FILE
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (results.exists() and results.read_text()):
        time.sleep(0.05)
    os.killpg(victim.pid, signal.SIGKILL)
    victim.wait(timeout=30)
    partial = verdicts(killed)
    assert 1 <= len(partial) < len(expected)
    earlier_runs = (killed / RUNS_FILE).read_text().split()

    resumed = _check(killed, "--env.resume", "true")
    _out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    assert verdicts(killed) == expected
    for run_id in (killed / RUNS_FILE).read_text().split() + earlier_runs:
        assert list_containers(run_id=run_id) == [], f"run {run_id} left containers"


def test_check_names_every_task_whose_oracle_fails(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from hermes_benchmarks.cli import main; sys.exit(main())",
            "terminalbench2",
            "check",
            "--env.tasks_dir",
            str(FAULTY),
            "--env.output_dir",
            str(tmp_path),
            "--env.infra_retries",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr
    assert "oracle fails on crashing-tests (docker): 0/1 passed (reward_missing x1)" in done.stdout
    unreadable = "oracle fails on unreadable-reward (docker): 0/1 passed (reward_unreadable x1)"
    assert unreadable in done.stdout


def test_sigterm_stops_a_run_cleanly_and_resume_finishes_it(tmp_path: Path) -> None:
    # One trial at a time: after the first result, five are left for the signal to cut.
    run = _check(tmp_path, "--env.max_concurrent_tasks", "1")
    results = tmp_path / RESULTS_FILE
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (results.exists() and results.read_text()):
        time.sleep(0.05)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 143, err  # 128 + SIGTERM (hermes_sandbox.stop_on_sigterm)
    assert "finish with the same command and --env.resume true" in err
    assert "Traceback" not in err
    assert json.loads((tmp_path / SUMMARY_FILE).read_text())["overall"]["trials"] >= 1
    for run_id in (tmp_path / RUNS_FILE).read_text().split():
        assert list_containers(run_id=run_id) == [], f"run {run_id} left containers"
    resumed = _check(tmp_path, "--env.resume", "true")
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    assert len(verdicts(tmp_path)) == len(load_tasks(SHIPPED))
