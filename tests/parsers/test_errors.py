"""One exception root: every error hermes-parsers raises is a ``HermesParsersError`` and
the built-in it used to be, and kinds are told apart by class and ``kind``, not text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import hermes_parsers
from hermes_parsers import (
    ArgumentsError,
    FunctionCall,
    HermesParsersError,
    NotTextError,
    OptionError,
    ParseError,
    ParserRegistry,
    RegistrationError,
    RenderError,
    StreamClosedError,
    ToolCall,
    ToolCallError,
    UnknownParserError,
    get_parser,
)
from hermes_parsers import _errors as errors_module
from hermes_parsers.formats.hermes import HermesParser


def test_every_error_class_derives_from_the_root() -> None:
    classes = [
        value
        for name in errors_module.__all__
        if isinstance(value := getattr(errors_module, name), type)
    ]
    assert len(classes) == 10
    for cls in classes:
        assert issubclass(cls, HermesParsersError), cls
        assert cls.__name__ in hermes_parsers.__all__


def _raised(action: Any) -> BaseException:
    with pytest.raises(HermesParsersError) as caught:
        action()
    return caught.value


def _strict(text: str) -> ParseError:
    error = _raised(lambda: get_parser("hermes", strict=True).parse(text))
    assert isinstance(error, ParseError)
    return error


def test_parse_errors_carry_their_kind() -> None:
    assert _strict("<tool_call>{broken</tool_call>").kind == "markup"
    assert _strict('<tool_call>{"name": "", "arguments": {}}</tool_call>').kind == "name"
    assert _strict('<tool_call>{"name": "f", "arguments": [1]}</tool_call>').kind == "arguments"
    surrogate = '<tool_call>{"name": "f", "arguments": {"a": "\ud800"}}</tool_call>'
    assert _strict(surrogate).kind == "encoding"
    error = _strict("<tool_call>{broken</tool_call>")
    assert isinstance(error, ValueError)
    where = f"hermes: {error.reason} at offset {error.position}: {error.snippet!r}"
    assert error.where() == where


def test_each_public_entry_point_raises_under_the_root() -> None:
    hermes = get_parser("hermes")
    unknown = _raised(lambda: get_parser("nope"))
    assert isinstance(unknown, UnknownParserError)
    assert isinstance(unknown, KeyError)

    not_text = _raised(lambda: hermes.parse(b"x"))  # type: ignore[arg-type]
    assert isinstance(not_text, NotTextError)
    assert isinstance(not_text, TypeError)

    stream = hermes.stream()
    stream.close()
    closed = _raised(lambda: stream.feed("x"))
    assert isinstance(closed, StreamClosedError)
    assert isinstance(closed, RuntimeError)

    content = _raised(lambda: hermes.render("see <tool_call>", []))
    assert isinstance(content, RenderError)
    assert content.kind == "content"
    assert isinstance(content, ValueError)
    bad_name = ToolCall("c", FunctionCall("a b", "{}"))
    call = _raised(lambda: get_parser("mistral").render(None, [bad_name]))
    assert isinstance(call, RenderError)
    assert call.kind == "call"

    option = _raised(lambda: get_parser("mistral", style="nope"))
    assert isinstance(option, OptionError)
    assert isinstance(option, ValueError)


def test_tool_call_errors() -> None:
    no_name = _raised(lambda: ToolCall.from_dict({"function": {}}))
    assert type(no_name) is ToolCallError
    assert no_name.kind == "name"
    for arguments, problem in (("{", "invalid_json"), ("[1]", "not_object")):
        error = _raised(
            lambda a=arguments: ToolCall.from_dict({"function": {"name": "f", "arguments": a}})
        )
        assert isinstance(error, ArgumentsError)
        assert isinstance(error, ToolCallError)
        assert error.kind == "arguments"
        assert error.problem == problem
    by_hand = _raised(lambda: FunctionCall("f", "{").parsed_arguments())
    assert isinstance(by_hand, ArgumentsError)
    assert by_hand.problem == "invalid_json"


def test_registration_errors() -> None:
    registry = ParserRegistry()
    registry.register("echo")(HermesParser)
    taken = _raised(lambda: registry.register("echo")(type("Other", (HermesParser,), {})))
    assert isinstance(taken, RegistrationError)
    assert taken.kind == "name_taken"
    assert isinstance(taken, ValueError)
    not_parser = _raised(lambda: registry.register("x")(dict))  # type: ignore[type-var]
    assert isinstance(not_parser, RegistrationError)
    assert not_parser.kind == "not_a_parser"
    assert isinstance(not_parser, TypeError)
    empty = _raised(lambda: registry.register("")(HermesParser))
    assert isinstance(empty, RegistrationError)
    assert empty.kind == "empty_name"


def test_no_error_is_classified_by_its_message_text() -> None:
    package = Path(hermes_parsers.__file__).parent
    # A condition that looks at an exception's text (quoting it in a message is fine).
    text_of_error = r"(str\(\s*(exc|error|err|e)\s*\)|\b(exc|error|err|e)\.(msg|args)\b)"
    pattern = re.compile(
        rf"^\s*(if|elif|while)\b.*{text_of_error}"
        rf"|{text_of_error}(\.(startswith|endswith)|\s*(==|!=|in\b))"
        rf"|\bin\s+{text_of_error}"
    )
    for path in package.rglob("*.py"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not pattern.search(line), f"{path.name}:{number}: {line.strip()}"
