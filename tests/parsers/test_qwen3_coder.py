"""Qwen3-Coder specifics: value typing with and without schemas, rendering, recovery, limits."""

from __future__ import annotations

import itertools
import json
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_parsers import ContentDelta, ParseError, ParseResult, ToolCallEvent, get_parser
from hermes_parsers.formats._xml_params import (
    MarkerFinder,
    read_untyped,
    read_value,
    spell_value,
    template_text,
)
from tests.parsers.steps import assert_linear
from tests.parsers.streams import check_stream, chunkings

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "configure",
            "parameters": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "port": {"type": "integer"},
                    "ratio": {"type": "number"},
                    "debug": {"type": "boolean"},
                    "hosts": {"type": "array", "items": {"type": "string"}},
                    "labels": {"type": "object"},
                    "limit": {"type": ["integer", "null"]},
                    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
            },
        },
    }
]


def _call(text: str, **options: Any) -> dict[str, Any]:
    result = get_parser("qwen3_coder", **options).parse(text)
    assert result.tool_calls is not None
    assert len(result.tool_calls) == 1
    arguments = json.loads(result.tool_calls[0].function.arguments)
    assert isinstance(arguments, dict)
    return arguments


def _one(function: str, /, **arguments: Any) -> list[dict[str, Any]]:
    return [{"function": {"name": function, "arguments": arguments}}]


def _param(name: str, value: str, function: str = "configure") -> str:
    return (
        f"<tool_call>\n<function={function}>\n<parameter={name}>\n{value}\n</parameter>\n"
        "</function>\n</tool_call>"
    )


# --- reading values ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Paris", "Paris"),
        ("42", 42),
        ("-1.5e3", -1500.0),
        ("true", True),
        ("null", None),
        ("True", True),
        ("False", False),
        ("None", None),
        ('"42"', "42"),
        ('{"a": [1, null]}', {"a": [1, None]}),
        ("{'a': (1, 2), 'b': None}", {"a": [1, 2], "b": None}),
        ("[1, 'two']", [1, "two"]),
        ("{1, 2}", "{1, 2}"),  # a Python set is no JSON value: kept as text
        ("[1j]", "[1j]"),
        ("02134", "02134"),
        ("NaN", "NaN"),
        ("none", "none"),
        ("  indented\n  text ", "  indented\n  text "),  # strings keep their spaces
        (" 7 ", 7),
        ("", ""),
        ("[" * 5000, "[" * 5000),
    ],
)
def test_untyped_values_follow_the_json_then_python_literal_rule(text: str, expected: Any) -> None:
    assert read_untyped(text) == expected
    assert type(read_untyped(text)) is type(expected)


def test_values_lose_exactly_one_newline_each_side() -> None:
    text = "<tool_call>\n<function=f>\n<parameter=code>\n\ndef f():\n    pass\n\n</parameter>\n"
    assert _call(text + "</function>\n</tool_call>") == {"code": "\ndef f():\n    pass\n"}
    assert _call(_param("code", "x").replace("\nx\n", "x")) == {"code": "x"}


def test_schema_types_values() -> None:
    text = (
        "<tool_call>\n<function=configure>\n"
        "<parameter=name>\n8080\n</parameter>\n"
        "<parameter=port>\n8080\n</parameter>\n"
        "<parameter=ratio>\n0.5\n</parameter>\n"
        "<parameter=debug>\nTrue\n</parameter>\n"
        "<parameter=hosts>\n['a', 'b']\n</parameter>\n"
        '<parameter=labels>\n{"env": "prod"}\n</parameter>\n'
        "<parameter=limit>\nNone\n</parameter>\n"
        "<parameter=note>\nnull\n</parameter>\n"
        "<parameter=undeclared>\n3\n</parameter>\n"
        "</function>\n</tool_call>"
    )
    assert _call(text, tools=TOOLS) == {
        "name": "8080",
        "port": 8080,
        "ratio": 0.5,
        "debug": True,
        "hosts": ["a", "b"],
        "labels": {"env": "prod"},
        "limit": None,
        "note": None,
        "undeclared": 3,
    }
    # Without schemas the same text reads by the untyped rule.
    assert _call(text)["name"] == 8080
    assert _call(text)["note"] is None


def test_schema_of_another_tool_does_not_apply() -> None:
    assert _call(_param("name", "8080", function="other"), tools=TOOLS) == {"name": 8080}


def test_value_that_fits_no_declared_type_stays_text() -> None:
    assert _call(_param("port", "eighty"), tools=TOOLS) == {"port": "eighty"}
    assert read_value("abc", {"type": "integer"}) == "abc"


# --- rendering -----------------------------------------------------------------------
def test_render_matches_the_chat_template() -> None:
    # Expected strings: the Qwen3-Coder template (vLLM examples/tool_chat_template_qwen3coder
    # .jinja) rendered with transformers' tojson, minus "<|im_start|>assistant\n" and
    # "<|im_end|>\n".
    parser = get_parser("qwen3_coder")
    assert parser.render(None, _one("get_weather", city="Dallas", days=3)) == (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nDallas\n</parameter>\n"
        "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
    )
    calls = [
        *_one("run", command="ls -la", timeout=2.5, shell=True, env=None),
        *_one(
            "write_file", path="a.json", data={"k": ["v", 1, None, False]}, lines=["x < y", "日本"]
        ),
        *_one("now"),
    ]
    assert parser.render("  I'll run both. ", calls) == (
        "I'll run both.\n\n<tool_call>\n<function=run>\n<parameter=command>\nls -la\n</parameter>\n"
        "<parameter=timeout>\n2.5\n</parameter>\n<parameter=shell>\nTrue\n</parameter>\n"
        "<parameter=env>\nNone\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=write_file>\n<parameter=path>\na.json\n</parameter>\n"
        '<parameter=data>\n{"k": ["v", 1, null, false]}\n</parameter>\n'
        '<parameter=lines>\n["x < y", "日本"]\n</parameter>\n</function>\n</tool_call>\n'
        "<tool_call>\n<function=now>\n</function>\n</tool_call>"
    )


def test_render_with_reasoning_and_prefilled_think() -> None:
    text = get_parser("qwen3_coder").render("Ok.", _one("now"), reasoning="Plan.")
    assert text == (
        "<think>\nPlan.\n</think>\n\nOk.\n\n<tool_call>\n<function=now>\n</function>\n</tool_call>"
    )
    prefilled = get_parser("qwen3_coder", think_prefilled=True)
    result = prefilled.parse(prefilled.render(None, _one("now"), reasoning="Plan."))
    assert result.reasoning == "Plan."
    assert result.content is None


@pytest.mark.parametrize(
    ("value", "spelled"),
    [
        ("42", '"42"'),
        ("true", '"true"'),
        ("None", '"None"'),
        (" 5 ", '" 5 "'),
        ('"quoted"', '"\\"quoted\\""'),
        ("{'a': 1}", "\"{'a': 1}\""),
        ("a</parameter>b", '"a\\u003c/parameter>b"'),
        ("x</tool_call>", '"x\\u003c/tool_call>"'),
        ("<parameter=k>", '"\\u003cparameter=k>"'),
        ({"html": "</function>"}, '{"html": "\\u003c/function>"}'),
        ("plain text", "plain text"),
        ("", ""),
        ("\nlead and trail\n", "\nlead and trail\n"),
        ("0x1F", "0x1F"),
        (1.0, "1.0"),
        (-0.0, "-0.0"),
    ],
)
def test_values_that_would_not_read_back_are_written_as_json(value: Any, spelled: str) -> None:
    parser = get_parser("qwen3_coder")
    text = parser.render(None, _one("f", v=value))
    assert text.split("<parameter=v>\n", 1)[1].split("\n</parameter>", 1)[0] == spelled
    back = json.loads(parser.parse(text).tool_calls[0].function.arguments)["v"]  # type: ignore[index]
    assert json.dumps(back) == json.dumps(value)


def test_schema_lets_strings_be_written_bare() -> None:
    parser = get_parser("qwen3_coder", tools=TOOLS)
    text = parser.render(None, _one("configure", name="8080", note="None", port=80, debug=False))
    assert "<parameter=name>\n8080\n</parameter>" in text
    assert "<parameter=note>\nNone\n</parameter>" in text
    assert "<parameter=debug>\nFalse\n</parameter>" in text
    assert _call(text, tools=TOOLS) == {"name": "8080", "note": "None", "port": 80, "debug": False}
    # A null for a nullable string is written as JSON null, which reads back as null.
    text = parser.render(None, _one("configure", note=None))
    assert "<parameter=note>\nnull\n</parameter>" in text
    assert _call(text, tools=TOOLS) == {"note": None}


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        (_one("configure", name="a</parameter>b"), "cannot be written so that it reads back"),
        (_one("configure", note="<parameter=x>"), "cannot be written so that it reads back"),
        (_one("configure", **{"a>b": 1}), "parameter name"),
        (_one("configure", **{" pad": 1}), "parameter name"),
        (_one("configure", **{"": 1}), "parameter name"),
        (_one("bad\nname"), "function name"),
        (_one("x<y"), "function name"),
        (_one(""), "function name"),
    ],
)
def test_render_refuses_what_cannot_be_spelled(calls: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        get_parser("qwen3_coder", tools=TOOLS).render(None, calls)
    assert str(caught.value).startswith("qwen3_coder: ")


@pytest.mark.parametrize("content", ["see <tool_call> tags", "a <function=x> block", "<think>"])
def test_render_refuses_markup_in_content(content: str) -> None:
    with pytest.raises(ValueError, match=r"^qwen3_coder: content contains"):
        get_parser("qwen3_coder").render(content, _one("now"))


def test_content_may_hold_other_tags() -> None:
    parser = get_parser("qwen3_coder")
    content = "Close it with </tool_call> and use <parameter=x> inside"
    assert parser.parse(parser.render(content, _one("now"))).content == content


# --- recovery and strict errors --------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "reason", "at"),
    [
        (
            "<tool_call>\n<function=w>\n<parameter=a>\n1\n<parameter=b>\n2\n</parameter>\n"
            "</function>\n</tool_call>",
            "<parameter=a> is not closed by </parameter>",
            "<parameter=b>",
        ),
        (
            "<tool_call>\n<function=w>\n<parameter=a>\n1\n</parameter>\n</tool_call>",
            "<function=w> is not closed by </function>",
            "</tool_call>",
        ),
        ("Hi <function=w>\n</function>", "<function=w> is not inside <tool_call>", "<function=w>"),
        (
            "<tool_call>\nhmm\n<function=w>\n</function>\n</tool_call>",
            "unexpected text 'hmm' inside <tool_call>",
            "hmm",
        ),
        (
            "<tool_call>\n<function=w>\nnote\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>",
            "unexpected text 'note' inside <function=w>",
            "note",
        ),
        (
            "<tool_call>\n<function=a>\n</function>\n<tool_call>\n<function=b>\n</function>\n</tool_call>",
            "<tool_call> inside <tool_call> (a </tool_call> is missing)",
            "<tool_call>\n<function=b>",
        ),
        (
            "x <tool_call>\n<function=w>\n<parameter=a>\n12",
            "the text ended inside <parameter=a>",
            "<parameter=a>",
        ),
        ("<tool_call>\n<function=w>\n", "the text ended inside <function=w>", "<function=w>"),
        ("<tool_call>\n</tool_call>", "<tool_call> holds no <function=NAME> block", "<tool_call>"),
        (
            "<tool_call>\n<function=w\n</function></tool_call>",
            "function name 'w' is not closed by '>'",
            "w\n",
        ),
        (
            "<tool_call>\n<function=w>\n<parameter=>\n1\n</parameter>\n</function>\n</tool_call>",
            "parameter name '' in <function=w> is missing or not closed by '>'",
            "<parameter=>",
        ),
    ],
)
def test_strict_errors_say_what_and_where(text: str, reason: str, at: str) -> None:
    with pytest.raises(ParseError) as caught:
        get_parser("qwen3_coder", strict=True).parse(text)
    assert caught.value.reason == reason
    assert caught.value.position == text.index(at)


def test_lenient_recovery_keeps_every_good_call() -> None:
    text = (
        "Checking.\n<tool_call>\n<function=a>\n<parameter=x>\n1\n<parameter=y>\n2\n</function>\n"
        "<function=b>\n</function>\n</tool_call>\n<function=c>\n<parameter=z>\nok\n</parameter>\n"
        "</function>\n</tool_call>\nDone."
    )
    result = get_parser("qwen3_coder").parse(text)
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in result.tool_calls or []]
    assert calls == [("a", {"x": 1, "y": 2}), ("b", {}), ("c", {"z": "ok"})]
    assert result.content == "Checking.\n\n\nDone."


def test_broken_call_stays_in_content() -> None:
    text = (
        "Start <tool_call>\n<function=w>\n<parameter=path>\na.py\n</parameter>\n"
        "<parameter=body>\nimp"
    )
    result = get_parser("qwen3_coder").parse(text)
    assert result.tool_calls is None
    assert result.content == text.strip()


def test_several_functions_in_one_tool_call_are_well_formed() -> None:
    text = "<tool_call>\n<function=a>\n</function>\n<function=b>\n</function>\n</tool_call>"
    result = get_parser("qwen3_coder", strict=True).parse(text)
    assert [c.function.name for c in result.tool_calls or []] == ["a", "b"]


def test_markup_inside_values_and_think_inside_values() -> None:
    value = "<think>not reasoning</think> <tool_call> <function=x> </tool"
    result = get_parser("qwen3_coder", strict=True).parse(_param("v", value, "f"))
    assert result.reasoning is None
    assert json.loads(result.tool_calls[0].function.arguments) == {"v": value}  # type: ignore[index]


# --- streaming -----------------------------------------------------------------------
STREAM_TEXT = (
    "<think>\nplan\n</think>\n\nSure.\n\n<tool_call>\n<function=a>\n<parameter=x>\n1\n"
    "</parameter>\n</function>\n</tool_call>\nmid <function=b>\n</function>\n</tool_call>\n"
    "<tool_call>\n<function=c>\n<parameter=y>\nz\n<parameter=w>\n[1]\n</parameter>\n</function>\n"
    "</tool_call> end <tool_call>\n<function=d>\n<parameter=q>\n"
)


@pytest.mark.parametrize("options", [{}, {"tools": TOOLS}])
def test_every_chunking_of_a_mixed_text_matches_parse(options: dict[str, Any]) -> None:
    parser = get_parser("qwen3_coder", **options)
    for pieces in chunkings(STREAM_TEXT, seed=7):
        check_stream(parser, pieces)


def test_content_streams_before_the_call_is_complete() -> None:
    stream = get_parser("qwen3_coder").stream()
    assert stream.feed("Let me check.\n\n<tool") == [ContentDelta("Let me check.\n\n")]
    assert stream.feed("_call>\n<function=a>\n<parameter=x>\n1\n</parameter>\n</function>\n") == []
    events = stream.feed("</tool_call>")
    assert len(events) == 1
    assert isinstance(events[0], ToolCallEvent)
    assert stream.feed("<fun") == []
    assert stream.feed("ny") == [ContentDelta("<funny")]


# --- linear time ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("head", "unit", "tail"),
    [
        ("", "<tool_call>", ""),
        ("", "<function=", ""),
        ("<tool_call>\n<function=f>\n", "<parameter=a>\n", ""),
        ("<tool_call>\n<function=f>\n", "<parameter=", ""),
        ("<tool_call>\n<function=f>\n<parameter=a>\n", "[", "\n</parameter>"),
        ("<tool_call>\n<function=", "x", ""),
        ("<tool_call>\n", "text ", "</tool_call>"),
        # Issue 12: each unclosed function was read to the end of the text again.
        ("", "<function=f><parameter=a>x</parameter>", ""),
        ("", "<tool_call><function=f><parameter=a>x</parameter>", ""),
    ],
    ids=[
        "openers",
        "functions",
        "params",
        "param-openers",
        "deep-json",
        "long-name",
        "text",
        "unclosed-functions",
        "unclosed-calls",
    ],
)
def test_adversarial_inputs_parse_in_linear_time(head: str, unit: str, tail: str) -> None:
    parser = get_parser("qwen3_coder")
    result = parser.parse(head + unit * 1000 + tail)
    assert result.content is not None or result.tool_calls
    assert_linear(lambda count: parser.parse(head + unit * count + tail), 3000 // len(unit))


def test_unclosed_functions_stay_content_and_strict_names_the_first() -> None:
    text = "<function=f><parameter=a>x</parameter>" * 3
    assert get_parser("qwen3_coder").parse(text) == ParseResult(text, None)
    with pytest.raises(ParseError) as caught:
        get_parser("qwen3_coder", strict=True).parse(text)
    assert caught.value.reason == "the text ended inside <function=f>"
    assert caught.value.position == len("<function=")  # the name of the first function


def test_long_value_streamed_char_by_char_is_linear() -> None:
    value = "line <with> markup-ish </para\n"
    parser = get_parser("qwen3_coder")

    def run(count: int) -> None:
        text = _param("v", value * count, "f")
        stream = parser.stream()
        for char in text:
            stream.feed(char)
        result = stream.close()
        assert json.loads(result.tool_calls[0].function.arguments) == {"v": value * count}  # type: ignore[index]

    assert_linear(run, 20)


def test_marker_finder_matches_str_find() -> None:
    text = "a<b>c<b>d" * 3
    finder = MarkerFinder(text)
    for pos in range(len(text) + 1):
        assert finder.find("<b>", pos) == text.find("<b>", pos)
        assert finder.first(("d", "c"), pos) == min(
            ((text.find(m, pos), m) for m in ("d", "c") if text.find(m, pos) >= 0), default=(-1, "")
        )


def test_xml_param_helpers_for_other_formats() -> None:
    assert [template_text(v) for v in (True, None, 2.5, "s", [1], {"a": None})] == [
        "True",
        "None",
        "2.5",
        "s",
        "[1]",
        '{"a": null}',
    ]
    assert [template_text(v, "json") for v in (True, None, "s")] == ["true", "null", "s"]
    as_string = {"type": "string"}
    forbidden = ["</x>"]
    read_string = partial(read_value, schema=as_string)
    assert spell_value("a</x>", read_string, template="a</x>", forbidden=forbidden) is None
    spelled = spell_value("a</x>", read_untyped, template="a</x>", forbidden=forbidden)
    assert spelled == '"a\\u003c/x>"'


# --- fuzzing -------------------------------------------------------------------------
_PIECES = st.sampled_from(
    [
        "<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>",
        "<think>", "</think>", "f>", "x>", ">", "<", "\n", " ", "1", "True", '{"a": [1]}', "[1",
        "text", _param("k", "v", "g"),
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_PIECES, max_size=24), data=st.data())
def test_markup_soup_never_raises_and_streams_like_parse(pieces: list[str], data: Any) -> None:
    text = "".join(pieces)
    for options in ({}, {"tools": TOOLS}, {"think_prefilled": True}):
        parser = get_parser("qwen3_coder", **options)
        lenient = parser.parse(text)
        strict: Any = None
        try:
            strict = get_parser("qwen3_coder", strict=True, **options).parse(text)
        except ParseError as error:
            strict = error.position
        assert strict == lenient or 0 <= strict < len(text)
        cuts = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=6))))
        bounds = [0, *cuts, len(text)]
        check_stream(parser, [text[a:b] for a, b in itertools.pairwise(bounds)])


_QUICK_TEXTS = [
    "Hi " + _param("port", "8080") + " then " + _param("hosts", '["a", "b"]'),
    _param("labels", "{'k': True}") + _param("note", "None"),
    _param("name", "multi\nline <b> prose\n"),
    _param("name", "lone \ud800 surrogate"),
    _param("name", "x") + "<think>",
    "<function=f>" + _param("name", "x"),
]


@pytest.mark.parametrize("text", _QUICK_TEXTS)
@pytest.mark.parametrize("tools", [None, TOOLS])
def test_quick_reading_untyped_and_typed_gives_the_general_answer(
    text: str, tools: list[dict[str, Any]] | None
) -> None:
    """The quick reading (inlined for untyped values, ``quick_blocks`` for typed ones)
    against the general path, on texts it reads and texts it leaves."""
    parser = get_parser("qwen3_coder", tools=tools)
    quick = parser._parse_quick(text)
    general = parser._parse_markup(text)
    assert quick is None or quick == general
    assert parser.parse(text) == general
    if text is _QUICK_TEXTS[0]:
        assert quick is not None
        assert [c.id for c in quick.tool_calls or []] == [c.id for c in general.tool_calls or []]
