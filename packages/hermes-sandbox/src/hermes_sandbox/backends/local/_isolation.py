"""The isolated mode of the local backend: a sandbox in its own Linux namespaces.

``Namespace.start`` runs Debian's ``bubblewrap`` (``bwrap``, no daemon, no root needed
where unprivileged user namespaces are allowed; its command line and the thread that
starts it are ``_bwrap.py``) with its own pid, network (unless
``network=True``), IPC and UTS namespaces and a mount namespace that shows only what
commands need (``layout.py``): system directories read-only, ``/etc`` without its
secrets, private ``/tmp``, ``/run`` and ``/dev`` of bounded size, the sandbox's own
directories read-write; the host's homes, ``/root`` and checkouts are not there.
``/proc`` shows only the sandbox's processes. Every capability is dropped.

Inside runs ``helper.py``, which starts the commands and opens files on the owner's
behalf over a socket, so both see exactly what the sandbox sees. Each event loop that
uses the sandbox has its own socket to the helper (see ``Namespace``), so the sandbox is
bound to no loop. The commands' output pipes are made here and handed over, so output
is read as in the plain mode.

Teardown needs no thread and no ``/proc`` sweep: SIGKILL to the namespace's pid 1 makes
the kernel kill every process in it. Nothing outlives its owner: bubblewrap runs with
``--die-with-parent`` (its pid 1 dies with it, and it dies with the thread that started
it), and that thread is one of its own, which waits for bubblewrap to exit: so
bubblewrap lives exactly as long as it is not killed and this process lives, whatever
thread or event loop started the sandbox. When the owning process dies (even by
SIGKILL, even while a child it forked holds the helper's socket), the kernel kills
bubblewrap, and with it the sandbox; when the owner only closes the socket, the helper
sees it and ends the sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hermes_sandbox._errors import SandboxClosedError, SandboxError, SandboxStartError
from hermes_sandbox._output import OutputCollector
from hermes_sandbox._processes import environ_needle
from hermes_sandbox.backends.local._bwrap import (
    BwrapFailedError,
    bwrap_argv,
    info_complete,
    log_tail,
    spawn_kept,
)
from hermes_sandbox.backends.local._layout import Layout
from hermes_sandbox.backends.local._link import HelperLink
from hermes_sandbox.backends.local._process import Command

__all__ = ["HELPER", "HELPER_PROCESSES", "Namespace"]

#: Processes of the isolated mode itself in the sandbox's cgroup (bwrap twice, the helper).
HELPER_PROCESSES = 3
#: The helper program (shown read-only inside the sandbox).
HELPER = str(Path(__file__).with_name("helper.py"))


# How long start waits for the helper to be ready.
_START_TIMEOUT = 30.0


class Namespace:
    """One running bubblewrap sandbox and the connections to its helper.

    Each event loop that uses the sandbox gets its own connection (a *link*), made on
    first use through the *linker*, a socket whose messages are atomic and which any
    thread may use with plain blocking calls. So the sandbox belongs to no event loop:
    a coroutine on a private loop can run commands while the loop that started the
    sandbox is blocked (a synchronous ``ToolContext`` call made on that loop's thread).
    A link whose loop has stopped serves the next loop that needs one.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, linker: socket.socket
    ) -> None:
        self.bwrap_pid = -1
        self.init_pid = -1
        self.dead = False
        self._linker = linker
        self._links_lock = threading.Lock()
        self._links = [HelperLink(self, loop, sock)]
        self._ids = itertools.count(1)
        self._bwrap_watch: Command | None = None
        self._exited = threading.Event()

    @classmethod
    async def start(
        cls,
        *,
        bwrap: str,
        layout: Layout,
        home: str,
        log_path: str,
        cgroup_procs: Sequence[str] = (),
    ) -> Namespace:
        """Start the sandbox and wait until its helper answers.

        Args:
            bwrap: the ``bwrap`` program.
            layout: what the sandbox shows of the host (``layout.py``).
            home: the helper's working directory.
            log_path: where bubblewrap's own error messages go.
            cgroup_procs: ``cgroup.procs`` files the sandbox joins before it starts.

        Raises:
            BwrapFailedError: if bubblewrap fails (with its message).
            SandboxStartError: if the helper does not answer, or bubblewrap cannot be
                started.
        """
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        linker, their_linker = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        info_read, info_write = os.pipe()
        made = cls(loop, ours, linker)
        primary = made._links[0]
        argv, masks = bwrap_argv(bwrap, layout, home, cgroup_procs)
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        # The bwrap process is ours: its "output" is the info pipe, its exit (reported
        # by its thread) tells why the start failed.
        info = OutputCollector(1 << 16)
        watch = made._bwrap_watch = Command(loop, info_read, info)
        try:
            made.bwrap_pid = spawn_kept(
                argv,
                (theirs.fileno(), info_write, their_linker.fileno(), log),
                masks,
                watch,
                made._exited,
            )
        except (OSError, RuntimeError) as exc:
            watch.close()
            made.mark_dead()
            raise SandboxStartError(f"local isolated: cannot start {argv[0]}: {exc}") from exc
        finally:
            theirs.close()
            their_linker.close()
            os.close(info_write)
            os.close(log)
        try:
            async with asyncio.timeout(_START_TIMEOUT):
                ended: asyncio.Future[bool] = asyncio.ensure_future(
                    watch.wait(_START_TIMEOUT, eof=False)
                )
                waiters: list[asyncio.Future[Any]] = [primary.ready, ended]
                try:
                    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    ended.cancel()
                if not primary.ready.done() or primary.ready.exception() is not None:
                    raise BwrapFailedError(
                        "local isolated: bubblewrap failed: "
                        + (log_tail(log_path) or f"exit status {watch.returncode}")
                        + "; install bubblewrap (apt-get install bubblewrap) and allow user "
                        "namespaces, or use isolation='none'"
                    )
                await primary.ready
                # bwrap writes its info once the namespace runs (its pid 1 keeps the pipe).
                while not watch.eof and not info_complete(info.text()):
                    await watch.wait(0.01, eof=True)
            made.init_pid = int(json.loads(info.text())["child-pid"])
        except BaseException as exc:
            made.destroy()
            await made.wait_gone(5.0)
            if isinstance(exc, TimeoutError):
                raise SandboxStartError(
                    f"local isolated: the sandbox did not answer within {_START_TIMEOUT:g}s: "
                    + log_tail(log_path)
                ) from exc
            if isinstance(exc, (KeyError, ValueError)):
                raise SandboxStartError(
                    f"local isolated: bubblewrap gave no child pid: {info.text()!r}"
                ) from exc
            raise
        return made

    # commands -----------------------------------------------------------------------
    async def run(
        self, argv: list[str], env: dict[str, str], collector: OutputCollector
    ) -> Command:
        """Start ``argv`` in the sandbox; its output goes to ``collector`` (read on the
        running event loop, whichever it is).

        Raises:
            SandboxClosedError: if the sandbox died.
        """
        self.check_alive()
        link = self._link()
        ident = next(self._ids)
        read_end, write_end = os.pipe()
        command = Command(link.loop, read_end, collector, lambda: self._kill(ident, ""))
        link.commands[ident] = command
        try:
            await link.send({"op": "run", "id": ident, "argv": argv, "env": env}, write_end)
        except BaseException:
            link.commands.pop(ident, None)
            command.set_exit(-signal.SIGKILL)
            raise
        finally:
            os.close(write_end)
        return command

    def kill(self, command: Command, mark: str) -> None:
        """Kill ``command``'s process group and every process carrying ``mark``."""
        for link in list(self._links):
            for ident, known in list(link.commands.items()):
                if known is command:
                    self._kill(ident, mark)
                    return

    def _kill(self, ident: int, mark: str) -> None:
        if self.dead:
            return
        try:
            link = self._link()
        except (RuntimeError, SandboxError):  # no running loop; or gone: destroy() is the way
            return
        needle = environ_needle(mark or f"\0none-{ident}", exact=True)
        message = {"op": "kill", "id": ident, "needle": needle}
        link.loop.create_task(link.send_quietly(message))

    async def stop_all(self) -> None:
        """Kill every process in the sandbox but its pid 1 and the helper, and wait until
        the helper found none left.

        Raises:
            SandboxClosedError: if the sandbox died.
            SandboxError: if the helper could not kill them all.
        """
        self.check_alive()
        link = self._link()
        ident = next(self._ids)
        answer: asyncio.Future[None] = link.loop.create_future()
        link.stops[ident] = answer
        try:
            await link.send({"op": "stop", "id": ident})
            await answer
        finally:
            link.stops.pop(ident, None)

    # files --------------------------------------------------------------------------
    async def open(self, path: str, *, write: bool) -> int:
        """A descriptor of ``path`` opened inside the sandbox (for writing: parents made,
        truncated). The caller closes it.

        Raises:
            OSError: as opening the path inside the sandbox would (e.g.
                ``FileNotFoundError``, ``IsADirectoryError``, ``OSError(EROFS)``).
            SandboxClosedError: if the sandbox died.
        """
        self.check_alive()
        link = self._link()
        ident = next(self._ids)
        answer: asyncio.Future[int] = link.loop.create_future()
        link.opens[ident] = answer
        try:
            await link.send({"op": "open", "id": ident, "path": path, "write": write})
            return await answer
        except OSError as exc:
            if exc.filename:
                raise
            raise OSError(exc.errno, exc.strerror, path) from None
        except BaseException:
            if answer.done() and not answer.cancelled() and answer.exception() is None:
                os.close(answer.result())  # opened, but nobody will use it
            raise
        finally:
            link.opens.pop(ident, None)

    # teardown -----------------------------------------------------------------------
    def destroy(self) -> None:
        """SIGKILL the sandbox's pid 1 and bubblewrap: the kernel kills every process in
        the sandbox. Starts no thread; never raises."""
        if not self._exited.is_set():  # else the pids may belong to others by now
            for pid in (self.init_pid, self.bwrap_pid):
                if pid > 0:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
        self.mark_dead()

    async def wait_gone(self, timeout: float) -> bool:
        """Wait for bubblewrap to exit, which it does once every process of the sandbox
        is gone; whether it did (on any event loop)."""
        deadline = time.monotonic() + timeout
        while not self._reaped():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    def wait_gone_now(self, timeout: float) -> None:
        """``wait_gone`` without an event loop (blocking; for ``close_now``)."""
        deadline = time.monotonic() + timeout
        while not self._reaped() and time.monotonic() < deadline:
            time.sleep(0.005)

    def _reaped(self) -> bool:
        """Whether bubblewrap has exited (its thread reaps it)."""
        return self.bwrap_pid <= 0 or self._exited.is_set()

    def _link(self) -> HelperLink:
        """The link of the running event loop, made on first use.

        Raises:
            RuntimeError: without a running event loop.
            SandboxClosedError: if the sandbox died.
        """
        loop = asyncio.get_running_loop()
        with self._links_lock:
            for link in self._links:
                if link.loop is loop:
                    return link
            # A link whose loop has stopped (``asyncio.run`` called twice, a private
            # loop that was stopped) serves this loop from now on.
            for link in self._links:
                if not link.loop.is_running():
                    link.move_to(loop)
                    return link
            link = self._new_link(loop)
            self._links.append(link)
            return link

    def _new_link(self, loop: asyncio.AbstractEventLoop) -> HelperLink:
        """A new connection to the helper, handed over through the linker.

        Raises:
            SandboxClosedError: if the sandbox died.
        """
        self.check_alive()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            rights = theirs.fileno().to_bytes(4, sys.byteorder)
            # One datagram of a SOCK_SEQPACKET socket: sent whole, by a blocking call.
            self._linker.sendmsg([b"L"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
        except OSError as exc:
            ours.close()
            raise SandboxClosedError(f"the isolated sandbox is gone: {exc}") from exc
        finally:
            theirs.close()
        return HelperLink(self, loop, ours)

    def mark_dead(self) -> None:
        """The sandbox is gone: close every link (each on its own loop's thread) and the
        linker. Never raises."""
        self.dead = True
        with self._links_lock:
            links = list(self._links)
        self._linker.close()
        for link in links:
            link.on_loop(link.fail)

    def check_alive(self) -> None:
        """Raises:
        SandboxClosedError: if the sandbox died (its helper or pid 1 is gone)."""
        if self.dead:
            raise SandboxClosedError("the isolated sandbox died (its helper or pid 1 is gone)")
