"""hermes-loop's public names and its one error tree."""

from __future__ import annotations

import typing

import pytest

import hermes_loop
from hermes_loop import (
    EndpointError,
    HermesLoopError,
    InvalidMessagesError,
    ResultFormatError,
    ToolDefinitionError,
    UnknownToolsetError,
)
from hermes_loop._errors import EndpointErrorKind
from hermes_loop._result import InfraErrorKind, ToolErrorKind


def test_the_public_names_are_pinned() -> None:
    # A change here is a deliberate change of hermes-loop's public API.
    assert hermes_loop.__all__ == [
        "AgentLoop",
        "AgentResult",
        "ChatServer",
        "ChatSession",
        "EndpointError",
        "EndpointErrorKind",
        "GenerateChatServer",
        "HandlerThreadPool",
        "HermesAgentLoop",
        "HermesLoopError",
        "InfraError",
        "InfraErrorKind",
        "InvalidMessagesError",
        "LoopScope",
        "ModelTurn",
        "OpenAIChatServer",
        "ResultFormatError",
        "RolloutProgress",
        "SamplingParams",
        "Tool",
        "ToolDefinitionError",
        "ToolError",
        "ToolInfrastructureError",
        "ToolInvocation",
        "ToolLike",
        "ToolOutcome",
        "ToolRegistry",
        "ToolRunner",
        "ToolSet",
        "TurnRecord",
        "UnknownToolsetError",
        "__version__",
        "atif_trajectory",
        "bind_loop_scope",
        "current_loop_scope",
        "lazy_exports",
    ]
    assert hermes_loop.__all__ == sorted(hermes_loop.__all__)
    for name in hermes_loop.__all__:
        assert hasattr(hermes_loop, name), name


def test_every_exported_exception_is_under_hermes_loop_error() -> None:
    exported = [getattr(hermes_loop, name) for name in hermes_loop.__all__]
    errors = [
        value for value in exported if isinstance(value, type) and issubclass(value, BaseException)
    ]
    assert {e.__name__ for e in errors} == {
        "EndpointError",
        "HermesLoopError",
        "InvalidMessagesError",
        "ResultFormatError",
        "ToolDefinitionError",
        "ToolInfrastructureError",
        "UnknownToolsetError",
    }
    assert all(issubclass(error, HermesLoopError) for error in errors)


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (UnknownToolsetError("toolset", "web", ["file"]), KeyError),
        (InvalidMessagesError("no messages"), ValueError),
        (ToolDefinitionError("bad name"), ValueError),
        (ResultFormatError("not a result"), ValueError),
    ],
)
def test_errors_keep_the_builtin_base_callers_catch(error: Exception, builtin: type) -> None:
    assert isinstance(error, HermesLoopError)
    assert isinstance(error, builtin)


def test_error_kinds_are_literal_types() -> None:
    endpoint_kinds = set(typing.get_args(EndpointErrorKind))
    assert endpoint_kinds == {
        "rate_limited",
        "server_error",
        "timeout",
        "connection",
        "bad_request",
        "bad_response",
    }
    infra_kinds = {k for part in typing.get_args(InfraErrorKind) for k in typing.get_args(part)}
    assert infra_kinds == endpoint_kinds | {"tool_not_started", "tool_infra"}
    assert set(typing.get_args(ToolErrorKind)) == {
        "unknown_tool",
        "invalid_arguments",
        "exception",
        "timeout",
    }
    error = EndpointError("bad_response", "/generate answered the wrong shape: ...")
    assert (error.kind, error.status, str(error)) == (
        "bad_response",
        None,
        "/generate answered the wrong shape: ...",
    )
