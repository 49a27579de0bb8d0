"""Finding and removing this package's containers, across a run or all runs (blocking:
for atexit handlers and cleanup scripts)."""

from __future__ import annotations

import contextlib

from hermes_sandbox.backends.docker._daemon import DockerDaemon
from hermes_sandbox.backends.docker._labels import LABEL, LABEL_RUN
from hermes_sandbox.backends.docker._sdk import load_sdk

__all__ = ["list_containers", "remove_containers"]


def _wanted(run_id: str | None) -> list[str]:
    return [f"{LABEL}=1"] + ([f"{LABEL_RUN}={run_id}"] if run_id else [])


def list_containers(*, run_id: str | None = None, base_url: str | None = None) -> list[str]:
    """Ids of this package's containers (all runs, or one ``run_id``), running or not.
    Blocking.

    Raises:
        DockerUnreachableError: if the daemon does not answer.
    """
    daemon = DockerDaemon.open(base_url)
    try:
        found = daemon.api.containers(all=True, filters={"label": _wanted(run_id)})
        return [str(c["Id"]) for c in found]
    finally:
        daemon.close()


def remove_containers(*, run_id: str | None = None, base_url: str | None = None) -> int:
    """Force-remove this package's containers (all runs, or one ``run_id``: pass
    ``RUN_ID`` for this process's); how many were removed. Blocking: meant for atexit
    handlers and cleanup scripts.

    Raises:
        DockerUnreachableError: if the daemon does not answer.
    """
    docker = load_sdk()
    daemon = DockerDaemon.open(base_url)
    removed = 0
    try:
        for found in daemon.api.containers(all=True, filters={"label": _wanted(run_id)}):
            with contextlib.suppress(docker.errors.NotFound):
                daemon.api.remove_container(found["Id"], force=True)
                removed += 1
    finally:
        daemon.close()
    return removed
