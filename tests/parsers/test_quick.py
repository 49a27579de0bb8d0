"""The quick reading of well-formed text (a format's ``_parse_quick``, see
``hermes_parsers._quick``) gives the general path's answer for every text it accepts, in
lenient and strict mode; and it does accept the well-formed text ``render`` writes."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_parsers import ParseError, ToolCall, ToolCallParser, get_parser, list_parsers
from hermes_parsers._arguments import decode_json_prefix, object_prefix
from tests.parsers.strategies import ARGUMENTS, NAMES, TEXT

#: The formats that read some texts quickly.
QUICK = [
    name
    for name in list_parsers()
    if type(get_parser(name))._parse_quick is not ToolCallParser._parse_quick
]

#: Pieces inserted into rendered text, besides the format's own vocabulary: spaces (ASCII,
#: Unicode and JSON-foreign ones), JSON punctuation, escapes of surrogates, a lone
#: surrogate, name-like and special-token-like text.
NOISE = [
    " ",
    "\n",
    "\u3000",
    "\x0b",
    "x",
    "{",
    "}",
    '"',
    ",",
    ":",
    "[",
    "\\ud800",
    "\\uDC00",
    "\ud800",
    "<｜",
    "<",
    ">",
    "1e999",
    '"a"',
    "functions.",
    ":0",
]


def _calls(data: st.DataObject, parser: ToolCallParser) -> list[ToolCall]:
    names = data.draw(st.lists(NAMES, max_size=3))
    return [
        ToolCall.from_dict(
            {
                "id": f"functions.{name}:{i}" if parser.carries_ids else "",
                "function": {"name": name, "arguments": data.draw(ARGUMENTS)},
            }
        )
        for i, name in enumerate(names)
    ]


def _text(data: st.DataObject, name: str) -> str:
    """A rendered turn (content and calls), then up to four random insertions and
    deletions of markup, noise or spans."""
    parser = get_parser(name)
    content = data.draw(TEXT.map(str.strip) | st.none()) or None
    calls = _calls(data, parser)
    if content is not None and calls and not parser.content_with_calls:
        content = None
    try:
        text = parser.render(content, calls)
    except ValueError:
        text = parser.render(None, calls) if calls else ""
    pieces = [*parser.vocabulary, *parser.markers, *NOISE]
    for _ in range(data.draw(st.integers(0, 4))):
        # Anywhere, or at an end, or next to one of the format's markers.
        at = data.draw(st.integers(0, len(text)) | st.sampled_from(_edges(parser, text)))
        if data.draw(st.booleans()):
            text = text[:at] + data.draw(st.sampled_from(pieces)) + text[at:]
        else:
            text = text[:at] + text[at + data.draw(st.integers(1, 8)) :]
    return text


def _edges(parser: ToolCallParser, text: str) -> list[int]:
    """The ends of ``text`` and of every occurrence of the format's markers in it."""
    edges = {0, len(text)}
    for marker in (*parser.vocabulary, *parser.markers):
        found = text.find(marker)
        while found >= 0:
            edges |= {found, found + len(marker)}
            found = text.find(marker, found + 1)
    return sorted(edges)


def _general(parser: ToolCallParser, text: str) -> Any:
    try:
        return parser._parse_markup(text)
    except ParseError:
        return None


@pytest.mark.parametrize("name", QUICK)
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_quick_reading_agrees_with_the_general_path(name: str, data: st.DataObject) -> None:
    text = _text(data, name)
    for strict in (False, True):
        parser = get_parser(name, strict=strict)
        quick = parser._parse_quick(text)
        if quick is not None:
            # (ParseResult's equality compares reasoning too: a quick reading that hands
            # a refused object to the scanner, as Llama's does, may give some.)
            assert quick == _general(parser, text)
            assert parser.parse(text) == quick


def _check(name: str, text: str) -> bool:
    """Assert that the quick reading of ``text``, if any, is the general path's; return
    whether there was one."""
    read = False
    for strict in (False, True):
        parser = get_parser(name, strict=strict)
        quick = parser._parse_quick(text)
        if quick is not None:
            read = True
            assert quick == _general(parser, text), text
    return read


@pytest.mark.parametrize("name", QUICK)
def test_every_piece_at_every_edge(name: str) -> None:
    """Every marker and noise piece inserted at every edge of a rendered turn (content and
    two calls), every edge cut off, every span between two edges taken out."""
    parser = get_parser(name)
    arguments = {"a": "x y", "b": [1, {"c": None}]}
    calls = [
        ToolCall.from_dict(
            {"id": f"functions.f{i}:{i}", "function": {"name": f"f{i}", "arguments": arguments}}
        )
        for i in range(2)
    ]
    text = parser.render("Some text." if parser.content_with_calls else None, calls)
    assert _check(name, text)
    # Escapes of surrogates inside an argument's string (JSON formats) or value text.
    for escape in ("\\ud800", "a\\uDC00", "\\ud83d\\ude00", '"\\ud800"', "\ud800"):
        _check(name, text.replace("x y", escape))
    edges = _edges(parser, text)
    pieces = [*parser.vocabulary, *parser.markers, *NOISE]
    for at in edges:
        for piece in pieces:
            _check(name, text[:at] + piece + text[at:])
        _check(name, text[:at])
        _check(name, text[at:])
        for end in edges:
            if end > at:
                _check(name, text[:at] + text[end:])


@pytest.mark.parametrize("name", QUICK)
def test_quick_reading_takes_rendered_calls(name: str) -> None:
    parser = get_parser(name)
    arguments = {"command": "ls -l | head", "options": {"n": [1, 2.5, None, True]}, "s": "é"}
    calls = [
        ToolCall.from_dict(
            {
                "id": f"functions.run_{i}:{i}",
                "function": {"name": f"run_{i}", "arguments": arguments},
            }
        )
        for i in range(3)
    ]
    content = "Let me look." if parser.content_with_calls else None
    for count in (1, 3):
        text = parser.render(content, calls[:count])
        quick = parser._parse_quick(text)
        assert quick is not None, text
        assert quick == parser._parse_markup(text)
        assert [json.loads(c.function.arguments) for c in quick.tool_calls or ()] == [
            arguments
        ] * count


@pytest.mark.parametrize("name", QUICK)
def test_no_quick_reading_when_the_text_starts_in_reasoning(name: str) -> None:
    parser = get_parser(name, think_prefilled=True)
    text = get_parser(name).render(None, [ToolCall.from_dict({"function": {"name": "f"}})])
    assert parser._parse_quick(text) is None


#: Strings for the JSON values below: plain, non-ASCII, astral (written as a pair of
#: surrogate escapes when the text is ASCII), and lone surrogates.
_STRINGS = st.text(
    alphabet=st.sampled_from(["a", " ", "\n", '"', "\\", "é", "\U0001f600", "\ud800", "\udc00"]),
    max_size=6,
)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | _STRINGS,
    lambda inner: st.lists(inner, max_size=40) | st.dictionaries(_STRINGS, inner, max_size=40),
    max_leaves=80,
)


@settings(max_examples=400, deadline=None)
@given(value=st.dictionaries(_STRINGS, _VALUES, max_size=40), ascii_only=st.booleans())
def test_object_prefix_agrees_with_decode_json_prefix(
    value: dict[str, Any], ascii_only: bool
) -> None:
    """``object_prefix`` (a bounded walk of the decoded value for lone surrogates, a search
    of the text for their escapes past the bound) answers as ``decode_json_prefix`` does,
    or ``None``; it answers whenever the text holds no surrogate, escaped or not."""
    text = json.dumps(value, ensure_ascii=ascii_only) + " tail"
    try:
        slow: Any = decode_json_prefix(text, 0)
    except ValueError:
        slow = None
    fast = object_prefix(text, 0, len(text))
    if fast is not None:
        assert slow is not None
        assert fast == slow
    surrogate_escape = re.search(r"\\u[dD][89a-fA-F]", text) is not None
    lone_surrogate = re.search("[\ud800-\udfff]", text) is not None
    if slow is not None and not surrogate_escape and not lone_surrogate:
        assert fast == slow


def test_object_prefix_reads_a_small_object_with_a_surrogate_pair() -> None:
    """A small object whose astral character is written as two escapes is read quickly;
    one holding a lone surrogate's escape is left to the general path."""
    assert object_prefix('{"a": "\\ud83d\\ude00"}', 0, 21) == ({"a": "\U0001f600"}, 21)
    assert object_prefix('{"a": "\\ud83d"}', 0, 15) is None
    assert object_prefix('{"\\ud83d": 1}', 0, 13) is None
