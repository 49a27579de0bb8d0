"""AgentLoop driven through the real scripted HTTP model server."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from hermes_loop import (
    AgentLoop,
    AgentResult,
    GenerateChatServer,
    HermesAgentLoop,
    OpenAIChatServer,
    Tool,
    ToolInvocation,
)
from hermes_loop.server import Call, Fault, ModelServer, Replay, Script, Turn
from hermes_loop.templates._tokenizer import load_tokenizer

ECHO_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}
USER = [{"role": "user", "content": "Please echo hello."}]


def echo(arguments: dict[str, Any], call: ToolInvocation) -> str:
    return f"echo: {arguments['text']}"


async def slow_echo(arguments: dict[str, Any], call: ToolInvocation) -> str:
    await asyncio.sleep(0.05)
    return f"slow: {arguments['text']}"


TOOLS = [
    Tool("echo", "Echo text back.", ECHO_SCHEMA, echo),
    Tool("slow", "", ECHO_SCHEMA, slow_echo),
]


def chat(server: ModelServer, **options: Any) -> OpenAIChatServer:
    options.setdefault("max_retries", 0)
    options.setdefault("timeout", 10)
    return OpenAIChatServer(base_url=server.base_url, model="scripted", **options)


@pytest.fixture
async def loop_factory() -> AsyncIterator[Any]:
    made: list[AgentLoop] = []

    def make(endpoint: Any, **options: Any) -> AgentLoop:
        loop = AgentLoop(endpoint, TOOLS, **options)
        made.append(loop)
        return loop

    yield make
    for loop in made:
        await loop.aclose()


async def test_tool_call_then_answer(loop_factory: Any) -> None:
    script = Script(
        [
            Turn(
                "Calling echo.",
                tool_calls=[Call("echo", {"text": "hello"})],
                reasoning="The user wants an echo.",
            ),
            Turn("The tool said: echo: hello"),
        ]
    )
    async with ModelServer(script) as server:
        result = await loop_factory(chat(server)).run(USER, task_id="t-1")
    assert result.finished_naturally
    assert result.stop_reason == "natural"
    assert result.turns_used == 2
    assert result.task_id == "t-1"
    assert result.reasoning_per_turn == ["The user wants an echo.", None]
    roles = [m["role"] for m in result.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = result.messages[1]["tool_calls"][0]
    assert call["function"]["name"] == "echo"
    assert json.loads(call["function"]["arguments"]) == {"text": "hello"}
    assert result.messages[2] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "name": "echo",
        "content": "echo: hello",
    }
    assert result.final_response == "The tool said: echo: hello"
    assert result.tool_errors == []
    assert result.usage["prompt_tokens"] > 0
    assert result.usage["completion_tokens"] > 0
    assert result.managed_state is None
    assert issubclass(HermesAgentLoop, AgentLoop)


async def test_max_turns_stops_a_model_that_never_stops(loop_factory: Any) -> None:
    turn = Turn(tool_calls=[Call("echo", {"text": "again"})])
    async with ModelServer(Script([turn] * 10)) as server:
        result = await loop_factory(chat(server), max_turns=3).run(USER)
    assert result.turns_used == 3
    assert not result.finished_naturally
    assert result.stop_reason == "max_turns"
    assert [m["role"] for m in result.messages].count("tool") == 3


async def test_parallel_calls_keep_order_and_bad_calls_do_not_stop_the_rollout(
    loop_factory: Any,
) -> None:
    calls = [
        Call("slow", {"text": "a"}, id="c0"),
        Call("echo", {"text": "b"}, id="c1"),
        Call("missing", {"text": "c"}, id="c2"),
        Call("echo", "{not json", id="c3"),
        Call("echo", {"text": 5}, id="c4"),
    ]
    async with ModelServer(Script([Turn(tool_calls=calls), Turn("done")])) as server:
        result = await loop_factory(chat(server)).run(USER)
    tool_messages = [m for m in result.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c0", "c1", "c2", "c3", "c4"]
    assert tool_messages[0]["content"] == "slow: a"
    assert tool_messages[1]["content"] == "echo: b"
    assert [e.kind for e in result.tool_errors] == [
        "unknown_tool",
        "invalid_arguments",
        "invalid_arguments",
    ]
    assert [e.call_id for e in result.tool_errors] == ["c2", "c3", "c4"]
    assert result.tool_errors[1].arguments == "{not json"
    assert all(e.turn == 0 for e in result.tool_errors)
    assert result.finished_naturally


async def test_rate_limit_is_retried_then_succeeds(loop_factory: Any) -> None:
    turn = Turn("fine", faults=[Fault(status=429, retry_after=0, times=2)])
    async with ModelServer(Script([turn])) as server:
        result = await loop_factory(chat(server, max_retries=3)).run(USER)
        assert server.requests["chat"] == 3
    assert result.finished_naturally
    assert result.final_response == "fine"


@pytest.mark.parametrize(
    ("fault", "kind", "status"),
    [
        (Fault(status=500, retry_after=0), "server_error", 500),
        (Fault(status=429, retry_after=0), "rate_limited", 429),
        (Fault(truncate=True), "connection", None),
        (Fault(hang=True), "timeout", None),
    ],
)
async def test_endpoint_failure_ends_rollout_as_infra_error(
    loop_factory: Any, fault: Fault, kind: str, status: int | None
) -> None:
    script = Script([Turn(tool_calls=[Call("echo", {"text": "x"})]), Turn("never", faults=[fault])])
    async with ModelServer(script) as server:
        endpoint = chat(server, max_retries=1, timeout=0.5)
        result = await loop_factory(endpoint).run(USER)
    assert result.stop_reason == "infra_error"
    assert not result.finished_naturally
    assert result.infra_error is not None
    assert result.infra_error.kind == kind
    assert result.infra_error.status == status
    assert result.infra_error.turn == 1
    # What was done before the failure is kept.
    assert result.turns_used == 1
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool"]


async def test_many_concurrent_rollouts_share_one_loop(loop_factory: Any) -> None:
    script = Script([Turn(tool_calls=[Call("slow", {"text": "x"})]), Turn("ok")])
    async with ModelServer(script) as server:
        loop = loop_factory(chat(server))
        results = await asyncio.gather(
            *(loop.run([{"role": "user", "content": f"task {i}"}]) for i in range(64))
        )
    assert all(r.finished_naturally and r.turns_used == 2 for r in results)
    assert len({r.task_id for r in results}) == 64


async def test_cancelling_a_rollout_leaves_nothing_running(loop_factory: Any) -> None:
    started = asyncio.Event()

    async def forever(arguments: dict[str, Any], call: ToolInvocation) -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    tools = [Tool("forever", "", {"type": "object"}, forever)]
    script = Script([Turn(tool_calls=[Call("forever", {}), Call("forever", {})])])
    async with ModelServer(script) as server, AgentLoop(chat(server), tools) as loop:
        task = asyncio.create_task(loop.run(USER))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    leftovers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert leftovers == []


async def test_bad_input_is_rejected_with_a_clear_error(loop_factory: Any) -> None:
    async with ModelServer(Script([Turn("x")])) as server:
        loop = loop_factory(chat(server))
        with pytest.raises(ValueError, match="non-empty list"):
            await loop.run([])
        with pytest.raises(ValueError, match=r"messages\[1\] needs a 'role'"):
            await loop.run([{"role": "user", "content": "a"}, {"content": "b"}])
    with pytest.raises(ValueError, match="max_turns must be at least 1"):
        AgentLoop(chat(server), max_turns=0)


async def test_system_prompt_is_prepended(loop_factory: Any) -> None:
    async with ModelServer(Script([Turn("hi")])) as server:
        result = await loop_factory(chat(server), system_prompt="Be brief.").run(USER)
    assert result.messages[0] == {"role": "system", "content": "Be brief."}


async def test_record_and_replay(loop_factory: Any, tmp_path: Path) -> None:
    script = Script(
        [Turn(tool_calls=[Call("echo", {"text": "hi"})], reasoning="r"), Turn("all done")]
    )
    async with ModelServer(script) as server:
        original = await loop_factory(chat(server)).run(USER)
    saved = tmp_path / "rollout.json"
    original.save(saved)
    loaded = AgentResult.load(saved)
    assert loaded == original
    async with ModelServer(Replay(loaded.messages)) as server:
        replayed = await loop_factory(chat(server)).run(USER)
    assert [m.get("content") for m in replayed.messages] == [
        m.get("content") for m in original.messages
    ]
    assert replayed.turns_used == original.turns_used
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a saved AgentResult"):
        AgentResult.load(bad)


async def test_phase_two_generate_records_real_tokens(loop_factory: Any) -> None:
    tokenizer = load_tokenizer()
    script = Script(
        [
            Turn("Let me check.", tool_calls=[Call("echo", {"text": "héllo"})], reasoning="hm"),
            Turn(tool_calls=[Call("echo", {"text": "again"})]),
            Turn("Finished."),
        ]
    )
    async with ModelServer(script) as server:
        endpoint = GenerateChatServer(base_url=server.url, tokenizer=tokenizer, max_retries=0)
        result = await loop_factory(endpoint).run(USER)
        await endpoint.aclose()
    assert result.finished_naturally
    assert result.turns_used == 3
    assert result.reasoning_per_turn == ["hm", None, None]
    assert result.messages[1]["content"] == "Let me check."
    assert json.loads(result.messages[1]["tool_calls"][0]["function"]["arguments"]) == {
        "text": "héllo"
    }
    assert result.messages[2]["content"] == "echo: héllo"
    state = result.managed_state
    assert state is not None
    (node,) = state["nodes"]  # the whole conversation is one training sequence
    tokens, masks, logprobs = node["tokens"], node["masked_tokens"], node["logprobs"]
    assert len(tokens) == len(masks) == len(logprobs)
    assert tokenizer.decode(tokens) == node["full_text"]
    trained = [t for t, m in zip(tokens, masks, strict=True) if m != -100]
    assert trained == [t for turn in state["turns"] for t in turn["completion_token_ids"]]
    assert all(m in (-100, t) for t, m in zip(tokens, masks, strict=True))
    assert all(lp == 1.0 for lp, m in zip(logprobs, masks, strict=True) if m == -100)
    assert all(lp < 0 for lp, m in zip(logprobs, masks, strict=True) if m != -100)
    # Every turn's prompt extends the previous prompt and completion: no re-tokenization.
    turns = state["turns"]
    for before, after in itertools.pairwise(turns):
        previous = before["prompt_token_ids"] + before["completion_token_ids"]
        assert after["prompt_token_ids"][: len(previous)] == previous
    # The end-of-turn token is never doubled.
    assert "<|im_end|><|im_end|>" not in node["full_text"]


async def test_openai_client_errors_name_the_failure() -> None:
    endpoint = OpenAIChatServer(
        base_url="http://127.0.0.1:9/v1", model="m", max_retries=0, timeout=2
    )
    session = endpoint.session("t")
    from hermes_loop import EndpointError, SamplingParams

    with pytest.raises(EndpointError) as caught:
        await session.complete(USER, None, SamplingParams())
    assert caught.value.kind == "connection"
    await endpoint.aclose()
    assert isinstance(openai.AsyncOpenAI, type)


def all_call_ids(messages: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(ids of the assistant tool calls, tool_call_ids of the tool messages), in order."""
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    answers = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    return calls, answers


async def test_phase_two_repeated_call_gets_a_fresh_id_each_turn(loop_factory: Any) -> None:
    # The hermes parser derives a call's id from its name and arguments, so the same call
    # on three turns came back with one id three times.
    repeated = Turn(tool_calls=[Call("echo", {"text": "again"})])
    async with ModelServer(Script([repeated, repeated, repeated, Turn("done")])) as server:
        endpoint = GenerateChatServer(
            base_url=server.url, tokenizer=load_tokenizer(), max_retries=0
        )
        first = await loop_factory(endpoint).run(USER, task_id="same")
        second = await loop_factory(endpoint).run(USER, task_id="same")
        await endpoint.aclose()
    calls, answers = all_call_ids(first.messages)
    assert len(calls) == 3
    assert len(set(calls)) == 3
    assert answers == calls
    assert all_call_ids(second.messages) == (calls, answers)  # deterministic per rollout
    assert first.finished_naturally


async def test_phase_one_duplicate_and_missing_ids_are_replaced(loop_factory: Any) -> None:
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "dup", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "dup", "content": "earlier"},
        {"role": "user", "content": "and now?"},
    ]
    # The scripted server answers a request holding k assistant messages with turn k.
    script = Script(
        [
            Turn("never asked: the history already holds one assistant message"),
            Turn(
                tool_calls=[
                    Call("echo", {"text": "a"}, id="dup"),
                    Call("echo", {"text": "b"}, id="dup"),
                ]
            ),
            Turn(tool_calls=[Call("echo", {"text": "c"}, id="call_0_1")]),
            Turn("done"),
        ]
    )
    async with ModelServer(script) as server:
        result = await loop_factory(chat(server)).run(history)
    calls, answers = all_call_ids(result.messages)
    assert calls == ["dup", "call_0_0", "call_0_1", "call_1_0"]
    assert answers == calls
    contents = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert contents == ["earlier", "echo: a", "echo: b", "echo: c"]


def test_save_survives_lone_surrogates_and_never_leaves_a_partial_file(
    tmp_path: Path,
) -> None:
    arguments = '{"text": "\ud800 and \udfff and é"}'
    result = AgentResult(
        messages=[
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "echo", "arguments": arguments},
                    }
                ],
            },
        ],
        turns_used=1,
        finished_naturally=False,
        reasoning_per_turn=[None],
        tool_errors=[],
    )
    path = tmp_path / "rollout.json"
    path.write_text("the previous save")
    result.save(path)
    assert AgentResult.load(path) == result
    text = path.read_text(encoding="utf-8")  # valid UTF-8: the surrogates are JSON escapes
    assert "\\ud800" in text
    assert "é" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rollout.json"]
    # A save that cannot complete leaves neither a partial file nor a temporary one.
    blocked = tmp_path / "a-directory"
    (blocked / "inside").mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        result.save(blocked)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-directory", "rollout.json"]
    assert AgentResult.load(path) == result


async def test_a_tool_call_that_never_started_ends_the_rollout_as_infra_error() -> None:
    release = threading.Event()

    def hang(arguments: dict[str, Any], call: ToolInvocation) -> str:
        release.wait(30)
        return "late"

    tools = [Tool("hang", "", {"type": "object"}, hang)]
    turn = Turn(tool_calls=[Call("hang", {})])
    async with ModelServer(Script([turn, turn, Turn("never")])) as server:
        loop = AgentLoop(chat(server), tools, tool_timeout=1.0, tool_pool_size=1)
        try:
            result = await loop.run(USER)
            assert loop.abandoned_handlers == 1
        finally:
            release.set()
            await loop.aclose()
    assert result.stop_reason == "infra_error"
    assert result.infra_error is not None
    assert result.infra_error.kind == "tool_not_started"
    assert result.infra_error.turn == 1
    assert "(1 of 1 handler threads busy; 1 handlers abandoned" in result.infra_error.message
    # The first call's timeout is the model's; the starved call is not.
    assert [e.kind for e in result.tool_errors] == ["timeout"]
    assert [m["role"] for m in result.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert result.turns_used == 2
