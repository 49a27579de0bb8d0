"""``run_agent``, the one way an agent runs (rollouts, hermes-bench's agent, YC-Bench), on
real parts: the scripted model server and local sandboxes."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, cast, get_args

import pytest

from hermes_envs._agent_run import SANDBOX_FAILURES, infra_stage, run_agent
from hermes_loop import (
    AgentLoop,
    EndpointErrorKind,
    InfraErrorKind,
    OpenAIChatServer,
    RolloutProgress,
    Tool,
    ToolInvocation,
)
from hermes_loop.server import Call, Fault, ModelServer, Script, Turn
from hermes_sandbox import Sandbox, SandboxStartError, create_sandbox, sandbox_tools

USER = [{"role": "user", "content": "Work, please."}]


class One:
    """A ``SandboxSource`` holding one sandbox."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    async def get(self, task_id: str) -> Sandbox:
        return self.sandbox


class Refusing:
    """A ``SandboxSource`` whose sandboxes never start."""

    async def get(self, task_id: str) -> Sandbox:
        raise SandboxStartError(f"no room for {task_id}")


def chat(server: ModelServer) -> OpenAIChatServer:
    return OpenAIChatServer(base_url=server.base_url, model="scripted", max_retries=0, timeout=10)


def values(kind: Any) -> set[str]:
    """The strings of a ``Literal`` or of a union of ``Literal``s."""
    return {v for arg in get_args(kind) for v in (values(arg) if get_args(arg) else {arg})}


def test_every_infra_error_kind_has_one_class() -> None:
    kinds = values(InfraErrorKind)
    endpoint = values(EndpointErrorKind)
    assert endpoint
    assert endpoint < kinds
    assert {kind: infra_stage(cast(InfraErrorKind, kind)) for kind in kinds} == {
        **dict.fromkeys(endpoint, "model_endpoint"),
        # The tools' side broke under the agent, never the endpoint (it answered).
        "tool_infra": "sandbox_lost",
        "tool_not_started": "sandbox_lost",
    }
    with pytest.raises(ValueError, match="'gone' is not an InfraError kind of hermes_loop"):
        infra_stage("gone")  # type: ignore[arg-type]


async def test_a_finished_run_is_the_model_s_result_with_no_failure() -> None:
    script = Script([Turn(tool_calls=[Call("terminal", {"command": "echo hi"})]), Turn("done")])
    async with create_sandbox("local", task_id="fine") as sandbox, ModelServer(script) as server:
        tools = sandbox_tools(One(sandbox), toolsets=["terminal"])
        async with AgentLoop(chat(server), tools, infra_exceptions=SANDBOX_FAILURES) as loop:
            run = await run_agent(loop, USER, task_id="fine", sandboxes=One(sandbox))
    assert (run.failure, run.timed_out, run.task_id) == (None, False, "fine")
    assert run.result is not None
    assert run.result.final_response == "done"
    assert '"hi' in str(run.result.messages[2]["content"])


async def test_a_sandbox_that_will_not_start_is_sandbox_start_before_any_model_call() -> None:
    async with ModelServer(Script([Turn("never")])) as server:
        async with AgentLoop(chat(server)) as loop:
            run = await run_agent(loop, USER, task_id="t9", sandboxes=Refusing())
        assert server.requests.get("chat", 0) == 0
    assert run.result is None
    assert run.failure is not None
    assert (run.failure.stage, run.failure.message) == (
        "sandbox_start",
        "SandboxStartError: no room for t9",
    )


async def test_a_failing_endpoint_is_model_endpoint_with_the_conversation_kept() -> None:
    script = Script([Turn("never", faults=[Fault(status=500, retry_after=0)])])
    async with (
        create_sandbox("local", task_id="e") as sandbox,
        ModelServer(script) as server,
        AgentLoop(chat(server)) as loop,
    ):
        run = await run_agent(loop, USER, task_id="e", sandboxes=One(sandbox))
    assert run.failure is not None
    assert run.failure.stage == "model_endpoint"
    assert run.failure.message.startswith("server_error: ")
    assert run.result is not None
    assert run.result.stop_reason == "infra_error"


async def test_a_tool_whose_sandbox_died_is_sandbox_lost() -> None:
    script = Script([Turn(tool_calls=[Call("terminal", {"command": "true"})]), Turn("never")])
    async with ModelServer(script) as server:
        sandbox = await create_sandbox("local", task_id="dead").start()
        await sandbox.close()  # died before the agent's first command
        tools = sandbox_tools(One(sandbox), toolsets=["terminal"])
        async with AgentLoop(chat(server), tools, infra_exceptions=SANDBOX_FAILURES) as loop:
            run = await run_agent(loop, USER, task_id="dead", sandboxes=One(sandbox))
    assert run.failure is not None
    assert run.failure.stage == "sandbox_lost"
    assert run.failure.message.startswith("tool_infra: ")


async def test_a_tool_that_never_got_a_thread_is_sandbox_lost_not_the_endpoint() -> None:
    # Was model_endpoint in hermes-envs' rollouts and agent_crash in hermes-bench: the
    # endpoint answered; the tools' side broke.
    release = threading.Event()

    def hang(arguments: dict[str, Any], call: ToolInvocation) -> str:
        release.wait(30)
        return "late"

    turn = Turn(tool_calls=[Call("hang", {})])
    tools = [Tool("hang", "", {"type": "object"}, hang)]
    async with (
        create_sandbox("local", task_id="h") as sandbox,
        ModelServer(Script([turn, turn, Turn("never")])) as server,
    ):
        loop = AgentLoop(chat(server), tools, tool_timeout=1.0, tool_pool_size=1)
        try:
            run = await run_agent(loop, USER, task_id="h", sandboxes=One(sandbox))
        finally:
            release.set()
            await loop.aclose()
    assert run.failure is not None
    assert run.failure.stage == "sandbox_lost"
    assert run.failure.message.startswith("tool_not_started: ")


async def test_the_time_limit_ends_the_run_with_the_conversation_so_far() -> None:
    async def slow(arguments: dict[str, Any], call: ToolInvocation) -> str:
        await asyncio.sleep(30)
        return "late"

    script = Script([Turn(tool_calls=[Call("slow", {})]), Turn("never")])
    progress = RolloutProgress()
    tools = [Tool("slow", "", {"type": "object"}, slow)]
    async with (
        create_sandbox("local", task_id="s") as sandbox,
        ModelServer(script) as server,
        AgentLoop(chat(server), tools) as loop,
    ):
        run = await run_agent(
            loop, USER, task_id="s", sandboxes=One(sandbox), time_limit=0.5, progress=progress
        )
    assert run.timed_out
    assert run.failure is None
    assert run.result is not None
    assert run.result.stop_reason == "budget"
    assert run.result.turns_used == 1  # the model's call that asked for the tool
    assert progress.messages == run.result.messages
