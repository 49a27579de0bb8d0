"""Kimi K2: the template's exact rendering, ids, variants, strict errors, the custom scanner."""

from __future__ import annotations

import itertools
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_parsers import (
    ContentDelta,
    FunctionCall,
    ParseError,
    ReasoningDelta,
    ToolCall,
    ToolCallEvent,
    ToolCallParser,
    get_parser,
)
from hermes_parsers.formats.kimi_k2 import split_call_id
from tests.parsers.streams import check_stream

SB = "<|tool_calls_section_begin|>"
SE = "<|tool_calls_section_end|>"
SB1 = "<|tool_call_section_begin|>"
SE1 = "<|tool_call_section_end|>"
CB = "<|tool_call_begin|>"
AB = "<|tool_call_argument_begin|>"
CE = "<|tool_call_end|>"


def _call(name: str, arguments: object, call_id: str = "") -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _strict_error(text: str, **options: object) -> ParseError:
    with pytest.raises(ParseError) as caught:
        get_parser("kimi_k2", strict=True, **options).parse(text)
    return caught.value


# rendering ---------------------------------------------------------------------------
def test_render_matches_the_chat_template_exactly() -> None:
    # render_toolcalls: no whitespace anywhere; the arguments string as given.
    text = get_parser("kimi_k2").render(
        "Let me check both.",
        [
            _call("get_weather", '{"city": "Beijing"}', "functions.get_weather:0"),
            _call("get_weather", '{"city": "Shanghai"}', "functions.get_weather:1"),
        ],
    )
    assert text == (
        "Let me check both."
        "<|tool_calls_section_begin|>"
        '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Beijing"}'
        "<|tool_call_end|>"
        '<|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>{"city": "Shanghai"}'
        "<|tool_call_end|>"
        "<|tool_calls_section_end|>"
    )


def test_render_writes_the_arguments_string_verbatim() -> None:
    compact = '{"a":1,"b":[true,null]}'
    call = ToolCall("functions.f:0", FunctionCall("f", compact))
    text = get_parser("kimi_k2").render(None, [call])
    assert f"{AB}{compact}{CE}" in text


def test_render_reasoning_as_kimi_k2_thinking_does() -> None:
    parser = get_parser("kimi_k2")
    text = parser.render("Sure.", [_call("ls", {}, "functions.ls:0")], reasoning=" Plan it. ")
    assert text == f"<think>Plan it.</think>Sure.{SB}{CB}functions.ls:0{AB}{{}}{CE}{SE}"
    assert parser.render("Just text", reasoning="r") == "<think>r</think>Just text"
    prefilled = get_parser("kimi_k2", think_prefilled=True)
    text = prefilled.render(None, [_call("ls", {}, "functions.ls:0")], reasoning="Plan.")
    assert text == f"Plan.</think>{SB}{CB}functions.ls:0{AB}{{}}{CE}{SE}"
    result = prefilled.parse(text)
    assert result.reasoning == "Plan."
    assert result.tool_calls is not None
    assert result.tool_calls[0].id == "functions.ls:0"


@pytest.mark.parametrize(
    ("given_id", "written_id"),
    [
        ("functions.get_weather:0", "functions.get_weather:0"),
        ("functions.get_weather:12", "functions.get_weather:12"),
        ("get_weather:3", "get_weather:3"),  # the form without the prefix is kept
        ("call_abc123", "functions.get_weather:1"),  # OpenAI id: synthesised from position
        ("", "functions.get_weather:1"),
        ("0", "functions.get_weather:1"),  # a bare counter names no function
        ("functions.other:0", "functions.get_weather:1"),  # an id naming another function
        (" functions.get_weather:0", "functions.get_weather:1"),  # would not read back
    ],
)
def test_render_keeps_kimi_ids_and_synthesises_others(given_id: str, written_id: str) -> None:
    parser = get_parser("kimi_k2")
    calls = [_call("ls", {}, "functions.ls:0"), _call("get_weather", {"city": "x"}, given_id)]
    text = parser.render(None, calls)
    assert f"{CB}{written_id}{AB}" in text
    result = parser.parse(text)
    assert result.tool_calls is not None
    assert [c.id for c in result.tool_calls] == ["functions.ls:0", written_id]
    assert result.tool_calls[1].function.name == "get_weather"


def test_render_escapes_markers_inside_argument_strings() -> None:
    parser = get_parser("kimi_k2")
    arguments = {"text": f"a {CE} b {SE} c {CB} d {AB} </think>"}
    text = parser.render("x", [_call("echo", arguments, "functions.echo:0")])
    assert text.count(CE) == 1
    assert text.count(CB) == 1
    result = parser.parse(text)
    assert result.content == "x"
    assert result.tool_calls is not None
    assert json.loads(result.tool_calls[0].function.arguments) == arguments


@pytest.mark.parametrize(
    ("content", "calls", "reasoning", "message"),
    [
        (f"see {SB}", [], None, "content contains"),
        (f"see {SB1}", [], None, "content contains"),
        (f"see {CB}", [], None, "content contains"),
        ("a </think> b", [], None, "content contains"),
        (None, [], "a </think> b", "reasoning contains"),
        (None, [], f"a {SB} b", "reasoning contains"),
        (None, [_call("bad<|tool_call_end|>", {})], None, "cannot be written"),
        (None, [_call(" padded", {})], None, "cannot be written"),
        (None, [_call("", {})], None, "cannot be written"),
        (None, [ToolCall("functions.f:0", FunctionCall("f", "[1]"))], None, "JSON object"),
    ],
)
def test_render_refuses_what_cannot_be_written(
    content: str | None, calls: list[Any], reasoning: str | None, message: str
) -> None:
    parser = get_parser("kimi_k2")
    with pytest.raises(ValueError, match=message) as caught:
        parser.render(content, calls, reasoning=reasoning)
    assert str(caught.value).startswith("kimi_k2: ")


def test_render_refuses_non_json_arguments_of_a_hand_made_call() -> None:
    call = ToolCall("functions.f:0", FunctionCall("f", '{"x": NaN}'))
    with pytest.raises(ValueError, match="kimi_k2: arguments of 'f' are not valid JSON"):
        get_parser("kimi_k2").render(None, [call])


def test_content_and_stray_closing_markers_are_plain_text() -> None:
    # Only openers are markup outside a section; closers there are ordinary text.
    text = f"a {CE} b {SE} c {SE1} d {AB}"
    assert get_parser("kimi_k2", strict=True).parse(text).content == text
    assert get_parser("kimi_k2").render(text) == text


# ids and names -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call_id", "expected"),
    [
        ("functions.get_weather:0", ("get_weather", "0")),
        ("get_weather:12", ("get_weather", "12")),
        ("functions.mcp.fs.read:3", ("mcp.fs.read", "3")),
        ("functions.ns:tool:4", ("ns:tool", "4")),
        ("functions.functions.x:0", ("functions.x", "0")),
        ("functions.:17", ("", "17")),
        ("functions.get_weather", None),
        ("functions.get_weather:", None),
        ("functions.get_weather:1a", None),
        ("functions.get_weather:١", None),  # non-ASCII digit
        ("0", None),
        ("call_abc", None),
    ],
)
def test_split_call_id(call_id: str, expected: tuple[str, str] | None) -> None:
    assert split_call_id(call_id) == expected


def test_parse_keeps_the_id_as_written() -> None:
    text = f"{SB}{CB}  functions.complex_name_here:5 \n{AB}{{}}{CE}{SE}"
    result = get_parser("kimi_k2").parse(text)
    assert result.tool_calls is not None
    assert result.tool_calls[0].id == "functions.complex_name_here:5"
    assert result.tool_calls[0].function.name == "complex_name_here"


@pytest.mark.parametrize(("begin", "end"), [(SB, SE), (SB1, SE), (SB, SE1), (SB1, SE1)])
def test_section_marker_variants_combine(begin: str, end: str) -> None:
    text = f'Before. {begin}{CB}functions.f:0{AB}{{"a": 1}}{CE}{end} After.'
    result = get_parser("kimi_k2", strict=True).parse(text)
    assert result.content == "Before.  After."
    assert result.tool_calls is not None
    assert result.tool_calls[0].function.name == "f"


# bare counters (newer vLLM) -------------------------------------------------------------
def _tool(name: str, *params: str) -> dict[str, object]:
    properties = {p: {"type": "string"} for p in params}
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"properties": properties}},
    }


@pytest.mark.parametrize(
    ("tools", "arguments", "expected"),
    [
        ([_tool("get_weather", "city")], '{"city": "Tokyo"}', "get_weather"),
        (
            [_tool("get_weather", "city")],
            '{"city": "Tokyo"',
            "get_weather",
        ),  # bad JSON: call dropped later
        (
            [_tool("read_file", "path"), _tool("get_weather", "city", "unit")],
            '{"city": "x", "unit": "c"}',
            "get_weather",
        ),
        (
            [_tool("get_weather", "city", "unit"), _tool("book_flight", "city")],
            '{"city": "x"}',
            None,
        ),
        ([_tool("get_weather", "city"), _tool("book_flight", "city")], '{"city": "x"', None),
        ([_tool("a", "x"), _tool("b", "y")], '{"z": 1}', None),
        ([], '{"city": "Tokyo"}', None),
    ],
)
def test_bare_counter_ids_are_resolved_only_when_the_tools_tell(
    tools: list[dict[str, object]], arguments: str, expected: str | None
) -> None:
    text = f"{SB}{CB}0{AB}{arguments}{CE}{SE}"
    parser = get_parser("kimi_k2", tools=tools)
    resolved = parser._function_name("0", arguments)  # type: ignore[attr-defined]
    assert resolved == expected
    result = parser.parse(text)
    if expected is not None and arguments.endswith("}"):
        assert result.tool_calls is not None
        assert (result.tool_calls[0].id, result.tool_calls[0].function.name) == ("0", expected)
    else:
        assert result.tool_calls is None
        assert result.content is not None


def test_bare_counter_error_says_why() -> None:
    error = _strict_error(f"{SB}{CB}0{AB}{{}}{CE}{SE}")
    assert "names no function" in error.reason
    assert error.position == len(SB)


# strict errors -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "reason", "position"),
    [
        (
            f"ab{SB}{CB}functions.f{AB}{{}}{CE}{SE}",
            "is not of the form functions.NAME:INDEX",
            2 + len(SB),
        ),
        (f"{SB}{CB}functions.f:0 {{}}{CE}{SE}", "has no '<|tool_call_argument_begin|>'", len(SB)),
        (
            f'{SB}{CB}functions.f:0{AB}{{"a": 1}}{CB}functions.g:1{AB}{{}}{CE}{SE}',
            "not closed by",
            len(SB),
        ),
        (f"{SB}{CB}functions.f:0{AB}{{}}{CE}  junk {SE}", "outside any tool call", 109),
        (f"x {SB} {SE}", "holds no tool call", 2),
        (f"x {SB}", "cut off before any tool call", 2),
        (f'{SB}{CB}functions.f:0{AB}{{"a": [1, 2', "cut off inside its arguments", len(SB)),
        (f"{SB}{CB}functions.f:0", "cut off before its arguments", len(SB)),
        (f"{SB}{CB}functions.f:0{AB}  ", "cut off before its arguments", len(SB)),
        (f"{SB}{CB}functions.f:0{AB}[1]{CE}{SE}", "must be a JSON object", len(SB)),
        (f"{SB}{CB}functions.:0{AB}{{}}{CE}{SE}", "without a function name", len(SB)),
    ],
)
def test_strict_errors_name_the_problem_and_its_position(
    text: str, reason: str, position: int
) -> None:
    error = _strict_error(text)
    assert reason in error.reason
    assert error.position == position
    assert error.parser == "kimi_k2"
    # Lenient mode keeps the markup in the content instead.
    assert get_parser("kimi_k2").parse(text).content is not None


def test_lenient_mode_keeps_broken_markup_and_good_calls() -> None:
    bad = f'{CB}functions.bad:0{AB}{{"x": {CE}'
    text = f'Intro. {SB}{bad}{CB}functions.good:1{AB}{{"y": 2}}{CE}{SE} Outro.'
    result = get_parser("kimi_k2").parse(text)
    assert result.content == f"Intro. {bad} Outro."
    assert result.tool_calls is not None
    assert [(c.id, c.function.name) for c in result.tool_calls] == [("functions.good:1", "good")]


# reasoning ------------------------------------------------------------------------------
def test_section_inside_think_ends_reasoning_only_for_the_section() -> None:
    text = (
        f"<think>First I look. {SB}{CB}functions.ls:0{AB}{{}}{CE}{SE} Then I decide.</think>Answer."
    )
    result = get_parser("kimi_k2", strict=True).parse(text)
    assert result.reasoning == "First I look.  Then I decide."
    assert result.content == "Answer."
    assert result.tool_calls is not None


def test_unclosed_think_with_section_keeps_the_calls() -> None:
    text = f"<think>Checking {SB}{CB}functions.ls:0{AB}{{}}{CE}{SE}"
    result = get_parser("kimi_k2", strict=True).parse(text)
    assert result.reasoning == "Checking"
    assert result.content is None
    assert result.tool_calls is not None


def test_call_outside_a_section_inside_think() -> None:
    text = f"<think>r {CB}functions.ls:0{AB}{{}}{CE} s</think>c"
    result = get_parser("kimi_k2", strict=True).parse(text)
    assert (result.reasoning, result.content) == ("r  s", "c")
    assert result.tool_calls is not None
    # An unclosed call there is malformed; </think> still ends the reasoning.
    text = f"<think>r {CB}functions.ls:0{AB}{{}}</think>c"
    assert _strict_error(text).reason.startswith("tool call not closed")
    result = get_parser("kimi_k2").parse(text)
    assert result.reasoning == "r"
    assert result.content == f"{CB}functions.ls:0{AB}{{}}c"


def test_think_prefilled_starts_in_reasoning() -> None:
    parser = get_parser("kimi_k2", think_prefilled=True)
    result = parser.parse(f"plan{SB}{CB}functions.ls:0{AB}{{}}{CE}{SE}more plan</think>done")
    assert (result.reasoning, result.content) == ("planmore plan", "done")
    assert result.tool_calls is not None


# streaming -----------------------------------------------------------------------------
def test_content_and_reasoning_stream_before_the_text_ends() -> None:
    stream = get_parser("kimi_k2").stream()
    assert stream.feed("<think>Let me") == [ReasoningDelta("Let me")]
    assert stream.feed(" see</think>Hello <|tool_c") == [
        ReasoningDelta(" see"),
        ContentDelta("Hello "),
    ]
    assert stream.feed("alls_section_begin|>\n<|tool_call_begin|>functions.f:0") == []
    events = stream.feed(f"{AB}{{}}{CE}\n")
    assert len(events) == 1
    assert isinstance(events[0], ToolCallEvent)
    assert events[0].tool_call.id == "functions.f:0"
    # Whitespace inside the section is markup; text after it is content again.
    assert stream.feed(f"{SE} <|tool") == [ContentDelta(" ")]
    # A held-back prefix that turns out not to be a marker is released as content.
    assert stream.feed("box|>") == [ContentDelta("<|toolbox|>")]
    assert stream.close().content == "Hello  <|toolbox|>"


_PIECES = [
    SB, SE, SB1, SE1, CB, AB, CE, "<think>", "</think>",
    "functions.get_weather:0", "functions.f:12", "search:1", "0", "functions.bad",
    '{"city": "Paris"}', "{}", '{"a": [1, {"b": null}]}', '{"x": ', "[1]", '"<|tool_call_end|>"',
    " ", "\n", "Hello ", "done.", "<", "<|", "<|tool_call", "</", "<thi", "|>", "é日本",
]  # fmt: skip


def _strict_outcome(parser: ToolCallParser, pieces: list[str]) -> tuple[str, int] | None:
    """The strict error (reason, position) from feeding ``pieces``, or None."""
    stream = parser.stream()
    try:
        for piece in pieces:
            stream.feed(piece)
        stream.close()
    except ParseError as error:
        return error.reason, error.position
    return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=14),
    prefilled=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_any_mix_of_markup_is_chunk_invariant(
    pieces: list[str], prefilled: bool, seed: int
) -> None:
    text = "".join(pieces)
    rng = random.Random(seed)
    cuttings = [[text], list(text)]
    for _ in range(4 if len(text) > 1 else 0):
        cuts = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(0, 8))))
        bounds = [0, *cuts, len(text)]
        cuttings.append([text[a:b] for a, b in itertools.pairwise(bounds)])
    lenient = get_parser("kimi_k2", think_prefilled=prefilled)
    for cutting in cuttings:
        check_stream(lenient, cutting)
    # Strict mode raises the same error (or none) however the text is cut.
    strict = get_parser("kimi_k2", think_prefilled=prefilled, strict=True)
    outcomes = {_strict_outcome(strict, cutting) for cutting in cuttings}
    assert len(outcomes) == 1
    if outcomes == {None}:
        assert strict.parse(text) == lenient.parse(text)


def test_adversarial_inputs_parse() -> None:
    # Many unterminated openers, unclosed calls and deep JSON: no error, no blow-up.
    parser = get_parser("kimi_k2")
    for text in (
        SB * 20_000,
        CB * 20_000,
        SB + (CB + "functions.f:0" + AB) * 20_000,
        SB + CB + "functions.f:0" + AB + "[" * 50_000 + CE + SE,
        SB + CB + "functions.f:0" + AB + "[" * 50_000,
        "<think>" * 20_000,
        "<|tool_call" * 20_000,
    ):
        result = parser.parse(text)
        assert result.tool_calls is None
        assert result.content is not None or result.reasoning is not None
    many = SB + (CB + "functions.f:0" + AB + "{}" + CE) * 20_000 + SE
    assert len(parser.parse(many).tool_calls or []) == 20_000
