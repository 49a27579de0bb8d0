"""The clock of an attempt: the seconds each of its steps took."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence

__all__ = ["Clock"]


class Clock:
    """The seconds each step of an attempt took (steps met twice add up), and when each
    step last ended (``time.monotonic``)."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        #: When each step's last lap ended.
        self.ends: dict[str, float] = {}
        self._since = time.monotonic()

    def lap(self, step: str) -> None:
        """Count the time since the last lap as ``step``'s."""
        now = time.monotonic()
        self.timings[step] = round(self.timings.get(step, 0.0) + now - self._since, 4)
        self.ends[step] = self._since = now

    @contextlib.contextmanager
    def step(self, step: str) -> Iterator[None]:
        """Count the block's time (and any since the last lap) as ``step``'s, however the
        block ends."""
        try:
            yield
        finally:
            self.lap(step)

    def waited(self, since: float, other: Clock, steps: Sequence[str]) -> None:
        """Count the time from ``since`` to now, spent waiting for ``steps`` that ``other``
        ran meanwhile (elsewhere), as theirs: each step gets the part of the wait during
        which it was the one under way (by ``other``'s ends); the part after the last one
        ended (or all of it, when none ended) goes to the last of ``steps``. Steps that
        ended before ``since`` count 0 here."""
        now = time.monotonic()
        start = since
        for step in steps:
            end = other.ends.get(step)
            if end is None:
                continue
            part = max(0.0, min(end, now) - start)
            self.timings[step] = round(self.timings.get(step, 0.0) + part, 4)
            start = max(start, min(end, now))
        last = steps[-1]
        self.timings[last] = round(self.timings.get(last, 0.0) + max(0.0, now - start), 4)
        for step in steps:
            if step in other.timings:
                self.timings.setdefault(step, 0.0)
        self._since = now
