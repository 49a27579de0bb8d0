"""What the benchmark tests share: a daemon and the base image (or a reason), and
``hermes-bench`` run in a child process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hermes_benchmarks import sample_tasks_dir
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
