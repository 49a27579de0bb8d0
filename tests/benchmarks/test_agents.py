"""Loading a user's agent named as module:Class: every wrong name answers clearly; the
hermes agent's failures as the trial's infrastructure errors."""

from __future__ import annotations

import pytest

from hermes_benchmarks import Agent, AgentLoadError, HermesAgent, load_agent, load_task
from hermes_benchmarks._agents import trial_infra_error
from hermes_benchmarks._errors import TrialInfraError
from hermes_envs import InfraFailure
from hermes_loop.server import Call, ModelServer, Script, Turn
from hermes_sandbox import create_sandbox
from tests.benchmarks.docker_support import SHIPPED

AGENTS = "tests.benchmarks.agents_for_tests"


def test_a_named_class_is_built_and_is_an_agent() -> None:
    agent = load_agent(f"{AGENTS}:RewardWriter")
    assert isinstance(agent, Agent)
    assert agent.name == "reward-writer"


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no_colon_here", "module:Class"),
        (":Cls", "module:Class"),
        ("mod:", "module:Class"),
        ("tests.benchmarks.nowhere_at_all:X", "cannot import"),
        (f"{AGENTS}:Missing", "has no Missing"),
        (f"{AGENTS}:asyncio", "is not a class"),
        (f"{AGENTS}:NotAnAgent", "async def run"),
    ],
)
def test_a_wrong_agent_name_is_refused_with_what_to_do(spec: str, says: str) -> None:
    with pytest.raises(AgentLoadError, match=says):
        load_agent(spec)


def test_a_constructor_failure_names_the_agent() -> None:
    with pytest.raises(AgentLoadError, match="could not be built"):
        load_agent(f"{AGENTS}:RewardWriter", kwargs={"unexpected": 1})


def test_an_agent_run_s_failure_is_the_trial_s_infra_error_of_its_stage() -> None:
    kinds = {
        stage: trial_infra_error(InfraFailure("t", stage, "why")).kind
        for stage in ("sandbox_start", "model_endpoint", "sandbox_lost")
    }
    # A tool whose sandbox broke is an agent_crash, which the trial runner then
    # attributes to the agent when the sandbox was stopped from inside.
    assert kinds == {
        "sandbox_start": "sandbox_start",
        "model_endpoint": "model_endpoint",
        "sandbox_lost": "agent_crash",
    }
    assert "(why)" in str(trial_infra_error(InfraFailure("t", "model_endpoint", "why")))
    with pytest.raises(ValueError, match="'collect_trajectory' is not a stage an agent run"):
        trial_infra_error(InfraFailure("t", "collect_trajectory", "why"))


async def test_the_hermes_agent_on_a_dead_sandbox_is_an_agent_crash_not_the_model_s() -> None:
    script = Script([Turn(tool_calls=[Call("terminal", {"command": "true"})]), Turn("never")])
    task = load_task(SHIPPED / "write-greeting")
    async with ModelServer(script) as server:
        sandbox = await create_sandbox("local", task_id="dead").start()
        await sandbox.close()
        agent = HermesAgent(server.base_url, "scripted", api_key="unused")
        with pytest.raises(TrialInfraError, match="a tool's infrastructure failed") as raised:
            await agent.run(task, sandbox, timeout=30)
    assert raised.value.kind == "agent_crash"
    assert "tool_infra: " in str(raised.value)
