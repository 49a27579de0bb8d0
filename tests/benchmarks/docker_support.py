"""What the docker-backed benchmark tests need: a daemon and the base image, or a reason."""

from __future__ import annotations

from pathlib import Path

from hermes_sandbox.backends.docker import (
    DEFAULT_IMAGE,
    DockerDaemon,
    DockerUnreachableError,
    image_exists,
)

SHIPPED = Path(__file__).parent / "tasks"
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
