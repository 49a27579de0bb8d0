"""Complete HTTP 200 answers of the wrong shape end a rollout as ``infra_error``.

A tiny aiohttp server on 127.0.0.1 answers each request with the next canned body: a
good first turn (a tool call), then the bad body on every later request. Every bad shape,
for Phase 1 (``/v1/chat/completions``) and Phase 2 (``/generate``), must end the rollout
with ``stop_reason="infra_error"`` of kind ``bad_response``, the first turn kept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from hermes_loop import AgentLoop, GenerateChatServer, OpenAIChatServer, Tool, ToolInvocation
from hermes_loop.templates._tokenizer import load_tokenizer

TOKENIZER = load_tokenizer()
USER = [{"role": "user", "content": "Echo x, please."}]
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
Body = tuple[bytes, str]  # (bytes, content type)


def echo(arguments: dict[str, Any], call: ToolInvocation) -> str:
    return f"echo: {arguments['text']}"


TOOLS = [Tool("echo", "Echo text back.", SCHEMA, echo)]


def as_json(value: Any) -> Body:
    return json.dumps(value).encode(), "application/json"


def chat_answer(message: Any, **extra: Any) -> Body:
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return as_json({"id": "x", "object": "chat.completion", "choices": [choice], **extra})


def tool_call(**overrides: Any) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
    call.update(overrides)
    return call


GOOD_CHAT = chat_answer(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [tool_call(function={"name": "echo", "arguments": '{"text": "x"}'})],
    },
    usage={"prompt_tokens": 5, "completion_tokens": 7},
)
CALL_IDS = TOKENIZER.encode(
    '<tool_call>\n{"name": "echo", "arguments": {"text": "x"}}\n</tool_call><|im_end|>'
)


def generation(ids: Sequence[Any], **overrides: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "text": [""],
        "finish_reasons": ["stop"],
        "logprobs": [[[{str(t): -0.25}] for t in ids]],
        "token_ids": [list(ids)],
    }
    answer.update(overrides)
    return answer


GOOD_GENERATION = as_json(generation(CALL_IDS))
SOME_IDS = CALL_IDS[:3]

# Shapes that are wrong for either route.
ANY_ROUTE: list[tuple[str, Body]] = [
    ("invalid JSON", (b'{"choices": [', "application/json")),
    ("empty body", (b"", "application/json")),
    ("HTML page", (b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")),
    ("plain text", (b"OK", "text/plain")),
    ("null", as_json(None)),
    ("empty array", as_json([])),
    ("empty object", as_json({})),
    ("a string", as_json("hello")),
    ("a number", as_json(42)),
]

CHAT_SHAPES: list[tuple[str, Body]] = [
    ("choices null", as_json({"choices": None})),
    ("no choices", as_json({"id": "x", "object": "chat.completion"})),
    ("empty choices", as_json({"choices": []})),
    ("choices an object", as_json({"choices": {"0": {}}})),
    ("choices[0] null", as_json({"choices": [None]})),
    ("message null", chat_answer(None)),
    ("message missing", as_json({"choices": [{"index": 0, "finish_reason": "stop"}]})),
    ("message a string", chat_answer("hi")),
    ("content a number", chat_answer({"role": "assistant", "content": 5})),
    ("content an object", chat_answer({"role": "assistant", "content": {"text": "hi"}})),
    ("tool_calls a string", chat_answer({"content": None, "tool_calls": "echo"})),
    ("tool call null", chat_answer({"content": None, "tool_calls": [None]})),
    ("tool call without function", chat_answer({"tool_calls": [{"id": "c", "type": "function"}]})),
    ("function null", chat_answer({"tool_calls": [tool_call(function=None)]})),
    (
        "tool call without name",
        chat_answer({"tool_calls": [tool_call(function={"arguments": ""})]}),
    ),
    (
        "name a number",
        chat_answer({"tool_calls": [tool_call(function={"name": 7, "arguments": "{}"})]}),
    ),
    (
        "empty name",
        chat_answer({"tool_calls": [tool_call(function={"name": "", "arguments": "{}"})]}),
    ),
    (
        "arguments an object",
        chat_answer(
            {"tool_calls": [tool_call(function={"name": "echo", "arguments": {"text": "x"}})]}
        ),
    ),
    (
        "arguments missing",
        chat_answer({"tool_calls": [tool_call(function={"name": "echo"})]}),
    ),
    ("tool call id a number", chat_answer({"tool_calls": [tool_call(id=3)]})),
    ("tool call of another type", chat_answer({"tool_calls": [tool_call(type="custom")]})),
    ("content with a lone surrogate", chat_answer({"role": "assistant", "content": "a\ud800b"})),
    ("reasoning with a lone surrogate", chat_answer({"content": "ok", "reasoning": "\udfff"})),
    (
        "arguments with a lone surrogate",
        chat_answer(
            {"tool_calls": [tool_call(function={"name": "echo", "arguments": '"\ud83d"'})]}
        ),
    ),
    ("usage a string", chat_answer({"content": "hi"}, usage="lots")),
    ("usage a list", chat_answer({"content": "hi"}, usage=[1, 2])),
    (
        "usage count a string",
        chat_answer({"content": "hi"}, usage={"prompt_tokens": "5", "completion_tokens": 1}),
    ),
    (
        "usage count negative",
        chat_answer({"content": "hi"}, usage={"prompt_tokens": 5, "completion_tokens": -1}),
    ),
    (
        "finish_reason a number",
        as_json({"choices": [{"message": {"content": "hi"}, "finish_reason": 1}]}),
    ),
    ("reasoning a number", chat_answer({"content": "hi", "reasoning_content": 1.5})),
]

GENERATE_SHAPES: list[tuple[str, Body]] = [
    ("logprobs missing", as_json({"text": ["hi"], "finish_reasons": ["stop"]})),
    ("logprobs null", as_json(generation(SOME_IDS, logprobs=None))),
    ("logprobs empty", as_json(generation(SOME_IDS, logprobs=[]))),
    ("logprobs[0] null", as_json(generation(SOME_IDS, logprobs=[None]))),
    ("logprobs[0] an object", as_json(generation(SOME_IDS, logprobs=[{"5": -0.1}]))),
    ("position a number", as_json(generation(SOME_IDS, logprobs=[[5, 6]]))),
    ("position of two pairs", as_json(generation([5], logprobs=[[{"5": -0.1, "6": -0.2}]]))),
    ("position an empty list", as_json(generation([5], logprobs=[[[]]]))),
    ("negative token id", as_json(generation([-3]))),
    ("token id outside the vocabulary", as_json(generation([10**6]))),
    ("token id not a number", as_json(generation(["abc"]))),
    ("token id a fraction", as_json(generation(["1.5"]))),
    ("logprob a string", as_json(generation([5], logprobs=[[[{"5": "low"}]]]))),
    ("logprob null", as_json(generation([5], logprobs=[[[{"5": None}]]]))),
    (
        "logprob NaN",
        (b'{"logprobs": [[[{"5": NaN}]]], "finish_reasons": ["stop"]}', "application/json"),
    ),
    ("token_ids longer than logprobs", as_json(generation(SOME_IDS, token_ids=[[*SOME_IDS, 5]]))),
    ("token_ids disagree", as_json(generation(SOME_IDS, token_ids=[[7, 8, 9]]))),
    ("token_ids[0] null", as_json(generation(SOME_IDS, token_ids=[None]))),
    ("token_ids entries strings", as_json(generation(SOME_IDS, token_ids=[["a", "b", "c"]]))),
    ("negative id in token_ids", as_json(generation([5], token_ids=[[-5]]))),
    ("text a number", as_json(generation(SOME_IDS, text=[5]))),
    ("text a string", as_json(generation(SOME_IDS, text="hi"))),
    ("finish_reasons a string", as_json(generation(SOME_IDS, finish_reasons="stop"))),
    ("finish_reasons[0] a number", as_json(generation(SOME_IDS, finish_reasons=[0]))),
]


class CannedServer:
    """Answers the n-th request (any route) with ``answers[n]``, the last one ever after."""

    def __init__(self, answers: Sequence[Body]) -> None:
        self.answers = list(answers)
        self.requests = 0
        self.url = ""

    async def _answer(self, request: web.Request) -> web.Response:
        await request.read()
        body, content_type = self.answers[min(self.requests, len(self.answers) - 1)]
        self.requests += 1
        return web.Response(body=body, headers={"Content-Type": content_type})

    @asynccontextmanager
    async def running(self) -> AsyncIterator[CannedServer]:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._answer)
        app.router.add_post("/generate", self._answer)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        try:
            yield self
        finally:
            await runner.cleanup()


def endpoint(phase: int, url: str, max_retries: int) -> OpenAIChatServer | GenerateChatServer:
    if phase == 1:
        return OpenAIChatServer(
            base_url=f"{url}/v1", model="m", max_retries=max_retries, timeout=10
        )
    return GenerateChatServer(
        base_url=url, tokenizer=TOKENIZER, max_retries=max_retries, timeout=10
    )


async def rollout(phase: int, answers: Sequence[Body], max_retries: int = 0) -> Any:
    async with CannedServer(answers).running() as server:
        chat = endpoint(phase, server.url, max_retries)
        async with AgentLoop(chat, TOOLS) as loop:
            result = await loop.run(USER, task_id="t")
        await chat.aclose()
    return result, server.requests


def assert_bad_response_after_first_turn(result: Any) -> None:
    assert result.stop_reason == "infra_error"
    assert not result.finished_naturally
    assert result.infra_error is not None
    assert result.infra_error.kind == "bad_response", result.infra_error
    assert result.infra_error.turn == 1
    assert "wrong shape" in result.infra_error.message or "not JSON" in result.infra_error.message
    # The first turn and its tool result are kept.
    assert result.turns_used == 1
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool"]
    assert result.messages[2]["content"] == "echo: x"


def table(*shapes: list[tuple[str, Body]]) -> list[Any]:
    return [pytest.param(body, id=name) for group in shapes for name, body in group]


@pytest.mark.parametrize("body", table(ANY_ROUTE, CHAT_SHAPES))
async def test_phase_one_wrong_shape_ends_as_infra_error(body: Body) -> None:
    result, requests = await rollout(1, [GOOD_CHAT, body])
    assert_bad_response_after_first_turn(result)
    assert requests == 2
    assert result.usage == {"prompt_tokens": 5, "completion_tokens": 7}


@pytest.mark.parametrize("body", table(ANY_ROUTE, GENERATE_SHAPES))
async def test_phase_two_wrong_shape_ends_as_infra_error(body: Body) -> None:
    result, requests = await rollout(2, [GOOD_GENERATION, body])
    assert_bad_response_after_first_turn(result)
    assert requests == 2
    # The token record holds the first turn only, as it was.
    state = result.managed_state
    assert [turn["completion_token_ids"] for turn in state["turns"]] == [CALL_IDS]


@pytest.mark.parametrize("phase", [1, 2])
async def test_wrong_shapes_are_retried_as_configured(phase: int) -> None:
    good = GOOD_CHAT if phase == 1 else GOOD_GENERATION
    result, requests = await rollout(phase, [good, as_json(None)], max_retries=2)
    assert_bad_response_after_first_turn(result)
    assert requests == 1 + 3  # the first turn, then the bad one tried three times


async def test_a_wrong_shape_then_a_good_answer_recovers() -> None:
    done = chat_answer({"role": "assistant", "content": "done"})
    result, requests = await rollout(1, [GOOD_CHAT, (b"<html>", "text/html"), done], 1)
    assert result.finished_naturally
    assert result.final_response == "done"
    assert requests == 3
