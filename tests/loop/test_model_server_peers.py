"""Other projects' own clients against the scripted model server.

inspect-ai's ``openai/`` model provider (its default request for a ``gpt-5`` model goes
to the Responses API; with ``responses_api=False`` it sends chat completions with a
``developer`` message) and PrimeIntellect verifiers' ``ToolEnv.evaluate`` run a
one-sample task with a tool against a ``Policy`` served on 127.0.0.1, and the scripted
tool call, the tool's result and the scripted answer must arrive (inspect-ai's
Responses requests also streamed).

Both come from the workspace's ``peers`` dependency group (a default group, Python >= 3.12
only); where they are absent the tests are skipped with the command that installs them.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

from hermes_loop.server import Call, ModelRequest, ModelServer, ModelServerThread, Policy, Turn

INSTALL = "uv sync --group peers (Python >= 3.12), or pip install inspect-ai verifiers"

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 12), reason=f"the peers group installs on Python >= 3.12: {INSTALL}"
)

#: inspect-ai sends a gpt-5 model to the Responses API by default, and names its system
#: prompt ``developer`` on the chat route: the name served here.
MODEL = "gpt-5"


class Recorder:
    """A policy that calls ``add(2, 3)``, then answers with the tool's result."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> Turn:
        self.requests.append(request)
        if not request.tools:
            return Turn("hello, world")  # inspect-ai's probe for reasoning summaries
        if request.turn_index == 0:
            return Turn(tool_calls=[Call("add", {"x": 2, "y": 3})], reasoning="Use the tool.")
        return Turn(f"The answer is {request.messages[-1]['content']}.")

    def task_requests(self) -> list[ModelRequest]:
        return [request for request in self.requests if request.tools]


def run_inspect(recorder: Recorder, log_dir: Path, **model_args: Any) -> Any:
    """One inspect-ai eval of a one-sample task with an ``add`` tool; its log."""
    inspect_ai = pytest.importorskip("inspect_ai", reason=f"inspect-ai is absent: {INSTALL}")
    from inspect_ai.dataset import Sample
    from inspect_ai.model import get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, system_message, use_tools
    from inspect_ai.tool import Tool, tool

    @tool
    def add() -> Tool:
        async def execute(x: int, y: int) -> str:
            """Add two numbers.

            Args:
                x: The first number.
                y: The second number.
            """
            return str(x + y)

        return execute

    task = inspect_ai.Task(
        dataset=[Sample(input="What is 2 + 3?", target="5")],
        solver=[system_message("Be exact."), use_tools(add()), generate()],
        scorer=includes(),
    )
    with ModelServerThread(Policy(recorder, name=MODEL)) as server:
        model = get_model(f"openai/{MODEL}", base_url=server.base_url, api_key="test", **model_args)
        (log,) = inspect_ai.eval(task, model=model, log_dir=str(log_dir), display="none")
    return log


def check_inspect_log(log: Any) -> None:
    assert log.status == "success", log.error
    assert log.results.scores[0].metrics["accuracy"].value == 1.0
    messages = log.samples[0].messages
    assert [message.role for message in messages] == [
        "system", "user", "assistant", "tool", "assistant",
    ]  # fmt: skip
    (call,) = messages[2].tool_calls
    assert (call.function, call.arguments) == ("add", {"x": 2, "y": 3})
    assert messages[3].text == "5"
    assert messages[4].text == "The answer is 5."


def test_inspect_ai_default_request_goes_to_the_responses_api(tmp_path: Path) -> None:
    recorder = Recorder()
    log = run_inspect(recorder, tmp_path)
    check_inspect_log(log)
    first, second = recorder.task_requests()
    assert (first.endpoint, second.endpoint) == ("responses", "responses")
    assert first.messages == [
        {"role": "system", "content": "Be exact."},
        {"role": "user", "content": "What is 2 + 3?"},
    ]
    assert first.tools is not None
    assert first.tools[0]["function"]["name"] == "add"
    # The reasoning arrived; inspect-ai sends its item back (without the text, as it
    # does to OpenAI) before the call: one assistant turn.
    reasoning = [part for part in log.samples[0].messages[2].content if part.type == "reasoning"]
    assert [part.reasoning for part in reasoning] == ["Use the tool."]
    assert second.body["input"][2]["type"] == "reasoning"
    assert second.turn_index == 1
    assistant, tool = second.messages[2:]
    assert assistant["tool_calls"][0]["function"]["name"] == "add"
    assert tool == {
        "role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "5"
    }  # fmt: skip


def test_inspect_ai_streams_from_the_responses_api(tmp_path: Path) -> None:
    recorder = Recorder()
    log = run_inspect(recorder, tmp_path, streaming=True)
    check_inspect_log(log)
    requests = recorder.task_requests()
    assert [(r.endpoint, r.body.get("stream")) for r in requests] == [("responses", True)] * 2


def test_inspect_ai_chat_completions_with_a_developer_message(tmp_path: Path) -> None:
    recorder = Recorder()
    log = run_inspect(recorder, tmp_path, responses_api=False)
    check_inspect_log(log)
    first, second = recorder.task_requests()
    assert (first.endpoint, second.endpoint) == ("chat", "chat")
    assert first.body["messages"][0] == {"role": "developer", "content": "Be exact."}
    assert first.messages[0] == {"role": "system", "content": "Be exact."}
    assert second.messages[-1]["role"] == "tool"


def add(x: int, y: int) -> str:
    """Add two numbers.

    Args:
        x: The first number.
        y: The second number.
    """
    return str(x + y)


def answered(completion: Any, answer: str, **kwargs: Any) -> float:
    """verifiers' reward: 1.0 when the last message holds the answer."""
    return 1.0 if answer in str(completion[-1]["content"]) else 0.0


async def test_verifiers_tool_env_evaluates_against_the_server() -> None:
    vf = pytest.importorskip("verifiers", reason=f"verifiers is absent: {INSTALL}")
    rows = [{"question": "What is 2 + 3?", "answer": "5"}]
    # verifiers' Environment installs its own SIGTERM/SIGINT handlers (process-wide):
    # put back what the test process had, so no later test meets them.
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        await _evaluate_with_verifiers(vf, rows)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


async def _evaluate_with_verifiers(vf: Any, rows: list[dict[str, str]]) -> None:
    from datasets import Dataset

    env = vf.ToolEnv(
        tools=[add],
        dataset=Dataset.from_list(rows),
        eval_dataset=Dataset.from_list(rows),
        system_prompt="Be exact.",
        rubric=vf.Rubric(funcs=[answered]),
        max_turns=4,
    )
    recorder = Recorder()
    async with ModelServer(Policy(recorder, name=MODEL)) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        async with client:
            results = await asyncio.wait_for(
                env.evaluate(client=client, model=MODEL, num_examples=1), timeout=120
            )
    (output,) = results["outputs"]
    assert output["reward"] == 1.0
    first, second = recorder.task_requests()
    assert (first.endpoint, second.endpoint) == ("chat", "chat")
    assert first.messages[0] == {"role": "system", "content": "Be exact."}
    assert second.messages[-1]["content"] == "5"
    completion = output["completion"]
    (call,) = completion[0]["tool_calls"]  # verifiers keeps each call as its JSON text
    call = json.loads(call) if isinstance(call, str) else call
    assert call["function"]["name"] == "add"
    assert json.loads(call["function"]["arguments"]) == {"x": 2, "y": 3}
    assert completion[1] == {"role": "tool", "content": "5"}
    assert completion[-1]["content"] == "The answer is 5."
