"""Writing a file whole or not at all."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

__all__ = ["write_whole"]


def write_whole(target: Path, data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``target``, then rename it over
    ``target`` (blocking): a reader sees the old file or the new one, never a part, and a
    failed write leaves no temporary file behind. Returns ``target``.

    Raises:
        OSError: the folder cannot be written, or the disk is full (``target`` is then as
            it was).
    """
    aside = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with aside.open("xb") as file:
            file.write(data)
        os.replace(aside, target)
    except BaseException:
        aside.unlink(missing_ok=True)
        raise
    return target
