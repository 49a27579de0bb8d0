"""LongCat-Flash: the model card's rendering, reasoning tags, the key/value-tag variant."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_parsers import FunctionCall, ParseError, ToolCall, get_parser
from tests.parsers.streams import check_stream, chunkings

OPEN = "<longcat_tool_call>"
CLOSE = "</longcat_tool_call>"


def _call(name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def _arguments(text: str, **options: Any) -> list[tuple[str, dict[str, Any]]]:
    result = get_parser("longcat", strict=True, **options).parse(text)
    return [(c.function.name, json.loads(c.function.arguments)) for c in result.tool_calls or []]


# rendering ---------------------------------------------------------------------------
def test_render_matches_the_model_card_format() -> None:
    text = get_parser("longcat").render(
        "Let me check.",
        [_call("get_weather", {"city": "Tokyo"}), _call("get_time", {"timezone": "Asia/Tokyo"})],
    )
    # One block per call, JSON between newlines, blocks placed consecutively.
    assert text == (
        "Let me check.\n"
        '<longcat_tool_call>\n{"name": "get_weather", "arguments": {"city": "Tokyo"}}\n'
        "</longcat_tool_call>"
        '<longcat_tool_call>\n{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}\n'
        "</longcat_tool_call>"
    )


def test_render_reasoning_with_longcat_think_tags() -> None:
    parser = get_parser("longcat")
    text = parser.render("The sum is 3.", reasoning=" Add them. ")
    assert text == "<longcat_think>\nAdd them.\n</longcat_think>\nThe sum is 3."
    assert parser.parse(text).reasoning == "Add them."
    prefilled = get_parser("longcat", think_prefilled=True)
    text = prefilled.render(
        None, [_call("func_add", {"x1": 1, "x2": 2})], reasoning="Use the tool."
    )
    assert text == (
        "Use the tool.\n</longcat_think>\n"
        '<longcat_tool_call>\n{"name": "func_add", "arguments": {"x1": 1, "x2": 2}}\n'
        "</longcat_tool_call>"
    )
    result = prefilled.parse(text)
    assert result.reasoning == "Use the tool."
    assert result.content is None
    assert result.tool_calls is not None


def test_render_escapes_markers_inside_strings() -> None:
    parser = get_parser("longcat")
    arguments = {"a": f"x {CLOSE} y {OPEN} <longcat_think> </think>", "k": "<longcat_arg_key>"}
    text = parser.render("c", [_call("echo", arguments)])
    assert text.count(CLOSE) == 1
    result = parser.parse(text)
    assert result.tool_calls is not None
    assert json.loads(result.tool_calls[0].function.arguments) == arguments


@pytest.mark.parametrize(
    ("content", "calls", "reasoning", "message"),
    [
        (f"see {OPEN}", [], None, "content contains"),
        ("see <longcat_think>", [], None, "content contains"),
        ("see <think>", [], None, "content contains"),
        (None, [], "a </longcat_think> b", "reasoning contains"),
        (None, [ToolCall("x", FunctionCall("f", "[1]"))], None, "JSON object"),
        (None, [ToolCall("x", FunctionCall("f", '{"a": NaN}'))], None, "not valid JSON"),
    ],
)
def test_render_refuses_what_cannot_be_written(
    content: str | None, calls: list[Any], reasoning: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        get_parser("longcat").render(content, calls, reasoning=reasoning)
    assert str(caught.value).startswith("longcat: ")


# parsing -------------------------------------------------------------------------------
def test_content_is_all_text_outside_the_blocks() -> None:
    text = f'A\n{OPEN}{{"name": "a", "arguments": {{}}}}{CLOSE}\nB {OPEN}{{"name": "b"}}{CLOSE} C'
    result = get_parser("longcat").parse(text)
    assert result.content == "A\n\nB  C"
    assert [c.function.name for c in result.tool_calls or []] == ["a", "b"]


def test_ids_are_unique_and_deterministic() -> None:
    one = f'{OPEN}{{"name": "a", "arguments": {{}}}}{CLOSE}'
    text = one + one.replace('"a"', '"b"')
    first = get_parser("longcat").parse(text).tool_calls or []
    second = get_parser("longcat").parse(text).tool_calls or []
    assert len({c.id for c in first}) == 2
    assert [c.id for c in first] == [c.id for c in second]


def test_plain_think_tags_are_reasoning_too() -> None:
    result = get_parser("longcat").parse(f'<think>r</think>c{OPEN}{{"name": "a"}}{CLOSE}')
    assert (result.reasoning, result.content) == ("r", "c")


def test_prefilled_reasoning_ends_at_longcat_think_only() -> None:
    parser = get_parser("longcat", think_prefilled=True)
    result = parser.parse("still </think> thinking\n</longcat_think>\nAnswer")
    assert result.reasoning == "still </think> thinking"
    assert result.content == "Answer"
    # Unclosed: everything is reasoning.
    assert parser.parse("thinking...").reasoning == "thinking..."


# the key/value-tag variant --------------------------------------------------------------
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer"},
                "ratio": {"type": "number"},
                "flags": {"type": "array"},
                "opts": {"type": "object"},
                "on": {"type": "boolean"},
                "maybe": {"type": ["integer", "null"]},
            },
        },
    },
}


def _tagged(name: str, *pairs: tuple[str, str]) -> str:
    body = "".join(
        f"<longcat_arg_key>{k}</longcat_arg_key>\n<longcat_arg_value>{v}</longcat_arg_value>\n"
        for k, v in pairs
    )
    return f"{OPEN}{name}\n{body}{CLOSE}"


def test_tagged_values_without_schema_are_json_when_they_read_as_json() -> None:
    text = _tagged(
        "search",
        ("query", "weather in Paris"),
        ("limit", "8"),
        ("on", "true"),
        ("nothing", "null"),
        ("flags", '["a", "b"]'),
        ("py", "{'k': True}"),
        ("quoted", '"42"'),
        ("spaced", "  keep me  "),
    )
    assert _arguments(text) == [
        (
            "search",
            {
                "query": "weather in Paris",
                "limit": 8,
                "on": True,
                "nothing": None,
                "flags": ["a", "b"],
                "py": {"k": True},
                "quoted": "42",
                "spaced": "  keep me  ",
            },
        )
    ]


def test_tagged_values_follow_the_schema() -> None:
    text = _tagged(
        "search",
        ("query", "12"),
        ("limit", "8"),
        ("ratio", "0.5"),
        ("flags", '["x"]'),
        ("opts", '{"deep": true}'),
        ("on", "false"),
        ("maybe", "null"),
        ("undeclared", "[1, 2]"),
    )
    assert _arguments(text, tools=[SEARCH_TOOL]) == [
        (
            "search",
            {
                "query": "12",
                "limit": 8,
                "ratio": 0.5,
                "flags": ["x"],
                "opts": {"deep": True},
                "on": False,
                "maybe": None,
                "undeclared": [1, 2],
            },
        )
    ]


def test_tagged_variant_on_one_line_and_unicode() -> None:
    text = (
        f"{OPEN}search_nail_images_by_text<longcat_arg_key>query</longcat_arg_key>"
        f"<longcat_arg_value>绿色美甲</longcat_arg_value>{CLOSE}"
    )
    assert _arguments(text) == [("search_nail_images_by_text", {"query": "绿色美甲"})]


def test_a_json_body_mentioning_the_key_tag_is_still_json() -> None:
    text = f'{OPEN}{{"name": "f", "arguments": {{"s": "<longcat_arg_key>"}}}}{CLOSE}'
    assert _arguments(text) == [("f", {"s": "<longcat_arg_key>"})]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (f"{OPEN}f\n<longcat_arg_key>a</longcat_arg_key>\n{CLOSE}", "has no '<longcat_arg_value>'"),
        (f"{OPEN}f\n<longcat_arg_key>a\n{CLOSE}", "expected '<longcat_arg_key>'"),
        (
            f"{OPEN}f<longcat_arg_key>a</longcat_arg_key>"
            f"<longcat_arg_value>1</longcat_arg_value> junk{CLOSE}",
            "expected '<longcat_arg_key>'",
        ),
        (
            f"{OPEN}f<longcat_arg_key>a</longcat_arg_key><longcat_arg_value>1</longcat_arg_value>",
            "cut off before '</longcat_tool_call>'",
        ),
        (
            f"{OPEN}<longcat_arg_key>a</longcat_arg_key><longcat_arg_value>1</longcat_arg_value>{CLOSE}",
            "without a function name",
        ),
        (f"x {OPEN}not json{CLOSE}", "not valid JSON"),
        (
            f'x {OPEN}{{"name": "a", "arguments": {{"b": 1}}',
            "unterminated tool call is not valid JSON",
        ),
    ],
)
def test_strict_errors_name_the_problem(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as caught:
        get_parser("longcat", strict=True).parse(text)
    assert reason in caught.value.reason
    # Like the other block formats, the position is where the block's body starts.
    assert caught.value.position == text.index(OPEN) + len(OPEN)
    assert get_parser("longcat").parse(text).content is not None


def test_tagged_variant_streams_like_parse() -> None:
    text = "Hi " + _tagged("search", ("query", "x"), ("limit", "2")) + " bye"
    parser = get_parser("longcat", tools=[SEARCH_TOOL])
    for pieces in chunkings(text):
        check_stream(parser, pieces)


def test_adversarial_inputs_parse() -> None:
    parser = get_parser("longcat")
    for text in (
        OPEN * 20_000,
        f"{OPEN}f" + "<longcat_arg_key>" * 20_000 + CLOSE,
        f"{OPEN}f" + "<longcat_arg_key>a</longcat_arg_key><longcat_arg_value>" * 20_000 + CLOSE,
        f'{OPEN}{{"name": "f", "arguments": ' + "[" * 50_000 + CLOSE,
        "<longcat_think>" * 20_000,
    ):
        result = parser.parse(text)
        assert result.tool_calls is None
