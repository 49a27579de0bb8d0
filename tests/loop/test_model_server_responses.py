"""The scripted model server's Responses API (``POST /v1/responses``), driven by the openai
package's own ``client.responses`` over real HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import (
    FunctionToolParam,
    Response,
    ResponseFunctionToolCall,
    ResponseInputItemParam,
    ResponseOutputMessage,
    ResponseReasoningItem,
)

from hermes_loop.server import (
    RESPONSES_PATH,
    Call,
    Fault,
    ModelRequest,
    ModelServer,
    Policy,
    Replay,
    Script,
    Turn,
)

TOOLS: list[FunctionToolParam] = [
    {
        "type": "function",
        "name": "terminal",
        "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        "strict": False,
    }
]
LS_TURN = Turn(
    content="Let me look.",
    reasoning="I should list the directory.",
    tool_calls=[Call("terminal", {"command": "ls /tmp"}), Call("terminal", {"command": "df"})],
)
DONE_TURN = Turn(content="It holds a.txt.")


def client(server: ModelServer, **options: Any) -> openai.AsyncOpenAI:
    options.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test", **options)


@pytest.fixture
async def server() -> AsyncIterator[ModelServer]:
    async with ModelServer(Script([LS_TURN, DONE_TURN])) as running:
        yield running


def follow_up(first: Response, results: list[str]) -> list[ResponseInputItemParam]:
    """The input after the first reply (its output items sent back) and the tool results."""
    items: list[Any] = [{"role": "user", "content": "What is in /tmp?"}]
    items += [item.model_dump(exclude_none=True) for item in first.output]
    calls = [item for item in first.output if isinstance(item, ResponseFunctionToolCall)]
    items += [
        {"type": "function_call_output", "call_id": call.call_id, "output": result}
        for call, result in zip(calls, results, strict=True)
    ]
    return items


async def test_output_items_are_reasoning_message_and_function_calls(server: ModelServer) -> None:
    async with client(server) as api:
        first = await api.responses.create(
            model="scripted", input="What is in /tmp?", instructions="Be brief.", tools=TOOLS
        )
    assert first.object == "response"
    assert first.status == "completed"
    assert first.id.startswith("resp_")
    assert first.instructions == "Be brief."
    assert [tool.type for tool in first.tools] == ["function"]
    reasoning, message, *calls = first.output
    assert isinstance(reasoning, ResponseReasoningItem)
    assert [part.text for part in reasoning.content or []] == ["I should list the directory."]
    assert isinstance(message, ResponseOutputMessage)
    assert message.role == "assistant"
    assert first.output_text == "Let me look."
    assert all(isinstance(call, ResponseFunctionToolCall) for call in calls)
    assert [(c.name, json.loads(c.arguments)) for c in calls if c.type == "function_call"] == [
        ("terminal", {"command": "ls /tmp"}),
        ("terminal", {"command": "df"}),
    ]
    call_ids = [c.call_id for c in calls if c.type == "function_call"]
    assert len(set(call_ids)) == 2
    assert all(call_id.startswith("call_") for call_id in call_ids)
    assert server.requests == {"responses": 1}


async def test_sent_back_output_is_one_assistant_turn(server: ModelServer) -> None:
    async with client(server) as api:
        first = await api.responses.create(model="scripted", input="What is in /tmp?", tools=TOOLS)
        second = await api.responses.create(
            model="scripted", input=follow_up(first, ["a.txt", "ok"]), tools=TOOLS
        )
    assert second.output_text == "It holds a.txt."
    assert [item.type for item in second.output] == ["message"]


async def test_usage_equals_the_chat_route_on_the_same_conversation(server: ModelServer) -> None:
    chat_tools: list[Any] = [
        {"type": "function", "function": {k: v for k, v in TOOLS[0].items() if k != "type"}}
    ]
    chat_tools[0]["function"].pop("strict")
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is in /tmp?"},
    ]
    async with client(server) as api:
        chat = await api.chat.completions.create(
            model="scripted", messages=messages, tools=chat_tools
        )
        response = await api.responses.create(
            model="scripted", input="What is in /tmp?", instructions="Be brief.", tools=TOOLS
        )
    assert chat.usage is not None
    assert response.usage is not None
    assert response.usage.input_tokens == chat.usage.prompt_tokens
    assert response.usage.output_tokens == chat.usage.completion_tokens
    assert response.usage.total_tokens == chat.usage.total_tokens


async def test_streamed_events_build_the_same_response(server: ModelServer) -> None:
    async with client(server) as api:
        whole = await api.responses.create(model="scripted", input="What is in /tmp?", tools=TOOLS)
        async with api.responses.stream(
            model="scripted", input="What is in /tmp?", tools=TOOLS
        ) as stream:
            events = [event async for event in stream]
            final = await stream.get_final_response()
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    assert "response.function_call_arguments.delta" in kinds
    assert "response.reasoning_text.delta" in kinds
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == "Let me look."
    assert scrub(final.model_dump()) == scrub(whole.model_dump())


def scrub(value: Any) -> Any:
    """``value`` without what differs between two answers (ids, times) and the stream
    helper's own ``parsed`` and ``parsed_arguments`` fields."""
    if isinstance(value, dict):
        drop = {"id", "created_at", "completed_at", "parsed", "parsed_arguments"}
        return {k: scrub(v) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


async def test_max_output_tokens_makes_an_incomplete_response(server: ModelServer) -> None:
    async with client(server) as api:
        cut = await api.responses.create(model="scripted", input="hi", max_output_tokens=3)
        async with api.responses.stream(model="scripted", input="hi", max_output_tokens=3) as s:
            kinds = [event.type async for event in s]
    assert cut.status == "incomplete"
    assert cut.incomplete_details is not None
    assert cut.incomplete_details.reason == "max_output_tokens"
    assert cut.usage is not None
    assert cut.usage.output_tokens == 3
    assert kinds[-1] == "response.incomplete"


async def test_logprobs_on_request(server: ModelServer) -> None:
    async with client(server) as api:
        plain = await api.responses.create(model="scripted", input="hi")
        scored = await api.responses.create(
            model="scripted", input="hi", include=["message.output_text.logprobs"]
        )
    message = next(item for item in scored.output if isinstance(item, ResponseOutputMessage))
    part = message.content[0]
    assert part.type == "output_text"
    assert part.logprobs
    assert all(-1.0 <= lp.logprob < 0 for lp in part.logprobs)
    assert scored.usage is not None
    assert len(part.logprobs) == scored.usage.output_tokens
    plain_message = next(item for item in plain.output if isinstance(item, ResponseOutputMessage))
    assert plain_message.content[0].type == "output_text"
    assert not plain_message.content[0].logprobs


async def test_policy_sees_the_input_as_chat_messages_and_chat_tools() -> None:
    seen: list[ModelRequest] = []

    def oracle(request: ModelRequest) -> Turn:
        seen.append(request)
        if request.turn_index == 0:
            return Turn(tool_calls=[Call("terminal", {"command": "ls"})])
        return Turn(content=f"saw {request.messages[-1]['content']}")

    async with ModelServer(Policy(oracle)) as running, client(running) as api:
        first = await api.responses.create(
            model="scripted",
            instructions="sys",
            input=[
                {"role": "developer", "content": "dev"},
                {"role": "user", "content": [{"type": "input_text", "text": "What is in /tmp?"}]},
            ],
            tools=TOOLS,
        )
        items: list[Any] = [{"role": "user", "content": "What is in /tmp?"}]
        items += [item.model_dump(exclude_none=True) for item in first.output]
        call = first.output[-1]
        assert isinstance(call, ResponseFunctionToolCall)
        items.append({"type": "function_call_output", "call_id": call.call_id, "output": "a.txt"})
        second = await api.responses.create(model="scripted", input=items, tools=TOOLS)
    assert second.output_text == "saw a.txt"
    assert [r.endpoint for r in seen] == ["responses", "responses"]
    assert seen[0].messages == [
        {"role": "system", "content": "sys"},
        {"role": "system", "content": "dev"},
        {"role": "user", "content": "What is in /tmp?"},
    ]
    assert seen[0].tools == [
        {
            "type": "function",
            "function": {
                "name": "terminal",
                "description": "Run a shell command.",
                "parameters": TOOLS[0]["parameters"],
            },
        }
    ]
    assert [m["role"] for m in seen[1].messages] == ["user", "assistant", "tool"]
    assert seen[1].messages[1]["tool_calls"][0]["id"] == call.call_id
    assert seen[1].messages[2]["tool_call_id"] == call.call_id


async def test_assistant_turns_are_counted_from_the_items() -> None:
    seen: list[ModelRequest] = []

    def policy(request: ModelRequest) -> Turn:
        seen.append(request)
        return Turn("ok")

    call: dict[str, Any] = {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": ""}
    said: dict[str, Any] = {"role": "assistant", "content": "said"}
    thought: dict[str, Any] = {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "t"}],
    }
    inputs: list[list[Any]] = [
        [{"role": "user", "content": "hi"}, thought, said, call, {**call, "call_id": "c2"}],
        [{"role": "user", "content": "hi"}, said, said],
        [{"role": "user", "content": "hi"}, call, said],
        [{"role": "user", "content": "hi"}, said, thought, call],
    ]
    async with ModelServer(Policy(policy)) as running, client(running) as api:
        for items in inputs:
            await api.responses.create(model="scripted", input=items, max_output_tokens=50)
    assert [request.turn_index for request in seen] == [1, 2, 2, 2]
    first = seen[0].messages[1]
    assert first["reasoning_content"] == "t"
    assert first["content"] == "said"
    assert [c["id"] for c in first["tool_calls"]] == ["c1", "c2"]
    assert first["tool_calls"][0]["function"] == {"name": "ls", "arguments": "{}"}
    assert all(request.max_tokens == 50 for request in seen)


async def test_a_replay_answers_the_responses_route() -> None:
    recorded: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "recorded answer", "reasoning_content": "hmm"},
    ]
    async with ModelServer(Replay(recorded)) as running, client(running) as api:
        reply = await api.responses.create(model="scripted", input="hi")
    assert reply.output_text == "recorded answer"
    assert [item.type for item in reply.output] == ["reasoning", "message"]


async def test_faults_apply_to_the_responses_route() -> None:
    turn = Turn(content="finally", faults=[Fault(status=429, retry_after=0.01, times=2)])
    async with ModelServer([turn]) as running:
        async with client(running, max_retries=0) as api:
            with pytest.raises(openai.RateLimitError):
                await api.responses.create(model="scripted", input="hi")
        async with client(running, max_retries=2) as api:
            reply = await api.responses.create(model="scripted", input="hi")
    assert reply.output_text == "finally"
    assert running.requests == {"responses": 3}


async def test_a_truncated_stream_is_an_error_for_the_client() -> None:
    turn = Turn(content="x" * 200, faults=[Fault(truncate=True, times=1)])
    async with ModelServer([turn]) as running, client(running) as api:
        with pytest.raises(openai.APIConnectionError):
            async with api.responses.stream(model="scripted", input="hi") as stream:
                await stream.get_final_response()
        reply = await api.responses.create(model="scripted", input="hi")
    assert reply.output_text == "x" * 200


async def test_the_stream_has_named_events_and_no_done_marker(server: ModelServer) -> None:
    body = {"model": "scripted", "input": "hi", "stream": True}
    url = server.url + RESPONSES_PATH
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as answer:
        assert answer.headers["Content-Type"].startswith("text/event-stream")
        text = await answer.text()
    blocks = [block for block in text.split("\n\n") if block]
    assert "[DONE]" not in text
    for block in blocks:
        head, data = block.split("\n")
        assert head.startswith("event: ")
        assert json.loads(data.removeprefix("data: "))["type"] == head.removeprefix("event: ")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"input": "hi", "previous_response_id": "resp_1"}, ["previous_response_id", "input"]),
        ({"input": "hi", "conversation": "conv_1"}, ["conversation"]),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, ["input[0]", "item_reference"]),
        ({"input": [{"type": "web_search_call", "id": "w"}]}, ["input[0]", "web_search_call"]),
        ({"input": [{"role": "critic", "content": "x"}]}, ["input[0]", "unknown role 'critic'"]),
        ({"input": [{"type": "function_call", "name": "ls"}]}, ["input[0]", "call_id"]),
        ({"input": [{"role": "user", "content": [{"type": "video"}]}]}, ["input[0].content[0]"]),
        ({"input": []}, ["'input'"]),
        ({}, ["'input'"]),
        ({"input": "hi", "instructions": 3}, ["instructions"]),
        ({"input": "hi", "tools": [{"type": "function"}]}, ["tools[0]", "name"]),
        ({"input": "hi", "max_output_tokens": 0}, ["max_output_tokens", ">= 1"]),
    ],
)
async def test_bad_requests_are_a_400_saying_what_is_wrong(
    server: ModelServer, body: dict[str, Any], words: list[str]
) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(server.url + RESPONSES_PATH, json={"model": "scripted", **body}) as answer,
    ):
        assert answer.status == 400
        error = (await answer.json())["error"]
    assert all(word in error["message"] for word in words), error
    assert "\n" not in error["message"]
