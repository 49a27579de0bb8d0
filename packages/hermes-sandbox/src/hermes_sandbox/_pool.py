"""``SandboxPool``: owns the sandboxes of many tasks, keyed by task id; and the pool a
``ToolContext(task_id)`` made without one finds (``bind_sandbox_pool``)."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import SandboxClosedError
from hermes_sandbox._registry import create_sandbox
from hermes_sandbox._teardown import finish, start_or_run

__all__ = ["SandboxPool", "bind_sandbox_pool", "current_sandbox_pool"]


class SandboxPool:
    """One sandbox per task id, created on first use, all closed by ``close_all()``.

    The rollout and the reward code of a task reach the same sandbox through
    ``await pool.get(task_id)``. Nothing is module-global: make one pool per run.

    Nothing is left behind however the run ends: ``async with SandboxPool(...)`` closes
    every sandbox on the way out, also when the run is cancelled (Ctrl-C under
    ``asyncio.run``), and sandboxes that are still open when the interpreter exits (or
    when the pool is garbage-collected unclosed) are torn down with
    ``Sandbox.close_now()``. Only a ``kill -9`` skips that; docker containers then remove
    themselves when their lifetime ends, and ``backends.local.reap_orphans()`` removes
    what local sandboxes of dead processes left.

    Args:
        backend: backend name for new sandboxes (``"local"``: isolated where this
            machine allows it, unless ``isolation="none"`` is among the options).
        factory: instead of ``backend``, a callable ``factory(task_id) -> Sandbox``.
        options: ``SandboxOptions`` fields for ``create_sandbox``.
    """

    def __init__(
        self,
        backend: str = "local",
        *,
        factory: Callable[[str], Sandbox] | None = None,
        **options: Any,
    ) -> None:
        self.backend = backend
        self._factory = factory or (
            lambda task_id: create_sandbox(backend, task_id=task_id, **options)
        )
        self._sandboxes: dict[str, Sandbox] = {}
        self._creating: dict[str, asyncio.Task[Sandbox]] = {}
        self._closed = False
        # Every sandbox made and not yet closed, starting ones included: what the exit
        # hook tears down. The finalizer holds the set, never the pool.
        self._owned: set[Sandbox] = set()
        self._exit_hook = weakref.finalize(self, _close_now_all, self._owned)

    def __len__(self) -> int:
        return len(self._sandboxes)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._sandboxes

    @property
    def task_ids(self) -> list[str]:
        """Tasks that currently own a sandbox."""
        return list(self._sandboxes)

    async def get(self, task_id: str, *, recreate: bool = True) -> Sandbox:
        """The started sandbox of ``task_id``, created on first use (concurrent callers
        for one task share one creation).

        A task whose sandbox was closed without ``release`` (it expired, died or was
        closed elsewhere) gets a fresh one, unless ``recreate=False``: then the closed
        one is reported (reward code must not judge an empty stand-in).

        Raises:
            RuntimeError: if the pool was closed.
            SandboxStartError: if the sandbox cannot be started.
            SandboxClosedError: with ``recreate=False``, if the task's sandbox was closed.
        """
        if self._closed:
            raise RuntimeError("this SandboxPool is closed; make a new one")
        existing = self._sandboxes.get(task_id)
        if existing is not None:
            if not existing.closed:
                return existing
            if not recreate:
                raise SandboxClosedError(
                    f"the sandbox of task {task_id!r} was closed (it expired, died or was "
                    "closed elsewhere); what the rollout left in it is gone"
                )
        pending = self._creating.get(task_id)
        if pending is None:
            pending = asyncio.ensure_future(self._create(task_id))
            self._creating[task_id] = pending
        return await asyncio.shield(pending)

    async def _create(self, task_id: str) -> Sandbox:
        sandbox = self._factory(task_id)
        self._owned.add(sandbox)
        try:
            await sandbox.start()
        except BaseException:
            await self._close(sandbox)
            raise
        finally:
            self._creating.pop(task_id, None)
        self._sandboxes[task_id] = sandbox
        return sandbox

    async def _close(self, sandbox: Sandbox) -> None:
        await sandbox.close()
        self._owned.discard(sandbox)

    async def release(self, task_id: str) -> None:
        """Close and forget the sandbox of ``task_id`` (no error if it has none)."""
        sandbox = self._sandboxes.pop(task_id, None)
        if sandbox is not None:
            await self._close(sandbox)

    async def close_all(self) -> None:
        """Close every sandbox, including ones still starting; the pool is unusable after."""
        self._closed = True
        for task in list(self._creating.values()):
            task.cancel()
        await asyncio.gather(*self._creating.values(), return_exceptions=True)
        sandboxes = list(self._sandboxes.values())
        self._sandboxes.clear()
        await asyncio.gather(*(self._close(s) for s in sandboxes), return_exceptions=True)

    def close_now(self) -> None:
        """Tear down every sandbox still open, blocking, without an event loop (see
        ``Sandbox.close_now``); the pool is unusable after. Runs by itself at
        interpreter exit; call it where ``await close_all()`` cannot run."""
        self._closed = True
        self._sandboxes.clear()
        self._exit_hook()

    async def __aenter__(self) -> SandboxPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await finish(self.close_all())


def _close_now_all(sandboxes: set[Sandbox]) -> None:
    """``close_now()`` every sandbox in ``sandboxes``, each in its own thread (a docker
    removal or a remote cleanup takes a while; 64 in a row would take minutes), or one
    after the other at interpreter exit, where no thread can start."""
    left = list(sandboxes)
    sandboxes.clear()
    threads = [start_or_run(s.close_now, name=f"hermes-close-{s.task_id}") for s in left]
    deadline = time.monotonic() + Sandbox.CLOSE_NOW_TIMEOUT + 5
    for thread in threads:
        if thread is not None:
            thread.join(max(deadline - time.monotonic(), 0.0))


_POOL: ContextVar[SandboxPool | None] = ContextVar("hermes_sandbox_pool", default=None)


@contextmanager
def bind_sandbox_pool(pool: SandboxPool) -> Iterator[SandboxPool]:
    """Make ``pool`` the one ``ToolContext(task_id)`` (no pool given) looks up, in this
    context and the tasks started inside it, until the block ends. A running environment
    binds its pool so that reward and evaluate code written as the reference framework's
    (``ToolContext(task_id)``) reaches that rollout's sandbox."""
    token = _POOL.set(pool)
    try:
        yield pool
    finally:
        _POOL.reset(token)


def current_sandbox_pool() -> SandboxPool | None:
    """The pool bound with ``bind_sandbox_pool`` in this context, or ``None``."""
    return _POOL.get()
