"""Single files into and out of a container, streamed through the archive endpoints with a
plain HTTP connection (blocking: run these in threads).

An upload sends the tar header, then the host file with ``socket.sendfile`` (the kernel
copies it; nothing is held in memory), then the tar's padding and end blocks, under a
``Content-Length`` known in advance. A download asks in HTTP/1.0, so the daemon sends the
tar as it is (no chunked coding) until it closes the connection; after the tar header,
the file's bytes go from the socket to the host file with ``splice`` through a pipe that
a writer thread empties while the socket is read (the kernel moves them; on systems
without ``splice``, a reused buffer). Both do less work on the
host than ``docker cp``, which does the same through the same endpoints.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import fcntl
import json
import os
import select
import socket
import tarfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO, Final

from hermes_sandbox._errors import SandboxClosedError, SandboxError
from hermes_sandbox.backends.docker._archive import folder_headers
from hermes_sandbox.backends.docker._daemon import DockerDaemon

__all__ = ["TRANSFER_CHUNK", "download_file", "upload_file"]

#: Bytes moved per read when downloading.
TRANSFER_CHUNK: Final = 1 << 20

_BLOCK: Final = tarfile.BLOCKSIZE
_DIR_BIT: Final = 1 << 31  # Go's os.ModeDir, as in the daemon's path stat
_SYMLINK_BIT: Final = 1 << 27  # Go's os.ModeSymlink
#: Bytes asked of the socket per read of the answer's head.
_RECV: Final = 1 << 16
#: The most bytes of headers (or of an error's body) read.
_HEAD_LIMIT: Final = 1 << 16
#: ``fcntl``'s F_SETPIPE_SZ (Linux): the splice pipe's capacity.
_F_SETPIPE_SZ: Final = 1031
#: Bytes the pipe between the socket and the file holds (the most an unprivileged
#: process may ask for by default; a smaller pipe where refused).
_PIPE_SIZE: Final = 1 << 20
#: Whether the OS moves bytes between descriptors in the kernel (Linux).
_SPLICE: Final = hasattr(os, "splice")


def upload_file(
    daemon: DockerDaemon,
    container: str,
    directory: str,
    source: Path,
    name: str,
    mode: int,
    folders: Sequence[str] = (),
) -> None:
    """Put the host file ``source`` into ``directory`` of ``container`` as ``name`` with
    permission bits ``mode``; with ``folders``, into ``directory/folders[0]/...``, making
    those folders first (as ``mkdir -p`` by root would) in the same archive.

    Raises:
        FileNotFoundError: if ``source`` or ``directory`` does not exist.
        NotADirectoryError: if ``directory`` (or a parent) is a file.
        SandboxClosedError: if the container is gone.
        SandboxError: for another refusal, or a file that changed size while sent.
        DockerUnreachableError: if the daemon cannot be reached.
    """
    with source.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        info = tarfile.TarInfo("/".join([*folders, name]))
        info.size, info.mode, info.mtime = size, mode, int(time.time())
        head = folder_headers(folders) + info.tobuf(format=tarfile.PAX_FORMAT)
        tail = b"\0" * ((-size) % _BLOCK) + b"\0" * (2 * _BLOCK)
        connection = daemon.http_connection()
        try:
            connection.putrequest("PUT", daemon.archive_path(container, directory))
            connection.putheader("Content-Type", "application/x-tar")
            connection.putheader("Content-Length", str(len(head) + size + len(tail)))
            connection.endheaders()
            sock = connection.sock
            assert sock is not None
            try:
                sock.sendall(head)
                sent = sock.sendfile(file, 0, size) if size else 0
                sock.sendall(tail)
            except (BrokenPipeError, ConnectionResetError):
                # The daemon refused before reading it all (no such directory, ...):
                # its answer says why.
                sent = size
            if sent != size:
                raise SandboxError(f"{source} changed size while it was uploaded")
            response = connection.getresponse()
            body = response.read()
            if response.status >= 300:
                _refused(response.status, body, container, directory, upload=True)
        finally:
            connection.close()


def download_file(daemon: DockerDaemon, container: str, path: str, target: Path) -> str | None:
    """Write the regular file ``path`` of ``container`` to the host file ``target``
    (parents made); or, when ``path`` is a symbolic link, write nothing and return the
    path it points to (the daemon's ``linkTarget``) for the caller to follow.

    Raises:
        FileNotFoundError: if there is no such file (or it is not a regular file).
        IsADirectoryError: if it is a directory.
        SandboxClosedError: if the container is gone.
        SandboxError: for another refusal or a broken answer.
        DockerUnreachableError: if the daemon cannot be reached.
    """
    connection = daemon.http_connection()
    try:
        sock = connection.sock
        assert sock is not None
        answer = _Answer(sock)
        status, headers = answer.request(daemon.archive_path(container, path))
        if status >= 300:
            _refused(status, answer.rest(), container, path, upload=False)
        stat = _path_stat(headers.get("x-docker-container-path-stat", ""))
        mode = int(stat.get("mode", 0))
        if mode & _DIR_BIT:
            raise IsADirectoryError(f"{path} is a directory")
        link = str(stat.get("linkTarget") or "")
        if mode & _SYMLINK_BIT and link and link != path:
            return link
        _copy_first_file(answer, path, target)
        return None
    finally:
        connection.close()


class _Answer:
    """The daemon's answer to one HTTP/1.0 request on a socket: the body is the rest of
    the stream (no chunked coding, so the file's bytes can go from the socket to the disk
    without passing through Python: ``splice`` through a pipe where the OS has it)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def request(self, target: str) -> tuple[int, dict[str, str]]:
        """Send ``GET target`` and read the status and headers (names in lower case).

        Raises:
            SandboxError: the answer is not HTTP.
        """
        self.sock.sendall(f"GET {target} HTTP/1.0\r\nHost: docker\r\n\r\n".encode())
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            if len(self.buffer) > _HEAD_LIMIT or not self._more():
                raise SandboxError("docker: the daemon's answer ended in its headers")
        head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        del self.buffer[: end + 4]
        parts = head[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise SandboxError(f"docker: not an HTTP answer: {head[0][:80]!r}")
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(parts[1]), headers

    def _more(self) -> bool:
        piece = self.sock.recv(_RECV)
        self.buffer += piece
        return bool(piece)

    def exactly(self, count: int) -> bytes | None:
        """The next ``count`` bytes, or None when the answer ends first."""
        while len(self.buffer) < count:
            if not self._more():
                return None
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def rest(self) -> bytes:
        """What is left of the answer (an error's body), at most 64 KiB."""
        while len(self.buffer) < _HEAD_LIMIT and self._more():
            pass
        return bytes(self.buffer)

    def skip(self, count: int) -> None:
        while count:
            if not self.buffer and not self._more():
                return
            taken = min(count, len(self.buffer))
            del self.buffer[:taken]
            count -= taken

    def copy(self, count: int, sink: BinaryIO) -> int:
        """Write the next ``count`` bytes to ``sink``; how many the answer had."""
        held = min(count, len(self.buffer))
        sink.write(self.buffer[:held])
        del self.buffer[:held]
        left = count - held
        if left and _SPLICE:
            left = self._splice(left, sink.fileno())
        view = memoryview(bytearray(min(TRANSFER_CHUNK, left))) if left else None
        while left and view is not None:
            got = self.sock.recv_into(view[: min(left, len(view))])
            if not got:
                break
            sink.write(view[:got])
            left -= got
        return count - left

    def _splice(self, left: int, fd: int) -> int:
        """Move up to ``left`` bytes from the socket to ``fd`` in the kernel, through a
        pipe that a writer thread empties into ``fd`` while this one fills it (so a slow
        disk write does not stop the socket being read); the bytes not moved (the answer
        ended, or the socket cannot be spliced: then the caller reads them).

        Raises:
            TimeoutError: nothing came for the socket's timeout.
            OSError: the file could not be written.
        """
        read_end, write_end = os.pipe()
        with contextlib.suppress(OSError):
            fcntl.fcntl(write_end, _F_SETPIPE_SZ, _PIPE_SIZE)
        written = [0]
        failure: list[BaseException] = []

        def drain() -> None:
            try:
                while piece := os.splice(read_end, fd, _PIPE_SIZE):
                    written[0] += piece
            except BaseException as exc:  # reported by the reading thread
                failure.append(exc)

        writer = threading.Thread(target=drain, name="hermes-docker-download", daemon=True)
        writer.start()
        sent = 0
        try:
            sent = self._fill(write_end, left, failure)
        finally:
            os.close(write_end)  # the writer ends once the pipe is empty
            writer.join()
            os.close(read_end)
        if failure:
            raise failure[0]
        if written[0] != sent:
            raise OSError(f"wrote {written[0]} of {sent} bytes to the file")
        return left - sent

    def _fill(self, pipe: int, left: int, failure: list[BaseException]) -> int:
        """Splice up to ``left`` bytes of the socket into ``pipe``; how many."""
        timeout = self.sock.gettimeout()
        sent = 0
        while sent < left and not failure:
            try:
                moved = os.splice(self.sock.fileno(), pipe, min(left - sent, _PIPE_SIZE))
            except BlockingIOError:  # a socket with a timeout is non-blocking
                ready, _, _ = select.select([self.sock], [], [], timeout)
                if not ready:
                    raise TimeoutError("docker: the download stalled") from None
                continue
            except OSError as exc:
                if exc.errno in (errno.EINVAL, errno.ENOSYS):
                    break  # not spliceable here: the caller reads the rest
                raise
            if not moved:
                break
            sent += moved
        return sent


def _path_stat(encoded: str) -> dict[str, Any]:
    """The daemon's stat of the archived path, from its base64 JSON header ({} if none)."""
    try:
        stat = json.loads(base64.b64decode(encoded)) if encoded else {}
    except (binascii.Error, ValueError):
        return {}
    return stat if isinstance(stat, dict) else {}


def _copy_first_file(answer: _Answer, path: str, target: Path) -> None:
    size_override: int | None = None
    while True:
        header = answer.exactly(_BLOCK)
        if header is None or header == bytes(_BLOCK):
            raise FileNotFoundError(f"{path} is not a regular file")
        info = tarfile.TarInfo.frombuf(header, "utf-8", "surrogateescape")
        size = info.size if size_override is None else size_override
        if info.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME):
            data = answer.exactly(size + (-size) % _BLOCK)
            if data is None:
                raise SandboxError(f"docker: the archive of {path} ended early")
            if info.type == tarfile.XHDTYPE:
                size_override = _pax_size(data[:size])
            continue
        size_override = None
        if not info.isreg():
            answer.skip(size + (-size) % _BLOCK)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb", buffering=0) as sink:
            if answer.copy(size, sink) != size:
                raise SandboxError(f"docker: the archive of {path} ended early")
        return


def _pax_size(records: bytes) -> int | None:
    """The ``size`` of a pax extended header, if it sets one."""
    for record in records.split(b"\n"):
        _, _, field = record.partition(b" ")
        key, equals, value = field.partition(b"=")
        if equals and key == b"size" and value.isdigit():
            return int(value)
    return None


def _refused(status: int, body: bytes, container: str, path: str, *, upload: bool) -> None:
    try:
        message = str(json.loads(body).get("message", ""))
    except (ValueError, AttributeError):
        message = body.decode(errors="replace").strip()
    if status == 404 and "No such container" in message:
        raise SandboxClosedError(f"docker: container {container[:12]} is gone")
    if "not a directory" in message.lower():
        raise NotADirectoryError(f"{path} is not a directory: {message}")
    if status == 404:
        raise FileNotFoundError(f"no {'directory' if upload else 'file'} {path}: {message}")
    verb = "upload into" if upload else "download of"
    raise SandboxError(f"docker: {verb} {path} failed ({status}): {message}")
