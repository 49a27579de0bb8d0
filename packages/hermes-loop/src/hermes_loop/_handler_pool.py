"""``HandlerThreadPool``: threads for blocking tool handlers that never hold up exit.

``concurrent.futures.ThreadPoolExecutor`` joins every worker thread when the interpreter
exits, so one handler that hangs keeps the process alive forever. This pool's threads
are daemon threads that nothing joins: a handler abandoned after its call's timeout keeps
its thread until it returns, and the process can still exit.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

__all__ = ["HandlerThreadPool"]

_log = logging.getLogger(__name__)

_P = ParamSpec("_P")
_T = TypeVar("_T")

_WorkItem = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class HandlerThreadPool(Executor):
    """An ``Executor`` of at most ``max_workers`` daemon threads, started on demand.

    When every thread is busy, new work waits in a queue; the first time that happens
    after a quiet spell, a warning names the pool size (``busy`` and ``threads`` give
    the counts at any time). Exceptions of any kind a function raises, ``SystemExit``
    and ``KeyboardInterrupt`` included, go to its future.

    Args:
        max_workers: most threads (and so most functions running at once).
        thread_name_prefix: the threads are named ``{prefix}-{n}``.

    Raises:
        ValueError: if ``max_workers`` is below 1.
    """

    def __init__(self, max_workers: int = 128, *, thread_name_prefix: str = "hermes-tool") -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._queue: queue.SimpleQueue[_WorkItem | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._busy = 0
        self._started = 0
        self._warned = False
        self._shutdown = False

    @property
    def max_workers(self) -> int:
        """The most threads this pool starts."""
        return self._max_workers

    @property
    def threads(self) -> int:
        """Threads alive now."""
        return len(self._threads)

    @property
    def busy(self) -> int:
        """Functions running now (a hung handler counts until it returns)."""
        return self._busy

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        """Queue ``fn(*args, **kwargs)``; start a thread if none is idle and there is room.

        Raises:
            RuntimeError: after ``shutdown()``.
        """
        future: Future[_T] = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit to a HandlerThreadPool after shutdown()")
            self._queue.put((future, fn, args, kwargs))
            if self._idle.acquire(blocking=False):
                return future
            if len(self._threads) < self._max_workers:
                self._started += 1
                name = f"{self._prefix}-{self._started}"
                thread = threading.Thread(target=self._work, name=name, daemon=True)
                self._threads.add(thread)
                thread.start()
            elif not self._warned:
                self._warned = True
                _log.warning(
                    "all %d tool handler threads are busy; blocking tool calls now wait "
                    "for a free thread",
                    self._max_workers,
                )
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop taking work; idle threads end, running functions are left to finish.

        Args:
            wait: wait for the threads to end (never do this with a hung function).
            cancel_futures: cancel the work still queued.
        """
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
            for _ in self._threads:
                self._queue.put(None)
            alive = list(self._threads)
        if wait:
            for thread in alive:
                if thread is not threading.current_thread():
                    thread.join()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                with self._lock:
                    self._threads.discard(threading.current_thread())
                return
            future, fn, args, kwargs = item
            del item
            if not future.set_running_or_notify_cancel():
                self._idle.release()
                continue
            with self._lock:
                self._busy += 1
            failure: BaseException | None = None
            result: Any = None
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # the caller decides, via the future
                failure = exc
            with self._lock:
                self._busy -= 1
                self._warned = False
            # Idle before the future resolves: a caller that submits again as soon as
            # it has the result finds this thread free.
            self._idle.release()
            if failure is None:
                future.set_result(result)
            else:
                future.set_exception(failure)
            del future, fn, args, kwargs, result, failure
