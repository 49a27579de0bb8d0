"""HermesAgentLoop with the reference framework's keywords, and ToolError.tool_result."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_loop import (
    HermesAgentLoop,
    LoopScope,
    OpenAIChatServer,
    Tool,
    ToolDefinitionError,
    ToolInvocation,
    bind_loop_scope,
    current_loop_scope,
)
from hermes_loop.server import Call, ModelRequest, ModelServer, Responder, Script, Turn

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
USER = [{"role": "user", "content": "echo hi"}]


def shout(arguments: dict[str, Any], call: ToolInvocation) -> str:
    return f"{call.task_id}: {arguments['text'].upper()}"


TOOLS = {"shout": Tool("shout", "Shout.", SCHEMA, shout), "other": Tool("other", "", SCHEMA, shout)}


def schema(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": SCHEMA}}


class Recording(Responder):
    """A script that keeps every request body."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.bodies: list[dict[str, Any]] = []

    async def respond(self, request: ModelRequest) -> Turn:
        self.bodies.append(dict(request.body))
        return await self.script.respond(request)


def endpoint(server: ModelServer) -> OpenAIChatServer:
    return OpenAIChatServer(base_url=server.base_url, model="scripted", max_retries=0, timeout=10)


async def test_reference_keywords_inside_a_bound_scope() -> None:
    calls = [Call("shout", {"text": "hi"}), Call("other", {"text": "x"})]
    script = Recording(Script([Turn(tool_calls=calls), Turn("ok")]))
    async with ModelServer(script) as server:
        chat = endpoint(server)
        with bind_loop_scope(LoopScope(chat, TOOLS)):
            loop = HermesAgentLoop(
                server=object(),  # e.g. Atropos' server manager: the scope's endpoint is used
                tool_schemas=[schema("shout"), schema("other")],
                valid_tool_names={"shout"},
                max_turns=3,
                task_id="rollout-7",
                temperature=0.5,
                max_tokens=64,
                extra_body={"top_k": 5},
            )
            result = await loop.run(USER)
        await loop.aclose()
        await chat.aclose()
        request = script.bodies[0]
    assert current_loop_scope() is None
    assert result.task_id == "rollout-7"
    assert [t["function"]["name"] for t in request["tools"]] == ["shout"]
    assert (request["temperature"], request["max_tokens"], request["top_k"]) == (0.5, 64, 5)
    tool_texts = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert tool_texts[0] == "rollout-7: HI"
    (error,) = result.tool_errors  # "other" is not a valid name for this loop
    assert (error.tool_name, error.kind) == ("other", "unknown_tool")
    assert error.tool_result == tool_texts[1]
    assert error.tool_result.startswith("Error:")


async def test_without_a_scope_a_foreign_server_or_unknown_handler_is_one_clear_error() -> None:
    with pytest.raises(TypeError, match="not a ChatServer"):
        HermesAgentLoop(server=object(), tool_schemas=[schema("shout")])
    async with ModelServer(Script([Turn("hi")])) as server:
        chat = endpoint(server)
        with pytest.raises(ToolDefinitionError, match="'shout' but no handler"):
            HermesAgentLoop(server=chat, tool_schemas=[schema("shout")])
        loop = HermesAgentLoop(chat, tool_schemas=[schema("shout")], tools=[TOOLS["shout"]])
        assert loop.tools.names == ["shout"]
        await loop.aclose()
        await chat.aclose()
