"""The scripted model server, driven over real HTTP by the openai client and aiohttp."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import aiohttp
import openai
import pytest
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)

from hermes_loop.server import (
    Call,
    Fault,
    ModelRequest,
    ModelServer,
    ModelServerProcess,
    ModelServerThread,
    Policy,
    Replay,
    Script,
    ScriptError,
    ServerStartError,
    Turn,
    load_script_file,
    render_turn,
)
from hermes_loop.templates._chat_template import render_prompt
from hermes_loop.templates._tokenizer import load_tokenizer
from hermes_parsers import get_parser
from tests.loop.chat_messages import ReasoningAssistantMessage, as_param, function_calls

TOKENIZER = load_tokenizer()
PARSER = get_parser("hermes")
TOOLS: list[ChatCompletionFunctionToolParam] = [
    {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
USER: ChatCompletionUserMessageParam = {"role": "user", "content": "What is in /tmp?"}

LS_TURN = Turn(
    content="Let me look.",
    reasoning="I should list the directory.",
    tool_calls=[Call("terminal", {"command": "ls /tmp"}), Call("terminal", {"command": "df"})],
)
DONE_TURN = Turn(content="It holds a.txt.")


def client(server: ModelServer, **options: Any) -> openai.AsyncOpenAI:
    options.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test", **options)


def follow_up(first: ChatCompletion, results: list[str]) -> list[ChatCompletionMessageParam]:
    """The conversation after the first reply and its tool results."""
    message = first.choices[0].message
    calls = message.tool_calls or []
    return [
        USER,
        as_param(message),
        *(
            ChatCompletionToolMessageParam(role="tool", tool_call_id=call.id, content=result)
            for call, result in zip(calls, results, strict=False)
        ),
    ]


@pytest.fixture
async def server() -> AsyncIterator[ModelServer]:
    async with ModelServer(Script([LS_TURN, DONE_TURN])) as running:
        yield running


# Scripted replies --------------------------------------------------------------------


async def test_script_replies_with_tool_calls_and_reasoning(server: ModelServer) -> None:
    async with client(server) as api:
        first = await api.chat.completions.create(model="scripted", messages=[USER], tools=TOOLS)
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content == "Let me look."
        assert choice.message.model_extra is not None
        assert choice.message.model_extra["reasoning_content"] == "I should list the directory."
        calls = function_calls(choice.message)
        assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
            ("terminal", {"command": "ls /tmp"}),
            ("terminal", {"command": "df"}),
        ]
        assert all(c.id.startswith("call_") for c in calls)
        assert len({c.id for c in calls}) == 2

        second = await api.chat.completions.create(
            model="scripted", messages=follow_up(first, ["a.txt", "ok"]), tools=TOOLS
        )
        assert second.choices[0].message.content == "It holds a.txt."
        assert second.choices[0].message.tool_calls is None
        assert second.choices[0].finish_reason == "stop"
    assert server.requests == {"chat": 2}


async def test_usage_is_counted_with_the_tokenizer(server: ModelServer) -> None:
    async with client(server) as api:
        reply = await api.chat.completions.create(model="scripted", messages=[USER], tools=TOOLS)
    assert reply.usage is not None
    assert reply.usage.prompt_tokens == len(TOKENIZER.encode(render_prompt([USER], TOOLS)))
    completion = render_turn(LS_TURN, PARSER) + "<|im_end|>"
    assert reply.usage.completion_tokens == len(TOKENIZER.encode(completion))
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


async def test_tool_call_ids_are_distinct_per_turn() -> None:
    same = Turn(tool_calls=[Call("terminal", {"command": "ls"})])
    async with ModelServer([same, same]) as running, client(running) as api:
        first = await api.chat.completions.create(model="scripted", messages=[USER])
        second = await api.chat.completions.create(
            model="scripted", messages=follow_up(first, ["x"])
        )
    ids = [function_calls(r.choices[0].message)[0].id for r in (first, second)]
    assert ids[0] != ids[1]


async def test_scripted_ids_and_raw_arguments_pass_through() -> None:
    turn = Turn(tool_calls=[Call("terminal", '{"command": "ls"', id="call_fixed")])
    async with ModelServer([turn]) as running, client(running) as api:
        reply = await api.chat.completions.create(model="scripted", messages=[USER])
    call = function_calls(reply.choices[0].message)[0]
    assert call.id == "call_fixed"
    assert call.function.arguments == '{"command": "ls"'


async def test_concurrent_conversations_each_get_their_own_turns() -> None:
    script = Script([f"turn {k}" for k in range(3)])

    def echo(request: ModelRequest) -> Turn:
        user = next(m for m in request.messages if m["role"] == "user")
        return Turn(content=f"{user['content']} @ {request.turn_index}")

    servers = {"script": script, "echo": Policy(echo)}
    async with ModelServer(servers) as running, client(running) as api:

        async def conversation(index: int, model: str) -> list[str]:
            messages: list[ChatCompletionMessageParam] = [
                {"role": "user", "content": f"user {index}"}
            ]
            seen = []
            for _ in range(3):
                reply = await api.chat.completions.create(model=model, messages=messages)
                text = reply.choices[0].message.content or ""
                seen.append(text)
                messages += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": "more"},
                ]
            return seen

        scripted = await asyncio.gather(*(conversation(i, "script") for i in range(64)))
        echoed = await asyncio.gather(*(conversation(i, "echo") for i in range(64)))
    assert all(seen == ["turn 0", "turn 1", "turn 2"] for seen in scripted)
    for index, seen in enumerate(echoed):
        assert seen == [f"user {index} @ {k}" for k in range(3)]
    assert running.requests["chat"] == 2 * 64 * 3


async def test_past_the_end_of_the_script_is_a_clear_400(server: ModelServer) -> None:
    history: list[ChatCompletionMessageParam] = [
        USER,
        {"role": "assistant", "content": "a"},
        {"role": "assistant", "content": "b"},
    ]
    async with client(server, max_retries=2) as api:
        with pytest.raises(openai.BadRequestError, match="has 2 turn") as caught:
            await api.chat.completions.create(model="scripted", messages=history)
    assert caught.value.code == "script_exhausted"
    assert server.requests["chat"] == 1  # not retried


async def test_bad_requests_are_rejected_with_reasons(server: ModelServer) -> None:
    async with client(server) as api:
        with pytest.raises(openai.BadRequestError, match="n=2 is not supported"):
            await api.chat.completions.create(model="scripted", messages=[USER], n=2)
        # A role the SDK's types refuse, sent on purpose: the cast lets it through.
        robot = cast(ChatCompletionMessageParam, {"role": "robot", "content": "x"})
        with pytest.raises(openai.BadRequestError, match="unknown role"):
            await api.chat.completions.create(model="scripted", messages=[robot])
    url = server.base_url + "/chat/completions"
    async with aiohttp.ClientSession() as http, http.post(url, data=b"{nope") as response:
        assert response.status == 400
        assert "not valid JSON" in (await response.json())["error"]["message"]


async def test_named_scripts_are_chosen_by_model() -> None:
    scripts = {"alpha": Script(["from alpha"]), "beta": Script(["from beta"])}
    async with ModelServer(scripts) as running, client(running) as api:
        alpha = await api.chat.completions.create(model="alpha", messages=[USER])
        beta = await api.chat.completions.create(model="beta", messages=[USER])
        assert alpha.choices[0].message.content == "from alpha"
        assert beta.choices[0].message.content == "from beta"
        assert beta.model == "beta"
        with pytest.raises(openai.NotFoundError, match="served models: alpha, beta"):
            await api.chat.completions.create(model="gamma", messages=[USER])
        listed = await api.models.list()
        assert [model.id for model in listed.data] == ["alpha", "beta"]


async def test_a_model_not_served_is_a_404_naming_the_served_one(server: ModelServer) -> None:
    async with client(server) as api:
        with pytest.raises(openai.NotFoundError, match="served models: scripted") as caught:
            await api.chat.completions.create(model="gpt-4o", messages=[USER])
    assert caught.value.body == {
        "message": "the model 'gpt-4o' is not served here; served models: scripted",
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }
    prompt = TOKENIZER.encode(render_prompt([USER]))
    async with (
        aiohttp.ClientSession() as http,
        http.post(server.url + "/generate", json={"prompt": prompt, "model": "nope"}) as response,
    ):
        assert response.status == 404
        assert (await response.json())["error"]["code"] == "model_not_found"
    assert server.requests == {"chat": 1, "generate": 1}


async def test_without_a_model_field_the_only_or_default_model_answers() -> None:
    scripts = {"alpha": Script(["from alpha"]), "beta": Script(["from beta"])}
    prompt = TOKENIZER.encode(render_prompt([USER]))
    async with (
        ModelServer(scripts) as running,
        aiohttp.ClientSession() as http,
        http.post(running.url + "/generate", json={"prompt": prompt}) as response,
    ):
        assert response.status == 400
        error = (await response.json())["error"]
        assert error["message"] == (
            "the request names no model; this server serves several: alpha, beta"
        )
    async with ModelServer(scripts, default_model="beta") as running:
        assert (await generate(running, {"prompt": prompt}))["text"] == ["from beta"]
        assert (await generate(running, {"prompt": prompt, "model": "x"}))["text"] == ["from beta"]


async def test_max_tokens_cuts_the_reply(server: ModelServer) -> None:
    async with client(server) as api:
        reply = await api.chat.completions.create(model="scripted", messages=[USER], max_tokens=3)
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage is not None
    assert reply.usage.completion_tokens == 3
    assert reply.choices[0].message.tool_calls is None


async def test_logprobs_and_token_ids_on_request(server: ModelServer) -> None:
    async with client(server) as api:
        reply = await api.chat.completions.create(
            model="scripted", messages=[USER], logprobs=True, extra_body={"return_token_ids": True}
        )
    choice = reply.choices[0]
    token_ids = (choice.model_extra or {})["token_ids"]
    assert choice.logprobs is not None
    assert choice.logprobs.content is not None
    assert len(choice.logprobs.content) == len(token_ids)
    assert all(entry.logprob < 0 for entry in choice.logprobs.content)
    assert TOKENIZER.decode(token_ids) == render_turn(LS_TURN, PARSER) + "<|im_end|>"
    prompt_ids = (reply.model_extra or {})["prompt_token_ids"]
    assert TOKENIZER.decode(prompt_ids) == render_prompt([USER])


async def test_prompt_tokens_match_a_whole_prompt_encode_on_long_conversations() -> None:
    # The server encodes each ChatML block once and reuses it; the ids must be those of
    # encoding the whole rendered prompt.
    turn = Turn(content="ok ✓", tool_calls=[Call("terminal", {"command": "ls -la /tmp 🚀"})])
    history: list[ChatCompletionMessageParam] = [{"role": "system", "content": "Sé breve."}, USER]
    async with ModelServer(Script([turn] * 6)) as running, client(running) as api:
        for index in range(6):
            reply = await api.chat.completions.create(
                model="scripted",
                messages=history,
                tools=TOOLS,
                extra_body={"return_token_ids": True},
            )
            expected = TOKENIZER.encode(render_prompt(history, TOOLS))
            assert (reply.model_extra or {})["prompt_token_ids"] == expected
            assert reply.usage is not None
            assert reply.usage.prompt_tokens == len(expected)
            call_id = function_calls(reply.choices[0].message)[0].id
            history += [
                as_param(reply.choices[0].message),
                {"role": "tool", "tool_call_id": call_id, "content": f"r{index}"},
            ]


async def test_streaming_gives_the_same_message(server: ModelServer) -> None:
    async with client(server) as api:
        stream = await api.chat.completions.create(
            model="scripted",
            messages=[USER],
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        content, reasoning, finish, usage = "", "", None, None
        calls: dict[int, dict[str, str]] = {}
        async for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                delta = choice.delta
                content += delta.content or ""
                reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
                for call in delta.tool_calls or ():
                    slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] += call.id or ""
                    if call.function is not None:
                        slot["name"] += call.function.name or ""
                        slot["arguments"] += call.function.arguments or ""
                finish = choice.finish_reason or finish
    assert content == "Let me look."
    assert reasoning == "I should list the directory."
    assert [json.loads(c["arguments"]) for c in calls.values()] == [
        {"command": "ls /tmp"},
        {"command": "df"},
    ]
    assert all(c["id"].startswith("call_") and c["name"] == "terminal" for c in calls.values())
    assert finish == "tool_calls"
    assert usage is not None
    assert usage.completion_tokens > 0


async def test_health_and_models_endpoints(server: ModelServer) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(server.url + "/health") as response:
            assert response.status == 200
        async with http.get(server.base_url + "/models") as response:
            assert (await response.json())["data"][0]["id"] == "scripted"
    assert server.requests == {"health": 1, "models": 1}


def test_listens_on_loopback_only() -> None:
    with pytest.raises(ValueError, match="loopback only"):
        ModelServer(["x"], host="0.0.0.0")


# Faults ------------------------------------------------------------------------------


async def test_429_without_retries_then_success_on_the_next_attempt() -> None:
    turn = Turn(content="finally", faults=[Fault(status=429, retry_after=0.01, times=1)])
    async with ModelServer([turn]) as running, client(running, max_retries=0) as api:
        with pytest.raises(openai.RateLimitError) as caught:
            await api.chat.completions.create(model="scripted", messages=[USER])
        assert caught.value.response.headers["retry-after"] == "0.01"
        reply = await api.chat.completions.create(model="scripted", messages=[USER])
    assert reply.choices[0].message.content == "finally"


async def test_429_is_retried_by_the_client_honouring_retry_after() -> None:
    turn = Turn(content="finally", faults=[Fault(status=429, retry_after=0.05, times=2)])
    async with ModelServer([turn]) as running, client(running, max_retries=3) as api:
        started = time.monotonic()
        reply = await api.chat.completions.create(model="scripted", messages=[USER])
        elapsed = time.monotonic() - started
    assert reply.choices[0].message.content == "finally"
    assert running.requests["chat"] == 3
    assert elapsed >= 0.1


async def test_500_and_503_phases_then_success() -> None:
    turn = Turn(
        content="up again",
        faults=[
            Fault(status=500, message="boom", times=1),
            Fault(status=503, retry_after=0.01, times=1),
        ],
    )
    async with ModelServer([turn]) as running, client(running, max_retries=0) as api:
        with pytest.raises(openai.InternalServerError, match="boom") as first:
            await api.chat.completions.create(model="scripted", messages=[USER])
        assert first.value.status_code == 500
        with pytest.raises(openai.InternalServerError) as second:
            await api.chat.completions.create(model="scripted", messages=[USER])
        assert second.value.status_code == 503
        reply = await api.chat.completions.create(model="scripted", messages=[USER])
        assert reply.choices[0].message.content == "up again"


async def test_faults_are_counted_per_conversation() -> None:
    turn = Turn(content="ok", faults=[Fault(status=500, times=1)])
    other: ChatCompletionUserMessageParam = {"role": "user", "content": "another task"}
    async with ModelServer([turn]) as running, client(running) as api:
        for messages in ([USER], [other]):
            with pytest.raises(openai.InternalServerError):
                await api.chat.completions.create(model="scripted", messages=messages)
        for messages in ([USER], [other]):
            reply = await api.chat.completions.create(model="scripted", messages=messages)
            assert reply.choices[0].message.content == "ok"


async def test_fault_for_every_attempt() -> None:
    turn = Turn(content="never", faults=[Fault(status=503)])  # every attempt
    async with ModelServer([turn]) as running, client(running) as api:
        for _ in range(3):
            with pytest.raises(openai.InternalServerError):
                await api.chat.completions.create(model="scripted", messages=[USER])


async def test_delay_answers_late_or_times_the_client_out() -> None:
    turn = Turn(content="slow", faults=[Fault(delay=0.6, times=1), Fault(delay=0.2, times=1)])
    async with ModelServer([turn]) as running:
        async with client(running, timeout=0.2) as api:
            with pytest.raises(openai.APITimeoutError):
                await api.chat.completions.create(model="scripted", messages=[USER])
        async with client(running, timeout=5) as api:
            started = time.monotonic()
            reply = await api.chat.completions.create(model="scripted", messages=[USER])
            assert time.monotonic() - started >= 0.2
            assert reply.choices[0].message.content == "slow"


async def test_hang_until_the_client_gives_up_then_retry_succeeds() -> None:
    turn = Turn(content="awake", faults=[Fault(hang=True, times=1)])
    async with ModelServer([turn]) as running:
        async with client(running, timeout=0.3, max_retries=0) as api:
            with pytest.raises(openai.APITimeoutError):
                await api.chat.completions.create(model="scripted", messages=[USER])
        async with client(running, timeout=0.3, max_retries=2) as api:
            reply = await api.chat.completions.create(
                model="scripted", messages=[{"role": "user", "content": "fresh"}]
            )
            assert reply.choices[0].message.content == "awake"


async def test_shutdown_is_prompt_with_hung_requests() -> None:
    turn = Turn(content="never", faults=[Fault(hang=True)])
    running = ModelServer([turn])
    await running.start()
    async with client(running, timeout=30) as api:
        pending = [
            asyncio.ensure_future(api.chat.completions.create(model="scripted", messages=[USER]))
            for _ in range(5)
        ]
        await asyncio.sleep(0.3)
        started = time.monotonic()
        await running.close()
        assert time.monotonic() - started < 1.5
        results = await asyncio.gather(*pending, return_exceptions=True)
    assert all(isinstance(result, openai.APIConnectionError) for result in results)
    assert running.closed


async def test_truncated_body_then_success_with_retries() -> None:
    turn = Turn(content="whole", faults=[Fault(truncate=True, times=1)])
    async with ModelServer([turn]) as running:
        async with client(running, max_retries=0) as api:
            with pytest.raises(openai.APIConnectionError):
                await api.chat.completions.create(model="scripted", messages=[USER])
        async with client(running, max_retries=2) as api:
            reply = await api.chat.completions.create(
                model="scripted", messages=[{"role": "user", "content": "again"}]
            )
    assert reply.choices[0].message.content == "whole"


async def test_truncated_body_is_short_of_its_content_length() -> None:
    turn = Turn(content="whole", faults=[Fault(truncate=True)])
    async with ModelServer([turn]) as running, aiohttp.ClientSession() as http:
        body = {"model": "scripted", "messages": [USER]}
        async with http.post(running.base_url + "/chat/completions", json=body) as response:
            assert response.status == 200
            declared = response.content_length
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.read()
    assert declared is not None
    assert declared > 0


async def test_disconnect_fault() -> None:
    turn = Turn(content="back", faults=[Fault(disconnect=True, times=1)])
    async with ModelServer([turn]) as running, client(running) as api:
        with pytest.raises(openai.APIConnectionError):
            await api.chat.completions.create(model="scripted", messages=[USER])
        reply = await api.chat.completions.create(model="scripted", messages=[USER])
    assert reply.choices[0].message.content == "back"


async def test_max_requests_then_503_and_shutdown() -> None:
    async with ModelServer(Script(["a", "b", "c"]), max_requests=2) as running:
        async with client(running) as api:
            for _ in range(2):
                await api.chat.completions.create(model="scripted", messages=[USER])
        await asyncio.wait_for(running.wait_closed(), timeout=5)
        async with client(running) as api:
            with pytest.raises(openai.APIConnectionError):
                await api.chat.completions.create(model="scripted", messages=[USER])


# /generate (Atropos' VLLMServer shape) -----------------------------------------------


async def generate(server: ModelServer, body: dict[str, Any]) -> Any:
    async with (
        aiohttp.ClientSession() as http,
        http.post(server.url + "/generate", json=body) as response,
    ):
        assert response.status == 200, await response.text()
        return await response.json()


def read_like_vllm_server(results: Any) -> tuple[list[list[int]], list[list[float]], list[Any]]:
    """What atroposlib 0.4.0 ``VLLMServer._tokens_and_logprobs_completion_wrapper`` reads."""
    tokens, logprobs = [], []
    for output_token_logprobs in results["logprobs"]:
        logprobs.append([next(iter(item[0].values())) for item in output_token_logprobs])
        tokens.append([int(next(iter(item[0].keys()))) for item in output_token_logprobs])
    return tokens, logprobs, results["finish_reasons"]


async def test_generate_round_trip(server: ModelServer) -> None:
    prompt_ids = TOKENIZER.encode(render_prompt([USER], TOOLS))
    body = {"prompt": {"prompt_token_ids": prompt_ids}, "logprobs": 0, "n": 1, "max_tokens": 500}
    results = await generate(server, body)
    tokens, logprobs, finish = read_like_vllm_server(results)
    token_ids = results["token_ids"][0]
    assert tokens == [token_ids]
    assert finish == ["stop"]
    assert results["prompt_token_ids"] == prompt_ids
    assert len(logprobs[0]) == len(token_ids)
    assert all(lp < 0 for lp in logprobs[0])
    text = results["text"][0]
    assert token_ids[-1] == TOKENIZER.eos_token_id
    assert TOKENIZER.decode(token_ids, skip_special_tokens=True) == text
    assert TOKENIZER.decode(token_ids) == text + "<|im_end|>"
    parsed = PARSER.parse(text)
    assert parsed.content == "Let me look."
    assert parsed.reasoning == "I should list the directory."
    assert [
        (c.function.name, json.loads(c.function.arguments)) for c in parsed.tool_calls or ()
    ] == [
        ("terminal", {"command": "ls /tmp"}),
        ("terminal", {"command": "df"}),
    ]
    # Deterministic: the same request gives the same tokens and logprobs.
    assert await generate(server, body) == results


async def test_generate_second_turn_from_the_decoded_prompt(server: ModelServer) -> None:
    first = await generate(
        server, {"prompt": {"prompt_token_ids": TOKENIZER.encode(render_prompt([USER]))},
                 "logprobs": 0}
    )  # fmt: skip
    history = [
        USER,
        {"role": "assistant", "content": first["text"][0]},
        {"role": "tool", "content": "a.txt"},
    ]
    prompt = TOKENIZER.encode(render_prompt(history))
    second = await generate(server, {"prompt": {"prompt_token_ids": prompt}, "logprobs": 0})
    assert second["text"] == ["It holds a.txt."]
    assert server.requests["generate"] == 2


async def test_generate_max_tokens_gives_length(server: ModelServer) -> None:
    prompt_ids = TOKENIZER.encode(render_prompt([USER]))
    results = await generate(
        server, {"prompt": {"prompt_token_ids": prompt_ids}, "logprobs": 0, "max_tokens": 4}
    )
    assert results["finish_reasons"] == ["length"]
    assert len(results["token_ids"][0]) == 4
    assert len(results["logprobs"][0]) == 4
    assert TOKENIZER.eos_token_id not in results["token_ids"][0]


async def test_generate_options(server: ModelServer) -> None:
    prompt_ids = TOKENIZER.encode(render_prompt([USER]))
    plain = await generate(server, {"prompt": {"prompt_token_ids": prompt_ids}, "n": 2})
    assert "logprobs" not in plain  # as vLLM: only when logprobs is asked for
    assert len(plain["text"]) == 2
    assert plain["text"][0] == plain["text"][1]
    raw = await generate(
        server,
        {"prompt": {"prompt_token_ids": prompt_ids}, "logprobs": 0, "skip_special_tokens": False},
    )
    assert raw["text"][0].endswith("<|im_end|>")
    assert TOKENIZER.decode(raw["token_ids"][0]) == raw["text"][0]
    scored = await generate(
        server, {"prompt": {"prompt_token_ids": prompt_ids}, "prompt_logprobs": 1, "max_tokens": 1}
    )
    assert scored["prompt_logprobs"][0] is None
    assert len(scored["prompt_logprobs"]) == len(prompt_ids)
    by_text = await generate(server, {"prompt": render_prompt([USER]), "logprobs": 0})
    assert by_text["token_ids"] == raw["token_ids"]


async def test_generate_sglang_shape(server: ModelServer) -> None:
    prompt_ids = TOKENIZER.encode(render_prompt([USER]))
    body = {
        "input_ids": prompt_ids,
        "sampling_params": {"max_new_tokens": 1000, "temperature": 1.0},
        "return_logprob": True,
    }
    result = await generate(server, body)
    meta = result["meta_info"]
    assert [item[1] for item in meta["output_token_logprobs"]] == result["output_ids"]
    assert all(item[0] < 0 for item in meta["output_token_logprobs"])
    assert meta["finish_reason"]["type"] == "stop"
    assert meta["prompt_tokens"] == len(prompt_ids)
    assert PARSER.parse(result["text"]).content == "Let me look."


async def test_generate_faults_and_exhaustion() -> None:
    turn = Turn(content="ok", faults=[Fault(status=429, retry_after=0.01, times=1)])
    prompt_ids = TOKENIZER.encode(render_prompt([USER]))
    body = {"prompt": {"prompt_token_ids": prompt_ids}, "logprobs": 0}
    async with ModelServer([turn]) as running, aiohttp.ClientSession() as http:
        async with http.post(running.url + "/generate", json=body) as response:
            assert response.status == 429
            assert response.headers["Retry-After"] == "0.01"
        async with http.post(running.url + "/generate", json=body) as response:
            assert response.status == 200
        done = render_prompt([USER, {"role": "assistant", "content": "ok"}, USER])
        late = {"prompt": {"prompt_token_ids": TOKENIZER.encode(done)}}
        async with http.post(running.url + "/generate", json=late) as response:
            assert response.status == 400
            assert "has 1 turn" in (await response.json())["error"]["message"]


async def test_generate_chooses_the_script_by_model_field() -> None:
    scripts = {"alpha": Script(["from alpha"]), "beta": Script(["from beta"])}
    prompt_ids = TOKENIZER.encode(render_prompt([USER]))
    async with ModelServer(scripts, default_model="alpha") as running:
        beta = await generate(
            running, {"prompt": {"prompt_token_ids": prompt_ids}, "model": "beta"}
        )
        default = await generate(running, {"prompt": {"prompt_token_ids": prompt_ids}})
    assert beta["text"] == ["from beta"]
    assert default["text"] == ["from alpha"]


# Replay and Policy -------------------------------------------------------------------


RECORDED: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": "Be brief."},
    USER,
    ReasoningAssistantMessage(
        role="assistant",
        content=None,
        reasoning_content="List it.",
        tool_calls=[
            {
                "id": "call_rec1",
                "type": "function",
                "function": {"name": "terminal", "arguments": '{"command": "ls"}'},
            }
        ],
    ),
    {"role": "tool", "tool_call_id": "call_rec1", "content": "a.txt"},
    {"role": "assistant", "content": "One file: a.txt."},
]


async def test_replay_of_a_saved_conversation(tmp_path: Path) -> None:
    saved = tmp_path / "rollout.json"
    # A saved AgentResult: only "messages" is read, the other fields are ignored.
    result = {"messages": RECORDED, "turns_used": 2, "finished_naturally": True}
    saved.write_text(json.dumps(result), encoding="utf-8")
    responders = load_script_file(saved)
    assert list(responders) == ["rollout"]
    async with ModelServer(responders) as running, client(running) as api:
        first = await api.chat.completions.create(model="rollout", messages=RECORDED[:2])
        message = first.choices[0].message
        calls = function_calls(message)
        assert calls[0].id == "call_rec1"
        assert json.loads(calls[0].function.arguments) == {"command": "ls"}
        assert (message.model_extra or {})["reasoning_content"] == "List it."
        second = await api.chat.completions.create(model="rollout", messages=RECORDED[:4])
        assert second.choices[0].message.content == "One file: a.txt."


async def test_replay_from_a_bare_message_list() -> None:
    replay = Replay(RECORDED)
    assert [turn.content for turn in replay.turns] == [None, "One file: a.txt."]
    async with ModelServer(replay) as running:
        prompt = TOKENIZER.encode(render_prompt(RECORDED[:2]))
        result = await generate(running, {"prompt": {"prompt_token_ids": prompt}, "logprobs": 0})
    parsed = PARSER.parse(result["text"][0])
    assert parsed.reasoning == "List it."
    assert parsed.tool_calls is not None
    assert parsed.tool_calls[0].function.name == "terminal"


async def test_sync_policy_runs_in_a_thread_and_sees_the_request() -> None:
    seen: list[tuple[str, int, str]] = []
    main_thread = threading.get_ident()

    def oracle(request: ModelRequest) -> Turn:
        assert threading.get_ident() != main_thread
        time.sleep(0.01)  # a blocking oracle must not stall the server
        last = request.messages[-1]
        seen.append((request.endpoint, request.turn_index, last["role"]))
        if request.turn_index == 0:
            return Turn(tool_calls=[Call("terminal", {"command": "ls"})])
        return Turn(content=f"saw {last['content']}")

    async with ModelServer(Policy(oracle)) as running, client(running) as api:
        first = await api.chat.completions.create(model="scripted", messages=[USER], tools=TOOLS)
        second = await api.chat.completions.create(
            model="scripted", messages=follow_up(first, ["a.txt"]), tools=TOOLS
        )
        assert second.choices[0].message.content == "saw a.txt"
        # /generate: the policy sees the conversation parsed back from the prompt.
        history = [*follow_up(first, ["b.txt"])]
        prompt = TOKENIZER.encode(render_prompt(history, TOOLS))
        result = await generate(running, {"prompt": {"prompt_token_ids": prompt}})
        assert result["text"] == ["saw b.txt"]
    assert seen == [("chat", 0, "user"), ("chat", 1, "tool"), ("generate", 1, "tool")]


async def test_async_policy_and_policy_errors() -> None:
    async def policy(request: ModelRequest) -> str:
        await asyncio.sleep(0)
        if request.turn_index > 0:
            raise RuntimeError("oracle crashed")
        return f"{len(request.messages)} message(s), tools={request.tools is not None}"

    async with ModelServer(Policy(policy)) as running, client(running) as api:
        reply = await api.chat.completions.create(model="scripted", messages=[USER], tools=TOOLS)
        assert reply.choices[0].message.content == "1 message(s), tools=True"
        history: list[ChatCompletionMessageParam] = [
            USER,
            {"role": "assistant", "content": "x"},
            USER,
        ]
        with pytest.raises(openai.InternalServerError, match="oracle crashed"):
            await api.chat.completions.create(model="scripted", messages=history)


# Script files ------------------------------------------------------------------------


def test_script_file_schema(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(
        json.dumps(
            {
                "scripts": {
                    "agent": {
                        "turns": [
                            {
                                "reasoning": "look",
                                "tool_calls": [{"name": "terminal", "arguments": {"c": 1}}],
                                "faults": [{"status": 429, "retry_after": 1, "times": 2}],
                            },
                            "done",
                        ]
                    },
                    "plain": ["hi"],
                    "replayed": {"messages": RECORDED},
                }
            }
        ),
        encoding="utf-8",
    )
    scripts = load_script_file(path)
    assert list(scripts) == ["agent", "plain", "replayed"]
    first = scripts["agent"].turns[0]
    assert first.tool_calls == (Call("terminal", {"c": 1}),)
    assert first.fault_for(0) == first.fault_for(1) == Fault(status=429, retry_after=1, times=2)
    assert first.fault_for(2) is None
    assert scripts["agent"].turns[1] == Turn(content="done")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([{"content": "ok"}, {"contnet": "typo"}], r"turn 1: field 'contnet': unknown field"),
        (
            [{"faults": [{"status": 200}]}],
            r"turn 0: field 'faults\[0\].status': must be an HTTP error status",
        ),
        (
            [{"tool_calls": [{"name": "x", "arguments": 3}]}],
            r"turn 0: field 'tool_calls\[0\].arguments': must be an object or a JSON string",
        ),
        ([{"faults": [{"hang": True, "status": 500}]}], r"turn 0: field 'faults\[0\]': a fault"),
        ([{"finish_reason": "done"}], r"turn 0: field 'finish_reason': must be one of"),
        (
            [{"faults": [{"status": 500}, {"delay": 1}]}],
            r"field 'faults\[0\].times': null \(always\) is only allowed on the last",
        ),
        ({"scripts": {"a": [5]}}, r"script 'a': turn 0: a turn must be"),
        ({"turns": "x"}, r"field 'turns': must be a list"),
        (42, r"a script must be a list of turns or an object"),
    ],
)
def test_bad_script_files_name_file_turn_and_field(tmp_path: Path, data: Any, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ScriptError, match=message) as caught:
        load_script_file(path)
    assert str(caught.value).startswith(str(path))


def test_invalid_json_and_yaml(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('[{"content": "x",]', encoding="utf-8")
    with pytest.raises(ScriptError, match=r"broken\.json: not valid JSON"):
        load_script_file(broken)
    with pytest.raises(FileNotFoundError):
        load_script_file(tmp_path / "missing.json")
    pytest.importorskip("yaml")
    good = tmp_path / "script.yaml"
    good.write_text("- content: hello\n- tool_calls: [{name: ls, arguments: {}}]\n", "utf-8")
    assert [turn.content for turn in load_script_file(good)["script"].turns] == ["hello", None]


def test_yaml_without_pyyaml_is_a_clear_error(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("- hello\n", encoding="utf-8")
    code = (
        "import sys; sys.modules['yaml'] = None\n"
        "from hermes_loop.server import load_script_file, ScriptError\n"
        f"try:\n    load_script_file({str(script)!r})\n"
        "except ScriptError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "PyYAML is not installed" in out.stdout
    assert str(script) in out.stdout


def test_turn_and_fault_validation_in_python() -> None:
    with pytest.raises(ScriptError, match="field 'name'"):
        Call("")
    with pytest.raises(ScriptError, match="field 'delay'"):
        Fault(delay=-1)
    with pytest.raises(ScriptError, match="field 'retry_after': only applies with 'status'"):
        Fault(delay=1, retry_after=1)
    with pytest.raises(ScriptError, match=r"^turn 1: field 'bogus': unknown field"):
        Script(["ok", {"bogus": 1}])
    # Turn converts mappings to Call (documented) though its field is typed as Call.
    turn = Turn(tool_calls=cast("list[Call]", [{"name": "ls", "arguments": {}}]))
    assert turn.tool_calls == (Call("ls", {}),)


# Outside the event loop --------------------------------------------------------------


def _write_script(tmp_path: Path) -> Path:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"model": "bench", "turns": ["one", "two"]}), encoding="utf-8")
    return path


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_subprocess_server_starts_answers_and_leaves_nothing(tmp_path: Path) -> None:
    with ModelServerProcess(_write_script(tmp_path)) as process:
        pid = process.pid
        assert pid is not None
        api = openai.OpenAI(base_url=process.base_url, api_key="test", max_retries=0)
        reply = api.chat.completions.create(model="bench", messages=[USER])
        api.close()
        assert reply.choices[0].message.content == "one"
    assert _gone(pid)


def test_subprocess_server_is_stopped_when_the_body_raises(tmp_path: Path) -> None:
    started: list[int | None] = []
    with (  # noqa: PT012
        pytest.raises(RuntimeError, match="test failure"),
        ModelServerProcess(_write_script(tmp_path)) as process,
    ):
        started.append(process.pid)
        raise RuntimeError("test failure")
    assert started[0] is not None
    assert _gone(started[0])


def test_subprocess_server_reports_a_bad_script(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"content": 5}]', encoding="utf-8")
    with (
        pytest.raises(ServerStartError, match=r"bad\.json: turn 0: field 'content'"),
        ModelServerProcess(bad),
    ):
        pass


def test_cli_stops_after_max_requests(tmp_path: Path) -> None:
    with ModelServerProcess(_write_script(tmp_path), max_requests=1) as process:
        api = openai.OpenAI(base_url=process.base_url, api_key="test", max_retries=0)
        api.chat.completions.create(model="bench", messages=[USER])
        api.close()
        deadline = time.monotonic() + 20
        while process._process is not None and process._process.poll() is None:
            assert time.monotonic() < deadline, "the server did not exit after max_requests"
            time.sleep(0.05)
        assert process.stop() == 0


def test_thread_server_for_sync_code() -> None:
    with ModelServerThread(Script(["threaded"])) as running:
        api = openai.OpenAI(base_url=running.base_url, api_key="test", max_retries=0)
        reply = api.chat.completions.create(model="scripted", messages=[USER])
        api.close()
    assert reply.choices[0].message.content == "threaded"
    assert not any(thread.name == "model-server" for thread in threading.enumerate())
