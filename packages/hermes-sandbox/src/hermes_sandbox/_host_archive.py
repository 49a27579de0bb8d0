"""The host side of ``Sandbox``'s default transfers: writing a downloaded file, and
directory trees as tar archives (blocking: run in a thread)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

__all__ = ["tar_directory", "untar_into", "write_host_file"]


def write_host_file(target: Path, data: bytes) -> None:
    """Write ``data`` to the host file ``target`` (parent directories are made)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def tar_directory(source: Path) -> bytes:
    """A tar archive of the contents of the host directory ``source``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for child in sorted(source.iterdir()):
            archive.add(child, arcname=child.name)
    return buffer.getvalue()


def untar_into(data: bytes, target: Path) -> None:
    """Extract the tar archive ``data`` into the host directory ``target`` (made if
    missing; the ``data`` filter refuses unsafe members)."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        archive.extractall(target, filter="data")
