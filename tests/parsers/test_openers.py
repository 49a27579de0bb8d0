"""Text holding none of a format's ``openers`` is plain content, found at the cost of a
substring search: ``parse`` answers without scanning, and a stream passes such a chunk
through whole. The shortcut must never change an answer: ``parse`` equals the full scan
(``_parse_markup``) on every case text and on text made of the format's own vocabulary,
cut anywhere.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_parsers import ContentDelta, ParseError, ParseResult, get_parser, list_parsers
from tests.parsers.steps import count_steps
from tests.parsers.streams import check_stream
from tests.parsers.support import case_params

NAMES = list_parsers()
PROSE = "Reads a[i] when i < n | j > 0; 'quoted' text, 3.5 and -7 stay as written.\n"


def _ids(value: Any) -> str:
    return value if isinstance(value, str) else value["id"]


def _parse_both(name: str, text: str, **options: Any) -> tuple[Any, Any]:
    """``parse`` and the full scan of ``text`` (a ``ParseError`` stands for itself)."""
    parser = get_parser(name, **options)
    answers: list[Any] = []
    for run in (parser.parse, parser._parse_markup):
        try:
            answers.append(run(text))
        except ParseError as exc:
            answers.append((exc.kind, exc.reason, exc.position))
    return answers[0], answers[1]


@pytest.mark.parametrize(
    ("name", "case"), case_params("CASES") + case_params("MALFORMED"), ids=_ids
)
def test_shortcut_agrees_with_full_scan_on_cases(name: str, case: dict[str, Any]) -> None:
    for strict in (False, True):
        shortcut, full = _parse_both(name, case["text"], strict=strict, **case.get("options", {}))
        assert shortcut == full


def _pieces(name: str) -> st.SearchStrategy[str]:
    """Text built from the format's vocabulary, every prefix and suffix of its markers
    (so openers cut short), brackets, braces and prose."""
    parser = get_parser(name)
    words = {*parser.vocabulary, *parser.openers, "<", "[", "{", "}", '"', "\n", " ", "x"}
    for word in list(words):
        words.update(word[:cut] for cut in range(1, len(word)))
        words.update(word[cut:] for cut in range(1, len(word)))
    return st.lists(st.sampled_from(sorted(words)) | st.text(max_size=5), max_size=12).map("".join)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_shortcut_agrees_with_full_scan_on_vocabulary(name: str, data: st.DataObject) -> None:
    text = data.draw(_pieces(name))
    for options in ({}, {"strict": True}, {"think_prefilled": True}):
        shortcut, full = _parse_both(name, text, **options)
        assert shortcut == full
    parser = get_parser(name)
    if not any(opener in text for opener in parser.openers):
        assert parser.parse(text) == ParseResult(text.strip() or None, None)
    cut = data.draw(st.integers(0, len(text)))
    check_stream(parser, [text[:cut], text[cut:]])


@pytest.mark.parametrize("name", NAMES)
def test_no_text_is_plain_when_it_starts_in_reasoning(name: str) -> None:
    parser = get_parser(name, think_prefilled=True)
    assert parser.openers == ()
    assert get_parser(name).openers
    assert parser.parse(PROSE).content is None


needs_monitoring = pytest.mark.skipif(
    sys.version_info < (3, 12), reason="counts steps with sys.monitoring (Python 3.12+)"
)


@needs_monitoring
@pytest.mark.parametrize("name", NAMES)
def test_plain_text_costs_a_search_not_a_scan(name: str) -> None:
    parser = get_parser(name)
    short, long = PROSE.replace("{", ""), PROSE.replace("{", "") * 1000
    parser.parse(short)  # the first parse builds the check that later ones reuse
    steps = count_steps(lambda: parser.parse(long))
    assert steps == count_steps(lambda: parser.parse(short))
    assert steps <= 30  # the full scan of the same text takes several times as many
    assert parser.parse(long) == ParseResult(long.strip(), None)


@needs_monitoring
@pytest.mark.parametrize("name", NAMES)
def test_stream_passes_a_chunk_without_marker_characters_through(name: str) -> None:
    parser = get_parser(name)
    chunk = "plain words, 3.5 and -7 only; nothing that starts markup here. " * 4
    assert not any(opener[0] in chunk for opener in parser.openers)
    stream = parser.stream()
    stream.feed(chunk)  # the first feed may set up what later feeds reuse
    steps = count_steps(lambda: stream.feed(chunk))
    assert steps <= 40
    assert stream.feed(chunk) == [ContentDelta(chunk)]
    assert stream.close() == parser.parse(chunk * 3)
