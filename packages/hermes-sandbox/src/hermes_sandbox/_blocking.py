"""Calling async code from blocking code: the one bridge between the two.

- ``LoopThread``: a private event loop running in a helper thread, to run coroutines
  from synchronous code (whether or not the caller is itself inside a running event
  loop) and to keep loop-bound resources, such as a Playwright browser, on one loop
  whatever loop or thread their users call from.
- ``try_run_on_loop``: run a coroutine on another thread's running loop, if it takes
  the call promptly.
- ``BlockingBridge``: what a blocking method of ``ToolContext`` runs its awaitable
  twin through (the home loop when it can take the call, else a private
  ``LoopThread``), and ``blocking``, which makes the blocking method from the twin.

Nothing here is global: each owner makes and stops its own ``LoopThread`` and bridge.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

from hermes_sandbox._errors import SandboxError, ToolContextError

__all__ = ["BlockingBridge", "LoopThread", "blocking", "try_run_on_loop"]

T = TypeVar("T")
P = ParamSpec("P")

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


class BlockingBridge:
    """Runs coroutines for blocking callers, on the *home loop* or on a private loop.

    Called from another thread while ``home`` (the loop the owner was made on, normally
    the one its sandboxes live on) runs, ``run`` runs the coroutine on that loop, so
    backends whose connections belong to it keep working; if that loop does not take the
    call within ``home_grace`` seconds (it is blocked, perhaps waiting for this very
    thread), or on the home loop's own thread, or without a home loop, it runs on a
    private ``LoopThread`` that starts on first use and stops at ``stop()``.

    Args:
        name: names the private thread (``hermes-<name>``).
        home: the home loop, or None.
        owner: names the caller's subject in errors (e.g. ``"task 't1'"``).
        home_grace: seconds the home loop has to take a call.
    """

    def __init__(
        self,
        name: str,
        home: asyncio.AbstractEventLoop | None,
        *,
        owner: str,
        home_grace: float = 2.0,
    ) -> None:
        self.name = name
        self.owner = owner
        self.home = home
        self.home_grace = home_grace
        self._runner: LoopThread | None = None
        self._lock = threading.Lock()

    def _get_runner(self) -> LoopThread:
        with self._lock:
            if self._runner is None:
                runner = LoopThread(f"hermes-{self.name}")
                weakref.finalize(self, runner.stop)
                self._runner = runner
            return self._runner

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to its end for a blocking caller and return its result.

        Raises:
            ToolContextError: kind ``reentrant`` if called from code the private loop
                runs (it would wait for itself); kind ``loop_blocked`` if the coroutine
                had to run away from the running home loop and the sandbox refused the
                foreign loop (a ``RuntimeError`` other than a ``SandboxError``).
            BaseException: what ``coro`` raises.
        """
        runner = self._runner
        if runner is not None and runner.in_loop_thread():
            coro.close()
            raise ToolContextError(
                "a blocking ToolContext method was called from code the context itself runs "
                "(e.g. a tool handler under call_tool); await the async twin instead",
                kind="reentrant",
            )
        home = self.home
        if home is not None and home.is_running() and not home.is_closed():
            try:
                current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            except RuntimeError:
                current = None
            if current is not home:
                ran, value = try_run_on_loop(home, coro, start_within=self.home_grace)
                if ran:
                    return cast(T, value)
            # The home loop runs but cannot take the call, so the operation runs away from
            # the loop the sandbox was made on. A RuntimeError that is not one of ours is
            # then the sandbox (or its SDK) refusing a foreign loop, whatever its wording
            # (asyncio's "attached to a different loop", an SDK's own check, ...).
            try:
                return self._get_runner().run(coro)
            except SandboxError:
                raise
            except RuntimeError as exc:
                raise ToolContextError(
                    f"{self.owner}: this sandbox belongs to the event loop the rollout ran on, "
                    "and a blocking ToolContext call cannot reach it while that loop is "
                    "blocked (the call was made on its thread, or it waits for the caller); "
                    "from async code use the awaitable twins (await ctx.aterminal(...), "
                    f"await ctx.acleanup(), ...). The sandbox said: {exc}",
                    kind="loop_blocked",
                ) from exc
        return self._get_runner().run(coro)

    async def astop(self) -> None:
        """``stop`` from async code (the thread is joined in a worker thread)."""
        with self._lock:
            runner, self._runner = self._runner, None
        if runner is not None:
            await asyncio.to_thread(runner.stop)

    def stop(self) -> None:
        """Stop the private loop, if one started (idempotent; a later ``run`` starts a
        new one)."""
        with self._lock:
            runner, self._runner = self._runner, None
        if runner is not None:
            runner.stop()


class BlockingOwner(Protocol):
    """An object with blocking twins made by ``blocking``."""

    def _blocking(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` for a blocking caller (closing it if the owner is unusable)."""
        ...


OwnerT = TypeVar("OwnerT", bound=BlockingOwner)


def blocking(
    twin: Callable[Concatenate[OwnerT, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[OwnerT, P], T]:
    """The blocking method of the awaitable method ``twin`` (named ``aNAME``): the same
    arguments, run to the end through the owner's ``_blocking`` (e.g. a
    ``BlockingBridge``). In a class body: ``terminal = blocking(aterminal)``."""

    @functools.wraps(twin)
    def call(self: OwnerT, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._blocking(twin(self, *args, **kwargs))

    call.__name__ = twin.__name__.removeprefix("a")
    call.__qualname__ = f"{twin.__qualname__.rpartition('.')[0]}.{call.__name__}"
    call.__doc__ = f"Synchronous ``{twin.__name__}`` (same arguments, same result)."
    return call
