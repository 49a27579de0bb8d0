"""The arguments string is ``json.dumps(value, ensure_ascii=False)`` of the decoded
value, whichever way it is written: long ASCII strings at the top level of the object
are written by ``str.replace`` of the characters JSON escapes (issue 24.2), everything
else by the C encoder."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_parsers import FunctionCall, ToolCall, get_parser
from hermes_parsers._arguments import (
    _ESCAPES,
    _LONG_STRING,
    _MOST_REPLACED,
    encode_arguments,
    encode_object,
    holds_long_string,
)
from hermes_parsers._quick import quick_call
from hermes_parsers._tool_call import UNWRITTEN_SHORT

#: Every character JSON escapes.
_ESCAPED = [char for char, _ in _ESCAPES]
_LONG = _LONG_STRING


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def test_every_escaped_character_is_listed_once_with_the_c_encoders_escape() -> None:
    assert len(set(_ESCAPED)) == len(_ESCAPED) == 34
    assert set(_ESCAPED) == {chr(code) for code in range(32)} | {'"', "\\"}
    for char, escape in _ESCAPES:
        assert _dumps(char) == f'"{escape}"'


@pytest.mark.parametrize("kinds", [0, 1, _MOST_REPLACED, _MOST_REPLACED + 1, 34])
def test_a_long_string_is_written_as_json_dumps_writes_it(kinds: int) -> None:
    """With no, a few, and more kinds of escaped characters than ``str.replace`` is used
    for (then the C encoder writes it), each kind at both ends and in the middle."""
    chars = ["\\", '"', "\n", "\x01", "\t", *_ESCAPED][:kinds]
    chars = list(dict.fromkeys(chars))
    body = "".join(char + "x" * 97 for char in chars) + "\x7f" + "y" * _LONG
    text = "".join(chars) + body + "".join(reversed(chars))
    value = {"path": "a.txt", "content": text, "n": [1, 2.5, None, True, "\\\n"]}
    assert holds_long_string(value)
    assert encode_object(value) == encode_arguments(value) == _dumps(value)
    assert FunctionCall.from_value("write", value).arguments == _dumps(value)


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from([*_ESCAPED, "a", " ", "\x7f", "é", "\U0001f600"]), max_size=8),
    size=st.sampled_from([_LONG - 1, _LONG, _LONG + 1]),
    keys=st.lists(st.sampled_from(["a", "é", '"k"', "\n"]), min_size=1, max_size=3, unique=True),
)
def test_arguments_are_json_dumps_of_the_value(
    pieces: list[str], size: int, keys: list[str]
) -> None:
    """Around the length limit, ASCII or not, in every position among other keys."""
    filler = "".join(pieces) or "z"
    text = (filler * (size // len(filler) + 1))[:size]
    value: dict[str, Any] = dict.fromkeys(keys, text)
    value["other"] = {"nested": text}
    assert FunctionCall.from_value("f", value).arguments == _dumps(value)
    assert encode_arguments(value) == _dumps(value)
    if holds_long_string(value):
        assert encode_object(value) == _dumps(value)


def test_what_json_cannot_write_is_refused_the_same_way() -> None:
    value = {"a": "x" * _LONG, "b": float("nan")}
    with pytest.raises(ValueError, match="not JSON compliant"):
        encode_object(value)
    with pytest.raises(ValueError, match="cannot be written as JSON"):
        encode_arguments(value)


def test_keys_that_are_not_strings_follow_the_c_encoders_rules() -> None:
    value: dict[Any, Any] = {"a": "x" * _LONG, 1: 2, None: 3}
    assert encode_object(value) == _dumps(value)


def test_only_long_ascii_strings_at_the_top_level_are_written_apart() -> None:
    assert holds_long_string({"a": 1, "b": "x" * _LONG})
    assert not holds_long_string({"b": "x" * (_LONG - 1)})
    assert not holds_long_string({"b": "é" * _LONG})
    assert not holds_long_string({"b": ["x" * _LONG]})
    assert not holds_long_string({str(i): i for i in range(16)} | {"b": "x" * _LONG})


def test_a_parsed_long_argument_keeps_the_canonical_text() -> None:
    """A file body of 100 KB with newlines, quotes and backslashes, through every format."""
    body = ('line "one"\\tail\n' * 7000)[:100_000]
    value = {"path": "notes.txt", "content": body}
    for name in ("hermes", "mistral", "llama3_json", "qwen3_coder"):
        parser = get_parser(name)
        call = ToolCall("functions.write:0", FunctionCall("write", json.dumps(value)))
        parsed = parser.parse(parser.render(None, [call])).tool_calls or []
        assert [c.function.arguments for c in parsed] == [_dumps(value)]


def test_a_call_read_from_short_text_is_written_without_looking_for_long_strings() -> None:
    """``quick_call`` marks arguments decoded from a call's text shorter than the long-string
    limit (no string in them can reach it); longer text leaves them to be looked through."""
    short = {"a": "x\n" * 10}
    long = {"a": "x\n" * _LONG}
    for value, raw, mark in (
        (short, json.dumps(short), UNWRITTEN_SHORT),
        (long, json.dumps(long), None),
        (long, "", UNWRITTEN_SHORT),  # a caller's wrong hint changes the path, not the text
    ):
        call = quick_call(0, "f", value, raw)
        assert call is not None
        assert call.function._text is mark
        assert call.function.arguments == _dumps(value)
        written: object = call.function._text  # kept once written
        assert written == _dumps(value)
