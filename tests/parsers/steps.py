"""Counting the Python lines hermes-parsers executes, to check linear growth without a clock.

Unit tests never assert wall times. Instead a parse is run under ``sys.monitoring`` and
every line executed inside the ``hermes_parsers`` package is counted: the count is the
same on every run and every machine, and a quadratic loop (a construct read to the end of
the text, again for every opener) shows as a count that grows a hundredfold for ten times
the input. Work done inside one C call (a ``str.find``, a regex) counts as one line;
``benchmarks/parsers.py`` times the same inputs to catch what that hides.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

import hermes_parsers

PACKAGE_DIR = str(Path(hermes_parsers.__file__).parent)

#: Ten times the input may cost at most this many times the steps (linear is about 10).
GROWTH_LIMIT = 20


class TooManySteps(BaseException):
    """The counted function went past its step limit (a BaseException, so that no
    ``except Exception`` in the code under test swallows it)."""


def count_steps(fn: Callable[[], Any], *, limit: int | None = None) -> int:
    """The number of lines of ``hermes_parsers`` code that ``fn()`` executes.

    Raises:
        TooManySteps: as soon as the count passes ``limit`` (so a quadratic parse fails
            quickly instead of running for minutes).
        RuntimeError: on Python 3.11, which has no ``sys.monitoring`` (callers skip there).
    """
    if sys.version_info < (3, 12):
        raise RuntimeError("counting steps needs sys.monitoring (Python 3.12+)")
    monitoring = sys.monitoring
    tool = next(i for i in range(1, 6) if monitoring.get_tool(i) is None)
    monitoring.use_tool_id(tool, "hermes-parsers step counter")
    steps = 0
    inside: dict[CodeType, bool] = {}

    def on_line(code: CodeType, line: int) -> Any:
        nonlocal steps
        ours = inside.get(code)
        if ours is None:
            ours = inside[code] = code.co_filename.startswith(PACKAGE_DIR)
        if not ours:
            return monitoring.DISABLE
        steps += 1
        if limit is not None and steps > limit:
            monitoring.set_events(tool, 0)
            raise TooManySteps(f"more than {limit} steps")
        return None

    monitoring.register_callback(tool, monitoring.events.LINE, on_line)
    monitoring.set_events(tool, monitoring.events.LINE)
    try:
        fn()
    finally:
        monitoring.set_events(tool, 0)
        monitoring.register_callback(tool, monitoring.events.LINE, None)
        monitoring.free_tool_id(tool)
    return steps


def assert_linear(run: Callable[[int], Any], small: int) -> tuple[int, int]:
    """Check that ``run(10 * small)`` takes at most ``GROWTH_LIMIT`` times the steps of
    ``run(small)``; returns both counts."""
    few = count_steps(lambda: run(small))
    limit = GROWTH_LIMIT * max(few, 100)
    try:
        many = count_steps(lambda: run(10 * small), limit=limit)
    except TooManySteps:
        raise AssertionError(
            f"10x input took more than {GROWTH_LIMIT}x the {few} steps of 1x: super-linear"
        ) from None
    return few, many
