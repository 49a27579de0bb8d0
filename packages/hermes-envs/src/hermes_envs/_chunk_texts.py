"""Texts of long integer lists written a stretch at a time, each stretch's text
remembered by its bytes: the rollouts of a run open with the same system prompt and
tools, so most stretches of a token list were written before. Stdlib only (the token
worker process imports it)."""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["CHUNK", "ChunkTexts", "packed"]

#: Integers per remembered stretch.
CHUNK = 128
#: Stretches remembered (the least recently used are forgotten first).
_REMEMBERED = 4096


def packed(values: list[int]) -> array[int] | None:
    """``values`` as 64-bit integers (``array("q")``), or ``None`` when one is not an
    integer or does not fit (a ``bool`` counts as 0/1). Packing a list costs about as much
    as writing a stretch of it, so a caller that writes the same ids twice (a group line
    and its records) packs them once."""
    try:
        return array("q", values)
    except (TypeError, OverflowError):
        return None


class ChunkTexts:
    """``texts(packed, make)``: the text of each ``CHUNK`` of ``packed``, remembered.
    Not thread-safe: a caller shared by threads holds its own lock."""

    def __init__(self) -> None:
        self._known: OrderedDict[bytes, str] = OrderedDict()

    def texts(
        self, packed: array[int], make: Callable[[int, int], str], tag: bytes = b""
    ) -> list[str]:
        """``make(start, stop)`` for each stretch ``packed[start:stop]`` of ``CHUNK``
        integers (the last may be shorter), or the text remembered for the same bytes
        under the same ``tag`` (texts of different kinds kept apart)."""
        data = packed.tobytes()
        size = packed.itemsize
        step = CHUNK * size
        known = self._known
        texts = []
        for at in range(0, len(data), step):
            key = tag + data[at : at + step]
            text = known.get(key)
            if text is None:
                start = at // size
                text = make(start, min(start + CHUNK, len(packed)))
                known[key] = text
                if len(known) > _REMEMBERED:
                    known.popitem(last=False)
            else:
                known.move_to_end(key)
            texts.append(text)
        return texts
