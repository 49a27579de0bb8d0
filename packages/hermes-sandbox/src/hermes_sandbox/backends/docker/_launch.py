"""Starting a container of a ``ContainerSpec``: the limits, the keeper, the labels.

The container runs a tiny init (docker's ``--init``) whose child, the keeper (see
``KEEPER``), holds it open until a deadline and then lets it stop, so the daemon removes
it (``AutoRemove``) even when the process that started it died without closing it.

The container keeps its image's own environment (``ENV``: ``PATH``, ``HOME`` and the rest
as the image says), starts in the spec's ``workdir`` or else the image's ``WORKDIR`` (else
``DEFAULT_WORKDIR``), and reports the image's ``USER`` for commands; the keeper itself
runs as root (it must reach every process) from the helper volume (see ``_helper``),
mounted read-only at ``HELPER_DIR``, in place of the image's entry point.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from hermes_sandbox._errors import SandboxStartError
from hermes_sandbox.backends.docker._daemon import DockerDaemon
from hermes_sandbox.backends.docker._errors import ImageBuildError
from hermes_sandbox.backends.docker._helper import helper_mount, helper_volume
from hermes_sandbox.backends.docker._image import missing_image_hint
from hermes_sandbox.backends.docker._labels import RUN_ID
from hermes_sandbox.backends.docker._scripts import KEEPER, harness_argv
from hermes_sandbox.backends.docker._sdk import explain, load_sdk
from hermes_sandbox.backends.docker._spec import DEFAULT_WORKDIR, ContainerSpec

__all__ = ["LIFETIME_GRACE", "Launched", "launch_container", "start_container"]

#: The keeper outlives ``terminal_lifetime`` by this much before removing the container.
LIFETIME_GRACE: Final = 60.0


@dataclass(frozen=True, slots=True)
class Launched:
    """A started container: its ``id``, the ``workdir`` commands start in (the spec's, the
    image's ``WORKDIR`` or ``DEFAULT_WORKDIR``) and the image's ``user`` (``""``: root)."""

    id: str
    workdir: str
    user: str = ""


async def start_container(
    daemon: DockerDaemon,
    spec: ContainerSpec,
    *,
    labels: Mapping[str, str],
    deadlines: tuple[float, float],
) -> str:
    """Create and start a container for ``spec``; its id (``launch_container`` tells
    more).

    Raises:
        SandboxStartError: as ``launch_container``.
        DockerUnreachableError: if the daemon cannot be reached.
    """
    launched = await launch_container(daemon, spec, labels=labels, deadlines=deadlines)
    return launched.id


async def launch_container(
    daemon: DockerDaemon,
    spec: ContainerSpec,
    *,
    labels: Mapping[str, str],
    deadlines: tuple[float, float],
) -> Launched:
    """Create and start a container for ``spec``; its id, workdir and image user.

    ``deadlines``: seconds until the keeper lets the container go, from now and from a
    ``SIGUSR2`` (a warm-pool container re-armed by the sandbox that takes it).
    Cancellation-safe: if the caller is cancelled while the daemon works, the container
    is removed before the cancellation goes on.

    Raises:
        SandboxStartError: with what went wrong and what to do (image missing, a limit
            the daemon refuses, the helper volume cannot be made, ...).
        DockerUnreachableError: if the daemon cannot be reached.
    """
    name = f"hermes-{RUN_ID}-{uuid.uuid4().hex[:10]}"
    work = asyncio.ensure_future(
        daemon.call(_create_and_start, daemon, spec, name, dict(labels), deadlines)
    )
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        await asyncio.shield(_remove_after(daemon, work, name))
        raise


async def _remove_after(daemon: DockerDaemon, work: asyncio.Future[Launched], name: str) -> None:
    with contextlib.suppress(BaseException):
        await work
    await daemon.remove_container(name)


def _create_and_start(
    daemon: DockerDaemon,
    spec: ContainerSpec,
    name: str,
    labels: dict[str, str],
    deadlines: tuple[float, float],
) -> Launched:
    docker = load_sdk()
    api = daemon.api
    try:
        config: dict[str, Any] = api.inspect_image(spec.image).get("Config") or {}
    except docker.errors.ImageNotFound as exc:
        raise SandboxStartError(missing_image_hint(spec.image)) from exc
    except docker.errors.APIError as exc:
        raise SandboxStartError(
            f"docker: could not read image {spec.image!r}: {explain(exc)}"
        ) from exc
    try:
        helper = helper_volume(api, base_url=daemon.base_url)
    except ImageBuildError as exc:
        raise SandboxStartError(f"docker: no helper volume for the sandbox: {exc}") from exc
    workdir = spec.workdir or str(config.get("WorkingDir") or "") or DEFAULT_WORKDIR
    memory = spec.memory_mb * 1024 * 1024 if spec.memory_mb else None
    host_config = api.create_host_config(
        network_mode=spec.network_mode,
        privileged=False,
        security_opt=["no-new-privileges"],
        init=True,
        auto_remove=True,
        pids_limit=spec.pids_limit,
        mem_limit=memory,
        memswap_limit=memory,
        nano_cpus=round(spec.cpus * 1e9),
        runtime=spec.runtime,
        mounts=[helper_mount(helper)],
    )
    keeper_args = [str(min(max(int(d), 1), 10**8)) for d in deadlines]
    try:
        created = api.create_container(
            image=spec.image,
            entrypoint=harness_argv(KEEPER, "hermes-keeper", *keeper_args),
            command=[],
            user="0:0",
            name=name,
            labels={**dict(spec.labels), **labels},
            working_dir=workdir,
            hostname="sandbox",
            host_config=host_config,
            detach=True,
        )
    except docker.errors.ImageNotFound as exc:
        raise SandboxStartError(missing_image_hint(spec.image)) from exc
    except docker.errors.APIError as exc:
        raise SandboxStartError(
            f"docker: could not create a container from {spec.image!r}: "
            f"{explain(exc)}{_hint(explain(exc), spec)}"
        ) from exc
    container_id = str(created["Id"])
    try:
        api.start(container_id)
    except docker.errors.APIError as exc:
        with contextlib.suppress(Exception):
            api.remove_container(container_id, force=True)
        raise SandboxStartError(
            f"docker: could not start a container from {spec.image!r}: "
            f"{explain(exc)}{_hint(explain(exc), spec)}"
        ) from exc
    return Launched(container_id, workdir, str(config.get("User") or ""))


def _hint(explanation: str, spec: ContainerSpec) -> str:
    """What to do about a refusal of the daemon, as a tail for the error message."""
    if "Range of CPUs" in explanation:
        return (
            f"; option 'cpus' ({spec.cpus:g}) asks for more CPUs than the daemon's host has: "
            "pass at most the number above"
        )
    if "init" in explanation:
        return "; the daemon needs its init binary (docker-init, from tini)"
    return ""
