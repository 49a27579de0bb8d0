"""``DockerWarmPool``: containers started ahead of time, so a docker sandbox starts in
milliseconds instead of the ~0.3-1 s a container takes to create and start.

    async with DockerWarmPool(size=8, image=..., cpus=1) as warm:
        sandbox = create_sandbox("docker", pool=warm, image=..., cpus=1)
        await sandbox.start()          # takes a ready container when the specs match

A sandbox takes a container only when its ``ContainerSpec`` (image, workdir, limits,
network, runtime, lifetime, labels) equals the pool's; otherwise, or when the pool is
empty, it starts its own. Each taken container is replaced in the background. A container
idle longer than ``max_idle`` is replaced (its keeper removes it soon after anyway, should
this process die). ``close()`` removes every idle container; taken ones belong to their
sandboxes. Idle containers still there when the interpreter exits (the pool was never
closed) are removed then, by ``close_now()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
import weakref
from collections import deque
from types import TracebackType
from typing import Any, Self

from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._teardown import finish
from hermes_sandbox.backends.docker._daemon import DockerDaemon
from hermes_sandbox.backends.docker._labels import LABEL, LABEL_POOL, LABEL_RUN, RUN_ID
from hermes_sandbox.backends.docker._launch import LIFETIME_GRACE, Launched, launch_container
from hermes_sandbox.backends.docker._spec import ContainerSpec

__all__ = ["DockerWarmPool"]

log = logging.getLogger(__name__)


class DockerWarmPool:
    """Keeps ``size`` started containers of one spec ready for docker sandboxes.

    Args:
        size: how many containers to keep ready.
        max_idle: seconds a ready container may wait before it is replaced.
        **options: the sandboxes' options (``SandboxOptions`` fields and the docker
            backend's ``base_url``, ``runtime``, ``network_mode``, ``labels``): they decide
            the spec, so pass the same ones to ``create_sandbox``.

    Raises:
        ValueError: for a negative size, a non-positive max_idle, or bad options.
    """

    def __init__(self, size: int = 4, *, max_idle: float = 600.0, **options: Any) -> None:
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size!r}")
        if max_idle <= 0:
            raise ValueError(f"max_idle must be positive, got {max_idle!r}")
        if "pool" in options:
            raise ValueError("a DockerWarmPool's options cannot name another pool")
        self.size = size
        self.max_idle = max_idle
        self.options = SandboxOptions.from_kwargs(**options)
        self.spec = ContainerSpec.from_options(self.options)
        self.pool_id = uuid.uuid4().hex[:8]
        self._base_url: str | None = self.options.extra.get("base_url")
        self._daemon: DockerDaemon | None = None
        self._idle: deque[tuple[str, float]] = deque()
        self._launched: dict[str, Launched] = {}
        self._filling: set[asyncio.Task[None]] = set()
        self._started = False
        self._closed = False
        self.last_error: BaseException | None = None
        self._exit_hook = weakref.finalize(self, _remove_now, self._idle, self._base_url)

    def __len__(self) -> int:
        """Containers ready now."""
        return len(self._idle)

    @property
    def base_url(self) -> str:
        """The daemon address the pool's containers live on."""
        return self._require().base_url

    @property
    def version(self) -> str:
        """The daemon API version in use."""
        return self._require().version

    @property
    def started(self) -> bool:
        """Whether ``start()`` has connected the pool."""
        return self._started and self._daemon is not None

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    def _require(self) -> DockerDaemon:
        if self._daemon is None:
            raise RuntimeError("DockerWarmPool is not started; await pool.start() first")
        return self._daemon

    async def start(self) -> Self:
        """Connect and start ``size`` containers; returns when they are all ready.

        Raises:
            DockerUnreachableError: if the daemon does not answer.
            SandboxStartError: if the containers cannot be started (e.g. image missing).
            RuntimeError: if the pool was closed.
        """
        if self._closed:
            raise RuntimeError("this DockerWarmPool is closed; make a new one")
        if self._started:
            return self
        self._daemon = await DockerDaemon.connect(self._base_url)
        self._started = True
        self._fill()
        try:
            await asyncio.gather(*list(self._filling))
        except BaseException:
            await self.close()
            raise
        if self.last_error is not None and not self._idle and self.size:
            error, self.last_error = self.last_error, None
            await self.close()
            raise error
        return self

    def matches(self, spec: ContainerSpec) -> bool:
        """Whether a sandbox of ``spec`` can take this pool's containers."""
        return spec == self.spec

    async def take(self, spec: ContainerSpec) -> str | None:
        """A ready container's id for a sandbox of ``spec`` (now owned by the caller, who
        must re-arm its keeper with ``SIGUSR2``), or ``None`` if none fits."""
        taken = await self.take_launched(spec)
        return None if taken is None else taken.id

    async def take_launched(self, spec: ContainerSpec) -> Launched | None:
        """As ``take``, with the container's workdir and image user."""
        if self._closed or not self._started or not self.matches(spec):
            return None
        now = time.monotonic()
        taken: str | None = None
        stale: list[str] = []
        while self._idle:
            container, born = self._idle.popleft()
            if now - born > self.max_idle:
                stale.append(container)
                continue
            taken = container
            break
        for container in stale:
            self._launched.pop(container, None)
            self._spawn(self._remove(container))
        self._fill()
        return None if taken is None else self._launched.pop(taken, None)

    def _fill(self) -> None:
        if self._closed or self.last_error is not None:
            return
        for _ in range(self.size - len(self._idle) - len(self._filling)):
            self._spawn(self._add_one())

    def _spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._filling.add(task)
        task.add_done_callback(self._filling.discard)

    async def _add_one(self) -> None:
        daemon = self._require()
        try:
            launched = await launch_container(
                daemon,
                self.spec,
                labels={LABEL: "1", LABEL_RUN: RUN_ID, LABEL_POOL: self.pool_id},
                deadlines=(
                    self.max_idle + LIFETIME_GRACE,
                    self.spec.lifetime + LIFETIME_GRACE,
                ),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # Stop refilling after a failure (sandboxes then start their own containers,
            # and report the error themselves); ``start()`` re-raises it.
            log.warning("docker warm pool: could not start a container: %s", exc)
            self.last_error = exc
            return
        if self._closed:
            await self._remove(launched.id)
            return
        self._launched[launched.id] = launched
        self._idle.append((launched.id, time.monotonic()))

    async def _remove(self, container: str) -> None:
        if self._daemon is None:
            return
        try:
            await self._daemon.remove_container(container)
        except Exception as exc:
            log.warning("docker warm pool: could not remove %s: %s", container[:12], exc)

    async def close(self) -> None:
        """Remove every ready container and stop refilling (idempotent)."""
        self._closed = True
        pending = list(self._filling)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        idle = [container for container, _ in self._idle]
        self._idle.clear()
        self._launched.clear()
        await asyncio.gather(*(self._remove(c) for c in idle), return_exceptions=True)
        if self._daemon is not None:
            with contextlib.suppress(Exception):
                self._daemon.close()
        self._exit_hook.detach()

    def close_now(self) -> None:
        """Remove the ready containers without an event loop (blocking, best effort);
        runs by itself at interpreter exit for a pool that was not closed."""
        self._closed = True
        self._exit_hook()

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await finish(self.close())


def _remove_now(idle: deque[tuple[str, float]], base_url: str | None) -> None:
    containers = [container for container, _ in idle]
    idle.clear()
    if not containers:
        return
    try:
        daemon = DockerDaemon.open(base_url)
    except Exception as exc:
        log.warning("docker warm pool: cannot reach the daemon to remove %s: %s", containers, exc)
        return
    try:
        for container in containers:
            daemon.remove_container_now(container)
    finally:
        daemon.close()
