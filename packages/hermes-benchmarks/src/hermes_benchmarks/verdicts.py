"""Which failures are the task's verdict (scored 0) and which are the machine's (retried).

The rule: what the agent did is scored, including what it broke; only failures of the
infrastructure are retried and left out of the means. :data:`SCORED_KINDS` are the error
kinds of a trial that failed (status ``fail``, reward 0); every other kind is an
``infra_error``. A sandbox that is gone while its backend still answers was stopped
from inside (its keeper killed, its init gone): that is the agent's doing.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from hermes_benchmarks._errors import HermesBenchmarksError
from hermes_sandbox import Sandbox, SandboxError
from hermes_sandbox.backends.docker import DockerDaemon

__all__ = ["SCORED_KINDS", "ScoredFailure", "backend_answers", "sandbox_gone"]

#: The error kinds of a scored failure: the tests' verdict (or what the agent did to
#: them) is a 0 for the model, never a retry.
SCORED_KINDS: Final = frozenset(
    {
        "reward_missing",
        "reward_unreadable",
        "reward_tampered",
        "sandbox_died",
        "verifier_timeout",
        "tests_blocked",
    }
)

#: Seconds allowed for asking the backend whether a sandbox still lives.
PROBE_TIMEOUT: Final = 15.0
#: Seconds to wait before asking again about a container the daemon said is stopping.
STOPPING_WAIT: Final = 0.5


class ScoredFailure(HermesBenchmarksError):
    """The trial failed because of what the agent did or what its tests said: status
    ``fail``, reward 0, ``kind`` (one of :data:`SCORED_KINDS`) says how."""

    def __init__(self, kind: str, message: str) -> None:
        if kind not in SCORED_KINDS:
            raise ValueError(f"{kind!r} is not a scored error kind")
        super().__init__(message)
        self.kind = kind


def _docker_target(sandbox: Sandbox) -> tuple[str | None, str] | None:
    """``(base_url, container id)`` of a docker sandbox that started, else None."""
    container = getattr(sandbox, "container_id", None)
    if sandbox.backend != "docker" or not isinstance(container, str):
        return None
    base_url = sandbox.options.extra.get("base_url")
    return (base_url if isinstance(base_url, str) else None), container


async def backend_answers(sandbox: Sandbox) -> bool:
    """Whether the sandbox's backend (docker: its daemon) answers now. Backends this
    cannot ask are reported as not answering (their failures stay infrastructure)."""
    target = _docker_target(sandbox)
    if target is None:
        return False
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            daemon = await DockerDaemon.connect(target[0])
    except (SandboxError, TimeoutError):
        return False
    daemon.close()
    return True


async def sandbox_gone(sandbox: Sandbox, error: BaseException | None = None) -> bool:
    """Whether ``sandbox``'s container is gone or stopped while its daemon answers: the
    sandbox was stopped from inside. False when it still runs, when the daemon does not
    answer (an infrastructure failure), or for a backend this cannot ask.

    ``error``: the failure that made the caller ask. When it says the container is in a
    "stopped state" (the daemon refused while stopping it) and the container still
    runs, it is asked once more :data:`STOPPING_WAIT` seconds later.
    """
    if await _gone(sandbox):
        return True
    if error is None or "stopped state" not in str(error):
        return False
    await asyncio.sleep(STOPPING_WAIT)
    return await _gone(sandbox)


async def _gone(sandbox: Sandbox) -> bool:
    target = _docker_target(sandbox)
    if target is None:
        return False
    base_url, container = target
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            daemon = await DockerDaemon.connect(base_url)
    except (SandboxError, TimeoutError):
        return False
    try:
        async with asyncio.timeout(PROBE_TIMEOUT):
            state = await daemon.call(_running, daemon, container)
    except (SandboxError, TimeoutError):
        return False
    finally:
        with contextlib.suppress(Exception):
            daemon.close()
    return not state


def _running(daemon: DockerDaemon, container: str) -> bool:
    """Whether the container exists and runs (blocking; through the SDK client)."""
    try:
        info = daemon.api.inspect_container(container)
    except Exception as error:  # the SDK's NotFound: no such container any more
        if getattr(error, "status_code", None) == 404:
            return False
        raise
    return bool(info.get("State", {}).get("Running"))
