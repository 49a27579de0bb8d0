"""Finding and removing this package's containers, by run or by any of their labels
(blocking: for atexit handlers, cleanup scripts and a harness resuming a killed run)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from hermes_sandbox.backends.docker._daemon import DockerDaemon
from hermes_sandbox.backends.docker._labels import LABEL, LABEL_RUN
from hermes_sandbox.backends.docker._sdk import load_sdk

__all__ = ["list_containers", "remove_containers", "remove_networks"]


def _filters(run_id: str | None, labels: Mapping[str, str] | None) -> list[str]:
    """The daemon's ``label`` filters: this package's label, and every one asked for.

    Raises:
        ValueError: for a label that is not a non-empty name without ``=`` mapped to a
            string, or a ``run_id`` that contradicts ``labels``.
    """
    wanted: dict[str, str] = {}
    if labels is not None:
        if not isinstance(labels, Mapping):
            raise ValueError(f"labels must map label names to values, got {labels!r}")
        for key, value in labels.items():
            if not isinstance(key, str) or not key or "=" in key:
                raise ValueError(f"labels: invalid label name {key!r} (non-empty, no '=')")
            if not isinstance(value, str):
                raise ValueError(f"labels[{key!r}] must be a string, got {value!r}")
            wanted[key] = value
    if run_id is not None:
        if wanted.get(LABEL_RUN, run_id) != run_id:
            raise ValueError(
                f"run_id={run_id!r} contradicts labels[{LABEL_RUN!r}]={wanted[LABEL_RUN]!r}; "
                "give one of them"
            )
        wanted[LABEL_RUN] = run_id
    # Only this package's containers, whatever else is asked: never someone else's.
    wanted[LABEL] = "1"
    return [f"{key}={value}" for key, value in sorted(wanted.items())]


def list_containers(
    *,
    run_id: str | None = None,
    labels: Mapping[str, str] | None = None,
    base_url: str | None = None,
) -> list[str]:
    """Ids of this package's containers, running or not, that carry every label of
    ``labels`` (``{name: value}``, e.g. the ``labels`` option given to the sandboxes, or
    ``{LABEL_RUN: run_id}``) and, if given, the run ``run_id``; all of this package's
    containers when neither is given. Containers without this package's own label
    (``LABEL``) are never listed. Blocking.

    Raises:
        ValueError: for a bad label (see ``labels``) or a ``run_id`` that contradicts
            ``labels``.
        DockerUnreachableError: if the daemon does not answer.
    """
    filters = _filters(run_id, labels)
    daemon = DockerDaemon.open(base_url)
    try:
        found = daemon.api.containers(all=True, filters={"label": filters})
        return [str(c["Id"]) for c in found]
    finally:
        daemon.close()


def remove_containers(
    *,
    run_id: str | None = None,
    labels: Mapping[str, str] | None = None,
    base_url: str | None = None,
) -> int:
    """Force-remove the containers ``list_containers`` lists for the same arguments
    (pass ``run_id=RUN_ID`` for this process's, ``labels=`` for those a killed run
    left); how many this call removed (one gone meanwhile is not counted).
    Blocking: meant for atexit handlers, cleanup scripts and resuming harnesses.

    Raises:
        ValueError: for a bad label or a ``run_id`` that contradicts ``labels``.
        DockerUnreachableError: if the daemon does not answer.
        docker.errors.APIError: if the daemon refuses to remove one (what was removed
            before it stays removed).
    """
    filters = _filters(run_id, labels)
    docker = load_sdk()
    daemon = DockerDaemon.open(base_url)
    removed = 0
    try:
        for found in daemon.api.containers(all=True, filters={"label": filters}):
            with contextlib.suppress(docker.errors.NotFound):  # gone meanwhile
                daemon.api.remove_container(found["Id"], force=True)
                removed += 1
    finally:
        daemon.close()
    return removed


def remove_networks(
    *,
    run_id: str | None = None,
    labels: Mapping[str, str] | None = None,
    base_url: str | None = None,
) -> int:
    """Remove this package's networks (those of service groups) that carry every label of
    ``labels`` and, if given, the run ``run_id``, and that no container uses any more;
    how many were removed. Blocking, like :func:`remove_containers` (call it after).

    Raises:
        ValueError: for a bad label or a ``run_id`` that contradicts ``labels``.
        DockerUnreachableError: if the daemon does not answer.
        docker.errors.APIError: if the daemon refuses the request.
    """
    filters = _filters(run_id, labels)
    daemon = DockerDaemon.open(base_url)
    try:
        pruned = daemon.api.prune_networks(filters={"label": filters})
        return len(pruned.get("NetworksDeleted") or [])
    finally:
        daemon.close()
