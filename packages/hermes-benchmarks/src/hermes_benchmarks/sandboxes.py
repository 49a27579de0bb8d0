"""How the harness opens and closes its sandboxes (the agent's and a separate verifier's),
and the network each gets."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from hermes_benchmarks._task import EnvironmentSection
from hermes_sandbox import Sandbox, create_sandbox, finish

if TYPE_CHECKING:
    from hermes_sandbox.backends.docker import DockerDaemon

__all__ = [
    "LIFETIME_MARGIN",
    "NetworkChoice",
    "allows_internet",
    "close_fully",
    "sandbox_daemon",
    "sandbox_network",
    "start_sandbox",
]

#: Seconds a sandbox may outlive the timeouts of what runs in it.
LIFETIME_MARGIN = 300.0

#: The run's choice of the sandboxes' network: ``task`` (what each task's
#: ``allow_internet`` asks, harbor's default: on), ``off`` (never), ``host`` (the host's
#: own network for the tasks that allow the internet, e.g. to reach services on
#: 127.0.0.1; docker only).
NetworkChoice = Literal["task", "off", "host"]

#: The network options of a sandbox without the network.
NO_NETWORK: Mapping[str, Any] = {"network": False}


def allows_internet(environment: EnvironmentSection) -> bool:
    """Whether a task's ``[environment]`` lets its sandbox reach the internet, as harbor
    reads it: ``network_mode`` when given (``no-network`` or ``none``: no; ``public``
    and ``allowlist``: yes, with no filtering of hosts here), else ``allow_internet``
    (harbor's older field; default ``true``)."""
    mode = environment.network_mode
    if mode is not None:
        return mode.strip().lower() not in ("no-network", "none")
    return environment.allow_internet


def sandbox_network(allow_internet: bool, choice: NetworkChoice = "task") -> dict[str, Any]:
    """The ``create_sandbox`` options for a task that does (or does not) ``allow_internet``
    under the run's ``choice``: ``network=False``; or ``network=True`` (the backend's
    default network: docker's default bridge); or, for ``host``, also
    ``network_mode="host"``.

    Raises:
        ValueError: ``choice`` is not ``task``, ``off`` or ``host``.
    """
    if choice not in ("task", "off", "host"):
        raise ValueError(f"network must be 'task', 'off' or 'host', got {choice!r}")
    if choice == "off" or not allow_internet:
        return dict(NO_NETWORK)
    if choice == "host":
        return {"network": True, "network_mode": "host"}
    return {"network": True}


async def start_sandbox(
    backend: str,
    options: Mapping[str, Any],
    *,
    task_id: str,
    image: Mapping[str, Any],
    cpus: float,
    memory_mb: int,
    lifetime: float,
    network: Mapping[str, Any] = NO_NETWORK,
) -> Sandbox:
    """A started sandbox of ``backend`` from ``image``, with these limits and ``network``
    (the options :func:`sandbox_network` gives; off when not given).

    ``image``: the ``create_sandbox`` options that select the image (``image``, or
    ``modal_image``, or ``daytona_image`` and ``create_timeout``:
    :attr:`~hermes_benchmarks.images.TaskImage.options`); ``options`` win over them.

    A sandbox that fails to start is closed before the error propagates.

    Raises:
        SandboxError: the backend could not create or start it.
        ValueError: an option is invalid.
    """
    sandbox = create_sandbox(
        backend,
        task_id=task_id,
        cpus=cpus,
        memory_mb=memory_mb,
        terminal_lifetime=lifetime + LIFETIME_MARGIN,
        **{**network, **image, **options},
    )
    try:
        await sandbox.start()
    except BaseException:
        with contextlib.suppress(Exception):  # the start's error is the one to report
            await close_fully(sandbox)
        raise
    return sandbox


async def close_fully(sandbox: Sandbox) -> None:
    """Close ``sandbox`` to the end, even when cancelled meanwhile (then re-raised after).

    Raises:
        asyncio.CancelledError: the caller was cancelled while the sandbox closed.
        SandboxError: the backend failed to close it.
    """
    await finish(sandbox.close())


async def sandbox_daemon(sandbox: Sandbox) -> DockerDaemon:
    """A client of a docker sandbox's daemon (the caller closes it): made without a
    request when the sandbox knows the daemon's API version, else connected afresh (to
    the sandbox's ``base_url``).

    Raises:
        SandboxError: the daemon cannot be reached, or the sandbox is closed.
    """
    from hermes_sandbox.backends.docker import DockerDaemon, DockerSandbox

    if isinstance(sandbox, DockerSandbox):
        return sandbox.open_daemon()
    base_url = sandbox.options.extra.get("base_url")
    return await DockerDaemon.connect(base_url if isinstance(base_url, str) else None)
