"""Adversarial inputs for checking that a parser's time grows linearly with its input.

A parser that reads each opened construct to the end of the text, gives up, and starts
again just after the opener is quadratic on text that opens many constructs and closes
none. ``growth_units`` names short pieces of text which, repeated many times, have made
parsers quadratic: each marker of the format's ``vocabulary`` on its own, and every piece
of a rendered call that starts at one of its markers and ends just after one (so every
construct opened and left unclosed, in every combination the format writes). The package's
tests count the parser's Python steps on 1x and 10x repetitions of each;
``benchmarks/parsers.py`` times them.
"""

from __future__ import annotations

from hermes_parsers._base import ToolCallParser
from hermes_parsers._tool_call import FunctionCall, ToolCall

__all__ = ["growth_units"]

_SAMPLE = ToolCall("functions.f:0", FunctionCall("f", '{"a": "x", "b": [1]}'))


def growth_units(parser: ToolCallParser) -> dict[str, str]:
    """Pieces of text to repeat, by a short label, for ``parser``'s format.

    The markers are ``parser.vocabulary`` (its ``markers`` and ``<think>``/``</think>``
    when a format declares none); the rendered call is ``render(None, [call])`` of one call
    with a string and an array argument.

    Raises:
        ValueError: if the format cannot render that sample call.
    """
    vocabulary = parser.vocabulary or (*parser.markers, "<think>", "</think>")
    units: dict[str, str] = {}
    for marker in vocabulary:
        units.setdefault(marker, f"marker {marker!r}")
    sample = parser.render(None, [_SAMPLE])
    starts: set[int] = set()
    ends: set[int] = set()
    for marker in vocabulary:
        at = sample.find(marker)
        while at >= 0:
            starts.add(at)
            ends.add(at + len(marker))
            at = sample.find(marker, at + 1)
    for start in sorted(starts):
        for end in sorted(ends):
            if end > start:
                piece = sample[start:end]
                units.setdefault(piece, f"piece {piece!r}")
    return {label: piece for piece, label in units.items()}
