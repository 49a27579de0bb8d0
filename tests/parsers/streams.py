"""Checking a parser's stream against its ``parse``, for any way of cutting the text."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable

from hermes_parsers import ContentDelta, ReasoningDelta, ToolCallEvent, ToolCallParser

__all__ = ["check_stream", "chunkings"]


def chunkings(text: str, seed: int = 0) -> Iterable[list[str]]:
    """One chunk, every two-chunk split, 100 seeded random chunkings, one char at a time."""
    yield [text]
    for cut in range(1, len(text)):
        yield [text[:cut], text[cut:]]
    rng = random.Random(seed)
    for _ in range(100):
        cuts = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(1, 12))))
        bounds = [0, *cuts, len(text)]
        yield [text[a:b] for a, b in itertools.pairwise(bounds)]
    yield list(text)


def check_stream(parser: ToolCallParser, pieces: list[str]) -> None:
    """Feed ``pieces``; the events and the final result must agree with ``parse``."""
    expected = parser.parse("".join(pieces))
    stream = parser.stream()
    events = [event for piece in pieces for event in stream.feed(piece)]
    events += stream.flush()
    assert stream.close() == expected
    content = "".join(e.text for e in events if isinstance(e, ContentDelta)).strip() or None
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta)).strip() or None
    calls = [e.tool_call for e in events if isinstance(e, ToolCallEvent)]
    assert [e.index for e in events if isinstance(e, ToolCallEvent)] == list(range(len(calls)))
    assert content == expected.content
    assert reasoning == expected.reasoning
    assert (calls or None) == expected.tool_calls
