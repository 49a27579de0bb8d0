"""One running command of a local sandbox, watched from the event loop without threads.

``Command`` reads the command's merged stdout/stderr pipe into a bounded
``OutputCollector`` and learns of its exit from whoever watches it: ``ChildCommand``
watches a child of this process through a pidfd (Linux 5.3+; elsewhere by polling) and
reaps it; the isolated mode's helper reports the exit of the commands it started.
``spawn`` starts ``bash -c`` as a child of this process with ``posix_spawn``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import subprocess
from collections.abc import Callable

from hermes_sandbox._output import OutputCollector
from hermes_sandbox.backends.local.helper import spawn_session

__all__ = [
    "ChildCommand",
    "Command",
    "exit_status",
    "inheritable_fds",
    "spawn",
]

# Bytes read from the output pipe per wakeup.
_READ_SIZE = 1 << 18
# After the end of output, how long (ms) to block for the exit before going back to the loop.
_EXIT_AFTER_EOF_MS = 2


class Command:
    """One running ``bash -c``: its output pipe, read by a loop reader into ``collector``
    (``None``: discard), and its exit, reported through ``set_exit``. Once it has exited
    and its output ended, the pipe is closed and ``on_finished`` is called.

    ``kill`` (given by the creator) kills the command's process group.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        output: int,
        collector: OutputCollector,
        kill: Callable[[], object] = lambda: None,
    ) -> None:
        self.loop = loop
        self.returncode: int | None = None
        self.collector: OutputCollector | None = collector
        self.exited = False
        self.eof = False
        self.on_finished: Callable[[], object] | None = None
        self._kill = kill
        self._closed = False
        self._waiter: asyncio.Future[None] | None = None
        self._fd = output
        os.set_blocking(output, False)
        loop.add_reader(output, self._on_output)

    async def wait(self, timeout: float, *, eof: bool) -> bool:
        """Wait up to ``timeout`` seconds for the exit (``eof``: and the end of output);
        whether it happened. Cancelling the wait does not affect the command."""
        loop = self.loop
        deadline = loop.time() + timeout
        while not (self.exited and (self.eof or not eof)):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(remaining, _resolve, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        return True

    def set_exit(self, returncode: int) -> None:
        """Record the exit (``os.waitstatus_to_exitcode`` style: -N for signal N)."""
        if self.exited:
            return
        self.returncode = returncode
        self.exited = True
        self._wake()
        self._maybe_finish()

    def kill_group(self) -> None:
        """SIGKILL the command's process group (while its leader is known to be ours)."""
        self._kill()

    def _wake(self) -> None:
        if self._waiter is not None:
            _resolve(self._waiter)

    def _on_output(self) -> None:
        # Read until the pipe is empty: the end of output often follows the last data.
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                break
            if self.collector is not None:
                self.collector.feed(data)
        self.loop.remove_reader(self._fd)
        self.eof = True
        self._after_eof()
        self._wake()
        self._maybe_finish()

    def _after_eof(self) -> None:
        """Called once the output ended (a subclass may check for the exit here)."""

    def _maybe_finish(self) -> None:
        if self.exited and self.eof:
            self.close()

    def _on_own_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return self.loop.is_closed()

    def close(self) -> None:
        """Stop watching and close the pipe (idempotent; from another thread or loop, done
        on the command's own loop). An unreaped process is left to the watch that is
        still running."""
        if self._closed:
            return
        if not self._on_own_loop():
            with contextlib.suppress(RuntimeError):  # that loop is closed: close here
                self.loop.call_soon_threadsafe(self.close)
                return
        self._closed = True
        if not self.eof:
            self.loop.remove_reader(self._fd)
        os.close(self._fd)
        self._closing()
        self._wake()
        if self.on_finished is not None:
            self.on_finished()

    def _closing(self) -> None:
        """Called by ``close`` (a subclass may stop its own watch here)."""


class ChildCommand(Command):
    """A command that is a child of this process: its exit is noticed through a pidfd
    (elsewhere by polling) and the process is reaped here."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        pid: int,
        output: int,
        collector: OutputCollector,
    ) -> None:
        super().__init__(loop, output, collector, self._kill_own_group)
        self.pid = pid
        self._pidfd = -1
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._poll_exit(0.001)
        else:
            loop.add_reader(self._pidfd, self._reap)

    def _after_eof(self) -> None:
        if not self.exited and self._pidfd >= 0:
            # The shell closes its output as it exits: wait a moment here rather than a
            # round of the event loop for the exit to be reported.
            poller = select.poll()
            poller.register(self._pidfd, select.POLLIN)
            poller.poll(_EXIT_AFTER_EOF_MS)
        self._reap()

    def _reap(self) -> None:
        if self.exited or not self._collect():
            return
        self._stop_watch()
        assert self.returncode is not None
        code, self.returncode = self.returncode, None
        self.set_exit(code)

    def _stop_watch(self) -> None:
        if self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = -1

    def _collect(self) -> bool:
        """Reap the process if it has exited (without blocking); whether it has."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else: the status is lost
                self.returncode = 255
            else:
                if pid == 0:
                    return False
                self.returncode = os.waitstatus_to_exitcode(status)
        return True

    def _poll_exit(self, delay: float) -> None:
        def tick() -> None:
            self._reap()
            if not self.exited:
                self._poll_exit(min(delay * 2, 0.05))

        self.loop.call_later(delay, tick)

    def _kill_own_group(self) -> None:
        # Only while the leader is unreaped can its id not belong to someone else.
        if not self.exited and not self._collect():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def spawn(
    program: str, argv: list[str], env: dict[str, str], close: tuple[int, ...] = ()
) -> tuple[int, int]:
    """Start ``argv`` in a new session: stdin ``/dev/null``, stdout and stderr into one
    pipe, the signals Python ignores (SIGPIPE, SIGXFSZ) back to their defaults, and the
    descriptors ``close`` closed. Returns the pid and the pipe's read end.

    ``os.posix_spawn`` (vfork + exec) costs a fraction of ``subprocess.Popen``'s setup.
    Unlike ``Popen(close_fds=True)`` it closes nothing by itself: Python opens every
    descriptor non-inheritable (PEP 446), and ``close`` should list the inheritable ones
    (see ``inheritable_fds``), typically those this process itself inherited. Runs on the
    event loop's thread, as ``asyncio``'s own subprocess support does.

    Raises:
        OSError: if the program cannot be started.
    """
    read_end, write_end = os.pipe()
    try:
        try:
            pid = spawn_session([program, *argv[1:]], env, write_end, close)
        except NotImplementedError:  # no POSIX_SPAWN_SETSID in this libc
            pid = _spawn_with_popen(argv, env, write_end)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    return pid, read_end


def inheritable_fds() -> tuple[int, ...]:
    """Descriptors above 2 that a child of this process would inherit."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        try:
            names = os.listdir("/dev/fd")
        except OSError:
            return ()
    found = []
    for name in names:
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):  # e.g. the listing's own, closed by now
                if os.get_inheritable(fd):
                    found.append(fd)
    return tuple(sorted(found))


def _spawn_with_popen(argv: list[str], env: dict[str, str], output: int) -> int:
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=output,
        env=env,
        start_new_session=True,
    )
    # The caller reaps the pid itself; keep Popen from reaping or warning about it.
    process.returncode = 0
    return process.pid


def exit_status(returncode: int) -> int:
    """A shell-style status: 128 + N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode
