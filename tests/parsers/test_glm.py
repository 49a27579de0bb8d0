"""GLM-4.5 (``glm45``) and GLM-4.7 (``glm47``): value typing, rendering, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_parsers import ParseError, ToolCall, get_parser
from hermes_parsers.formats._python_literal import python_literal
from hermes_parsers.formats.glm import Glm45Parser, Glm47Parser, read_untyped
from tests.parsers.strategies import NO_SURROGATES
from tests.parsers.streams import check_stream

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {
                    "s": {"type": "string"},
                    "i": {"type": "integer"},
                    "n": {"type": "number"},
                    "b": {"type": "boolean"},
                    "o": {"type": "object"},
                    "either": {"type": ["integer", "string"]},
                },
            },
        },
    }
]


def _call(name: str, arguments: dict[str, Any], call_id: str = "") -> ToolCall:
    return ToolCall.from_dict({"id": call_id, "function": {"name": name, "arguments": arguments}})


def _args(text: str, name: str = "glm45", **options: Any) -> dict[str, Any]:
    calls = get_parser(name, **options).parse(text).tool_calls
    assert calls is not None
    assert len(calls) == 1
    return dict(json.loads(calls[0].function.arguments))


def _one(key: str, value_text: str) -> str:
    return (
        f"<tool_call>f\n<arg_key>{key}</arg_key>\n<arg_value>{value_text}</arg_value>\n</tool_call>"
    )


# names ------------------------------------------------------------------------------------
def test_names_and_aliases() -> None:
    assert type(get_parser("glm45")) is Glm45Parser
    assert type(get_parser("glm46")) is Glm45Parser
    assert type(get_parser("glm47")) is Glm47Parser
    assert type(get_parser("glm5")) is Glm47Parser
    assert get_parser("glm46").name == "glm45"
    assert get_parser("glm47").markers == ("<tool_call>",)
    assert not get_parser("glm47").carries_ids


# values without schemas --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("-3", -3),
        ("2.50", 2.5),
        ("true", True),
        ("null", None),
        ('{"a": [1, "x"]}', {"a": [1, "x"]}),
        ('"42"', "42"),
        (" 42\n", 42),  # JSON is read from the stripped text
        ("True", True),
        ("None", None),
        ("'single'", "single"),
        ("('a', 1)", ["a", 1]),
        ("{'k': [1, 2,], 'n': None}", {"k": [1, 2], "n": None}),
        ("0x1F", 31),
        ("1_000", 1000),
        ("hello world", "hello world"),
        ("  keep my spaces ", "  keep my spaces "),  # text keeps its whitespace
        ("", ""),
        ("2024-06-27", "2024-06-27"),
        ("007", "007"),  # not a Python literal either
        ("1, 2", "1, 2"),  # several literals are not one value
        ("{1, 2}", "{1, 2}"),  # a set: JSON has none
        ("1e999", "1e999"),  # infinite
        ("[1e999]", "[1e999]"),
        ("1j", "1j"),
        ("print('x')", "print('x')"),
        ("'unterminated", "'unterminated"),
        ("'''triple'''", "'''triple'''"),
        ("[" * 5000, "[" * 5000),
    ],
)
def test_untyped_values_follow_vllm(text: str, value: Any) -> None:
    assert read_untyped(text) == value
    assert type(read_untyped(text)) is type(value)
    assert _args(_one("v", text)) == {"v": value}


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=15,
)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES)
def test_python_literal_reads_what_repr_writes(value: Any) -> None:
    ok, read = python_literal(repr(value))
    assert ok
    assert json.dumps(read) == json.dumps(_jsonable(value))


def test_python_literal_escapes_and_limits() -> None:
    assert python_literal(r"'\x41\101\u00e9\U0001F600\N{BULLET}\q\'\"'") == (
        True,
        "AAé😀•\\q'\"",
    )
    assert python_literal("[" * 100 + "]" * 100)[0]
    assert python_literal("[" * 101 + "]" * 101) == (False, None)
    assert python_literal("{'a': 1, 2: 3}") == (False, None)  # JSON keys are strings
    assert python_literal("'a' 'b'") == (False, None)
    assert python_literal("'line\nbreak'") == (False, None)


# values with schemas ------------------------------------------------------------------------
def test_schema_types_values() -> None:
    text = (
        "<tool_call>f\n"
        "<arg_key>s</arg_key>\n<arg_value> 42 </arg_value>\n"
        "<arg_key>i</arg_key>\n<arg_value>7</arg_value>\n"
        "<arg_key>n</arg_key>\n<arg_value>7</arg_value>\n"
        "<arg_key>b</arg_key>\n<arg_value>False</arg_value>\n"
        '<arg_key>o</arg_key>\n<arg_value>{"x": 1}</arg_value>\n'
        "<arg_key>either</arg_key>\n<arg_value>abc</arg_value>\n"
        "<arg_key>undeclared</arg_key>\n<arg_value>[true]</arg_value>\n"
        "</tool_call>"
    )
    assert _args(text, tools=TOOLS) == {
        "s": " 42 ",
        "i": 7,
        "n": 7,
        "b": False,
        "o": {"x": 1},
        "either": "abc",
        "undeclared": [True],
    }
    # Without the schemas the same text is typed by its look.
    assert _args(text)["s"] == 42


def test_schema_mismatch_keeps_text() -> None:
    assert _args(_one("i", "seven"), tools=TOOLS) == {"i": "seven"}
    assert _args(_one("n", "1e999"), tools=TOOLS) == {"n": "1e999"}
    assert _args(_one("o", "[1]"), tools=TOOLS) == {"o": "[1]"}


def test_unknown_tool_is_untyped() -> None:
    text = "<tool_call>g<arg_key>s</arg_key><arg_value>42</arg_value></tool_call>"
    assert _args(text, "glm47", tools=TOOLS) == {"s": 42}


def test_repeated_key_last_wins() -> None:
    text = (
        "<tool_call>f<arg_key>a</arg_key><arg_value>1</arg_value>"
        "<arg_key>a</arg_key><arg_value>2</arg_value></tool_call>"
    )
    assert _args(text, "glm47") == {"a": 2}


# rendering ----------------------------------------------------------------------------------
CALLS = [
    _call(
        "get_weather", {"city": "北京", "days": 3, "opts": {"units": "C", "alerts": [True, None]}}
    ),
    _call("get_time", {}),
]


def test_render_glm45_matches_template() -> None:
    # zai-org/GLM-4.5 / GLM-4.6 chat_template.jinja, assistant turn after "<|assistant|>\n".
    expected = (
        "<think>Two lookups.</think>\n"
        "Checking.\n"
        "<tool_call>get_weather\n"
        "<arg_key>city</arg_key>\n<arg_value>北京</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n"
        '<arg_key>opts</arg_key>\n<arg_value>{"units": "C", "alerts": [true, null]}</arg_value>\n'
        "</tool_call>\n"
        "<tool_call>get_time\n"
        "</tool_call>"
    )
    parser = get_parser("glm45")
    assert parser.render("  Checking.\n", CALLS, reasoning=" Two lookups. ") == expected
    result = parser.parse(expected)
    assert result.content == "Checking."
    assert result.reasoning == "Two lookups."
    assert [c.function for c in result.tool_calls or []] == [c.function for c in CALLS]


def test_render_glm47_matches_template() -> None:
    # zai-org/GLM-4.7 chat_template.jinja, assistant turn after "<|assistant|>".
    expected = (
        "<think>Two lookups.</think>Checking."
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>北京</arg_value>"
        "<arg_key>days</arg_key><arg_value>3</arg_value>"
        '<arg_key>opts</arg_key><arg_value>{"units": "C", "alerts": [true, null]}</arg_value>'
        "</tool_call><tool_call>get_time</tool_call>"
    )
    assert get_parser("glm47").render("Checking.", CALLS, reasoning="Two lookups.") == expected


def test_render_variants_without_reasoning_or_content() -> None:
    assert get_parser("glm45").render(None, [CALLS[1]]) == "<tool_call>get_time\n</tool_call>"
    assert get_parser("glm45").render("Hi.") == "Hi."
    assert get_parser("glm45").render("Hi.", reasoning="R") == "<think>R</think>\nHi."
    assert get_parser("glm47").render(None, [CALLS[1]]) == "<tool_call>get_time</tool_call>"


def test_render_prefilled_glm47() -> None:
    parser = get_parser("glm47", think_prefilled=True)
    text = parser.render("Checking.", [CALLS[1]], reasoning="Plan.")
    assert text == "Plan.</think>Checking.<tool_call>get_time</tool_call>"
    assert parser.render(None, [CALLS[1]]) == "</think><tool_call>get_time</tool_call>"
    result = parser.parse(text)
    assert (result.content, result.reasoning) == ("Checking.", "Plan.")


@pytest.mark.parametrize("name", ["glm45", "glm47"])
def test_render_quotes_ambiguous_strings_without_schema(name: str) -> None:
    values = {"a": "42", "b": "true", "c": " padded ", "d": "None", "e": "'q'", "f": "plain"}
    parser = get_parser(name)
    text = parser.render(None, [_call("f", values)])
    assert '<arg_value>"42"</arg_value>' in text
    assert '<arg_value>"true"</arg_value>' in text
    assert "<arg_value> padded </arg_value>" in text  # reads back as itself: left bare
    assert "<arg_value>\"'q'\"</arg_value>" in text
    assert "<arg_value>plain</arg_value>" in text
    assert _args(text, name) == values


@pytest.mark.parametrize("name", ["glm45", "glm47"])
def test_render_with_schema_writes_strings_bare(name: str) -> None:
    values = {"s": "42", "i": 42, "n": 2.0, "b": True, "o": {"k": "v"}, "either": "x y"}
    parser = get_parser(name, tools=TOOLS)
    text = parser.render(None, [_call("f", values)])
    assert "<arg_value>42</arg_value>" in text
    assert '"42"' not in text
    assert _args(text, name, tools=TOOLS) == values


def test_render_escapes_tags_inside_json_values() -> None:
    values = {"doc": {"html": "</arg_value></tool_call><arg_key>"}, "list": ["<arg_value>"]}
    parser = get_parser("glm47")
    text = parser.render(None, [_call("f", values)])
    assert "\\u003c/tool_call>" in text
    assert text.count("</tool_call>") == 1
    assert _args(text, "glm47") == values


@pytest.mark.parametrize(
    ("calls", "match"),
    [
        ([_call("f", {"s": "a</arg_value>b"})], "holds GLM markup"),
        ([_call("f", {"s": "x<arg_key>y"})], "holds GLM markup"),
        ([_call("f", {"s": "</tool_call>"})], "holds GLM markup"),
        ([_call("f", {" k": 1})], "argument key"),
        ([_call("f", {"k</arg_key>": 1})], "argument key"),
        ([_call("f", {"": 1})], "argument key"),
        ([_call("two words", {})], "not one word"),
        ([_call("", {})], "without a function name"),
    ],
)
def test_render_refuses_what_cannot_be_spelled(calls: list[ToolCall], match: str) -> None:
    for name in ("glm45", "glm47"):
        with pytest.raises(ValueError, match=match) as caught:
            get_parser(name).render(None, calls)
        assert str(caught.value).startswith(f"{name}: ")


def test_render_refuses_strings_a_schema_retypes() -> None:
    parser = get_parser("glm45", tools=TOOLS)
    with pytest.raises(ValueError, match=r"^glm45: .*reads back"):
        parser.render(None, [_call("f", {"either": "42"})])
    with pytest.raises(ValueError, match=r"^glm45: .*reads back"):
        parser.render(None, [_call("f", {"s": ["not", "a", "string"]})])


def test_render_refuses_markup_in_content_and_reasoning() -> None:
    parser = get_parser("glm47")
    with pytest.raises(ValueError, match=r"^glm47: content contains '<tool_call>'"):
        parser.render("see <tool_call>", [])
    with pytest.raises(ValueError, match=r"^glm47: reasoning contains '</think>'"):
        parser.render("ok", [], reasoning="a</think>b")
    # A closing tag alone is not markup outside a call.
    assert parser.parse(parser.render("a </tool_call> b", CALLS)).content == "a </tool_call> b"


TRICKY_TEXT = st.sampled_from(
    ["42", "-1", "true", "null", "None", "'x'", " 1 ", "", " ", "[1]", '"q"', "0x1", "1_0", "{}"]
) | st.text(st.characters(codec="utf-8", exclude_categories=NO_SURROGATES), max_size=20)


@pytest.mark.parametrize("name", ["glm45", "glm47"])
@pytest.mark.parametrize("typed", [False, True])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_round_trip_with_tricky_strings(name: str, typed: bool, data: st.DataObject) -> None:
    options: dict[str, Any] = {"tools": TOOLS} if typed else {}
    values = {
        "s": data.draw(TRICKY_TEXT),
        "either": data.draw(TRICKY_TEXT),
        "free": data.draw(TRICKY_TEXT | st.integers() | st.lists(TRICKY_TEXT, max_size=3)),
    }
    parser = get_parser(name, **options)
    try:
        text = parser.render("Some text.", [_call("f", values)])
    except ValueError as exc:
        refused = str(exc)
    else:
        refused = ""
    if refused:
        assert refused.startswith(f"{name}: ")
        return
    result = parser.parse(text)
    assert result.content == "Some text."
    assert result.tool_calls is not None
    assert json.loads(result.tool_calls[0].function.arguments) == values
    check_stream(parser, list(text))


# errors, adversarial input, streaming -------------------------------------------------------
def test_strict_error_points_at_the_broken_call() -> None:
    good = "<tool_call>a\n</tool_call>\n"
    bad = "<tool_call>b\n<arg_key>x</arg_key>\n<arg_value>1\n</tool_call>"
    with pytest.raises(ParseError) as caught:
        get_parser("glm45", strict=True).parse(good + bad)
    error = caught.value
    assert error.position == len(good)
    assert error.reason == "the value of argument 'x' of 'b' has no '</arg_value>'"
    assert error.snippet.startswith("<tool_call>b")


def test_unclosed_call_is_never_run() -> None:
    text = "Sure.<tool_call>rm<arg_key>path</arg_key><arg_value>/tmp/x</arg_value>"
    result = get_parser("glm47").parse(text)
    assert result.tool_calls is None
    assert result.content == text
    with pytest.raises(ParseError, match="not closed"):
        get_parser("glm47", strict=True).parse(text)


def test_adversarial_inputs_stay_content() -> None:
    openers = "<tool_call>" * 50_000
    assert get_parser("glm45").parse(openers).content == openers
    keys = "<tool_call>f" + "<arg_key>k</arg_key>" * 50_000 + "</tool_call>"
    assert get_parser("glm47").parse(keys).tool_calls is None
    deep = _one("v", "[" * 100_000)
    assert _args(deep) == {"v": "[" * 100_000}


def test_long_value_streams_one_character_at_a_time() -> None:
    parser = get_parser("glm47", tools=TOOLS)
    body = "x = '</arg' + '_value>'\n" * 2_000
    text = f"Writing.<tool_call>f<arg_key>s</arg_key><arg_value>{body}</arg_value></tool_call>"
    check_stream(parser, list(text))
    assert _args(text, "glm47", tools=TOOLS) == {"s": body}


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ("\n", {"a": "x", "b": 2}),
        (" \n\t \u3000", {"a": "x", "b": 2}),
        ("\\n\n", {"a": "x", "b": 2}),  # a literal \n is a gap too
        ("<arg_key>c</arg_key>\n", None),  # a key without a value, then whitespace
        ("oops \n", None),
    ],
)
def test_whitespace_after_the_last_pair_ends_the_arguments(
    tail: str, expected: dict[str, Any] | None
) -> None:
    text = (
        "<tool_call>f\n<arg_key>a</arg_key>\n<arg_value>x</arg_value>\n"
        f"<arg_key>b</arg_key>\n<arg_value>2</arg_value>{tail}</tool_call>"
    )
    for name in ("glm45", "glm47"):
        parser = get_parser(name)
        result = parser.parse(text)
        assert result == parser._parse_markup(text)
        if expected is None:
            assert result.tool_calls is None
            with pytest.raises(ParseError):
                get_parser(name, strict=True).parse(text)
        else:
            calls = result.tool_calls or []
            assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
                ("f", expected)
            ]
