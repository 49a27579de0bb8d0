"""A local sandbox's files, in either mode. Plain (no namespace): sandbox paths are host
paths, so transfers are plain copies (in a thread). Isolated: files are opened by the
helper inside the sandbox (``Namespace.open``), so file tools reach exactly what
commands reach. Paths here are already resolved in the sandbox.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from hermes_sandbox.backends.local._host_files import (
    copy_fd,
    copy_file,
    open_source,
    open_target,
    read_fd,
    write_fd,
    write_file,
)
from hermes_sandbox.backends.local._isolation import Namespace

__all__ = ["copy_in", "copy_out", "read_bytes", "write_bytes"]


async def copy_in(namespace: Namespace | None, local: Path, target: str) -> None:
    """Copy the host file ``local`` to ``target`` in the sandbox (parents created).

    Raises:
        FileNotFoundError: if ``local`` does not exist.
        OSError: as opening ``target`` in the sandbox would.
    """
    if namespace is not None:
        source = await asyncio.to_thread(open_source, local)
        try:
            fd = await namespace.open(target, write=True)
            await asyncio.to_thread(copy_fd, source, fd)
        finally:
            os.close(source)
        return
    await asyncio.to_thread(copy_file, local, Path(target))


async def copy_out(namespace: Namespace | None, source: str, local: Path) -> None:
    """Copy ``source`` in the sandbox to the host file ``local`` (parents created).

    Raises:
        FileNotFoundError: if ``source`` does not exist.
        OSError: as opening either file would.
    """
    if namespace is not None:
        fd = await namespace.open(source, write=False)
        try:
            target = await asyncio.to_thread(open_target, local)
            await asyncio.to_thread(copy_fd, fd, target)
        finally:
            os.close(fd)
        return
    await asyncio.to_thread(copy_file, Path(source), local)


async def read_bytes(namespace: Namespace | None, path: str) -> bytes:
    """The bytes of ``path`` in the sandbox.

    Raises:
        OSError: as reading it would (``FileNotFoundError``, ``IsADirectoryError``, ...).
    """
    if namespace is None:
        return await asyncio.to_thread(Path(path).read_bytes)
    fd = await namespace.open(path, write=False)
    return await asyncio.to_thread(read_fd, fd, path)


async def write_bytes(namespace: Namespace | None, path: str, data: bytes) -> None:
    """Create or replace ``path`` in the sandbox (parents created).

    Raises:
        OSError: as writing it would.
    """
    if namespace is None:
        await asyncio.to_thread(write_file, Path(path), data)
        return
    fd = await namespace.open(path, write=True)
    await asyncio.to_thread(write_fd, fd, data)
