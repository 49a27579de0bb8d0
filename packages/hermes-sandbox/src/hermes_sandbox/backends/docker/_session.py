"""Command sessions: a shell kept open in the container, fed commands through its stdin.

Starting a ``docker exec`` costs tens of milliseconds of the daemon's time; writing a
command to a shell that already runs costs about one. A ``Session`` is one ``docker exec``
of the helper's bash running ``SESSION_SERVER``: it reads a command (a line ``TOKEN
LENGTH``, then the script's ``LENGTH`` bytes, read at once with ``read -N`` in the C
locale), starts it as ``/.hermes/bash -c SCRIPT`` in a session of
its own (``setsid``, stdin ``/dev/null``, stderr joined to stdout), reports its session id
on stderr (``TOKEN SID``), waits for it and writes ``TOKEN STATUS`` on stdout after the
command's last byte. The token is random per command, so the command's output (any bytes)
cannot end it early; everything before it is the command's output.

A session runs one command at a time; ``SessionPool`` keeps a sandbox's sessions (one per
command running at the same time, per user) and opens another when all are busy. A
session that dies (a command may kill it) fails only the command it was running (its
status is the session's own, 137 for a ``kill -9``) and is replaced by the next command.
Output that arrives while a session is idle (a background job that kept the output open)
retires the session: it is drained until it ends but gets no more commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Final

from hermes_sandbox._errors import SandboxClosedError, SandboxError
from hermes_sandbox.backends.docker._daemon import DockerDaemon
from hermes_sandbox.backends.docker._helper import HELPER_BASH, HELPER_BUSYBOX
from hermes_sandbox.backends.docker._scripts import harness_argv
from hermes_sandbox.backends.docker._stream import ExecStream

__all__ = ["SESSION_SERVER", "Running", "Session", "SessionPool", "session_user"]

log = logging.getLogger(__name__)

#: The shell loop a session runs (builtins only, apart from the helper's own binaries).
SESSION_SERVER: Final = f"""
while IFS=' ' read -r t n; do
  IFS= LC_ALL=C read -r -N "$n" s
  {HELPER_BUSYBOX} setsid {HELPER_BASH} -c "$s" </dev/null 2>&1 &
  printf '%s %s\\n' "$t" "$!" >&2
  wait "$!"
  printf '%s %s\\n' "$t" "$?"
done
"""


#: Bytes kept of what a session printed before its first command.
_EARLY_LIMIT: Final = 4096


class Running:
    """One command in a session: where its output goes, its session id once reported,
    and its status once it ended (``done``)."""

    __slots__ = ("_carry", "_line", "done", "feed", "found", "sid", "sid_known", "status", "token")

    def __init__(self, feed: Callable[[bytes], None]) -> None:
        self.token = f"hermes-{uuid.uuid4().hex}"
        self.found = self.token.encode()
        self.feed = feed
        self.sid: int | None = None
        self.sid_known = asyncio.Event()
        self.status: int | None = None
        self.done = asyncio.Event()
        self._carry = b""
        self._line: bytearray | None = None

    def stdout(self, data: bytes) -> bytes:
        """Take the session's next stdout bytes; what is left after this command's end
        (none unless something wrote after it)."""
        if self._line is not None:
            return self._end(data)
        buffer = self._carry + data
        at = buffer.find(self.found)
        if at < 0:
            keep = len(self.found) - 1
            if len(buffer) > keep:
                self.feed(buffer[:-keep])
                buffer = buffer[-keep:]
            self._carry = buffer
            return b""
        if at:
            self.feed(buffer[:at])
        self._carry = b""
        self._line = bytearray()
        return self._end(buffer[at + len(self.found) :])

    def _end(self, data: bytes) -> bytes:
        assert self._line is not None
        line, newline, rest = data.partition(b"\n")
        self._line += line
        if not newline:
            return b""
        text = self._line.decode(errors="replace").strip()
        self.finish(int(text) if text.isdigit() else -1)
        return rest

    def finish(self, status: int) -> None:
        """Record the status (the first one counts) and flush any held-back output."""
        if self.status is not None:
            return
        if self._carry:
            self.feed(self._carry)
            self._carry = b""
        self.status = status
        self.done.set()
        self.sid_known.set()

    def stderr_line(self, line: bytes) -> None:
        """A control line of the session: ``TOKEN SID`` for this command."""
        token, _, sid = line.decode(errors="replace").partition(" ")
        if token == self.token and sid.strip().isdigit():
            self.sid = int(sid)
            self.sid_known.set()


class Session:
    """One open ``docker exec`` of ``SESSION_SERVER`` (see the module docstring)."""

    def __init__(self, daemon: DockerDaemon, exec_id: str, stream: ExecStream, user: str):
        self._daemon = daemon
        self.exec_id = exec_id
        self.stream = stream
        self.user = user
        #: The event loop its connection belongs to (a blocking ``ToolContext`` call runs
        #: commands on a loop of its own, which gets sessions of its own).
        self.loop = asyncio.get_running_loop()
        self.running: Running | None = None
        #: Taken for a command (from ``SessionPool.take`` until that command's end is read).
        self.busy = False
        self.retired = False
        #: Whether sending a command failed (it never reached the shell).
        self.broken = False
        self._started_any = False
        self._early = bytearray()
        self.ended = asyncio.Event()
        self._errors = bytearray()
        self._pump = asyncio.ensure_future(stream.pump(self._stdout, self._stderr))
        self._pump.add_done_callback(self._pump_ended)

    @classmethod
    async def open(
        cls, daemon: DockerDaemon, container: str, env: Mapping[str, str], user: str
    ) -> Session:
        """Start a session in ``container`` as ``user`` with ``env`` on top of the
        container's environment.

        Raises:
            SandboxClosedError: if the container is gone.
            SandboxError: if the daemon refuses the exec.
            DockerUnreachableError: if the daemon cannot be reached.
        """
        exec_id = await daemon.exec_create(
            container,
            harness_argv(SESSION_SERVER, "hermes-session"),
            env,
            user=user or "0:0",
            stdin=True,
        )
        stream = await daemon.exec_stream(exec_id)
        return cls(daemon, exec_id, stream, user)

    @property
    def usable(self) -> bool:
        """Whether it can take a command now."""
        return not self.busy and not self.retired and not self.ended.is_set()

    async def start(self, script: str, running: Running) -> None:
        """Send ``script`` as the command ``running`` (the session must be ``usable``;
        it is busy from this call until the command's end is read).

        Raises:
            SandboxClosedError: if the session's input is closed.
        """
        self.running = running
        if not self._started_any:
            self._started_any = True
            if self._early:
                running.feed(bytes(self._early))
        # A NUL cannot be in a command line (nor would ``read`` keep it): leave it out so
        # that the length sent is the length read.
        body = script.replace("\0", "").encode()
        try:
            await self.stream.send(f"{running.token} {len(body)}\n".encode() + body)
        except SandboxClosedError:
            # The connection is gone: the command never reached the shell.
            self.retired = self.broken = True
            self.busy = False
            running.sid_known.set()
            raise
        except BaseException:
            # Cancelled while the bytes drain: they still go out, and the command runs
            # (the caller kills it); this session then ends its command as usual.
            raise

    async def status_of_death(self) -> int:
        """The session's own exit status once it ended (137 when it was killed)."""
        with contextlib.suppress(Exception):
            return await self._daemon.exec_exit_code(self.exec_id)
        return -1

    def _stdout(self, data: bytes) -> None:
        running = self.running
        if running is None:
            if not self._started_any and len(self._early) < _EARLY_LIMIT:
                # Before any command: the daemon's own complaint (e.g. no such user),
                # shown as the first command's output.
                self._early += data[: _EARLY_LIMIT - len(self._early)]
            self.retired = True  # something left behind writes into the session
            return
        rest = running.stdout(data)
        if running.status is not None:
            self.running = None
            self.busy = False
            if rest:
                self.retired = True

    def _stderr(self, data: bytes) -> None:
        self._errors += data
        while True:
            line, newline, rest = bytes(self._errors).partition(b"\n")
            if not newline:
                if len(self._errors) > 4096:
                    self._errors.clear()
                return
            self._errors[:] = rest
            if self.running is not None:
                self.running.stderr_line(line)

    def _pump_ended(self, _: asyncio.Future[None]) -> None:
        self.ended.set()
        running = self.running
        if running is not None and running.status is None:
            running.sid_known.set()  # nobody waits for a session id that cannot come

    async def aclose(self) -> None:
        """Stop reading and close the connection (the shell then ends)."""
        self.retired = True
        self._pump.cancel()
        with contextlib.suppress(BaseException):
            await self._pump
        await self.stream.aclose()


#: The ways of naming root that need no look-up in the container's ``/etc/passwd``: the
#: container's default user (the keeper runs as ``0:0``), uid 0, uid and gid 0.
_ROOT_NAMES: Final = frozenset({"", "0", "0:0"})


def session_user(user: str) -> str:
    """The user a session of ``user`` runs as, as sessions are shared: every name of root
    in :data:`_ROOT_NAMES` is ``0:0`` (so the harness's root commands and an agent that
    works as root share idle sessions rather than opening one each); any other name as
    given (resolved by the daemon in the container when the session opens)."""
    return "0:0" if user in _ROOT_NAMES else user


class SessionPool:
    """A sandbox's sessions: an idle one for each command, or a new one."""

    def __init__(self, daemon: DockerDaemon, container: str, env: Mapping[str, str]) -> None:
        self._daemon = daemon
        self._container = container
        self._env = dict(env)
        self._sessions: list[Session] = []
        self._draining: set[asyncio.Task[None]] = set()
        #: Sessions being opened ahead of time (``prime``), not yet claimed.
        self._opening: list[tuple[str, asyncio.Future[Session]]] = []

    def prime(self, user: str, *, unless_open: bool = False) -> None:
        """Start opening a session of ``user`` in the background: the next ``take`` of
        ``user`` finding none idle waits for it instead of opening another; unclaimed,
        it joins the idle ones. A failure is left to ``take``, which then opens one.
        ``unless_open``: not when a session of ``user`` is open (idle or busy) or being
        opened already."""
        user = session_user(user)
        if unless_open and (
            any(s.user == user and not s.ended.is_set() for s in self._sessions)
            or any(name == user for name, _ in self._opening)
        ):
            return
        opening = asyncio.ensure_future(
            Session.open(self._daemon, self._container, self._env, user)
        )
        entry = (user, opening)
        self._opening.append(entry)

        def opened(done: asyncio.Future[Session]) -> None:
            failed = done.cancelled() or done.exception() is not None
            if entry in self._opening:  # nobody claimed it
                self._opening.remove(entry)
                if not failed:
                    self._sessions.append(done.result())

        opening.add_done_callback(opened)

    async def take(self, user: str) -> Session:
        """An idle session of ``user`` (claimed by the caller's next ``start``), the one
        being opened for ``user`` ahead of time, or a new one.

        Raises:
            SandboxClosedError, SandboxError, DockerUnreachableError: as ``Session.open``.
        """
        user = session_user(user)
        loop = asyncio.get_running_loop()
        for session in list(self._sessions):
            if session.loop is not loop:
                continue
            if session.ended.is_set() or (session.retired and not session.busy):
                self._sessions.remove(session)
                self._drain(session)
        for session in self._sessions:
            if session.loop is loop and session.user == user and session.usable:
                session.busy = True
                return session
        primed = self._claim(user, loop)
        if primed is not None:
            try:
                session = await asyncio.shield(primed)
            except asyncio.CancelledError:
                primed.add_done_callback(self._adopt_opened)
                raise
            except SandboxError:  # it failed: open another
                pass
            else:
                if session.usable:
                    session.busy = True
                    self._sessions.append(session)
                    return session
                self._sessions.append(session)  # dropped by the next take's sweep
        opening = asyncio.ensure_future(
            Session.open(self._daemon, self._container, self._env, user)
        )
        try:
            session = await asyncio.shield(opening)
        except asyncio.CancelledError:
            # Cancelled while the exec starts: keep it for later commands, not leaked.
            opening.add_done_callback(self._adopt_opened)
            raise
        session.busy = True
        self._sessions.append(session)
        return session

    def _claim(self, user: str, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Session] | None:
        """The session of ``user`` being opened ahead of time on ``loop``, now the
        caller's (None when there is none)."""
        for entry in self._opening:
            if entry[0] == user and entry[1].get_loop() is loop:
                self._opening.remove(entry)
                return entry[1]
        return None

    def _adopt_opened(self, opening: asyncio.Future[Session]) -> None:
        if not opening.cancelled() and opening.exception() is None:
            self._sessions.append(opening.result())

    def _drain(self, session: Session) -> None:
        """Let a session that gets no more commands end in the background."""
        if session.ended.is_set():
            task = asyncio.ensure_future(session.aclose())
        else:
            task = asyncio.ensure_future(_drain_then_close(session))
        self._draining.add(task)
        task.add_done_callback(self._draining.discard)

    async def aclose(self) -> None:
        """Close every session of this event loop (idempotent); those of other loops end
        with their loop or the container."""
        loop = asyncio.get_running_loop()
        opening = [f for _, f in self._opening if f.get_loop() is loop]
        self._opening = [e for e in self._opening if e[1].get_loop() is not loop]
        opened = await asyncio.gather(*opening, return_exceptions=True)
        sessions, self._sessions = self._sessions, []
        sessions += [s for s in opened if isinstance(s, Session)]
        draining = [t for t in self._draining if t.get_loop() is loop]
        for task in draining:
            task.cancel()
        await asyncio.gather(
            *(s.aclose() for s in sessions if s.loop is loop), *draining, return_exceptions=True
        )


async def _drain_then_close(session: Session) -> None:
    with contextlib.suppress(BaseException):
        await session.stream.close_input()
        await session.ended.wait()
    await session.aclose()
