"""One connection from the owner of an isolated local sandbox to the helper inside it.

Each event loop that uses an isolated sandbox has its own stream socket to the helper
(``helper.py``), so the sandbox is bound to no loop: a ``HelperLink`` is that socket
with its reader on the loop, and the commands, file opens and stops asked for through
it (their answers come back on the same socket). ``isolation.Namespace`` makes the
links and owns them (``LinkOwner``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import marshal
import os
import signal
import socket
from collections.abc import Callable
from typing import Any, Protocol

from hermes_sandbox._errors import SandboxClosedError, SandboxError, SandboxStartError
from hermes_sandbox.backends.local._process import Command
from hermes_sandbox.backends.local.helper import MAX_FDS, Decoder, frame

__all__ = ["HelperLink", "LinkOwner"]


class LinkOwner(Protocol):
    """The sandbox a link belongs to (``isolation.Namespace``)."""

    def check_alive(self) -> None:
        """Raises:
        SandboxClosedError: if the sandbox died."""
        ...

    def destroy(self) -> None:
        """Kill the sandbox (its helper spoke nonsense)."""
        ...

    def mark_dead(self) -> None:
        """The sandbox is gone (its helper closed the socket)."""
        ...


class HelperLink:
    """One connection to the helper, served by one event loop: its reader, and the
    commands, opens and stops asked for through it (their answers come back on it)."""

    def __init__(
        self, namespace: LinkOwner, loop: asyncio.AbstractEventLoop, sock: socket.socket
    ) -> None:
        self.namespace = namespace
        self.loop = loop
        self.sock = sock
        self.closed = False
        self.commands: dict[int, Command] = {}
        self.opens: dict[int, asyncio.Future[int]] = {}
        self.stops: dict[int, asyncio.Future[None]] = {}
        self.ready: asyncio.Future[None] = loop.create_future()
        self.decoder = Decoder(json.loads)
        self.send_lock = asyncio.Lock()
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self._on_message)

    def move_to(self, loop: asyncio.AbstractEventLoop) -> None:
        """Serve ``loop`` from now on (the loop that served the link has stopped)."""
        with contextlib.suppress(Exception):  # a closed loop's selector is gone already
            self.loop.remove_reader(self.sock.fileno())
        self.loop = loop
        self.send_lock = asyncio.Lock()
        if not self.closed:
            loop.add_reader(self.sock.fileno(), self._on_message)

    def on_loop(self, action: Callable[[], object]) -> None:
        """Run ``action`` on the link's loop thread: here if that is this thread or the
        loop does not run, else soon on that thread. Never raises for a closed loop."""
        try:
            here = asyncio.get_running_loop() is self.loop
        except RuntimeError:
            here = False
        if here or not self.loop.is_running():
            action()
            return
        try:
            self.loop.call_soon_threadsafe(action)
        except RuntimeError:  # closed meanwhile
            action()

    def fail(self) -> None:
        """The sandbox is gone: close the socket, end the commands, fail the answers."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.sock.fileno())
        self.sock.close()
        for fd in self.decoder.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.decoder.fds.clear()
        for command in list(self.commands.values()):
            command.set_exit(-signal.SIGKILL)
        self.commands.clear()
        answers: list[asyncio.Future[Any]] = [*self.opens.values(), *self.stops.values()]
        for answer in answers:
            if not answer.done():
                answer.set_exception(SandboxClosedError("the isolated sandbox is gone"))
        if not self.ready.done():
            self.ready.set_exception(SandboxStartError("the isolated sandbox ended at start"))
            self.ready.exception()  # retrieved: start() reports it its own way

    async def send(self, message: dict[str, object], fd: int = -1) -> None:
        """Send one request (with ``fd``, if any).

        Raises:
            SandboxClosedError: if the sandbox died.
        """
        packet, ancillary = frame(marshal.dumps(message), fd)
        async with self.send_lock:
            self.namespace.check_alive()
            # The descriptor travels with the frame's first bytes; the rest may follow.
            while True:
                try:
                    sent = self.sock.sendmsg([packet], ancillary)
                    break
                except BlockingIOError:
                    await _writable(self.loop, self.sock)
            if sent < len(packet):
                await self.loop.sock_sendall(self.sock, packet[sent:])

    async def send_quietly(self, message: dict[str, object]) -> None:
        """``send``, ignoring a sandbox that is gone."""
        with contextlib.suppress(OSError, SandboxClosedError):
            await self.send(message)

    def _on_message(self) -> None:
        try:
            data, ancillary, _, _ = self.sock.recvmsg(
                1 << 16, socket.CMSG_SPACE(MAX_FDS * 4), getattr(socket, "MSG_CMSG_CLOEXEC", 0)
            )
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data, ancillary = b"", []
        try:
            messages = self.decoder.feed(data, ancillary)
        except ValueError:
            self.namespace.destroy()  # a helper that speaks nonsense is not ours any more
            return
        for message in messages:
            if isinstance(message, dict):
                self._dispatch(message)
        if not data:
            self.namespace.mark_dead()

    def _dispatch(self, message: dict[str, object]) -> None:
        if message.get("op") == "ready":
            if not self.ready.done():
                self.ready.set_result(None)
            return
        ident = message.get("id")
        if not isinstance(ident, int):
            return
        if "exit" in message:
            command = self.commands.pop(ident, None)
            code = message["exit"]
            if command is not None and isinstance(code, int):
                if "error" in message and command.collector is not None:
                    command.collector.feed(f"sandbox: {message['error']}\n".encode())
                command.set_exit(code)
            return
        stopped = self.stops.get(ident)
        if "stopped" in message:
            if stopped is not None and not stopped.done():
                if message["stopped"] == 1:
                    stopped.set_result(None)
                else:
                    stopped.set_exception(
                        SandboxError(f"the isolated sandbox: {message.get('error', 'stop failed')}")
                    )
            return
        answer = self.opens.get(ident)
        if answer is None or answer.done():
            return
        if "errno" in message:
            code = message["errno"]
            number = code if isinstance(code, int) else errno.EIO
            answer.set_exception(OSError(number, str(message.get("error", "")), ""))
        elif self.decoder.fds:
            answer.set_result(self.decoder.fds.pop(0))
        else:
            answer.set_exception(SandboxError("the isolated sandbox sent no descriptor"))


async def _writable(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    ready: asyncio.Future[None] = loop.create_future()
    loop.add_writer(sock.fileno(), _resolve, ready)
    try:
        await ready
    finally:
        loop.remove_writer(sock.fileno())


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
