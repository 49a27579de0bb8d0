"""Tearing things down when the usual way cannot run: at interpreter exit, after Ctrl-C.

``finish(coro)`` awaits a cleanup coroutine to the end even if the awaiting task is
cancelled meanwhile (``asyncio.run`` cancels the main task on Ctrl-C, then cancels
everything left over: a plain ``asyncio.shield`` would let that second round cut the
cleanup short). ``run_detached(coro, timeout)`` runs a coroutine to completion on a
fresh event loop when the original loop is gone, e.g. from an ``atexit`` hook, where the
standard thread pools refuse new work.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

__all__ = ["finish", "in_thread", "run_detached", "start_or_run"]

T = TypeVar("T")
P = ParamSpec("P")


async def finish(cleanup: Coroutine[Any, Any, T]) -> T:
    """Await ``cleanup`` to its end, also when this task is cancelled while it runs.

    A cancellation that arrives meanwhile is re-raised once the cleanup is over, so
    the caller still stops. Errors of the cleanup itself propagate as usual.

    Raises:
        asyncio.CancelledError: after the cleanup, if the caller was cancelled meanwhile.
    """
    task = asyncio.ensure_future(cleanup)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                raise
            cancelled = True
    result = task.result()
    if cancelled:
        raise asyncio.CancelledError
    return result


class _ThreadPerCall(ThreadPoolExecutor):
    """An executor that runs each call in a new thread, or right here once threads can
    no longer be started: unlike ``ThreadPoolExecutor`` it keeps working while the
    interpreter shuts down (``atexit`` hooks run after the standard executors stopped
    accepting work, and, since Python 3.12, after new threads are refused). A
    ``ThreadPoolExecutor`` only because ``set_default_executor`` insists; its own pool is
    never used."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()

        def work() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

        start_or_run(work, name="hermes-teardown")
        return future


def start_or_run(target: Callable[[], object], *, name: str) -> threading.Thread | None:
    """Run ``target`` in a new daemon thread (returned), or right here (``None``) when
    the interpreter no longer starts threads (it is shutting down)."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    try:
        thread.start()
    except RuntimeError:  # "can't create new thread at interpreter shutdown"
        target()
        return None
    return thread


async def in_thread(work: Callable[[], T], *, name: str) -> T:
    """Run the blocking ``work`` in a new daemon thread and await its result, or run it
    right here, blocking the loop, when no thread can be started (the process or its
    cgroup is out of process ids, e.g. under a fork bomb, or the interpreter is shutting
    down). Teardown must not depend on a new thread: ``asyncio.to_thread`` then raises
    ``RuntimeError: can't start new thread`` and leaves the work queued.

    Cancelling the await does not stop ``work``; wrap it in ``finish`` to wait for it.

    Raises:
        Exception: whatever ``work`` raises.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def deliver(result: T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def target() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = work()
        except BaseException as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(deliver, result, error)

    thread = threading.Thread(target=target, name=name, daemon=True)
    try:
        thread.start()
    except RuntimeError:  # "can't start new thread"
        return work()
    return await done


def run_detached(work: Coroutine[Any, Any, T], *, timeout: float) -> T:
    """Run ``work`` on a new event loop in this thread and return its result.

    For cleanup when no loop is running any more (``atexit``). ``asyncio.to_thread``
    inside ``work`` keeps working during interpreter shutdown.

    Raises:
        RuntimeError: if this thread is already running an event loop.
        TimeoutError: if ``work`` takes longer than ``timeout`` seconds (it is cancelled).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        work.close()
        raise RuntimeError("run_detached() cannot be called from a running event loop")

    async def bounded() -> T:
        async with asyncio.timeout(timeout):
            return await work

    loop = asyncio.new_event_loop()
    try:
        loop.set_default_executor(_ThreadPerCall(max_workers=1))
        return loop.run_until_complete(bounded())
    finally:
        work.close()  # no-op once it ran; stops a "never awaited" warning otherwise
        with contextlib.suppress(Exception):
            loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
