"""One run per output folder: the lock, resume's refusals, a full or read-only folder."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_benchmarks import OracleAgent, Task, TrialSettings, load_tasks
from hermes_benchmarks._errors import OutputFolderError, ResultsFileError
from hermes_benchmarks._results import Attempt, FolderLock, TrialResult
from hermes_benchmarks.run import RESULTS_FILE, run_benchmark
from hermes_sandbox import Sandbox
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason, hermes_bench

SETTINGS = TrialSettings(infra_retries=0)


def line(task: str, trial: int) -> str:
    result = TrialResult.from_attempts(task, trial, [Attempt(status="pass", reward=1.0)])
    return result.model_dump_json() + "\n"


def test_a_second_run_on_a_folder_in_use_is_refused_in_one_line(tmp_path: Path) -> None:
    lock = FolderLock.acquire(tmp_path)
    try:
        with pytest.raises(OutputFolderError, match="in use by another hermes-bench run"):
            FolderLock.acquire(tmp_path)
        second = hermes_bench(
            "terminalbench2",
            "check",
            "--env.tasks_dir",
            str(SHIPPED),
            "--env.output_dir",
            str(tmp_path),
        )
        _, err = second.communicate(timeout=120)
    finally:
        lock.release()
    assert second.returncode == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert f"is in use by another hermes-bench run (pid {__import__('os').getpid()})" in lines[0]
    assert not (tmp_path / RESULTS_FILE).exists()
    FolderLock.acquire(tmp_path).release()  # released: free again


def test_a_lock_left_by_a_killed_run_does_not_stop_the_next(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib, time; from hermes_benchmarks._results import FolderLock; "
            "FolderLock.acquire(pathlib.Path(sys.argv[1])); print('held', flush=True); "
            "time.sleep(600)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputFolderError, match=f"pid {holder.pid}"):
            FolderLock.acquire(tmp_path)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    FolderLock.acquire(tmp_path).release()


async def test_resume_refuses_two_lines_for_one_trial(tmp_path: Path) -> None:
    (tmp_path / RESULTS_FILE).write_text(line("write-greeting", 0) + line("write-greeting", 0))
    tasks = load_tasks(SHIPPED, ["write-greeting"])
    with pytest.raises(ResultsFileError, match="line 2 is a second line for trial 0"):
        await run_benchmark(tasks, OracleAgent(), SETTINGS, output_dir=tmp_path, resume=True)
    FolderLock.acquire(tmp_path).release()  # the refused run let the folder go


async def test_resume_refuses_other_tasks_or_fewer_trials(tmp_path: Path) -> None:
    (tmp_path / RESULTS_FILE).write_text(line("write-greeting", 0) + line("write-greeting", 1))
    (tmp_path / "run.json").write_text(json.dumps({"n_trials": 2, "tasks": ["write-greeting"]}))
    other = load_tasks(SHIPPED, ["write-greeting", "unique-words"])
    with pytest.raises(ResultsFileError, match=r"tasks \[1 tasks\] -> \[2 tasks\]"):
        await run_benchmark(
            other, OracleAgent(), SETTINGS, output_dir=tmp_path, n_trials=2, resume=True
        )
    same = load_tasks(SHIPPED, ["write-greeting"])
    with pytest.raises(ResultsFileError, match="n_trials 2 -> 1"):
        await run_benchmark(
            same, OracleAgent(), SETTINGS, output_dir=tmp_path, n_trials=1, resume=True
        )
    # Without the plan file (an older run), a line of a trial not asked for is refused.
    (tmp_path / "run.json").unlink()
    with pytest.raises(ResultsFileError, match="holds trial 1 of write-greeting"):
        await run_benchmark(
            same, OracleAgent(), SETTINGS, output_dir=tmp_path, n_trials=1, resume=True
        )


async def test_an_output_folder_that_cannot_be_made_stops_the_run_before_any_trial(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    agent = DiskFiller(tmp_path)  # counts its runs
    with pytest.raises(OutputFolderError) as caught:
        await run_benchmark(load_tasks(SHIPPED), agent, SETTINGS, output_dir=blocker / "run")
    assert str(caught.value) == (
        f"output folder {blocker / 'run'} cannot be written (Not a directory): make it "
        "writable or pass --env.output_dir another folder"
    )
    assert agent.runs == 0


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs, unmounted after the test."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


class DiskFiller:
    """Writes the greeting; on its second trial fills the output folder's disk first."""

    name = "disk-filler"

    def __init__(self, disk: Path) -> None:
        self.disk = disk
        self.runs = 0

    def fill(self) -> None:
        with open(self.disk / "filler", "wb") as handle:
            try:
                while True:
                    handle.write(b"\0" * 4096)
                    handle.flush()
            except OSError:
                pass

    async def run(self, task: Task, sandbox: Sandbox, *, timeout: float) -> None:
        self.runs += 1
        if self.runs == 2:
            await asyncio.to_thread(self.fill)
        await sandbox.exec("echo 'hello, world' > /app/greeting.txt")


@pytest.mark.skipif(docker_skip_reason() is not None, reason=docker_skip_reason() or "")
async def test_a_full_output_folder_stops_the_run_in_one_line_keeping_every_line(
    tmpfs: Path,
) -> None:
    out = tmpfs / "out"
    tasks = load_tasks(SHIPPED, ["write-greeting"])
    agent = DiskFiller(tmpfs)
    with pytest.raises(OutputFolderError) as caught:
        await run_benchmark(
            tasks, agent, SETTINGS, output_dir=out, n_trials=4, max_concurrent_tasks=1
        )
    message = str(caught.value)
    assert "\n" not in message
    assert "No space left on device" in message
    assert "finish with --env.resume true" in message
    # Whatever still fitted (tmpfs pages) is whole: one line per finished trial.
    kept = (out / RESULTS_FILE).read_text().splitlines()
    assert f"the {len(kept)} finished trials are kept" in message
    trials = [json.loads(row)["trial"] for row in kept]
    assert len(trials) == len(set(trials)) >= 1
    assert agent.runs >= 2
    (tmpfs / "filler").unlink()
    FolderLock.acquire(out).release()


def test_a_read_only_output_folder_is_refused_in_one_line(tmpfs: Path) -> None:
    (tmpfs / "out").mkdir()
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    run = hermes_bench(
        "terminalbench2",
        "check",
        "--env.tasks_dir",
        str(SHIPPED),
        "--env.output_dir",
        str(tmpfs / "out"),
    )
    _, err = run.communicate(timeout=120)
    assert run.returncode == 1
    assert err.strip().splitlines() == [
        f"error: output folder {tmpfs / 'out'} cannot be written (Read-only file system): "
        "make it writable or pass --env.output_dir another folder"
    ]
