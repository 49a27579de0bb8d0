"""The group file of ``process``: one JSON line per scored group, flushed as written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["GroupFile"]


class GroupFile:
    """Scored groups appended to ``path`` as JSON lines, each flushed as it is written, so
    a killed run keeps every complete line.

    A line is the text Atropos' own group writer (``jsonlines`` with its defaults) writes
    for the same group. ``write(group)`` is what Atropos calls; the environment instead
    makes the text with ``encode`` on its tokenizer thread and writes it with
    ``write_line``, so the event loop only appends it.

    Raises:
        OSError: if ``path`` cannot be opened for appending.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file = self.path.open("a", encoding="utf-8")
        self._encoder = json.JSONEncoder(ensure_ascii=False)

    def encode(self, group: Any) -> str:
        """The line of ``group`` (no newline); safe to call from any thread.

        Raises:
            TypeError: if ``group`` holds something JSON cannot write.
        """
        return self._encoder.encode(group)

    def write_line(self, line: str) -> int:
        """Append ``line`` and a newline, flushed; returns the characters written.

        Raises:
            ValueError: if the file is closed.
            OSError: if the write fails.
        """
        self._file.write(line + "\n")
        self._file.flush()
        return len(line) + 1

    def write(self, group: Any) -> int:
        """Append the line of ``group`` (``encode`` then ``write_line``)."""
        return self.write_line(self.encode(group))

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._file.close()
