"""Host-side file work of the local backend: reading and writing descriptors the isolated
helper opened, and copying files and trees on the host (blocking: run in a thread)."""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path

__all__ = [
    "copy_fd",
    "copy_file",
    "copy_tree",
    "open_source",
    "open_target",
    "read_fd",
    "write_fd",
    "write_file",
]


def read_fd(fd: int, path: str) -> bytes:
    with open(fd, "rb", closefd=True) as handle:
        return handle.read()


def write_fd(fd: int, data: bytes) -> None:
    with open(fd, "wb", closefd=True) as handle:
        handle.write(data)


def open_source(source: Path) -> int:
    """A host file opened for reading.

    Raises:
        FileNotFoundError: if it does not exist.
        IsADirectoryError: if it is a directory.
    """
    fd = os.open(source, os.O_RDONLY | os.O_CLOEXEC)
    if stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(source))
    return fd


def open_target(target: Path) -> int:
    """A host file opened for writing (parents made, truncated)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    return os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)


def copy_fd(source: int, target: int) -> None:
    """Copy ``source`` to ``target`` in the kernel where it can (``sendfile``), then close
    ``target``."""
    try:
        offset = 0
        try:
            while sent := os.sendfile(target, source, offset, 1 << 30):
                offset += sent
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
            os.lseek(source, offset, os.SEEK_SET)
            while chunk := os.read(source, 1 << 20):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(target, view) :]
    finally:
        os.close(target)


def write_file(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def copy_file(source: Path, target: Path) -> None:
    if source.is_dir():
        raise IsADirectoryError(f"{source} is a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def copy_tree(source: Path, target: Path) -> None:
    if not source.is_dir():
        raise NotADirectoryError(f"{source} is not a directory")
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
