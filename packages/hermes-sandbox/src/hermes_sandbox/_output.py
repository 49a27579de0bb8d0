"""Collecting command output with bounded memory: keep the head and the tail."""

from __future__ import annotations

__all__ = ["OutputCollector"]


class OutputCollector:
    """Accumulates bytes; keeps at most ``limit`` characters' worth (head + tail).

    Memory stays O(limit) however much is fed. ``text()`` decodes as UTF-8 (bad bytes
    replaced) and puts a ``[... N bytes truncated ...]`` marker where bytes were dropped.
    """

    __slots__ = ("_dropped", "_head", "_head_limit", "_tail", "_tail_limit")

    def __init__(self, limit: int) -> None:
        self._head_limit = max(limit // 2, 1)
        self._tail_limit = max(limit - self._head_limit, 1)
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = 0

    def feed(self, data: bytes) -> None:
        """Add the next piece of output."""
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if not data:
            return
        self._tail += data
        excess = len(self._tail) - self._tail_limit
        if excess > 0:
            self._dropped += excess
            del self._tail[:excess]

    def skip(self, n: int) -> None:
        """Count ``n`` bytes that were dropped before reaching the collector, so that
        ``text()`` reports them as truncated and ``truncated`` is true (if ``n > 0``).

        The count joins the collector's own in the one marker between the kept head and
        tail, so it marks the right place when the head was full before the gap (as when
        the sender sent a full head, cut the middle, then sent the tail).

        Raises:
            ValueError: if ``n`` is negative.
        """
        if n < 0:
            raise ValueError(f"cannot skip a negative number of bytes ({n})")
        self._dropped += n

    @property
    def truncated(self) -> bool:
        """Whether any output was dropped."""
        return self._dropped > 0

    def text(self) -> str:
        """The kept output as text."""
        head = bytes(self._head).decode("utf-8", errors="replace")
        tail = bytes(self._tail).decode("utf-8", errors="replace")
        if not self._dropped:
            return head + tail
        return f"{head}\n\n[... {self._dropped} bytes truncated ...]\n\n{tail}"
