"""The group file of ``process``: one JSON line per scored group, flushed as written."""

from __future__ import annotations

import json
import threading
from array import array
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hermes_envs._chunk_texts import ChunkTexts, packed

__all__ = ["GroupFile", "LineEncoder"]

#: The fields holding a list of token-id lists per rollout: the bulk of a line.
_ID_FIELDS = frozenset({"tokens", "masks"})


class LineEncoder:
    """``encode(group)``: the JSON line Atropos' group writer (``jsonlines`` with its
    defaults: ``json.dumps(group, ensure_ascii=False)``) writes for ``group``.

    The token lists (``tokens``, ``masks``) are written in stretches of ids whose text is
    remembered: the rollouts of a run open with the same system prompt and tools, so most
    of a line was written before. An integer is written as ``json`` writes it; a ``bool``
    among the ids as ``0``/``1``, not as ``false``/``true``. Thread-safe.
    """

    def __init__(self) -> None:
        self._encoder = json.JSONEncoder(ensure_ascii=False)
        self._chunks = ChunkTexts()
        self._lock = threading.Lock()

    def encode(
        self, group: Any, packed_rows: Mapping[str, Sequence[array[int] | None]] | None = None
    ) -> str:
        """The line of ``group`` (no newline). ``packed_rows``: for ``tokens`` and
        ``masks``, each row already packed (``hermes_envs._chunk_texts.packed`` of it),
        when the caller has them.

        Raises:
            TypeError: if ``group`` holds something JSON cannot write.
        """
        encode = self._encoder.encode
        if type(group) is not dict or not all(type(key) is str for key in group):
            return encode(group)
        fields = []
        for key, value in group.items():
            text = None
            if key in _ID_FIELDS:
                rows = packed_rows.get(key) if packed_rows is not None else None
                with self._lock:
                    text = self._id_rows(value, rows)
            fields.append(f"{encode(key)}: {encode(value) if text is None else text}")
        return "{" + ", ".join(fields) + "}"

    def _id_rows(self, rows: Any, packed_rows: Sequence[array[int] | None] | None) -> str | None:
        """``rows`` (lists of integers) as JSON, or ``None`` when they are anything else;
        ``packed_rows``: each row packed, when given."""
        if type(rows) is not list:
            return None
        if packed_rows is not None and len(packed_rows) != len(rows):
            packed_rows = None
        texts = []
        for at, row in enumerate(rows):
            if type(row) is not list:
                return None
            ids = packed(row) if packed_rows is None else packed_rows[at]
            if ids is None:  # not all integers
                return None
            texts.append("[" + ", ".join(self._chunk_texts(ids)) + "]")
        return "[" + ", ".join(texts) + "]"

    def _chunk_texts(self, ids: array[int]) -> list[str]:
        """The texts of ``ids``, ``CHUNK`` at a time, each remembered."""
        return self._chunks.texts(ids, lambda start, stop: ", ".join(map(str, ids[start:stop])))


class GroupFile:
    """Scored groups appended to ``path`` as JSON lines, each flushed as it is written, so
    a killed run keeps every complete line.

    A line is the text Atropos' own group writer (``jsonlines`` with its defaults) writes
    for the same group (``LineEncoder``). ``write(group)`` is what Atropos calls; the
    environment instead makes the text with ``encode`` away from the event loop (on its
    tokenizer thread or in its token worker process) and writes it with ``write_line``,
    so the event loop only appends it. ``redact`` (e.g. a ``Redactor``), when given,
    rewrites every line before it is written, whoever made it.

    Raises:
        OSError: if ``path`` cannot be opened for appending.
    """

    def __init__(self, path: str | Path, redact: Callable[[str], str] | None = None) -> None:
        self.path = Path(path)
        self._file = self.path.open("a", encoding="utf-8")
        self.encode = LineEncoder().encode
        self._redact = redact

    def write_line(self, line: str) -> int:
        """Append ``line`` and a newline, flushed; returns the characters written.

        Raises:
            ValueError: if the file is closed.
            OSError: if the write fails.
        """
        if self._redact is not None:
            line = self._redact(line)
        self._file.write(line + "\n")
        self._file.flush()
        return len(line) + 1

    def write(self, group: Any) -> int:
        """Append the line of ``group`` (``encode`` then ``write_line``)."""
        return self.write_line(self.encode(group))

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._file.close()
