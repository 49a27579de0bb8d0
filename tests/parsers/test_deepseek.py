"""DeepSeek-V3 / R1 (``deepseek_v3``) and DeepSeek-V3.1 (``deepseek_v3_1``) specifics."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_parsers import (
    ContentDelta,
    FunctionCall,
    ParseError,
    ToolCall,
    ToolCallEvent,
    get_parser,
)
from hermes_parsers.formats.deepseek import DeepSeekV3Parser, DeepSeekV31Parser, _DeepSeekParser
from tests.parsers.quick_readings import quick_readings
from tests.parsers.steps import assert_linear
from tests.parsers.streams import check_stream

B = "<｜tool▁calls▁begin｜>"
E = "<｜tool▁calls▁end｜>"
CB = "<｜tool▁call▁begin｜>"
CE = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
EOS = "<｜end▁of▁sentence｜>"


def _call(name: str, arguments: Any) -> ToolCall:
    return ToolCall.from_dict({"function": {"name": name, "arguments": arguments}})


def _plain(calls: list[ToolCall] | None) -> list[tuple[str, Any]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in calls or []]


def _v3(name: str, arguments: str) -> str:
    return f"{CB}function{SEP}{name}\n```json\n{arguments}\n```{CE}"


def _v31(name: str, arguments: str) -> str:
    return f"{CB}{name}{SEP}{arguments}{CE}"


# names and registration -------------------------------------------------------------------
def test_names_and_alias() -> None:
    assert type(get_parser("deepseek_v3")) is DeepSeekV3Parser
    assert type(get_parser("deepseek_v3_1")) is DeepSeekV31Parser
    alias = get_parser("deepseek_v31")
    assert type(alias) is DeepSeekV31Parser
    assert alias.name == "deepseek_v3_1"
    assert not alias.carries_ids
    assert alias.content_with_calls


def test_special_tokens_are_the_tokenizers_bytes() -> None:
    # Fullwidth vertical line U+FF5C and lower one-eighth block U+2581, as in the tokenizer.
    assert B.encode() == (b"<\xef\xbd\x9ctool\xe2\x96\x81calls\xe2\x96\x81begin\xef\xbd\x9c>")
    assert {ord(c) for c in B + E + CB + CE + SEP + EOS if not c.isascii()} == {0xFF5C, 0x2581}


# rendering: exactly what the chat templates write ------------------------------------------
# Expected strings are the assistant tool-call turns rendered by the models' own templates
# (DeepSeek-V3-0324 / R1-0528 and DeepSeek-V3.1), without the final <｜end▁of▁sentence｜>.
V3_RENDERED = (
    "Let me check both."
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
    '```json\n{"city": "東京"}\n```<｜tool▁call▁end｜>\n'
    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n"
    "```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
)
V31_RENDERED = (
    "Let me check both."
    '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "東京"}'
    "<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
    "<｜tool▁calls▁end｜>"
)


@pytest.mark.parametrize(
    ("name", "expected"), [("deepseek_v3", V3_RENDERED), ("deepseek_v3_1", V31_RENDERED)]
)
def test_render_matches_the_chat_template(name: str, expected: str) -> None:
    parser = get_parser(name)
    calls = [_call("get_weather", {"city": "東京"}), _call("get_time", {})]
    assert parser.render("Let me check both.", calls) == expected
    assert parser.render(None, calls) == expected.removeprefix("Let me check both.")
    result = parser.parse(expected + EOS)
    assert result.content == "Let me check both."
    assert _plain(result.tool_calls) == [("get_weather", {"city": "東京"}), ("get_time", {})]


def test_render_single_call_no_content() -> None:
    call = _call("get_weather", {"location": "Tokyo", "days": [1, 2]})
    assert get_parser("deepseek_v3").render(None, [call]) == (
        B + _v3("get_weather", '{"location": "Tokyo", "days": [1, 2]}') + E
    )
    assert get_parser("deepseek_v3_1").render("", [call]) == (
        B + _v31("get_weather", '{"location": "Tokyo", "days": [1, 2]}') + E
    )


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v3_1"])
def test_render_keeps_the_arguments_spelling(name: str) -> None:
    # The templates insert function.arguments as given.
    call = ToolCall("call_1", FunctionCall("f", '{"a":1,"b":[true]}'))
    text = get_parser(name).render(None, [call])
    assert '{"a":1,"b":[true]}' in text
    assert _plain(get_parser(name).parse(text).tool_calls) == [("f", {"a": 1, "b": [True]})]


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v3_1"])
def test_render_escapes_markers_inside_argument_strings(name: str) -> None:
    parser = get_parser(name)
    tricky = {
        "text": f"a {CE} b {E} c {SEP} d {CB} e {B} f {EOS} g </think> ```\n``` h",
        "nested": {"k": [f"{CE}{E}"]},
    }
    text = parser.render("Here.", [_call("echo", tricky), _call("after", {"n": 1})])
    body = text.removeprefix("Here." + B).removesuffix(E)
    assert E not in body
    assert body.count(CE) == 2
    result = parser.parse(text)
    assert result.content == "Here."
    assert _plain(result.tool_calls) == [("echo", tricky), ("after", {"n": 1})]
    check_stream(parser, list(text))


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v3_1"])
@pytest.mark.parametrize("bad", ["get weather", "", f"a{SEP}b", f"x{CE}", "a\nb", "a<｜b"])
def test_render_refuses_names_it_cannot_spell(name: str, bad: str) -> None:
    call = ToolCall("call_1", FunctionCall(bad, "{}"))
    with pytest.raises(ValueError, match=rf"^{name}: function name"):
        get_parser(name).render(None, [call])


def test_v3_render_refuses_a_fence_in_the_name() -> None:
    with pytest.raises(ValueError, match=r"^deepseek_v3: "):
        get_parser("deepseek_v3").render(None, [ToolCall("c", FunctionCall("a```b", "{}"))])


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v3_1"])
@pytest.mark.parametrize("arguments", ["[1]", "{bad", '{"x": NaN}'])
def test_render_refuses_non_object_arguments(name: str, arguments: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name}: arguments of 'f'"):
        get_parser(name).render(None, [ToolCall("c", FunctionCall("f", arguments))])


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v3_1"])
@pytest.mark.parametrize("marker", [B, EOS, "<think>"])
def test_render_refuses_content_holding_markup(name: str, marker: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name}: content contains"):
        get_parser(name).render(f"see {marker} here", [_call("f", {})])


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v3_1"])
def test_render_with_reasoning_round_trips(name: str) -> None:
    calls = [_call("ls", {"path": "/"})]
    for prefilled in (False, True):
        parser = get_parser(name, think_prefilled=prefilled)
        text = parser.render("Listing.", calls, reasoning="Need the files.")
        assert text.startswith("Need the files." if prefilled else "<think>\nNeed the files.")
        result = parser.parse(text)
        assert (result.content, result.reasoning) == ("Listing.", "Need the files.")
        assert _plain(result.tool_calls) == [("ls", {"path": "/"})]


# parsing variants -------------------------------------------------------------------------
def test_v3_type_word_and_fence_tag_are_optional() -> None:
    parser = get_parser("deepseek_v3")
    text = B + f'{CB}{SEP}f\n```\n{{"a": 1}}\n```{CE}' + f"{CB}tool{SEP}g ```JSON\n{{}}```{CE}" + E
    assert _plain(parser.parse(text).tool_calls) == [("f", {"a": 1}), ("g", {})]


def test_v3_fence_inside_argument_strings() -> None:
    args = '{"md": "```js\\nx()\\n```", "tail": "```"}'
    result = get_parser("deepseek_v3").parse(B + _v3("write", args) + E)
    assert _plain(result.tool_calls) == [("write", {"md": "```js\nx()\n```", "tail": "```"})]


def test_double_encoded_arguments_are_decoded() -> None:
    text = B + _v31("f", json.dumps(json.dumps({"a": 1}))) + E
    assert _plain(get_parser("deepseek_v3_1").parse(text).tool_calls) == [("f", {"a": 1})]


def test_content_around_and_between_sections() -> None:
    text = "One." + B + _v31("a", "{}") + E + " Two." + B + _v31("b", "{}") + E + " Three." + EOS
    result = get_parser("deepseek_v3_1").parse(text)
    assert result.content == "One. Two. Three."
    assert _plain(result.tool_calls) == [("a", {}), ("b", {})]


def test_end_of_sentence_token_is_dropped() -> None:
    parser = get_parser("deepseek_v3_1")
    assert parser.parse("Hi." + EOS).content == "Hi."
    result = parser.parse("x" + B + _v31("a", "{}") + EOS)  # section cut by the end token
    assert (result.content, _plain(result.tool_calls)) == ("x", [("a", {})])
    thinking = get_parser("deepseek_v3_1", think_prefilled=True).parse("just thinking" + EOS)
    assert (thinking.reasoning, thinking.content) == ("just thinking", None)


def test_schemas_change_nothing() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "string"}}}}}]  # fmt: skip
    text = B + _v31("f", '{"n": 5}') + E
    assert _plain(get_parser("deepseek_v3_1", tools=tools).parse(text).tool_calls) == [
        ("f", {"n": 5})
    ]


# reasoning --------------------------------------------------------------------------------
def test_v31_thinking_calls_before_think_end_are_read() -> None:
    parser = get_parser("deepseek_v3_1", think_prefilled=True)
    text = "I should call it." + B + _v31("a", '{"x": 1}') + E + " Then answer.</think>Done."
    result = parser.parse(text)
    assert result.reasoning == "I should call it. Then answer."
    assert result.content == "Done."
    assert _plain(result.tool_calls) == [("a", {"x": 1})]


@pytest.mark.parametrize("strict", [False, True])
def test_broken_markup_inside_reasoning_stays_reasoning(strict: bool) -> None:
    parser = get_parser("deepseek_v3_1", think_prefilled=True, strict=strict)
    text = "Maybe " + B + _v31("a", "{oops") + E + " no.</think>Answer."
    result = parser.parse(text)
    assert result.tool_calls is None
    assert result.content == "Answer."
    assert result.reasoning == "Maybe " + B + _v31("a", "{oops") + E + " no."


def test_r1_closed_think_then_calls() -> None:
    text = "<think>\nplan\n</think>\n\n" + B + _v3("f", "{}") + E + EOS
    result = get_parser("deepseek_v3").parse(text)
    assert (result.reasoning, result.content, _plain(result.tool_calls)) == (
        "plan",
        None,
        [("f", {})],
    )


# malformed: lenient content and strict errors --------------------------------------------
def test_lenient_keeps_malformed_markup_as_content() -> None:
    parser = get_parser("deepseek_v3_1")
    bad = _v31("b", '{"x": ')
    result = parser.parse("Go." + B + _v31("a", "{}") + bad + E)
    assert result.content == "Go." + bad
    assert _plain(result.tool_calls) == [("a", {})]
    # A section with no good call is kept whole, markers and all.
    whole = "Go." + B + bad + E
    assert tuple(parser.parse(whole)) == (whole, None)
    # A stray opener before a real section is kept, the real one is read.
    stray = parser.parse("oops " + B + " wait. " + B + _v31("a", "{}") + E)
    assert stray.content == "oops " + B + " wait."
    assert _plain(stray.tool_calls) == [("a", {})]


def _strict_error(name: str, text: str, **options: Any) -> ParseError:
    with pytest.raises(ParseError) as caught:
        get_parser(name, strict=True, **options).parse(text)
    return caught.value


def test_strict_error_points_at_the_broken_call() -> None:
    good = _v3("a", "{}")
    text = "Go." + B + good + "\n" + _v3("b", '{"x": ') + E
    error = _strict_error("deepseek_v3", text)
    assert error.position == len("Go." + B + good + "\n")
    assert text[error.position :].startswith(CB + "function")
    assert error.reason.startswith("arguments of 'b' are not valid JSON")


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("deepseek_v3", "x" + B + f"{CB}f\n```json\n{{}}\n```{CE}" + E, "has no '<｜tool▁sep｜>'"),
        (
            "deepseek_v3",
            "x" + B + f"{CB}function{SEP}f {{}}{CE}" + E,
            "not in a ```json code block",
        ),
        (
            "deepseek_v3",
            "x" + B + f"{CB}function{SEP}\n```json\n{{}}\n```{CE}" + E,
            "without a function name",
        ),
        ("deepseek_v3_1", "x" + B + _v31("f", "[1]") + E, "must be a JSON object, got list"),
        ("deepseek_v3_1", "x" + B + _v31("a b", "{}") + E, "contains whitespace"),
        ("deepseek_v3_1", "x" + B + E, "holds no tool call"),
        ("deepseek_v3_1", "x" + B + f'{CB}f{SEP}{{"a": ', "never closed"),
    ],
)
def test_strict_reasons(name: str, text: str, reason: str) -> None:
    error = _strict_error(name, text)
    assert reason in error.reason
    assert error.position == 1  # the section, which holds no good call, starts there


def test_strict_stray_text_and_unclosed_call_positions() -> None:
    text = B + _v31("a", "{}") + " junk " + _v31("b", "{}") + E
    error = _strict_error("deepseek_v3_1", text)
    assert error.reason == "text inside the tool-calls section outside any call"
    assert error.position == len(B + _v31("a", "{}"))
    unclosed = B + f"{CB}a{SEP}{{}}" + _v31("b", "{}") + E
    error = _strict_error("deepseek_v3_1", unclosed)
    assert "not closed by '<｜tool▁call▁end｜>' before the next call" in error.reason
    assert error.position == len(B)


# streaming and linear time ----------------------------------------------------------------
def test_calls_stream_out_when_the_section_closes() -> None:
    stream = get_parser("deepseek_v3_1").stream()
    assert stream.feed("Hi." + B + _v31("a", "{}")) == [ContentDelta("Hi.")]
    events = stream.feed(E + " bye")
    assert [e.tool_call.function.name for e in events if isinstance(e, ToolCallEvent)] == ["a"]
    assert stream.close().content == "Hi. bye"


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v3_1"])
@pytest.mark.parametrize(
    ("head", "unit", "tail"),
    [
        ("", B, ""),
        (B, CB, ""),
        (B, CB + SEP, ""),
        ("<think>", B + CB, ""),
        (B + CB + "f" + SEP, "[", ""),
        (B, CB + "function" + SEP + "f\n```json\n{}\n```" + CE, "x"),
    ],
    ids=["openers", "call-openers", "separators", "in-think", "deep-json", "many-calls"],
)
def test_adversarial_inputs_parse_in_linear_time(
    name: str, head: str, unit: str, tail: str
) -> None:
    parser = get_parser(name)
    result = parser.parse(head + unit * 1000 + tail)
    assert result.content is not None or result.reasoning is not None or result.tool_calls
    assert_linear(lambda count: parser.parse(head + unit * count + tail), 3000 // len(unit))


@pytest.mark.parametrize("name", ["deepseek_v3", "deepseek_v3_1"])
def test_one_character_at_a_time_is_linear(name: str) -> None:
    parser = get_parser(name)

    def run(count: int) -> None:
        call = parser.render("Writing.", [_call("write", {"data": "x" * count})])
        stream = parser.stream()
        for char in call:
            stream.feed(char)
        result = stream.close()
        assert result == parser.parse(call)
        assert _plain(result.tool_calls) == [("write", {"data": "x" * count})]

    assert_linear(run, 300)


_V31_QUICK_CASES = {
    "identifier names, ASCII JSON": ("f", '{"a": 1}', "g", '{"b": "x\\ny"}'),
    "a name that is not an identifier": ("get-weather", '{"a": 1}', "g", "{}"),
    "non-ASCII JSON": ("f", '{"a": "é"}', "g", '{"b": 2}'),
    "JSON holding a marker": ("f", '{"a": "\\uff5c<｜tool▁call▁end｜>"}', "g", "{}"),
    "space before the end marker": ("f", '{"a": 1} ', "g", "{}"),
    "no arguments": ("f", "", "g", '{"b": 2}'),
    "an escaped surrogate pair": ("f", '{"a": "\\ud83d\\ude00"}', "g", "{}"),
}


_B, _E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
_CB, _CE, _SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
_F = f'{_CB}f{_SEP}{{"a": "x\\ny", "b": [1, 2]}}{_CE}'
_G = f'{_CB}g{_SEP}{{"c": {{"d": null}}}}{_CE}'

#: Whole V3.1 turns for the section-level steps of the quick reading: True when the
#: inlined reading reads it (calls chained as the template writes them).
_V31_SECTIONS = {
    "one call": (f"Hi{_B}{_F}{_E}", True),
    "chained calls": (f"Hi{_B}{_F}{_G}{_E}", True),
    "no content": (f"{_B}{_F}{_G}{_E}", True),
    "content after": (f"Hi{_B}{_F}{_E} bye", True),
    "spaces around the name": (f'{_B}{_CB} f {_SEP}{{"a": 1}}{_CE}{_E}', True),
    "a newline between calls": (f"Hi{_B}{_F}\n{_G}{_E}", False),
    "a newline after the section's start": (f"Hi{_B}\n{_F}{_E}", False),
    "a newline before the section's end": (f"Hi{_B}{_F}\n{_E}", False),
    "text between calls": (f"Hi{_B}{_F}x{_G}{_E}", False),
    "an unclosed section": (f"Hi{_B}{_F}{_G}", False),
    "an unclosed call": (f'Hi{_B}{_CB}f{_SEP}{{"a": 1}}{_E}', False),
    "a call after the section": (f"Hi{_B}{_F}{_E}{_G}", False),
    "a second section": (f"Hi{_B}{_F}{_E}{_B}{_G}{_E}", False),
    "reasoning after": (f"Hi{_B}{_F}{_E}<think>x</think>", False),
    "reasoning before": (f"<think>x</think>Hi{_B}{_F}{_E}", False),
    "an end of turn after": (f"Hi{_B}{_F}{_E}<｜end▁of▁sentence｜>", False),
    "an end of turn before": (f"Hi<｜end▁of▁sentence｜>{_B}{_F}{_E}", False),
    "no separator in the call": (f'Hi{_B}{_CB}f{{"a": 1}}{_CE}{_E}', False),
    "a separator only after the section": (f"Hi{_B}{_CB}f{_CE}{_E}x{_SEP}{{}}", False),
    "an end marker in a JSON string": (f'Hi{_B}{_CB}f{_SEP}{{"a": "{_CE}"}}{_CE}{_E}', False),
    "broken JSON": (f'Hi{_B}{_CB}f{_SEP}{{"a" 1}}{_CE}{_E}', False),
    "a JSON array": (f"Hi{_B}{_CB}f{_SEP}[1]{_CE}{_E}", False),
    "a lone surrogate's escape": (f'Hi{_B}{_CB}f{_SEP}{{"a": "\\ud800"}}{_CE}{_E}', False),
}


@pytest.mark.parametrize("case", list(_V31_SECTIONS))
def test_v31_quick_reading_of_whole_sections(case: str) -> None:
    """The V3.1 quick reading's section steps (each marker found in place, no search ahead
    of the calls) against the general path, in lenient and strict mode; the template's
    chained calls are read quickly, as the base class's reading reads them."""
    text, inlined = _V31_SECTIONS[case]
    quick = quick_readings("deepseek_v3_1", text)[False]
    if inlined:
        assert quick is not None
        assert _DeepSeekParser._parse_quick(DeepSeekV31Parser(), text) == quick


@pytest.mark.parametrize("case", list(_V31_QUICK_CASES))
def test_v31_quick_reading_gives_the_general_answer(case: str) -> None:
    """The V3.1 quick reading (each call's end found by decoding its JSON) against the
    general path, on calls it reads itself and on calls it leaves to the base class."""
    first, first_args, second, second_args = _V31_QUICK_CASES[case]
    text = (
        f"Hi<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{first}<｜tool▁sep｜>{first_args}"
        f"<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>{second}<｜tool▁sep｜>{second_args}"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    )
    quick = quick_readings("deepseek_v3_1", text)[False]
    if case == "identifier names, ASCII JSON":
        assert quick is not None
        assert [(c.function.name, json.loads(c.function.arguments)) for c in quick[1] or []] == [
            ("f", {"a": 1}),
            ("g", {"b": "x\ny"}),
        ]
