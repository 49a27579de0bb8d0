"""What the benchmark tests share: a daemon and the base image (or a reason),
``hermes-bench`` run in a child process, and the oracle run on many tasks at once."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from hermes_benchmarks import (
    OracleAgent,
    Task,
    TrialResult,
    TrialSettings,
    run_trial,
    sample_tasks_dir,
)
from hermes_sandbox.backends.docker import (
    DEFAULT_IMAGE,
    DockerDaemon,
    DockerUnreachableError,
    image_exists,
)

SHIPPED = sample_tasks_dir()
FAULTY = Path(__file__).parent / "faulty_tasks"


def docker_skip_reason() -> str | None:
    """Why the docker tests cannot run here, or None when they can."""
    try:
        DockerDaemon.open().close()
    except DockerUnreachableError:
        return "no docker daemon answers (run .ci/services/docker.sh as root)"
    if not image_exists(DEFAULT_IMAGE):
        return f"{DEFAULT_IMAGE} is not built (run .ci/services/docker.sh)"
    return None


def hermes_bench(*args: str) -> subprocess.Popen[str]:
    """``hermes-bench ARGS`` in a child process of its own session, output captured."""
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from hermes_benchmarks.cli import main; sys.exit(main())",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def run_bench(
    *args: str, cwd: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``hermes-bench ARGS`` in a child process, run to its end, output captured."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from hermes_benchmarks.cli import main; sys.exit(main())",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


async def oracle_trials(
    tasks: Sequence[Task], settings: TrialSettings, at_once: int = 3
) -> dict[str, TrialResult]:
    """Trial 0 of every task with the oracle, ``at_once`` at a time; the results by task."""
    gate = asyncio.Semaphore(at_once)

    async def one(task: Task) -> TrialResult:
        async with gate:
            return await run_trial(task, OracleAgent(), settings, trial=0)

    return {r.task: r for r in await asyncio.gather(*(one(task) for task in tasks))}
