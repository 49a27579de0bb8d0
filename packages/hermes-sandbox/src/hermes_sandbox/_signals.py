"""``stop_on_sigterm``: SIGTERM stops a program exactly as Ctrl-C does.

Python turns Ctrl-C (SIGINT) into a clean stop: under ``asyncio.run`` the main task is
cancelled, every ``async with SandboxPool(...)`` closes its sandboxes on the way out, and
``KeyboardInterrupt`` ends the program. SIGTERM, which is what ``kill``, ``timeout``,
systemd, docker and job schedulers send, has no handler by default: the process dies on
the spot and skips all teardown (local directories and processes stay; containers stay
until their lifetime ends). An application that wants the same clean stop on SIGTERM
wraps its run::

    from hermes_sandbox import stop_on_sigterm

    with stop_on_sigterm():
        asyncio.run(main())

No process-global state is left behind: the previous SIGTERM handler comes back when the
block ends.

It is the signal policy of every command of this project that runs sandboxes or
rollouts (``hermes-bench``, ``hermes-envs`` and the environments' ``serve``/``process``/
``evaluate``): SIGTERM takes Ctrl-C's path, everything already written stays, and the
exit status says which signal stopped the program: 130 after Ctrl-C, 143 after SIGTERM
(128 + the signal's number, as shells report it). The block yields a :class:`Stop`
whose ``exit_status`` gives it::

    with stop_on_sigterm() as stop:
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            sys.exit(stop.exit_status)
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["Stop", "stop_on_sigterm"]

_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None


class Stop:
    """What stopped a ``stop_on_sigterm()`` block: ``terminated`` once SIGTERM arrived."""

    __slots__ = ("terminated",)

    def __init__(self) -> None:
        self.terminated = False

    @property
    def exit_status(self) -> int:
        """The exit status of a program this stop ended: 143 after SIGTERM, else 130
        (Ctrl-C)."""
        return 128 + (signal.SIGTERM if self.terminated else signal.SIGINT)


@contextmanager
def stop_on_sigterm() -> Iterator[Stop]:
    """While the block runs, SIGTERM takes the path Ctrl-C takes.

    A SIGTERM calls the SIGINT handler installed at that moment, as if Ctrl-C had been
    pressed: under ``asyncio.run`` (Python 3.11+) that cancels the main task, lets
    cleanup (``async with`` blocks, ``finally``) run, and ends with
    ``KeyboardInterrupt``; outside an event loop it raises ``KeyboardInterrupt`` where
    the main thread is. A second SIGTERM, like a second Ctrl-C, interrupts harder. If
    SIGINT is ignored, SIGTERM is too; if SIGINT has its default C handler (the process
    dies), SIGTERM raises ``KeyboardInterrupt`` instead.

    The previous SIGTERM handler is restored when the block ends, also on errors. The
    block gets a :class:`Stop` that records a SIGTERM (its ``exit_status``: 143 after
    one, else 130).

    Raises:
        RuntimeError: if called outside the main thread (only it can handle signals).
    """
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError(
            "stop_on_sigterm() must be used in the main thread (Python delivers signals "
            "only there); wrap the program's entry point, e.g. around asyncio.run()"
        )
    stop = Stop()

    def as_ctrl_c(signum: int, frame: FrameType | None) -> None:
        stop.terminated = True
        _as_ctrl_c(signum, frame)

    previous: _Handler = signal.signal(signal.SIGTERM, as_ctrl_c)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """Hand SIGTERM to whatever handles SIGINT right now."""
    handler = signal.getsignal(signal.SIGINT)
    if handler == signal.SIG_IGN:
        return
    if callable(handler):
        handler(signal.SIGINT, frame)
        return
    signal.default_int_handler(signal.SIGINT, frame)
