"""The public surface: names, registry, errors, value types."""

from __future__ import annotations

import json

import pytest

import hermes_parsers
from hermes_parsers import (
    ParseResult,
    ParserRegistry,
    ToolCall,
    ToolCallParser,
    UnknownParserError,
    get_parser,
    list_parsers,
    register_parser,
)
from hermes_parsers.formats.hermes import HermesParser

SPEC_NAMES = {
    "hermes", "mistral", "llama3_json", "llama4_json", "qwen", "qwen3_coder", "deepseek_v3",
    "deepseek_v3_1", "kimi_k2", "longcat", "glm45", "glm47",
}  # fmt: skip


def test_all_is_pinned() -> None:
    # Adding or removing a public name is a decision: change this list with it.
    assert hermes_parsers.__all__ == [
        "ENTRY_POINT_GROUP",
        "ArgumentsError",
        "ContentDelta",
        "FunctionCall",
        "HermesParsersError",
        "NotTextError",
        "OptionError",
        "ParseError",
        "ParseResult",
        "ParserRegistry",
        "ReasoningDelta",
        "RegistrationError",
        "RenderError",
        "StreamClosedError",
        "StreamEvent",
        "StreamParser",
        "ToolCall",
        "ToolCallError",
        "ToolCallEvent",
        "ToolCallParser",
        "UnknownParserError",
        "__version__",
        "get_parser",
        "list_parsers",
        "register_parser",
    ]

    # Sorted as ruff (RUF022) sorts it: constants, then classes, then the rest.
    def group(name: str) -> tuple[int, str]:
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert hermes_parsers.__all__ == sorted(hermes_parsers.__all__, key=group)


def test_all_names_exist_and_are_exported() -> None:
    for name in hermes_parsers.__all__:
        assert hasattr(hermes_parsers, name), name
    public = {n for n in dir(hermes_parsers) if not n.startswith("_")}
    # Submodules are importable but only __all__ is the API.
    assert set(hermes_parsers.__all__) - {"__version__"} <= public


def test_registered_names_cover_the_spec() -> None:
    registered = set(list_parsers())
    assert set(list_parsers(include_aliases=True)) >= SPEC_NAMES | {"deepseek_v31"}
    built_in = {
        name
        for name in registered
        if type(get_parser(name)).__module__.startswith("hermes_parsers.formats.")
    }
    assert built_in == SPEC_NAMES  # plug-ins may add names, the package itself adds none
    for name in SPEC_NAMES:
        parser = get_parser(name)
        assert isinstance(parser, ToolCallParser)
        assert parser.name == name
    assert type(get_parser("deepseek_v31")) is type(get_parser("deepseek_v3_1"))


def test_unknown_name_lists_known_ones() -> None:
    with pytest.raises(KeyError) as caught:
        get_parser("no-such-format")
    error = caught.value
    assert isinstance(error, UnknownParserError)
    assert "no-such-format" in str(error)
    for name in list_parsers():
        assert name in str(error)
        assert name in error.known


def test_bad_option_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        get_parser("hermes", not_an_option=True)


def test_parse_rejects_bytes() -> None:
    with pytest.raises(TypeError, match="decode bytes first"):
        get_parser("hermes").parse(b"<tool_call>")  # type: ignore[arg-type]


def test_register_parser_decorator_and_aliases() -> None:
    registry = ParserRegistry()

    @registry.register("echo", "echo2")
    class Echo(HermesParser):
        pass

    assert registry.names() == ["echo"]
    assert registry.names(include_aliases=True) == ["echo", "echo2"]
    assert type(registry.get("echo2")) is Echo
    with pytest.raises(ValueError, match="already taken"):
        registry.register("echo")(type("Other", (Echo,), {}))
    with pytest.raises(TypeError, match="ToolCallParser subclass"):
        registry.register("x")(dict)  # type: ignore[type-var]
    with pytest.raises(UnknownParserError, match="echo, echo2"):
        registry.get("nope")


def test_register_parser_on_default_registry_is_idempotent_per_class() -> None:
    cls = type(get_parser("hermes"))
    assert register_parser("hermes")(cls) is cls


def test_parse_result_unpacks_and_converts() -> None:
    text = '<think>hm</think>Sure.<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'
    result = get_parser("hermes").parse(text)
    content, calls = result
    assert content == "Sure."
    assert calls is not None
    assert result[0] == content
    assert len(result) == 2
    assert calls[0].to_dict() == {
        "id": calls[0].id,
        "type": "function",
        "function": {"name": "f", "arguments": '{"a": 1}'},
    }
    assert result.to_message() == {
        "role": "assistant",
        "content": "Sure.",
        "tool_calls": [calls[0].to_dict()],
        "reasoning_content": "hm",
    }
    assert ParseResult("x", None).to_message() == {"role": "assistant", "content": "x"}


def test_ids_are_deterministic_and_distinct() -> None:
    parser = get_parser("hermes")
    text = '<tool_call>{"name": "f", "arguments": {}}</tool_call>' * 2
    first = parser.parse(text).tool_calls
    assert first is not None
    assert first == parser.parse(text).tool_calls
    assert first[0].id != first[1].id
    assert first[0].id.startswith("call_")


def test_tool_call_from_dict_validates() -> None:
    call = ToolCall.from_dict({"id": "c1", "function": {"name": "f", "arguments": {"b": [1]}}})
    assert call.function.arguments == '{"b": [1]}'
    assert call.function.parsed_arguments() == {"b": [1]}
    assert (
        ToolCall.from_dict({"function": {"name": "f", "arguments": ""}}).function.arguments == "{}"
    )
    with pytest.raises(ValueError, match=r"function\.name"):
        ToolCall.from_dict({"function": {"arguments": "{}"}})
    with pytest.raises(ValueError, match="not valid JSON"):
        ToolCall.from_dict({"function": {"name": "f", "arguments": "{"}})
    with pytest.raises(ValueError, match="JSON object"):
        ToolCall.from_dict({"function": {"name": "f", "arguments": "[1]"}})


def test_render_refuses_markup_in_content() -> None:
    parser = get_parser("hermes")
    with pytest.raises(ValueError, match=r"hermes: content contains '<tool_call>'"):
        parser.render("see <tool_call>", [])
    call = {"function": {"name": "f", "arguments": {"x": "</tool_call>"}}}
    text = parser.render("ok", [call])
    calls = parser.parse(text).tool_calls
    assert calls is not None
    assert json.loads(calls[0].function.arguments) == {"x": "</tool_call>"}


def test_huge_adversarial_input_is_kept_as_content() -> None:
    text = "<tool_call>" * 100_000
    result = get_parser("hermes").parse(text)
    assert result.tool_calls is None
    assert result.content == text


def test_function_call_is_immutable_comparable_and_picklable() -> None:
    import pickle

    from hermes_parsers import FunctionCall

    parsed = get_parser("hermes").parse(
        '<tool_call>{"name": "f", "arguments": {"k": "é"}}</tool_call>'
    )
    assert parsed.tool_calls is not None
    lazy = parsed.tool_calls[0].function
    eager = FunctionCall("f", '{"k": "é"}')
    assert lazy == eager
    assert hash(lazy) == hash(eager)
    assert lazy.arguments == '{"k": "é"}'
    assert repr(lazy) == "FunctionCall(name='f', arguments='{\"k\": \"é\"}')"
    assert pickle.loads(pickle.dumps(lazy)) == lazy
    with pytest.raises(AttributeError, match="immutable"):
        lazy.name = "g"
    copy_of_arguments = lazy.parsed_arguments()
    copy_of_arguments["k"] = "changed"
    assert lazy.parsed_arguments() == {"k": "é"}
    assert FunctionCall("f", "[1]") != lazy
    with pytest.raises(ValueError, match="not a JSON object"):
        FunctionCall("f", "[1]").parsed_arguments()


def test_no_format_overrides_a_public_method_of_the_base() -> None:
    public = {name for name in vars(ToolCallParser) if not name.startswith("_")}
    public = {name for name in public if callable(getattr(ToolCallParser, name))}
    assert {"parse", "stream", "render"} <= public
    for name in list_parsers():
        for cls in type(get_parser(name)).__mro__:
            if cls is ToolCallParser or not issubclass(cls, ToolCallParser):
                continue
            overridden = public & set(vars(cls))
            assert not overridden, f"{cls.__name__} overrides {sorted(overridden)}"


def test_a_format_shapes_reasoning_through_hooks() -> None:
    class Bracketed(HermesParser):
        reasoning_tags = ("<think>", "</think>")
        reasoning_padding = ""
        after_reasoning = " "
        reasoning_forbidden = ("<tool_call>",)

    parser = Bracketed()
    assert parser.render("Hi.", reasoning=" why ") == "<think>why</think> Hi."
    assert Bracketed(think_prefilled=True).render("Hi.", reasoning="why") == "why</think> Hi."
    with pytest.raises(hermes_parsers.RenderError, match="reasoning contains '<tool_call>'"):
        parser.render("Hi.", reasoning="a <tool_call> b")
    with pytest.raises(hermes_parsers.RenderError, match="reasoning contains '</think>'"):
        parser.render("Hi.", reasoning="a </think> b")
    assert parser.parse(parser.render("Hi.", reasoning="why")).reasoning == "why"
