"""Loading a user's agent named as module:Class: every wrong name answers clearly."""

from __future__ import annotations

import pytest

from hermes_benchmarks import Agent, AgentLoadError, load_agent

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
