"""Tar streams for the daemon's archive endpoints (blocking; run them in threads)."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterator
from typing import Any

from hermes_sandbox.backends.docker._stream import CHUNK

__all__ = ["read_single_file", "single_file_tar"]


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
