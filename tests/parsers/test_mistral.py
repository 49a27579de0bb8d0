"""Mistral specifics: every spelling of [TOOL_CALLS], the render styles, ids, reasoning."""

from __future__ import annotations

import hashlib
import json
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_parsers import (
    ContentDelta,
    ParseError,
    ParseResult,
    ToolCall,
    ToolCallEvent,
    get_parser,
)
from hermes_parsers.formats.mistral import MistralParser, mistral_call_id
from tests.parsers.strategies import ARGUMENTS, NAMES, TEXT
from tests.parsers.streams import check_stream

WEATHER = ToolCall.from_dict(
    {"id": "a1B2c3D4e", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
)
TIME = ToolCall.from_dict({"id": "Z9y8X7w6V", "function": {"name": "get_time", "arguments": {}}})


def _calls(result: ParseResult) -> list[tuple[str, dict[str, Any]]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in result.tool_calls or []]


# options --------------------------------------------------------------------------------
def test_default_parser_needs_no_options_and_renders_args_style() -> None:
    parser = get_parser("mistral")
    assert isinstance(parser, MistralParser)
    assert parser.style == "args"
    assert parser.render(None, [WEATHER]) == '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'


def test_style_option_and_bad_style() -> None:
    parser = get_parser("mistral", style="array")
    assert isinstance(parser, MistralParser)
    assert parser.style == "array"
    with pytest.raises(ValueError, match="mistral: style must be one of"):
        get_parser("mistral", style="xml")


def test_default_style_class_attribute() -> None:
    class Legacy(MistralParser):
        default_style = "array"

    assert Legacy().style == "array"
    assert Legacy(style="call_id").style == "call_id"


# rendering: exactly what the chat templates write -----------------------------------------
def test_render_args_style_matches_v13_template() -> None:
    # content, then '[TOOL_CALLS]' + name + '[ARGS]' + arguments|tojson per call, no separators
    text = get_parser("mistral").render("Checking both.", [WEATHER, TIME])
    assert text == (
        'Checking both.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}'
    )


def test_render_call_id_style_matches_v11_template() -> None:
    text = get_parser("mistral", style="call_id").render(None, [WEATHER, TIME])
    assert text == (
        '[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{"city": "Paris"}'
        "[TOOL_CALLS]get_time[CALL_ID]Z9y8X7w6V[ARGS]{}"
    )
    # A call without an id is written without [CALL_ID], as mistral-common does.
    bare = ToolCall.from_dict({"function": {"name": "get_time", "arguments": {}}})
    assert get_parser("mistral", style="call_id").render(None, [bare]) == (
        "[TOOL_CALLS]get_time[ARGS]{}"
    )


def test_render_array_style_matches_v3_template() -> None:
    text = get_parser("mistral", style="array").render(None, [WEATHER, TIME])
    assert text == (
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1B2c3D4e"}, '
        '{"name": "get_time", "arguments": {}, "id": "Z9y8X7w6V"}]'
    )


def test_render_reasoning_as_think_chunk() -> None:
    parser = get_parser("mistral")
    text = parser.render("Let me check.", [WEATHER], reasoning="  Paris weather needed.  ")
    assert text == (
        "[THINK]Paris weather needed.[/THINK]Let me check."
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}'
    )
    assert parser.parse(text).reasoning == "Paris weather needed."
    prefilled = get_parser("mistral", think_prefilled=True)
    text = prefilled.render("Sure.", None, reasoning="plan")
    assert text == "plan[/THINK]Sure."
    result = prefilled.parse(text)
    assert (result.content, result.reasoning) == ("Sure.", "plan")


@pytest.mark.parametrize("style", ["args", "call_id", "array"])
def test_every_style_round_trips_with_ids_where_written(style: str) -> None:
    parser = get_parser("mistral", style=style)
    awkward = ToolCall.from_dict(
        {
            "id": "q1W2e3R4t",
            "function": {
                "name": "note",
                "arguments": {
                    "text": "[TOOL_CALLS]x[ARGS]{} [THINK] </think> 日本",
                    "n": [1.5, None],
                },
            },
        }
    )
    text = parser.render("Writing it down.", [awkward, WEATHER], reasoning="why")
    assert "[TOOL_CALLS]x" not in text  # markers inside JSON strings are escaped
    result = parser.parse(text)
    assert result.content == "Writing it down."
    assert result.reasoning == "why"
    assert [c.function for c in result.tool_calls or []] == [awkward.function, WEATHER.function]
    if style != "args":
        assert [c.id for c in result.tool_calls or []] == ["q1W2e3R4t", "a1B2c3D4e"]
    check_stream(parser, [text[i : i + 3] for i in range(0, len(text), 3)])


@pytest.mark.parametrize("style", ["call_id", "array"])
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_styles_with_ids_round_trip_ids(style: str, data: st.DataObject) -> None:
    parser = get_parser("mistral", style=style)
    ids = st.text(string.ascii_letters + string.digits, min_size=9, max_size=9)
    calls = [
        ToolCall.from_dict({"id": data.draw(ids), "function": {"name": n, "arguments": a}})
        for n, a in data.draw(st.lists(st.tuples(NAMES, ARGUMENTS), max_size=3))
    ]
    markup = ("[TOOL_CALLS]", "[THINK]", "<think>", "</think>")
    drawn = data.draw(TEXT.map(str.strip).filter(lambda t: not any(m in t for m in markup)))
    content = drawn or None
    text = parser.render(content, calls)
    result = parser.parse(text)
    assert result.content == content
    assert [(c.id, c.function) for c in result.tool_calls or []] == [
        (c.id, c.function) for c in calls
    ]


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_prefilled_round_trip(data: st.DataObject) -> None:
    parser = get_parser("mistral", think_prefilled=True)
    calls = [
        ToolCall.from_dict({"function": {"name": n, "arguments": a}})
        for n, a in data.draw(st.lists(st.tuples(NAMES, ARGUMENTS), max_size=2))
    ]
    markup = ("[TOOL_CALLS]", "[THINK]", "[/THINK]", "<think>", "</think>")
    clean = TEXT.map(str.strip).filter(lambda t: not any(m in t for m in markup))
    content, reasoning = data.draw(clean) or None, data.draw(clean) or None
    text = parser.render(content, calls, reasoning=reasoning)
    result = parser.parse(text)
    assert (result.content, result.reasoning) == (content, reasoning)
    assert [c.function for c in result.tool_calls or []] == [c.function for c in calls]
    check_stream(parser, [text[i : i + 2] for i in range(0, len(text), 2)])


@pytest.mark.parametrize(
    ("content", "marker"),
    [("see [TOOL_CALLS]", "[TOOL_CALLS]"), ("a [THINK] b", "[THINK]"), ("x </think>", "</think>")],
)
def test_render_refuses_markup_in_content(content: str, marker: str) -> None:
    with pytest.raises(ValueError, match=r"^mistral: content contains") as caught:
        get_parser("mistral").render(content, [WEATHER])
    assert marker in str(caught.value)


def test_render_refuses_what_the_per_call_form_cannot_spell() -> None:
    spaced = ToolCall.from_dict({"function": {"name": "get weather", "arguments": {}}})
    with pytest.raises(ValueError, match=r"^mistral: function name 'get weather'"):
        get_parser("mistral").render(None, [spaced])
    braced = ToolCall.from_dict({"function": {"name": "f{x}", "arguments": {}}})
    with pytest.raises(ValueError, match=r"^mistral: function name"):
        get_parser("mistral").render(None, [braced])
    bad_id = ToolCall.from_dict({"id": "has space", "function": {"name": "f", "arguments": {}}})
    with pytest.raises(ValueError, match=r"^mistral: call id 'has space'"):
        get_parser("mistral", style="call_id").render(None, [bad_id])
    # The JSON array spells any name and id.
    text = get_parser("mistral", style="array").render(None, [spaced, bad_id])
    result = get_parser("mistral").parse(text)
    assert [c.function.name for c in result.tool_calls or []] == ["get weather", "f"]
    assert (result.tool_calls or [])[1].id == "has space"


def test_render_refuses_reasoning_that_closes_itself_and_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"^mistral: reasoning contains '\[/THINK\]'"):
        get_parser("mistral").render("hi", None, reasoning="a [/THINK] b")
    handmade = ToolCall("x", WEATHER.function.__class__("f", "[1, 2]"))
    with pytest.raises(ValueError, match=r"^mistral: arguments of 'f' are not a JSON object"):
        get_parser("mistral").render(None, [handmade])


# parsing: every spelling, whatever the render style ------------------------------------
@pytest.mark.parametrize("style", ["args", "call_id", "array"])
def test_parse_accepts_every_form_regardless_of_style(style: str) -> None:
    parser = get_parser("mistral", style=style)
    text = (
        "Start."
        '[TOOL_CALLS]a[ARGS]{"n": 1}'
        '[TOOL_CALLS]b[CALL_ID]abcDEF123[ARGS]{"n": 2}'
        '[TOOL_CALLS]c{"n": 3}'
        '[TOOL_CALLS] [{"name": "d", "arguments": {"n": 4}, "id": "dddDDD444"}, {"name": "e"}]'
        '[TOOL_CALLS]{"name": "f", "arguments": {"n": 6}}'
    )
    result = parser.parse(text)
    assert result.content == "Start."
    assert _calls(result) == [
        ("a", {"n": 1}),
        ("b", {"n": 2}),
        ("c", {"n": 3}),
        ("d", {"n": 4}),
        ("e", {}),
        ("f", {"n": 6}),
    ]
    ids = [c.id for c in result.tool_calls or []]
    assert ids[1] == "abcDEF123"
    assert ids[3] == "dddDDD444"


def test_whitespace_around_parts_is_tolerated() -> None:
    text = '[TOOL_CALLS] get_time [CALL_ID] abcDEF123 [ARGS]\n{"tz": "UTC"}\n'
    result = get_parser("mistral", strict=True).parse(text)
    assert _calls(result) == [("get_time", {"tz": "UTC"})]
    assert (result.tool_calls or [])[0].id == "abcDEF123"
    assert result.content is None


def test_text_between_and_after_calls_is_content() -> None:
    text = "Before.[TOOL_CALLS]a[ARGS]{} then [TOOL_CALLS]b[ARGS]{}\nAfter."
    result = get_parser("mistral").parse(text)
    assert _calls(result) == [("a", {}), ("b", {})]
    assert result.content == "Before. then \nAfter."


def test_think_blocks_after_calls_are_reasoning() -> None:
    text = "[TOOL_CALLS]a[ARGS]{} [THINK]second thoughts[/THINK] done"
    result = get_parser("mistral").parse(text)
    assert _calls(result) == [("a", {})]
    assert result.reasoning == "second thoughts"
    assert result.content == "done"


def test_tool_calls_inside_think_are_reasoning() -> None:
    text = '[THINK]I could write [TOOL_CALLS]x[ARGS]{}[/THINK][TOOL_CALLS]y[ARGS]{"k": 1}'
    result = get_parser("mistral").parse(text)
    assert result.reasoning == "I could write [TOOL_CALLS]x[ARGS]{}"
    assert _calls(result) == [("y", {"k": 1})]


def test_stray_close_think_is_content_like_vllm() -> None:
    result = get_parser("mistral").parse("answer[/THINK] more")
    assert (result.content, result.reasoning) == ("answer[/THINK] more", None)


def test_prefilled_think_ends_at_either_closer_and_keeps_offsets() -> None:
    parser = get_parser("mistral", think_prefilled=True)
    for closer in ("[/THINK]", "</think>"):
        text = f"plan [TOOL_CALLS]x{closer}[/THINK] ok[TOOL_CALLS]a[ARGS]{{}}"
        result = parser.parse(text)
        assert result.reasoning == "plan [TOOL_CALLS]x"
        assert result.content == "[/THINK] ok"
        assert _calls(result) == [("a", {})]
        for size in (1, 2, 5, 9):
            check_stream(parser, [text[i : i + size] for i in range(0, len(text), size)])
    text = "r</think>Hi [TOOL_CALLS]bad name[ARGS]{}"
    with pytest.raises(ParseError) as caught:
        get_parser("mistral", think_prefilled=True, strict=True).parse(text)
    assert caught.value.position == text.index("[TOOL_CALLS]")
    with pytest.raises(ValueError, match=r"^mistral: reasoning contains '</think>'"):
        parser.render("hi", None, reasoning="a </think> b")


def test_prefilled_think_without_close_is_all_reasoning() -> None:
    result = get_parser("mistral", think_prefilled=True).parse("still [TOOL_CALLS]a[ARGS]{}")
    assert (result.content, result.tool_calls, result.reasoning) == (
        None,
        None,
        "still [TOOL_CALLS]a[ARGS]{}",
    )


# ids ----------------------------------------------------------------------------------
def test_missing_ids_are_deterministic_nine_alphanumerics() -> None:
    text = "[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]a[ARGS]{}"
    first = get_parser("mistral").parse(text).tool_calls or []
    again = get_parser("mistral").parse(text).tool_calls or []
    assert [c.id for c in first] == [c.id for c in again]
    assert first[0].id != first[1].id
    for call in first:
        assert len(call.id) == 9
        assert set(call.id) <= set(string.ascii_letters + string.digits)
    assert (
        mistral_call_id(0, "a", "x") == mistral_call_id(0, "a", "x") != mistral_call_id(1, "a", "x")
    )


def _documented_id(index: int, name: Any, source: str) -> str:
    """``mistral_call_id`` as its docstring states it: blake2b (9 bytes) of the position,
    the name, the UTF-8 length, every ``size // 1024 + 1``-th byte, the first and the last
    64 bytes, each byte mapped to one of the 62 alphanumerics."""
    data = source.encode("utf-8", "surrogatepass")
    size = len(data)
    head = f"{index}\0{name}\0{size}\0".encode("utf-8", "surrogatepass")
    sample = data[:: size // 1024 + 1] + data[:64] + data[-64:]
    digest = hashlib.blake2b(head + sample, digest_size=9).digest()
    alphabet = string.ascii_letters + string.digits
    return "".join(alphabet[byte % 62] for byte in digest)


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 5000, 100_000])
@pytest.mark.parametrize("alphabet", ["ab{", "aé", "a\U0001f600", "a\ud800"])
def test_missing_id_hashes_the_length_ends_and_a_bounded_sample(size: int, alphabet: str) -> None:
    """All of a call up to 1023 bytes of UTF-8; beyond, its length, its ends and about a
    kilobyte sampled at even steps (ASCII calls are sampled before encoding: same bytes)."""
    source = "".join(alphabet[i * 7 % len(alphabet)] for i in range(size))
    for index, name in ((0, "f"), (3, "é"), (1, 7)):
        assert mistral_call_id(index, name, source) == _documented_id(index, name, source)
    if size > 2048:  # a byte between the samples does not count; one in them does
        step = len(source.encode("utf-8", "surrogatepass")) // 1024 + 1
        if source.isascii():
            at = step * 100 + 1  # between two samples, away from both ends
            unsampled = source[:at] + "Z" + source[at + 1 :]
            assert mistral_call_id(0, "f", unsampled) == mistral_call_id(0, "f", source)
        changed = "Z" + source[1:]
        assert mistral_call_id(0, "f", changed) != mistral_call_id(0, "f", source)


def test_a_marker_inside_a_json_string_is_read_quickly_as_the_general_path_reads_it() -> None:
    """The quick reading decodes a call's JSON from where it starts: a ``[TOOL_CALLS]``
    inside one of its strings is text, as the group reader's widened window reads it."""
    parser = get_parser("mistral")
    text = (
        'Hi[TOOL_CALLS]f{"a": "x[TOOL_CALLS]y", "b": "[ARGS]"} then'
        '[TOOL_CALLS]g[ARGS]{"c": "[TOOL_CALLS]g[ARGS]{}"}'
    )
    quick = parser._parse_quick(text)
    assert quick is not None
    assert quick == parser._parse_markup(text) == parser.parse(text)
    assert quick.content == "Hi then"
    assert _calls(quick) == [
        ("f", {"a": "x[TOOL_CALLS]y", "b": "[ARGS]"}),
        ("g", {"c": "[TOOL_CALLS]g[ARGS]{}"}),
    ]


def test_a_name_holding_a_bracket_is_left_to_the_general_path() -> None:
    parser = get_parser("mistral")
    text = '[TOOL_CALLS]a[b{"x": 1}[TOOL_CALLS]f[CALL_ID]abc123XYZ[ARGS]{}'
    assert parser._parse_quick(text) is None
    assert _calls(parser.parse(text)) == [("a[b", {"x": 1}), ("f", {})]


def test_non_string_id_in_array_is_replaced() -> None:
    text = '[TOOL_CALLS] [{"name": "a", "arguments": {}, "id": 7}]'
    call = (get_parser("mistral").parse(text).tool_calls or [])[0]
    assert len(call.id) == 9
    assert call.id.isalnum()


# strict mode: reasons and positions --------------------------------------------------
@pytest.mark.parametrize(
    ("text", "position", "reason"),
    [
        (
            "Hi [TOOL_CALLS]get weather[ARGS]{}",
            3,
            "function name 'get weather' contains whitespace",
        ),
        ('ok[TOOL_CALLS]f[ARGS]{"a": ', 2, "arguments of 'f' are not valid JSON"),
        ("[TOOL_CALLS]f", 0, "tool call 'f' has no [ARGS] and no JSON arguments"),
        ("x [TOOL_CALLS]", 2, "[TOOL_CALLS] is not followed by a tool call"),
        ("[TOOL_CALLS][ARGS]{}", 0, "tool call without a function name"),
        ("[TOOL_CALLS]f[ARGS]", 0, "tool call 'f' has no JSON arguments"),
        ("[TOOL_CALLS]f[CALL_ID]abc", 0, "[CALL_ID] is not followed by [ARGS]"),
        ("[TOOL_CALLS] []", 0, "[TOOL_CALLS] list is empty"),
        ('[TOOL_CALLS] [{"arguments": {}}]', 0, 'tool call JSON has no "name"'),
        ("[TOOL_CALLS] [3]", 0, "must be a JSON object"),
        ('[TOOL_CALLS] [{"name": "a"} x]', 28, "expected ',' or ']'"),
        (
            '[TOOL_CALLS] [{"name": "a"}, {"na',
            27,
            "tool call in the [TOOL_CALLS] list is not valid",
        ),
        ("[TOOL_CALLS]f[ARGS][1]", 0, "arguments must be a JSON object, got list"),
    ],
)
def test_strict_errors_say_what_and_where(text: str, position: int, reason: str) -> None:
    with pytest.raises(ParseError) as caught:
        get_parser("mistral", strict=True).parse(text)
    assert caught.value.parser == "mistral"
    assert caught.value.position == position
    assert reason in caught.value.reason
    lenient = get_parser("mistral").parse(text)
    assert lenient.content is not None


def test_good_calls_before_a_broken_one_survive_in_lenient_mode() -> None:
    text = '[TOOL_CALLS] [{"name": "a", "arguments": {"k": 1}}, {"name": 5}, {"name": "c"}]'
    result = get_parser("mistral").parse(text)
    assert _calls(result) == [("a", {"k": 1}), ("c", {})]
    assert result.content == ', {"name": 5}'


# adversarial input and streaming -------------------------------------------------------
def test_deeply_nested_arguments_are_malformed_not_a_crash() -> None:
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    text = f"[TOOL_CALLS]deep[ARGS]{deep}[TOOL_CALLS]ok[ARGS]{{}}"
    result = get_parser("mistral").parse(text)
    assert _calls(result) == [("ok", {})]
    with pytest.raises(ParseError, match="nested too deeply"):
        get_parser("mistral", strict=True).parse(text)


def test_many_unterminated_markers() -> None:
    text = "[TOOL_CALLS]" * 100_000
    result = get_parser("mistral").parse(text)
    assert result.tool_calls is None
    assert result.content == text
    half = '[TOOL_CALLS]f[ARGS]{"a": "' * 20_000
    assert get_parser("mistral").parse(half).tool_calls is None


def test_long_output_fed_one_character_at_a_time() -> None:
    parser = get_parser("mistral")
    calls = [
        ToolCall.from_dict({"function": {"name": f"f{i}", "arguments": {"body": "x{}[]\n" * 200}}})
        for i in range(20)
    ]
    text = parser.render("Intro " * 500, calls, reasoning="r " * 500)
    check_stream(parser, list(text))


def test_content_streams_before_calls_and_calls_arrive_at_close() -> None:
    stream = get_parser("mistral").stream()
    assert stream.feed("Let me check[TOOL") == [ContentDelta("Let me check")]
    assert stream.feed('_CALLS]get_time[ARGS]{"tz": "UTC"}') == []
    events = stream.flush()
    assert [type(e) for e in events] == [ToolCallEvent]
    result = stream.close()
    assert _calls(result) == [("get_time", {"tz": "UTC"})]
