"""Parsing and streaming grow linearly with the input, for every format and every
repeated partial construct of its vocabulary (see ``hermes_parsers.adversarial``).

Growth is measured in executed lines (``steps.count_steps``), never in seconds.
"""

from __future__ import annotations

import contextlib
import sys

import pytest

from hermes_parsers import ParseError, get_parser, list_parsers
from hermes_parsers.adversarial import growth_units
from tests.parsers.steps import assert_linear

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 12), reason="counts steps with sys.monitoring (Python 3.12+)"
)

#: About this many characters at 1x (and ten times as many at 10x).
SIZE = 800

CASES = [
    pytest.param(name, unit, id=f"{name}-{label}")
    for name in list_parsers()
    for label, unit in growth_units(get_parser(name)).items()
]


@pytest.mark.parametrize(("name", "unit"), CASES)
def test_parse_grows_linearly(name: str, unit: str) -> None:
    parser = get_parser(name)
    strict = get_parser(name, strict=True)

    def run(count: int) -> None:
        text = unit * count
        parser.parse(text)
        with contextlib.suppress(ParseError):
            strict.parse(text)

    assert_linear(run, max(1, SIZE // len(unit)))


@pytest.mark.parametrize(("name", "unit"), CASES)
def test_stream_grows_linearly(name: str, unit: str) -> None:
    parser = get_parser(name)

    def run(count: int) -> None:
        text = unit * count
        stream = parser.stream()
        for i in range(0, len(text), 16):
            stream.feed(text[i : i + 16])
        stream.close()

    assert_linear(run, max(1, SIZE // len(unit)))


def test_growth_units_hold_every_marker_and_every_unclosed_piece() -> None:
    units = set(growth_units(get_parser("qwen3_coder")).values())
    assert set(get_parser("qwen3_coder").vocabulary) <= units
    # The issue-12 case: a function with a closed parameter, the function left open.
    assert "<function=f>\n<parameter=a>\nx\n</parameter>" in units
    assert "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>" in units
    for name in list_parsers():
        parser = get_parser(name)
        assert parser.vocabulary, f"{name} declares no vocabulary"
        assert set(parser.markers) <= set(parser.vocabulary)
