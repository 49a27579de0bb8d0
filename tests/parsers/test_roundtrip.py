"""``parse(render(content, calls)) == (content, calls)`` for every format (hypothesis)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_parsers import ToolCall, get_parser, list_parsers
from tests.parsers.strategies import ARGUMENTS, NAMES, TEXT
from tests.parsers.streams import check_stream


@st.composite
def conversations(draw: st.DrawFn, name: str) -> tuple[str | None, list[ToolCall], str | None]:
    parser = get_parser(name)
    calls = [
        ToolCall.from_dict(
            {
                "id": f"functions.{fn}:{i}" if parser.carries_ids else "",
                "function": {"name": fn, "arguments": draw(ARGUMENTS)},
            }
        )
        for i, fn in enumerate(draw(st.lists(NAMES, max_size=4)))
    ]
    content = draw(TEXT.map(str.strip) | st.none()) or None
    if content is not None and calls and not parser.content_with_calls:
        content = None
    reasoning = draw(st.none() | TEXT.map(str.strip).filter(bool))
    return content, calls, reasoning


def _plain(calls: list[ToolCall] | None, with_ids: bool) -> list[tuple[Any, ...]]:
    return [
        (c.function.name, json.loads(c.function.arguments), c.id if with_ids else None)
        for c in calls or []
    ]


@pytest.mark.parametrize("name", list_parsers())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_render_then_parse_round_trips(name: str, data: st.DataObject) -> None:
    parser = get_parser(name)
    content, calls, reasoning = data.draw(conversations(name))
    try:
        text = parser.render(content, calls, reasoning=reasoning)
    except ValueError as exc:
        # Only content holding markup, or a value the format cannot spell, is refused,
        # and the refusal names the format.
        refused = str(exc)
    else:
        refused = ""
    if refused:
        assert refused.startswith(f"{name}:")
        return
    result = parser.parse(text)
    assert result.content == content
    assert _plain(result.tool_calls, parser.carries_ids) == _plain(calls, parser.carries_ids)
    assert result.reasoning == reasoning
    pieces = data.draw(st.lists(st.integers(1, max(1, len(text))), max_size=8))
    cuts = sorted({min(p, len(text)) for p in pieces})
    bounds = [0, *cuts, len(text)]
    check_stream(parser, [text[a:b] for a, b in itertools.pairwise(bounds)])
