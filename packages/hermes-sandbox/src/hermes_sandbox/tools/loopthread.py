"""``LoopThread``: a private event loop running in a helper thread.

Used to run coroutines from synchronous code (whether or not the caller is itself inside
a running event loop) and to keep loop-bound resources, such as a Playwright browser, on
one loop whatever loop or thread their users call from. Nothing here is global: each
owner makes and stops its own ``LoopThread``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar, cast

from hermes_sandbox.errors import ToolContextError

__all__ = ["LoopThread", "try_run_on_loop"]

T = TypeVar("T")

#: How long an interrupted synchronous call waits for the coroutine's clean-up.
_CANCEL_GRACE = 15.0


class LoopThread:
    """An event loop in a daemon thread, started on construction, stopped by ``stop()``.

    ``run(coro)`` blocks the calling thread until the coroutine finishes on the private
    loop; ``submit(coro)`` is the awaitable form for a caller on another loop. Both cancel
    the coroutine if the caller is interrupted or cancelled.
    """

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._stopped = False
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The private loop."""
        return self._loop

    @property
    def thread(self) -> threading.Thread:
        """The thread running the loop."""
        return self._thread

    @property
    def stopped(self) -> bool:
        """Whether ``stop()`` was called."""
        return self._stopped

    def in_loop_thread(self) -> bool:
        """Whether the caller runs on the private loop's thread."""
        return threading.current_thread() is self._thread

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._ready.set)
        try:
            self._loop.run_forever()
        finally:
            try:
                pending = asyncio.all_tasks(self._loop)
                for task in pending:
                    task.cancel()
                if pending:
                    self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
                self._loop.run_until_complete(self._loop.shutdown_default_executor())
            finally:
                self._loop.close()

    def _schedule(
        self, coro: Coroutine[Any, Any, T], done: threading.Event
    ) -> concurrent.futures.Future[T]:
        if self._stopped or self._loop.is_closed():
            coro.close()
            raise ToolContextError(
                f"{self._thread.name}: the private event loop was stopped", kind="loop_stopped"
            )

        async def guarded() -> T:
            try:
                return await coro
            finally:
                done.set()

        return asyncio.run_coroutine_threadsafe(guarded(), self._loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the private loop and wait for its result (blocking).

        If the waiting thread is interrupted (e.g. ``KeyboardInterrupt``), the coroutine
        is cancelled and given a moment to clean up before the interruption propagates.

        Raises:
            ToolContextError: (a ``RuntimeError``) kind ``reentrant`` if called from the
                private loop's own thread (it would wait for itself), kind
                ``loop_stopped`` after ``stop()``.
        """
        if self.in_loop_thread():
            coro.close()
            raise ToolContextError(
                f"{self._thread.name}: a blocking call was made from the private event "
                "loop's own thread; await the async twin instead",
                kind="reentrant",
            )
        done = threading.Event()
        future = self._schedule(coro, done)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                future.cancel()
                done.wait(_CANCEL_GRACE)
            raise

    async def submit(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the private loop and await its result from another loop.

        Cancelling the awaiting task cancels the coroutine on the private loop.

        Raises:
            ToolContextError: (a ``RuntimeError``) kind ``loop_stopped`` after ``stop()``.
        """
        if self.in_loop_thread():
            return await coro
        done = threading.Event()
        future = self._schedule(coro, done)
        return await asyncio.wrap_future(future)

    def stop(self, *, join_timeout: float = 30.0) -> None:
        """Cancel what still runs on the loop, close it and join the thread (idempotent).

        Called from the loop's own thread, it only asks the loop to stop.
        """
        if self._stopped:
            return
        self._stopped = True
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if not self.in_loop_thread():
            self._thread.join(join_timeout)


class _NotRun:
    """What ``try_run_on_loop``'s wrapper returns when the caller gave up on it."""


def try_run_on_loop(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], *, start_within: float
) -> tuple[bool, T | None]:
    """Run ``coro`` on another thread's running ``loop`` and wait for it (blocking).

    Returns ``(True, result)``, or ``(False, None)`` without having run ``coro`` at all
    if ``loop`` did not pick it up within ``start_within`` seconds (it is closed, or
    blocked, perhaps waiting for this very thread): the caller can then run the same
    ``coro`` elsewhere. Once started, the coroutine is waited for however long it takes;
    if the waiting thread is interrupted, the coroutine is cancelled.

    Raises:
        ToolContextError: (a ``RuntimeError``) kind ``reentrant`` if called from
            ``loop``'s own thread.
    """
    try:
        current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        current = None
    if current is loop:
        raise ToolContextError(
            "try_run_on_loop() was called from the loop's own thread", kind="reentrant"
        )
    claim = threading.Lock()
    started = threading.Event()
    done = threading.Event()

    async def guarded() -> T | _NotRun:
        if not claim.acquire(blocking=False):
            return _NotRun()
        started.set()
        try:
            return await coro
        finally:
            done.set()

    wrapper = guarded()
    try:
        future = asyncio.run_coroutine_threadsafe(wrapper, loop)
    except RuntimeError:  # the loop is closed
        wrapper.close()
        return False, None
    try:
        if not started.wait(start_within) and claim.acquire(blocking=False):
            future.cancel()  # it will never touch ``coro``
            return False, None
        value = future.result()
    except BaseException:
        if claim.acquire(blocking=False):  # interrupted before it started
            future.cancel()
            coro.close()
        elif not future.done():
            future.cancel()
            done.wait(_CANCEL_GRACE)
        raise
    return True, cast(T, value)
