"""The program that runs inside an isolated local sandbox and starts its commands.

The owner's side imports this module too, for the wire format (``encode``, ``Decoder``)
and ``spawn_session``, which the plain mode uses as well.

``python -I -S helper.py FD [CLOSE...]``: ``FD`` is a stream socket to the sandbox's owner. It runs
in the sandbox's namespaces with no capabilities (bubblewrap dropped them), so what it
starts and opens sees exactly what the sandbox sees. Stdlib only; it imports nothing of
hermes_sandbox, so it starts fast and works from a read-only file system.

Messages both ways are frames: a 4-byte big-endian length, then a JSON object. A
descriptor travels with a frame as ``SCM_RIGHTS`` data. Requests:

- ``{"op": "run", "id": N, "argv": [...], "env": {...}}`` with the output pipe's write
  end: start ``argv`` in a new session (stdin ``/dev/null``, stdout and stderr into the
  pipe); later answered ``{"id": N, "exit": code}`` (``-S`` for a signal), or
  ``{"id": N, "exit": 127, "error": text}`` if it could not start.
- ``{"op": "kill", "id": N, "mark": M}``: SIGKILL command N's process group and every
  process whose environment holds ``HERMES_SANDBOX_MARKER=M``.
- ``{"op": "open", "id": N, "path": P, "write": bool}``: open a file for reading, or for
  writing (parents made, truncated); answered ``{"id": N}`` with the descriptor, or
  ``{"id": N, "errno": E, "error": text}``.

It sends ``{"op": "ready"}`` first, and exits when the socket closes: the sandbox's pid 1
then ends, and the kernel kills every process left in the namespace.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import stat
import sys

# Imports are kept to the fewest (no typing, no contextlib): the helper's start is part of
# every isolated sandbox's start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_MARKER = "HERMES_SANDBOX_MARKER"
#: Most descriptors one message may carry.
MAX_FDS = 16
#: Signals Python ignores that a command must get back (as Popen's restore_signals does).
DEFAULT_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name)
)


def spawn_session(
    argv: list[str], env: dict[str, str], output: int, close: tuple[int, ...] = ()
) -> int:
    """``posix_spawn`` ``argv`` in a new session: stdin ``/dev/null``, stdout and stderr
    into ``output``, the signals Python ignores back to their defaults, the descriptors
    ``close`` closed. Returns the pid.

    Raises:
        OSError: if the program cannot be started.
        NotImplementedError: if this libc cannot start a session in ``posix_spawn``.
    """
    return os.posix_spawn(
        argv[0],
        argv,
        env,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, output, 1),
            (os.POSIX_SPAWN_DUP2, output, 2),
            *((os.POSIX_SPAWN_CLOSE, fd) for fd in close),
        ],
        setsid=True,
        setsigdef=DEFAULT_SIGNALS,
    )


def encode(message: dict[str, Any], fd: int = -1) -> tuple[bytes, list[tuple[int, int, bytes]]]:
    """A message as a frame (length, then JSON) and the ancillary data carrying ``fd``."""
    data = json.dumps(message).encode()
    ancillary = []
    if fd >= 0:
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fd.to_bytes(4, sys.byteorder))]
    return len(data).to_bytes(4, "big") + data, ancillary


class Decoder:
    """Turns what ``recvmsg`` gives into messages and the descriptors they carried."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.fds: list[int] = []

    def feed(self, data: bytes, ancillary: list[tuple[int, int, bytes]]) -> list[Any]:
        """The messages completed by ``data``; its descriptors join ``fds`` in order.

        Raises:
            ValueError: if a frame is not JSON.
        """
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                self.fds.extend(
                    int.from_bytes(payload[i : i + 4], sys.byteorder) for i in range(0, usable, 4)
                )
        self.buffer += data
        messages = []
        while len(self.buffer) >= 4:
            size = int.from_bytes(self.buffer[:4], "big")
            if len(self.buffer) < 4 + size:
                break
            messages.append(json.loads(self.buffer[4 : 4 + size]))
            del self.buffer[: 4 + size]
        return messages


class Helper:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.poller = select.poll()
        self.poller.register(sock.fileno(), select.POLLIN)
        self.decoder = Decoder()
        self.watches: dict[int, tuple[int, int]] = {}  # pidfd -> (id, pid)
        self.running: dict[int, int] = {}  # id -> pid

    def send(self, message: dict[str, Any], fd: int = -1) -> None:
        frame, ancillary = encode(message, fd)
        sent = self.sock.sendmsg([frame], ancillary)
        if sent < len(frame):
            self.sock.sendall(frame[sent:])

    def serve(self) -> None:
        self.send({"op": "ready"})
        while True:
            for fd, _ in self.poller.poll():
                if fd == self.sock.fileno():
                    if not self.receive():
                        return
                else:
                    self.reap(fd)

    def receive(self) -> bool:
        data, ancillary, _, _ = self.sock.recvmsg(1 << 16, socket.CMSG_SPACE(MAX_FDS * 4))
        for message in self.decoder.feed(data, ancillary):
            self.handle(message)
        return bool(data)

    def handle(self, message: dict[str, Any]) -> None:
        op, ident = message.get("op"), int(message.get("id", 0))
        if op == "run":
            self.run(ident, message["argv"], message["env"], self.decoder.fds.pop(0))
        elif op == "kill":
            self.kill(ident, message["mark"])
        elif op == "open":
            self.open(ident, message["path"], bool(message.get("write")))

    def run(self, ident: int, argv: list[str], env: dict[str, str], output: int) -> None:
        try:
            pid = spawn_session(argv, env, output)
        except OSError as exc:
            self.send({"id": ident, "exit": 127, "error": f"cannot start {argv[0]}: {exc}"})
            return
        finally:
            os.close(output)
        self.running[ident] = pid
        pidfd = os.pidfd_open(pid)
        self.watches[pidfd] = (ident, pid)
        self.poller.register(pidfd, select.POLLIN)

    def reap(self, pidfd: int) -> None:
        ident, pid = self.watches.pop(pidfd)
        self.poller.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self.running.pop(ident, None)
        self.send({"id": ident, "exit": os.waitstatus_to_exitcode(status)})

    def kill(self, ident: int, mark: str) -> None:
        pid = self.running.get(ident)
        if pid is not None:
            try:  # noqa: SIM105 (no contextlib: see the imports)
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        pattern = f"\0{_MARKER}={mark}\0".encode()
        me = os.getpid()
        for _ in range(50):
            found = 0
            for name in os.listdir("/proc"):
                if not name.isdigit() or int(name) == me:
                    continue
                try:
                    with open(f"/proc/{name}/environ", "rb") as handle:
                        environ = b"\0" + handle.read()
                except OSError:
                    continue
                if pattern in environ:
                    try:
                        os.kill(int(name), signal.SIGKILL)
                        found += 1
                    except OSError:
                        pass
            if not found:
                return

    def open(self, ident: int, path: str, write: bool) -> None:
        try:
            if write:
                parent = os.path.dirname(path)
                if parent:
                    os.makedirs(parent, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            else:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                if stat.S_ISDIR(os.fstat(fd).st_mode):
                    os.close(fd)
                    raise IsADirectoryError(21, "Is a directory", path)
        except OSError as exc:
            self.send({"id": ident, "errno": exc.errno or 5, "error": exc.strerror or str(exc)})
            return
        try:
            self.send({"id": ident}, fd)
        finally:
            os.close(fd)


def main() -> None:
    for extra in sys.argv[2:]:  # descriptors the helper must not pass on (bwrap's info pipe)
        try:  # noqa: SIM105 (no contextlib: see the imports)
            os.close(int(extra))
        except OSError:
            pass
    sock = socket.socket(fileno=int(sys.argv[1]))
    sock.set_inheritable(False)
    sock.setblocking(True)
    try:  # noqa: SIM105 (no contextlib: see the imports)
        Helper(sock).serve()
    except (BrokenPipeError, ConnectionResetError):
        pass


if __name__ == "__main__":
    main()
