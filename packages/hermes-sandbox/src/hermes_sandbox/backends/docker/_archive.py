"""Tar streams for the daemon's archive endpoints (blocking; run them in threads)."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hermes_sandbox.backends.docker._stream import CHUNK

__all__ = [
    "FILE_CHUNK",
    "copy_single_file",
    "file_tar_stream",
    "read_single_file",
    "single_file_tar",
]

#: Bytes read from a host file at a time when streaming it into a tar.
FILE_CHUNK = 1 << 20


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


def file_tar_stream(source: Path, name: str, mode: int) -> Iterator[bytes]:
    """A tar holding the host file ``source`` as ``name`` (permission bits ``mode``),
    produced piece by piece: the file is never held whole.

    Raises:
        FileNotFoundError: if ``source`` does not exist (when iteration starts).
        ValueError: if the file changed size while it was read.
    """
    with source.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        info = tarfile.TarInfo(name)
        info.size = size
        info.mode = mode
        info.mtime = int(time.time())
        yield info.tobuf(format=tarfile.PAX_FORMAT)
        left = size
        while left:
            chunk = file.read(min(FILE_CHUNK, left))
            if not chunk:
                raise ValueError(f"{source} shrank while it was uploaded")
            left -= len(chunk)
            yield chunk
    yield b"\0" * ((-size) % tarfile.BLOCKSIZE) + b"\0" * (2 * tarfile.BLOCKSIZE)


def copy_single_file(chunks: Iterator[bytes], path: str, target: Path) -> None:
    """Write the first regular file of the tar streamed as ``chunks`` to ``target``
    (parents made), a chunk at a time.

    Raises:
        FileNotFoundError: if the tar holds no regular file (``path`` names it).
        tarfile.TarError: if the stream is not a tar.
    """
    reader = io.BufferedReader(_ChunkReader(chunks), CHUNK)
    with tarfile.open(fileobj=reader, mode="r|") as archive:
        for member in archive:
            if member.isfile():
                extracted = archive.extractfile(member)
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as sink:
                    if extracted is not None:
                        shutil.copyfileobj(extracted, sink, FILE_CHUNK)
                return
    raise FileNotFoundError(f"{path} is not a regular file")


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
