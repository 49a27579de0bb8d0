"""Format-specific tests for ``llama3_json`` and ``llama4_json``."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hermes_parsers
from hermes_parsers import ContentDelta, ParseError, ToolCall, ToolCallEvent, get_parser
from hermes_parsers.formats.llama import _LlamaScanner
from tests.parsers.quick_readings import quick_readings
from tests.parsers.steps import assert_linear
from tests.parsers.streams import check_stream, chunkings

BOTH = ["llama3_json", "llama4_json"]


def _call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> ToolCall:
    arguments_text = json.dumps(arguments, ensure_ascii=False)
    return ToolCall(call_id, hermes_parsers.FunctionCall(name, arguments_text))


def _plain(text: str, name: str = "llama3_json", **options: Any) -> tuple[Any, ...]:
    result = get_parser(name, **options).parse(text)
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in result.tool_calls or []]
    return result.content, calls, result.reasoning


def _strict_error(text: str, name: str = "llama3_json") -> ParseError:
    with pytest.raises(ParseError) as caught:
        get_parser(name, strict=True).parse(text)
    return caught.value


# rendering --------------------------------------------------------------------------
def test_llama3_renders_one_call_as_the_template_does() -> None:
    # Llama 3.1/3.2/3.3 template: '{"name": "' + name + '", "parameters": ' + args|tojson + '}'
    parser = get_parser("llama3_json")
    call = _call("get_weather", {"city": "São Paulo", "days": 3, "units": ["C", "mm"]})
    assert parser.render(None, [call]) == (
        '{"name": "get_weather", "parameters": '
        '{"city": "São Paulo", "days": 3, "units": ["C", "mm"]}}'
    )
    assert parser.render(None, [_call("now", {})]) == '{"name": "now", "parameters": {}}'


def test_llama3_joins_several_calls_with_semicolons_and_refuses_content() -> None:
    parser = get_parser("llama3_json")
    calls = [_call("a", {"x": 1}), _call("b", {})]
    text = parser.render(None, calls)
    assert text == '{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {}}'
    assert _plain(text) == (None, [("a", {"x": 1}), ("b", {})], None)
    with pytest.raises(ValueError, match=r"^llama3_json: "):
        parser.render("Let me check.", calls)
    assert parser.render("Just text.", []) == "Just text."


def test_llama4_renders_content_then_calls_without_separators() -> None:
    # vLLM tool_chat_template_llama4_json.jinja: content, then one object per call.
    parser = get_parser("llama4_json")
    calls = [_call("get_weather", {"city": "Paris"}), _call("get_weather", {"city": "東京"})]
    text = parser.render("I'll check both.", calls)
    assert text == (
        "I'll check both."
        '{"name": "get_weather", "parameters": {"city": "Paris"}}'
        '{"name": "get_weather", "parameters": {"city": "東京"}}'
    )
    assert _plain(text, "llama4_json") == (
        "I'll check both.",
        [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "東京"})],
        None,
    )


def test_render_with_reasoning_round_trips() -> None:
    parser = get_parser("llama4_json")
    text = parser.render("Done soon.", [_call("ls", {"path": "/"})], reasoning="List first.")
    assert text == (
        '<think>\nList first.\n</think>\n\nDone soon.{"name": "ls", "parameters": {"path": "/"}}'
    )
    assert _plain(text, "llama4_json") == ("Done soon.", [("ls", {"path": "/"})], "List first.")
    prefilled = get_parser("llama3_json", think_prefilled=True)
    text = prefilled.render(None, [_call("ls", {})], reasoning="Plan.")
    assert text == 'Plan.\n</think>\n\n{"name": "ls", "parameters": {}}'
    assert _plain(text, think_prefilled=True) == (None, [("ls", {})], "Plan.")


@pytest.mark.parametrize("name", BOTH)
@pytest.mark.parametrize(
    "content",
    [
        'Call it like {"name": "x", "parameters": {}} please',
        "Some <|python_tag|> text",
        "a <|python_start|> b",
        "a <|python_end|> b",
        "Thinking <think> aloud",
    ],
)
def test_render_refuses_content_the_format_reads_as_markup(name: str, content: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name}: "):
        get_parser(name).render(content, [])


@pytest.mark.parametrize("name", BOTH)
def test_render_keeps_ordinary_braces_in_content(name: str) -> None:
    content = 'Sets like {1, 2}, code like f() { return 1; } and {"name": "Alice"}'
    parser = get_parser(name)
    assert parser.render(content, []) == content
    assert parser.parse(content).content == content


def test_render_markers_inside_arguments_stay_raw_and_round_trip() -> None:
    arguments = {"text": '<|python_tag|> </think> <think> ; { [ \\ "q"'}
    for name in BOTH:
        parser = get_parser(name)
        text = parser.render(None, [_call("echo", arguments)])
        assert "<|python_tag|>" in text
        assert _plain(text, name) == (None, [("echo", arguments)], None)


# parsing ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", BOTH)
def test_both_parsers_read_every_spelling(name: str) -> None:
    call = '{"name": "f", "parameters": {"x": 1}}'
    for text in (
        call,
        f"<|python_tag|>{call}",
        f"<|python_tag|> {call}",
        f"<|python_start|>{call}<|python_end|>",
        f"  \n{call}\n",
        f"{call};",
        f"{call} ; ",
    ):
        assert _plain(text, name) == (None, [("f", {"x": 1})], None), text


def test_arguments_key_wins_over_parameters_and_extra_keys_are_ignored() -> None:
    text = '{"type": "function", "name": "f", "arguments": {"a": 1}, "parameters": {"b": 2}}'
    assert _plain(text) == (None, [("f", {"a": 1})], None)


def test_name_without_arguments_is_not_a_call() -> None:
    # As in vLLM and the reference: at a call position it is malformed markup...
    for text in ('{"name": "now"}', '<|python_tag|>{"name": "now"}'):
        assert _plain(text) == (text, [], None)
        error = _strict_error(text)
        assert error.reason == 'tool call JSON has no "parameters" (or "arguments")'
    # ...and in the middle of prose it is data, silently kept (strict too).
    text = 'The record is {"name": "now"} today.'
    assert _plain(text) == (text, [], None)
    assert get_parser("llama3_json", strict=True).parse(text).content == text


def test_non_call_braces_in_prose_never_raise_in_strict_mode() -> None:
    text = (
        "Use `{}` for dicts, `{x}` in f-strings, {{jinja}}, sets {1, 2}, JSON "
        '{"status": "ok", "items": [1, {"a": null}]} and code: if (a) { b(); }'
    )
    result = get_parser("llama4_json", strict=True).parse(text)
    assert result.content == text
    assert result.tool_calls is None


def test_semicolon_is_markup_only_between_calls_or_at_the_end() -> None:
    one = '{"name": "a", "parameters": {}}'
    assert _plain(f"{one}; {one};") == (None, [("a", {}), ("a", {})], None)
    assert _plain(f"{one}; and then some text") == ("; and then some text", [("a", {})], None)
    # Only one ";" separates; a second one is text (the next object is still a call).
    assert _plain(f"{one} ;; {one}") == (";;", [("a", {}), ("a", {})], None)


def test_content_is_all_text_outside_the_calls() -> None:
    text = 'Checking.\n{"name": "a", "parameters": {}}\nThen: {"name": "b", "parameters": {}} Done.'
    assert _plain(text) == ("Checking.\n\nThen:  Done.", [("a", {}), ("b", {})], None)


def test_llama4_python_block_holding_content_or_pythonic_calls_is_content() -> None:
    # The Hugging Face Llama 4 template wraps content in these tokens; they are dropped.
    text = '<|python_start|>[get_weather(city="SF")]<|python_end|>'
    assert _plain(text, "llama4_json") == ('[get_weather(city="SF")]', [], None)
    assert get_parser("llama4_json", strict=True).parse(text).content == '[get_weather(city="SF")]'


def test_tools_schemas_do_not_convert_typed_json_values() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "forecast",
                "parameters": {"type": "object", "properties": {"days": {"type": "integer"}}},
            },
        }
    ]
    text = '{"name": "forecast", "parameters": {"days": "3", "hourly": 1}}'
    parser = get_parser("llama3_json", tools=tools)
    assert _plain(text) == (None, [("forecast", {"days": "3", "hourly": 1})], None)
    assert parser.parse(text) == get_parser("llama3_json").parse(text)


def test_raw_control_characters_inside_strings_are_tolerated() -> None:
    text = '{"name": "write", "parameters": {"body": "line one\nline\ttwo"}}'
    assert _plain(text) == (None, [("write", {"body": "line one\nline\ttwo"})], None)


def test_unclosed_think_makes_the_rest_reasoning() -> None:
    text = 'Hi <think>still going {"name": "a", "parameters": {}}'
    assert _plain(text) == ("Hi", [], 'still going {"name": "a", "parameters": {}}')


def test_call_inside_broken_outer_text_is_found_after_the_bad_character() -> None:
    text = 'print({"a": 1) and then {"name": "run", "parameters": {"code": "print(1)"}}'
    content, calls, _ = _plain(text)
    assert calls == [("run", {"code": "print(1)"})]
    assert content == 'print({"a": 1) and then'


def test_deep_nesting_is_malformed_not_an_exception() -> None:
    deep = '{"name": "deep", "parameters": {"a": ' + "[" * 5000 + "]" * 5000 + "}}"
    text = deep + '; {"name": "ok", "parameters": {}}'
    content, calls, _ = _plain(text)
    assert calls == [("ok", {})]
    assert content == deep + ";"
    error = _strict_error(text)
    assert error.position == 0
    assert "nested too deeply" in error.reason


# strict errors ------------------------------------------------------------------------
def test_strict_reasons_and_positions() -> None:
    error = _strict_error('Sure. <|python_tag|>brave_search.call(query="x")')
    assert (error.position, error.reason) == (
        6,
        "<|python_tag|> is not followed by a JSON tool call",
    )

    good = '{"name": "a", "parameters": {}}'
    text = good + '; {"name": "b", "parameters": {"x": }}'
    error = _strict_error(text)
    assert error.position == text.index('{"name": "b"')
    assert error.reason.startswith("tool call is not valid JSON (Expecting value")

    error = _strict_error('Ok. {"name": "f", "parameters": {"q": "abc')
    assert (error.position, error.reason) == (
        4,
        "tool call JSON is unterminated (the text ended inside it)",
    )

    error = _strict_error('{"name": "f", "parameters": {"x": 1)}', "llama4_json")
    assert (error.position, error.reason) == (0, "tool call is not valid JSON (unexpected ')')")

    error = _strict_error('{"parameters": {}}')
    assert (error.position, error.reason) == (0, 'tool call JSON has no "name"')

    error = _strict_error('{"name": "f", "parameters": "x"}')
    assert error.position == 0
    assert "call to 'f'" in error.reason


# Objects the C decoder refuses, read whole by ``parse`` (the decoder's own error, the
# character it missed put back, or the object reader's steps in one expression) and
# character by character by a stream (the object reader, then a second decode).
REFUSED = [
    '{"name": "f", "parameters": {"x" 1}}',  # a ":" missing
    'Hi.\n{"name": "f",\n "parameters": {"x": 1 "y": 2}} and more {x}',  # a "," missing
    'Note: {"name": "f" "parameters": {"a": [1 2]}}',  # two missing: the reader decides
    '{"name": "f", "parameters": {"x": }}',  # a value missing
    '{"name": "f", "parameters": {"x": 1,}} {"name": "g", "parameters": {}}',
    '{"name": "f", "parameters": {"x": 1)}',  # rejected at ")"
    '{"name": "f", "parameters": {"x": [1}}',  # a mismatched bracket
    '{"name": "f", "parameters": {x}}',  # no key after "{"
    '{"name": "f", "parameters": {"x" 1}',  # the text ends inside
    '{"name": "f", "parameters": {"x" "unterminated',
    '{"name": "f", "parameters": {"x" 1, "y": {',
    'a {"name": "f", "parameters": {"s": "\\u00e9 \\" } [", "t" 2}}; '
    '{"name": "g", "parameters": {}}',
    '{"name": "f",\n"parameters": {"x"\n\n 1}}',
]


@pytest.mark.parametrize("name", BOTH)
@pytest.mark.parametrize("text", REFUSED)
def test_refused_objects_read_whole_as_the_object_reader_reads_them(name: str, text: str) -> None:
    for strict in (False, True):
        parser = get_parser(name, strict=strict)
        assert _outcome(parser, [text]) == _outcome(parser, list(text))


def _outcome(parser: Any, pieces: list[str]) -> Any:
    """The result of streaming ``pieces`` (``parse`` for one piece), or its
    ``ParseError``'s reason, position and snippet."""
    try:
        if len(pieces) == 1:
            return parser.parse(pieces[0])
        stream = parser.stream()
        for piece in pieces:
            stream.feed(piece)
        return stream.close()
    except ParseError as error:
        return (error.reason, error.position, error.snippet)


# streaming ------------------------------------------------------------------------------
TRICKY = [
    '{"name": "a", "parameters": {"s": "q\\"uote \\\\ back\\\\"}}; {"name": "b", "parameters": {}}',
    'pre <|python_tag|> {"name": "a", "parameters": {"t": "<|python_end|>"}}<|eom_id|>',
    '<|python_start|>Hi<|python_end|>{"name": "a", "parameters": []}'
    '{"name": "b", "parameters": {}}',
    '<think>a</thi</think>{"name": "a", "parameters": {}} ; <|python_t',
    '{ x {"name": "a"} {"name": "b", "arguments": {"k": [1, {"z": "}"}]}} '
    '{"name": "c", "parameters": {}',
    '{"name": "x", "parameters": {"a": 1}; {"name": "y", "parameters": {}}',
    '<|python_tag|>print(1)<|python_tag|><|python_tag|>{"name": "z", "parameters": {"n": NaN}}',
]


@pytest.mark.parametrize("name", BOTH)
@pytest.mark.parametrize("text", TRICKY)
def test_tricky_texts_stream_like_parse(name: str, text: str) -> None:
    parser = get_parser(name)
    for pieces in chunkings(text, seed=len(text)):
        check_stream(parser, pieces)


def test_calls_stream_as_soon_as_their_object_closes() -> None:
    stream = get_parser("llama4_json").stream()
    assert stream.feed("Hello {") == [ContentDelta("Hello ")]
    assert stream.feed('"name": "a", "parameters": {"x": ') == []
    events = stream.feed("1}}{")
    assert len(events) == 1
    assert isinstance(events[0], ToolCallEvent)
    assert events[0].tool_call.function.arguments == '{"x": 1}'
    events = stream.feed("x}")
    assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == "{x}"
    assert stream.close().content == "Hello {x}"


FRAGMENTS = [
    "{", "}", "[", "]", '"', "\\", ";", ":", ",", " ", "\n", "a", "1", "-", "NaN", "name",
    '"name"', '"parameters"', '"arguments"', '"f"', "true", "<", "<|python_tag|>",
    "<|python_start|>", "<|python_end|>", "<think>", "</think>", "<|python",
    '{"name": "f", "parameters": {"x": [1, "}"]}}', '{"name": "g"}', '{"a": 1}',
]  # fmt: skip


@pytest.mark.parametrize("name", BOTH)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_texts_parse_and_stream_alike(name: str, data: st.DataObject) -> None:
    text = "".join(data.draw(st.lists(st.sampled_from(FRAGMENTS), max_size=25)))
    prefilled = data.draw(st.booleans())
    parser = get_parser(name, think_prefilled=prefilled)
    expected = parser.parse(text)
    if text:
        check_stream(parser, list(text))
        cuts = sorted(set(data.draw(st.lists(st.integers(1, len(text)), max_size=6))))
        bounds = [0, *cuts, len(text)]
        check_stream(parser, [text[a:b] for a, b in itertools.pairwise(bounds)])
    strict = get_parser(name, strict=True, think_prefilled=prefilled)
    try:
        assert strict.parse(text) == expected
    except ParseError as exc:
        position = exc.position
        assert 0 <= position < len(text)


# linear time ------------------------------------------------------------------------------
ADVERSARIAL = {
    "open-braces": "{",
    "open-keys": '{"a":',
    "open-strings": '{"',
    "braces-after-newlines": "\n{x",
    "python-tags": "<|python_tag|>",
    "python-starts": "<|python_start|>",
    "think-blocks": "<think></think>",
    "open-arrays": '{"name": "f", "parameters": [',
    "calls": '{"name": "f", "parameters": {"k": "v"}}; ',
}


@pytest.mark.parametrize("unit", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_adversarial_inputs_take_linear_time(unit: str) -> None:
    # Quadratic work would make ten times the input cost a hundred times the steps.
    parser = get_parser("llama3_json")
    assert_linear(lambda count: parser.parse(unit * count), 3000 // len(unit))


def test_large_call_streamed_one_character_at_a_time() -> None:
    parser = get_parser("llama3_json")

    def run(count: int) -> None:
        body = "x" * count
        text = '{"name": "write", "parameters": {"data": "' + body + '", "n": [1, 2, 3]}}'
        stream = parser.stream()
        for char in text:
            stream.feed(char)
        result = stream.close()
        assert result.tool_calls is not None
        assert json.loads(result.tool_calls[0].function.arguments)["data"] == body

    assert_linear(run, 300)


@pytest.mark.parametrize("name", ["llama3_json", "llama4_json"])
@pytest.mark.parametrize(
    "text",
    [
        'if a < b and c <d then <|python_tag|>{"name": "f", "parameters": {"x": 1}}',
        "x < y <thi" + 'nk>plan</think>{"name": "f", "parameters": {}}',
        "a <| b < c <",
        'see <|python_start|>{"name": "f", "parameters": {}}<|python_end|> < done',
    ],
)
def test_chunks_with_plain_angle_brackets_stream_as_parse(name: str, text: str) -> None:
    """A chunk whose every ``<`` is plain content passes straight through; one ending in
    the beginning of a marker, or holding one, does not."""
    parser = get_parser(name)
    for pieces in chunkings(text, seed=3):
        check_stream(parser, pieces)


# the quick reading ------------------------------------------------------------------
_CALL_A = '{"name": "f", "parameters": {"a": 1}}'
_CALL_B = '{"name": "g", "arguments": {"b": "x\\ny"}, "parameters": {"c": 2}}'

#: Texts the quick reading reads itself (calls only, as the templates write them, with
#: content around them that holds no markup).
_QUICK_READ = {
    "one call": _CALL_A,
    "the llama3 separator": f"{_CALL_A}; {_CALL_B}",
    "spaces around the separator": f" \n{_CALL_A} ;\t{_CALL_B}  ",
    "no separator": f"{_CALL_A}{_CALL_B}",
    "whitespace between": f"{_CALL_A}\n\n{_CALL_B}",
    "a final separator": f"{_CALL_A}; {_CALL_B} ; ",
    "content before": f"Sure: {_CALL_A}{_CALL_B}",
    "content on both sides": f"Sure.\n{_CALL_A} ; {_CALL_B}\n bye",
    "a separator then content": f"{_CALL_A}; then more",
    "raw newlines in a string": '{"name": "f", "parameters": {"a": "x\ny"}}',
    "non-ASCII": '{"name": "é", "parameters": {"a": "ü\U0001f600"}}',
}

#: Texts it leaves to the scanner (or reads by handing a refused object over).
_QUICK_LEFT = {
    "a marker before": f"<|python_tag|>{_CALL_A}",
    "an angle before": f"a < b {_CALL_A}",
    "a marker after": f"{_CALL_A}<|python_end|>",
    "a brace after": f"{_CALL_A} and {{x}}",
    "reasoning after": f"{_CALL_A}<think>hm</think>",
    "no arguments": '{"name": "f"}',
    "no name": '{"parameters": {}}',
    "arguments in a string": '{"name": "f", "parameters": "{\\"a\\": 1}"}',
    "a name that is not a string": '{"name": 1, "parameters": {}}',
    "an empty name": '{"name": " ", "parameters": {}}',
    "an escaped surrogate": '{"name": "f", "parameters": {"a": "\\ud800"}}',
    "a lone surrogate": '{"name": "f", "parameters": {"a": "\ud800"}}',
    "NaN": '{"name": "f", "parameters": {"a": NaN}}',
    "a separator then a non-call": f"{_CALL_A}; {{}}",
    "a missing colon": '{"name": "f", "parameters": {"a" 1}}',
    "a missing colon, then reasoning": '{"name": "f" "parameters": {}}<think>x</think>',
    "a good call, then a broken one": f'{_CALL_A}; {{"name": "g" "parameters": {{}}}} x',
    "unterminated": '{"name": "f", "parameters": {"a": 1}',
}


@pytest.mark.parametrize("name", BOTH)
@pytest.mark.parametrize("case", [*_QUICK_READ, *_QUICK_LEFT])
def test_quick_reading_gives_the_general_answer(name: str, case: str) -> None:
    """The quick reading against the scanner, in lenient and strict mode: the same
    result wherever it gives one, and it reads the templates' calls itself."""
    text = _QUICK_READ.get(case) or _QUICK_LEFT[case]
    for strict, quick in quick_readings(name, text).items():
        if case in _QUICK_READ:
            assert quick is not None
            assert quick.tool_calls
        elif "missing colon" in case or "broken" in case:
            # Lenient: the decoder's error is handed to the scanner; strict: left to it.
            assert (quick is None) == strict


def test_a_refused_object_is_handed_to_the_scanner_not_decoded_again() -> None:
    """The scanner takes the decoder's error it is given for an object (its reason shows
    that error's message), only for that text object and position."""
    text = 'Hi {"name": "f" "parameters": {}} x'
    at = text.index("{")
    given = json.JSONDecodeError("Given here", text, at + 10)
    scanner = _LlamaScanner(think_prefilled=False, whole=True, refusal=(text, at, given))
    reasons = [s.reason for s in scanner.feed(text) + scanner.finish() if hasattr(s, "reason")]
    assert reasons == ["tool call is not valid JSON (Given here: line 1 column 11 (char 10))"]
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(text[at:])
    decoded = f"tool call is not valid JSON ({caught.value})"
    # Another position, or an equal text that is another object: the scanner decodes.
    for refusal in ((text, at + 1, given), ("".join(["H", text[1:]]), at, given)):
        scanner = _LlamaScanner(think_prefilled=False, whole=True, refusal=refusal)
        reasons = [s.reason for s in scanner.feed(text) + scanner.finish() if hasattr(s, "reason")]
        assert reasons == [decoded]
