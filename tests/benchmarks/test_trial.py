"""Trials on a real dockerd with the shipped tasks: the oracle, a wrong agent, cheaters,
crashing verifiers, timeouts and retries."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from hermes_benchmarks import (
    Agent,
    HermesAgent,
    OracleAgent,
    Task,
    TrialResult,
    TrialSettings,
    load_agent,
    load_task,
    load_tasks,
    run_trial,
)
from hermes_loop.server import Call, ModelServer, Script, Turn
from tests.benchmarks.docker_support import FAULTY, SHIPPED, docker_skip_reason

REASON = docker_skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

SETTINGS = TrialSettings(infra_retries=0)
AGENTS = "tests.benchmarks.agents_for_tests"


async def run_all(
    tasks: Sequence[Task], agent: Agent, settings: TrialSettings = SETTINGS
) -> dict[str, TrialResult]:
    gate = asyncio.Semaphore(3)

    async def one(task: Task) -> TrialResult:
        async with gate:
            return await run_trial(task, agent, settings, trial=0)

    results = await asyncio.gather(*(one(task) for task in tasks))
    return {result.task: result for result in results}


async def test_the_oracle_passes_every_shipped_task() -> None:
    tasks = load_tasks(SHIPPED)
    assert len(tasks) >= 6
    results = await run_all(tasks, OracleAgent())
    for name, result in results.items():
        assert (result.status, result.reward) == ("pass", 1.0), (name, result.error)
        assert result.agent == "oracle"
        assert set(result.timings) >= {"image", "sandbox_start", "agent", "verifier", "teardown"}


async def test_a_scripted_wrong_agent_fails_every_shipped_task() -> None:
    script = Script(
        [Turn(tool_calls=[Call("terminal", {"command": "echo I will not do it"})]), Turn("done")]
    )
    async with ModelServer(script) as server:
        agent = HermesAgent(server.base_url, "scripted", name="wrong")
        results = await run_all(load_tasks(SHIPPED), agent)
    for name, result in results.items():
        assert (result.status, result.reward) == ("fail", 0.0), (name, result.error)
        assert result.error_kind is None


@pytest.mark.parametrize(
    "cheater", ["RewardWriter", "BackgroundRewriter", "SlowRewriter", "SessionPoisoner"]
)
async def test_an_agent_that_games_the_verifier_scores_zero(cheater: str) -> None:
    agent = load_agent(f"{AGENTS}:{cheater}")
    result = await run_trial(load_task(SHIPPED / "write-greeting"), agent, SETTINGS, trial=0)
    assert (result.status, result.reward) == ("fail", 0.0), result.error
    if cheater.endswith("Rewriter"):  # its writer outlives the tests: caught rewriting
        assert result.error_kind == "reward_tampered"


async def test_tests_that_end_without_a_reward_are_a_scored_fail_not_retried() -> None:
    settings = TrialSettings(infra_retries=1)
    result = await run_trial(load_task(FAULTY / "crashing-tests"), OracleAgent(), settings, trial=0)
    assert (result.status, result.reward, result.error_kind) == ("fail", 0.0, "reward_missing")
    assert result.error is not None
    assert "status 3" in result.error
    assert [a.error_kind for a in result.attempts] == ["reward_missing"]


async def test_an_unreadable_reward_is_a_scored_fail() -> None:
    result = await run_trial(
        load_task(FAULTY / "unreadable-reward"), OracleAgent(), SETTINGS, trial=0
    )
    assert (result.status, result.reward, result.error_kind) == (
        "fail",
        0.0,
        "reward_unreadable",
    )
    assert result.error is not None
    assert "passed-ish" in result.error


async def test_an_agent_past_its_timeout_is_stopped_and_verified(tmp_path: Path) -> None:
    folder = tmp_path / "write-greeting"
    shutil.copytree(SHIPPED / "write-greeting", folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 60", "timeout_sec = 2"))
    result = await run_trial(load_task(folder), load_agent(f"{AGENTS}:Sleeper"), SETTINGS, trial=0)
    assert (result.status, result.reward) == ("fail", 0.0), result.error
    assert result.extra == {"agent_timed_out": True}
    assert len(result.attempts) == 1


async def test_a_crashing_agent_is_an_infra_failure_with_every_attempt_kept() -> None:
    settings = TrialSettings(infra_retries=2)
    agent = load_agent(f"{AGENTS}:Crasher")
    result = await run_trial(load_task(SHIPPED / "write-greeting"), agent, settings, trial=3)
    assert (result.status, result.error_kind, result.trial) == ("infra_error", "agent_crash", 3)
    assert len(result.attempts) == 3
    assert result.error is not None
    assert "agent exploded" in result.error


async def test_a_missing_base_image_is_an_image_build_failure(tmp_path: Path) -> None:
    folder = tmp_path / "write-greeting"
    shutil.copytree(SHIPPED / "write-greeting", folder)
    (folder / "environment" / "Dockerfile").write_text("FROM nowhere/missing:1\n")
    offline = TrialSettings(infra_retries=0, offline_builds=True)  # no pull tried
    result = await run_trial(load_task(folder), OracleAgent(), offline, trial=0)
    assert (result.status, result.error_kind) == ("infra_error", "image_build")
    assert result.error is not None
    assert "image_map" in result.error


async def test_a_model_endpoint_that_does_not_answer_is_an_infra_failure() -> None:
    async with ModelServer(Script([Turn("unused")])) as server:
        dead = server.base_url  # the server stops at the end of this block: nothing listens
    agent = HermesAgent(dead, "scripted")
    result = await run_trial(load_task(SHIPPED / "write-greeting"), agent, SETTINGS, trial=0)
    assert (result.status, result.error_kind) == ("infra_error", "model_endpoint")
    assert result.reward is None


async def test_tests_past_their_timeout_in_a_healthy_sandbox_are_a_scored_zero(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "write-greeting"
    shutil.copytree(SHIPPED / "write-greeting", folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 30", "timeout_sec = 2"))
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\nsleep 60\n")
    settings = TrialSettings(infra_retries=1)
    result = await run_trial(load_task(folder), OracleAgent(), settings, trial=0)
    assert (result.status, result.reward, result.error_kind) == ("fail", 0.0, "verifier_timeout")
    assert len(result.attempts) == 1, "a verdict is not retried"
