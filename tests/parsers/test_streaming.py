"""Streaming: for every way of cutting a text, ``close()`` equals ``parse()``."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_parsers import (
    ContentDelta,
    get_parser,
)
from tests.parsers.streams import check_stream, chunkings
from tests.parsers.support import case_params

ALL = case_params("CASES") + case_params("MALFORMED")


def _ids(value: Any) -> str:
    return value if isinstance(value, str) else value["id"]


@pytest.mark.parametrize(("name", "case"), ALL, ids=_ids)
def test_every_chunking_matches_parse(name: str, case: dict[str, Any]) -> None:
    parser = get_parser(name, **case.get("options", {}))
    for pieces in chunkings(case["text"], seed=len(case["text"])):
        check_stream(parser, pieces)


@pytest.mark.parametrize(("name", "case"), case_params("MALFORMED"), ids=_ids)
def test_strict_stream_raises_like_parse(name: str, case: dict[str, Any]) -> None:
    from hermes_parsers import ParseError

    parser = get_parser(name, strict=True, **case.get("options", {}))
    with pytest.raises(ParseError) as whole:
        parser.parse(case["text"])
    stream = parser.stream()

    def feed_all() -> None:
        for char in case["text"]:
            stream.feed(char)
        stream.close()

    with pytest.raises(ParseError) as streamed:
        feed_all()
    assert streamed.value.position == whole.value.position
    assert streamed.value.reason == whole.value.reason


def test_stream_rejects_misuse() -> None:
    stream = get_parser("hermes").stream()
    with pytest.raises(TypeError, match="decode bytes first"):
        stream.feed(b"abc")  # type: ignore[arg-type]
    stream.feed("hello")
    assert stream.close().content == "hello"
    assert stream.close().content == "hello"  # idempotent
    with pytest.raises(RuntimeError, match=r"parser\.stream"):
        stream.feed("more")


def test_content_streams_before_the_text_ends() -> None:
    stream = get_parser("hermes").stream()
    assert stream.feed("Hello wor") == [ContentDelta("Hello wor")]
    # A possible marker start is held back until it is certain.
    assert stream.feed("ld <tool") == [ContentDelta("ld ")]
    assert stream.feed("box>") == [ContentDelta("<toolbox>")]
