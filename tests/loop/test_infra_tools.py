"""A tool handler failing for the infrastructure's sake ends the rollout as infra_error."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_loop import AgentLoop, OpenAIChatServer, Tool, ToolInfrastructureError
from hermes_loop.server import Call, ModelServer, Script, Turn


class MachineGone(Exception):
    """Stands for a third-party error such as hermes_sandbox.SandboxClosedError."""


def handlers(fail_with: BaseException) -> list[Tool]:
    def ok(arguments: dict[str, Any], call: Any) -> str:
        return "fine"

    async def broken(arguments: dict[str, Any], call: Any) -> str:
        raise fail_with

    def broken_blocking(arguments: dict[str, Any], call: Any) -> str:
        raise fail_with

    schema = {"type": "object"}
    return [
        Tool("ok", "Works.", schema, ok),
        Tool("broken", "Fails.", schema, broken),
        Tool("broken_blocking", "Fails in a thread.", schema, broken_blocking),
    ]


SCRIPT = [
    Turn(tool_calls=[Call("ok", {})]),
    Turn(tool_calls=[Call("BROKEN", {})]),
    Turn("should never be asked for"),
]


async def run(tool: str, error: BaseException, infra: tuple[type[BaseException], ...]) -> Any:
    turns = [t if i != 1 else Turn(tool_calls=[Call(tool, {})]) for i, t in enumerate(SCRIPT)]
    async with ModelServer(Script(turns)) as server:
        endpoint = OpenAIChatServer(base_url=server.base_url, model="scripted", max_retries=0)
        async with AgentLoop(endpoint, handlers(error), infra_exceptions=infra) as loop:
            result = await loop.run([{"role": "user", "content": "go"}], task_id="t")
        await endpoint.aclose()
    return result


@pytest.mark.parametrize("tool", ["broken", "broken_blocking"])
@pytest.mark.parametrize(
    ("error", "infra"),
    [
        (ToolInfrastructureError("the sandbox died"), ()),
        (MachineGone("the sandbox died"), (MachineGone,)),
    ],
)
async def test_an_infrastructure_failure_ends_the_rollout(
    tool: str, error: BaseException, infra: tuple[type[BaseException], ...]
) -> None:
    result = await run(tool, error, infra)
    assert result.stop_reason == "infra_error"
    assert result.infra_error is not None
    assert result.infra_error.kind == "tool_infra"
    assert result.infra_error.turn == 1
    assert "the sandbox died" in result.infra_error.message
    assert result.tool_errors == [], "not the model's error"
    assert result.turns_used == 2
    # Everything before the failure is kept, the failed call's message included.
    assert [m["role"] for m in result.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert result.messages[2]["content"] == "fine"


async def test_other_exceptions_stay_the_models_tool_errors() -> None:
    result = await run("broken", MachineGone("bad input"), ())
    assert result.stop_reason == "natural"
    assert [e.kind for e in result.tool_errors] == ["exception"]
