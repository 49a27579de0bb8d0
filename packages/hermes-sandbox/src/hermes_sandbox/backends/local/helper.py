"""The program that runs inside an isolated local sandbox and starts its commands.

The owner's side imports this module too, for the wire format (``frame``, ``Decoder``)
and ``spawn_session``, which the plain mode uses as well.

``python -I -S helper.py FD LINKER [CLOSE...]``: ``FD`` is a stream socket to the
sandbox's owner; ``LINKER`` a ``SOCK_SEQPACKET`` socket on which the owner sends further
stream sockets (one datagram ``b"L"`` carrying one as ``SCM_RIGHTS``), one per event loop
it serves the sandbox from; requests arrive on any of them and are answered on the same.
It runs in the sandbox's namespaces with no capabilities (bubblewrap dropped them), so
what it starts and opens sees exactly what the sandbox sees. It imports nothing of
hermes_sandbox and as little of the stdlib as it can (no ``json``, ``socket``, ``signal``
or ``typing``: with ``enum`` and ``re`` they cost more than the interpreter's own start):
it is part of every isolated sandbox's start.

Messages both ways are frames: a 4-byte big-endian length, then the message; a
descriptor travels with a frame as ``SCM_RIGHTS`` data. Requests (owner to helper) are
``marshal``-ed dicts (the helper trusts its owner); answers are JSON objects (the owner
does not trust what runs in the sandbox, and parses them with ``json``). Requests:

- ``{"op": "run", "id": N, "argv": [...], "env": {...}}`` with the output pipe's write
  end: start ``argv`` in a new session (stdin ``/dev/null``, stdout and stderr into the
  pipe); later answered ``{"id": N, "exit": code}`` (``-S`` for a signal), or
  ``{"id": N, "exit": 127, "error": text}`` if it could not start.
- ``{"op": "kill", "id": N, "needle": B}``: SIGKILL command N's process group and every
  process whose environment, after a NUL put before it, holds the bytes ``B`` (the
  command's marker entry: ``hermes_sandbox._processes.environ_needle``).
- ``{"op": "stop", "id": N}``: SIGKILL every process of the pid namespace but pid 1 and
  the helper, round after round until none is left (zombies aside); answered
  ``{"id": N, "stopped": 1}``, or ``{"id": N, "stopped": 0, "error": text}``.
- ``{"op": "open", "id": N, "path": P, "write": bool}``: open a file for reading, or for
  writing (parents made, truncated); answered ``{"id": N}`` with the descriptor, or
  ``{"id": N, "errno": E, "error": text}``.

It sends ``{"op": "ready"}`` first, on ``FD``. When ``FD`` or the linker closes (the
owner closed the sandbox or died, even by SIGKILL), it kills every process of its pid
namespace and exits (another socket closing only drops that socket); the sandbox's
pid 1 then ends, and with it the namespace.
"""

from __future__ import annotations

import _signal as signal  # type: ignore[import-not-found]  # C modules: no enum import
import _socket
import marshal
import os
import select
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# The helper's pid in its namespace (bubblewrap's reaper is pid 1).
_PID_IN_SANDBOX = 2
# Received descriptors are close-on-exec from the start (Linux).
_CLOEXEC = getattr(_socket, "MSG_CMSG_CLOEXEC", 0)
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


def frame(data: bytes, fd: int = -1) -> tuple[bytes, list[tuple[int, int, bytes]]]:
    """``data`` as a frame, and the ancillary data carrying ``fd`` (if any) with it."""
    ancillary = []
    if fd >= 0:
        ancillary = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fd.to_bytes(4, sys.byteorder))]
    return len(data).to_bytes(4, "big") + data, ancillary


def as_json(message: dict[str, int | str]) -> bytes:
    """A flat message of ints and strings as a JSON object (no ``json`` import)."""
    parts = []
    for key, value in message.items():
        text = str(value) if isinstance(value, int) else _json_string(value)
        parts.append(f"{_json_string(key)}: {text}")
    return ("{" + ", ".join(parts) + "}").encode()


def _json_string(text: str) -> str:
    escaped = "".join(
        c if c >= " " and c not in '"\\' and not "\ud800" <= c <= "\udfff" else f"\\u{ord(c):04x}"
        for c in text
    )
    return f'"{escaped}"'


class Decoder:
    """Turns what ``recvmsg`` gives into messages and the descriptors they carried."""

    def __init__(self, loads: Callable[[bytes], Any]) -> None:
        self.loads = loads
        self.buffer = bytearray()
        self.fds: list[int] = []

    def feed(self, data: bytes, ancillary: list[tuple[int, int, bytes]]) -> list[Any]:
        """The messages completed by ``data`` (each decoded with ``loads``); its
        descriptors join ``fds`` in order.

        Raises:
            ValueError: if a frame does not decode.
        """
        for level, kind, payload in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                for i in range(0, usable, 4):
                    fd = int.from_bytes(payload[i : i + 4], sys.byteorder)
                    # Received descriptors are inheritable: a process started before this
                    # one is used would get it (another command's output pipe).
                    os.set_inheritable(fd, False)
                    self.fds.append(fd)
        self.buffer += data
        messages = []
        while len(self.buffer) >= 4:
            size = int.from_bytes(self.buffer[:4], "big")
            if len(self.buffer) < 4 + size:
                break
            messages.append(self.loads(bytes(self.buffer[4 : 4 + size])))
            del self.buffer[: 4 + size]
        return messages


class Helper:
    """Serves the owner's requests: on the first socket (``primary``) and on every
    further socket (a *link*, one per event loop of the owner) that arrives through the
    linker. Each answer goes back on the socket its request came from. The primary
    socket or the linker closing means the owner is gone; a link closing, only that the
    owner dropped it."""

    def __init__(self, sock: _socket.socket, linker: _socket.socket) -> None:
        self.primary = sock.fileno()
        self.linker = linker
        self.poller = select.poll()
        self.links: dict[int, tuple[_socket.socket, Decoder]] = {}
        self.add_link(sock)
        self.poller.register(linker.fileno(), select.POLLIN)
        self.watches: dict[int, tuple[int, int, int]] = {}  # pidfd -> (id, pid, link)
        self.running: dict[int, int] = {}  # id -> pid

    def add_link(self, sock: _socket.socket) -> None:
        sock.setblocking(True)
        self.links[sock.fileno()] = (sock, Decoder(marshal.loads))
        self.poller.register(sock.fileno(), select.POLLIN)

    def drop_link(self, link: int) -> None:
        sock, decoder = self.links.pop(link)
        self.poller.unregister(link)
        for fd in decoder.fds:
            try:  # noqa: SIM105 (no contextlib: see the imports)
                os.close(fd)
            except OSError:
                pass
        sock.close()

    def send(self, link: int, message: dict[str, int | str], fd: int = -1) -> None:
        entry = self.links.get(link)
        if entry is None:  # dropped by the owner: nobody waits for the answer
            return
        data, ancillary = frame(as_json(message), fd)
        try:
            sent = entry[0].sendmsg([data], ancillary)
            if sent < len(data):
                entry[0].sendall(data[sent:])
        except OSError:
            if link == self.primary:
                raise
            self.drop_link(link)

    def serve(self) -> None:
        self.send(self.primary, {"op": "ready"})
        while True:
            for fd, _ in self.poller.poll():
                if fd == self.linker.fileno():
                    if not self.accept():
                        return
                elif fd in self.links:
                    if not self.receive(fd):
                        if fd == self.primary:
                            return
                        self.drop_link(fd)
                elif fd in self.watches:
                    self.reap(fd)

    def accept(self) -> bool:
        data, ancillary, _, _ = self.linker.recvmsg(16, _socket.CMSG_SPACE(MAX_FDS * 4), _CLOEXEC)
        received = Decoder(marshal.loads)
        received.feed(b"", ancillary)
        for fd in received.fds:
            self.add_link(_socket.socket(fileno=fd))
        return bool(data)

    def receive(self, link: int) -> bool:
        sock, decoder = self.links[link]
        try:
            data, ancillary, _, _ = sock.recvmsg(1 << 16, _socket.CMSG_SPACE(MAX_FDS * 4), _CLOEXEC)
        except OSError:
            if link == self.primary:
                raise
            return False
        for message in decoder.feed(data, ancillary):
            self.handle(link, decoder, message)
        return bool(data)

    def handle(self, link: int, decoder: Decoder, message: dict[str, Any]) -> None:
        op, ident = message.get("op"), int(message.get("id", 0))
        if op == "run":
            self.run(link, ident, message["argv"], message["env"], decoder.fds.pop(0))
        elif op == "kill":
            self.kill(ident, message["needle"])
        elif op == "stop":
            self.stop(link, ident)
        elif op == "open":
            self.open(link, ident, message["path"], bool(message.get("write")))

    def run(self, link: int, ident: int, argv: list[str], env: dict[str, str], output: int) -> None:
        try:
            pid = spawn_session(argv, env, output)
        except OSError as exc:
            self.send(link, {"id": ident, "exit": 127, "error": f"cannot start {argv[0]}: {exc}"})
            return
        finally:
            os.close(output)
        self.running[ident] = pid
        pidfd = os.pidfd_open(pid)
        self.watches[pidfd] = (ident, pid, link)
        self.poller.register(pidfd, select.POLLIN)

    def reap(self, pidfd: int) -> None:
        ident, pid, link = self.watches.pop(pidfd)
        self.poller.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self.running.pop(ident, None)
        self.send(link, {"id": ident, "exit": os.waitstatus_to_exitcode(status)})

    def kill(self, ident: int, pattern: bytes) -> None:
        pid = self.running.get(ident)
        if pid is not None:
            try:  # noqa: SIM105 (no contextlib: see the imports)
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
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

    def stop(self, link: int, ident: int) -> None:
        if os.getpid() != _PID_IN_SANDBOX:  # -1 would reach the host's processes
            self.send(
                link, {"id": ident, "stopped": 0, "error": "the helper is not in a pid namespace"}
            )
            return
        me = os.getpid()
        # A killed process is not a zombie at once (more so on a loaded machine): look
        # again after a moment, for up to about 10 s.
        for _ in range(1000):
            try:  # noqa: SIM105 (no contextlib: see the imports)
                os.kill(-1, signal.SIGKILL)  # all but pid 1 and this process
            except OSError:
                pass
            if not living_others(me):
                self.send(link, {"id": ident, "stopped": 1})
                return
            select.select([], [], [], 0.01)
        self.send(link, {"id": ident, "stopped": 0, "error": "processes kept reappearing"})

    def open(self, link: int, ident: int, path: str, write: bool) -> None:
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
            self.send(
                link, {"id": ident, "errno": exc.errno or 5, "error": exc.strerror or str(exc)}
            )
            return
        try:
            self.send(link, {"id": ident}, fd)
        finally:
            os.close(fd)


def living_others(me: int) -> bool:
    """Whether a process other than pid 1 and ``me`` exists that is not a zombie."""
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == "1" or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                state = handle.read().rpartition(b") ")[2][:1]
        except OSError:
            continue
        if state not in (b"Z", b"X"):
            return True
    return False


def main() -> None:
    # argv: the socket's descriptor, the linker's, then descriptors to close (bwrap's
    # info pipe).
    for extra in sys.argv[3:]:
        try:  # noqa: SIM105 (no contextlib: see the imports)
            os.close(int(extra))
        except OSError:
            pass
    sock = _socket.socket(fileno=int(sys.argv[1]))
    os.set_inheritable(sock.fileno(), False)
    linker = _socket.socket(fileno=int(sys.argv[2]))
    os.set_inheritable(linker.fileno(), False)
    try:
        Helper(sock, linker).serve()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        # The owner is gone (or closed the sandbox): end every process of the sandbox.
        # bubblewrap's pid 1 waits for all of them before it exits, which ends the
        # namespace; -1 reaches only this pid namespace, so check that there is one.
        if os.getpid() == _PID_IN_SANDBOX:
            try:  # noqa: SIM105 (no contextlib: see the imports)
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:  # nothing else runs
                pass


if __name__ == "__main__":
    main()
