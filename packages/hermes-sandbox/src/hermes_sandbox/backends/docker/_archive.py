"""Tar streams for the daemon's archive endpoints (blocking; run them in threads)."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterator, Sequence
from typing import Any, Final

from hermes_sandbox.backends.docker._stream import CHUNK

__all__ = ["FOLDER_MODE", "folder_headers", "prefixed_tar", "read_single_file", "single_file_tar"]

#: The permission bits of a folder the backend makes on the way to an upload (as
#: ``mkdir -p`` by root with the usual umask makes them).
FOLDER_MODE: Final = 0o755


def single_file_tar(name: str, data: bytes, mode: int) -> bytes:
    """A tar holding one regular file ``name`` with ``data`` and permission bits ``mode``."""
    buffer = io.BytesIO()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = int(time.time())
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def folder_headers(folders: Sequence[str]) -> bytes:
    """Tar entries making ``folders`` one inside the other (``a``, ``a/b``, ...), owned by
    root with :data:`FOLDER_MODE`: what ``mkdir -p a/b`` by root makes."""
    now = int(time.time())
    headers = []
    for depth in range(1, len(folders) + 1):
        info = tarfile.TarInfo("/".join(folders[:depth]))
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, FOLDER_MODE, now
        headers.append(info.tobuf(format=tarfile.PAX_FORMAT))
    return b"".join(headers)


def prefixed_tar(archive: bytes, folders: Sequence[str]) -> bytes:
    """``archive`` moved under ``folders`` (``a/b/...``), after the entries that make
    those folders (:func:`folder_headers`): unpacked where ``a`` is missing, it lands
    where the original would have landed in ``a/b``. Hard links are moved with it.

    Raises:
        tarfile.TarError: if ``archive`` is not a tar.
    """
    prefix = "/".join(folders) + "/"
    buffer = io.BytesIO()
    buffer.write(folder_headers(folders))
    with (
        tarfile.open(fileobj=io.BytesIO(archive), mode="r") as source,
        tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as target,
    ):
        for member in source:
            content = source.extractfile(member) if member.isreg() else None
            # A pax header's path wins over the name when the member is written again:
            # it goes, and is made afresh from the new name when one is needed.
            dropped = ("path", "linkpath") if member.islnk() else ("path",)
            member.pax_headers = {k: v for k, v in member.pax_headers.items() if k not in dropped}
            member.name = prefix + member.name.lstrip("/")
            if member.islnk():
                member.linkname = prefix + member.linkname.lstrip("/")
            target.addfile(member, content)
    return buffer.getvalue()


def read_single_file(chunks: Iterator[bytes], path: str) -> bytes:
    """The content of the first regular file in the tar streamed as ``chunks``.

    Raises:
        FileNotFoundError: if the tar holds no regular file (``path`` names it).
        tarfile.TarError: if the stream is not a tar.
    """
    reader = io.BufferedReader(_ChunkReader(chunks), CHUNK)
    with tarfile.open(fileobj=reader, mode="r|") as archive:
        for member in archive:
            if member.isfile():
                extracted = archive.extractfile(member)
                return extracted.read() if extracted is not None else b""
    raise FileNotFoundError(f"{path} is not a regular file")


class _ChunkReader(io.RawIOBase):
    """A file object over an iterator of byte chunks (for streaming tar reads)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size
