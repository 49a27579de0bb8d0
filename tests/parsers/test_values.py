"""A call either reads or is malformed at parse time (issue 12, items 8 and 9).

Values JSON can spell but a JSON object string cannot carry onward — numbers too large for
a float (``1e999``) and ``\\ud800`` escapes that leave a lone surrogate — and raw lone
surrogates in the text itself, in every format: no call comes out whose ``arguments`` or
``to_dict()`` would then raise, or whose text cannot be encoded as UTF-8.
"""

from __future__ import annotations

import json

import pytest

from hermes_parsers import FunctionCall, ParseError, ToolCall, get_parser, list_parsers

PLACEHOLDER = "PLACEHOLDER"
BAD_VALUES = {
    "huge": "1e999",
    "huge-negative": "-1e999",
    "huge-in-array": "[1, 2e400]",
    "escaped-surrogate": '"\\ud800"',
    "escaped-low-surrogate": '"x\\uDC00y"',
    "escaped-surrogate-key": '{"\\ud83d": 1}',
    "raw-surrogate": '"\ud800"',
}
#: Formats whose arguments are typed JSON: there a bad value makes the call malformed.
JSON_FORMATS = [name for name in list_parsers() if name not in {"qwen3_coder", "glm45", "glm47"}]


def _text(name: str, value: str) -> str:
    """A rendered call of ``name``'s format whose argument ``a`` is spelled ``value``."""
    call = ToolCall("functions.f:0", FunctionCall("f", json.dumps({"a": PLACEHOLDER})))
    rendered = get_parser(name).render(None, [call])
    quoted = json.dumps(PLACEHOLDER)
    return rendered.replace(quoted if quoted in rendered else PLACEHOLDER, value)


def _readable(calls: list[ToolCall] | None) -> None:
    for call in calls or []:
        message = json.dumps(call.to_dict(), ensure_ascii=False)
        message.encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate


@pytest.mark.parametrize("name", list_parsers())
@pytest.mark.parametrize("value", BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_every_call_that_comes_out_reads(name: str, value: str) -> None:
    text = _text(name, value)
    lenient = get_parser(name).parse(text)
    _readable(lenient.tool_calls)
    strict: object
    try:
        strict = get_parser(name, strict=True).parse(text)
    except ParseError as error:
        strict = error.position
    assert strict == lenient or (isinstance(strict, int) and 0 <= strict < len(text))
    stream = get_parser(name).stream()
    for char in text:
        stream.feed(char)
    assert stream.close() == lenient


@pytest.mark.parametrize("name", JSON_FORMATS)
@pytest.mark.parametrize("value", BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_json_formats_keep_the_call_as_content_or_raise(name: str, value: str) -> None:
    text = _text(name, value)
    result = get_parser(name).parse(text)
    assert result.tool_calls is None
    assert result.content is not None
    assert value in result.content  # the malformed call is kept as content, not lost
    with pytest.raises(ParseError):
        get_parser(name, strict=True).parse(text)


@pytest.mark.parametrize("name", sorted(set(list_parsers()) - set(JSON_FORMATS)))
def test_untyped_formats_keep_a_bad_json_value_as_its_text(name: str) -> None:
    for value in ("1e999", '"\\ud800"'):
        calls = get_parser(name).parse(_text(name, value)).tool_calls
        assert calls is not None
        assert json.loads(calls[0].function.arguments) == {"a": value}


def test_python_literal_surrogate_escapes_stay_text() -> None:
    for name, value in (("glm47", "['\\ud800']"), ("qwen3_coder", "['\\udfff', 1]")):
        calls = get_parser(name).parse(_text(name, value)).tool_calls
        assert calls is not None
        assert json.loads(calls[0].function.arguments) == {"a": value}


def test_surrogate_pairs_are_one_character_and_read() -> None:
    calls = get_parser("hermes").parse(_text("hermes", '"\\ud83d\\ude00"')).tool_calls
    assert calls is not None
    assert calls[0].function.arguments == '{"a": "😀"}'


def test_content_keeps_a_raw_lone_surrogate_as_given() -> None:
    text = 'odd \ud800 text <tool_call>{"name": "f", "arguments": {}}</tool_call>'
    result = get_parser("hermes").parse(text)
    assert result.content == "odd \ud800 text"
    assert result.tool_calls is not None


def test_strict_error_names_the_problem() -> None:
    with pytest.raises(ParseError, match="out of range"):
        get_parser("llama3_json", strict=True).parse('{"name": "f", "parameters": {"a": 1e999}}')
    with pytest.raises(ParseError, match="lone surrogate"):
        get_parser("llama4_json", strict=True).parse(
            '{"name": "f", "parameters": {"a": "\\ud800"}}'
        )
    with pytest.raises(ParseError, match="lone surrogate"):
        get_parser("mistral", strict=True).parse('[TOOL_CALLS]f[ARGS]{"a": "\ud800"}')
