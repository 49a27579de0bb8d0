"""Groups of rollouts on real parts: the scripted model server, local sandboxes, atroposlib."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from atroposlib.api.server import ScoredData

from hermes_envs import (
    HermesAgentBaseEnv,
    RewardFunctionError,
    TerminalTestEnv,
    terminal_test_oracle,
)
from hermes_envs._cli import run_command
from hermes_envs.envs.terminal_test import TASKS
from hermes_loop import AgentResult, ToolRegistry
from hermes_loop.server import (
    Call,
    Fault,
    ModelRequest,
    ModelServer,
    ModelServerThread,
    Policy,
    Script,
    Turn,
)
from hermes_sandbox import ToolContext

from .support import env_config, server


@pytest.fixture
async def oracle() -> AsyncIterator[ModelServer]:
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        yield model


def _check_group(group: dict[str, Any], size: int) -> None:
    ScoredData(**group)  # what Atropos' API accepts
    assert len(group["tokens"]) == len(group["masks"]) == len(group["scores"]) == size
    for tokens, masks in zip(group["tokens"], group["masks"], strict=True):
        assert len(tokens) == len(masks)
        assert any(m != -100 for m in masks)
        assert all(m in (-100, t) for t, m in zip(tokens, masks, strict=True))


async def test_the_oracle_scores_one_on_every_task(oracle: ModelServer) -> None:
    env = TerminalTestEnv(env_config(group_size=2), [server(oracle.base_url)])
    try:
        await env.setup()
        for _ in TASKS:
            item = await env.get_next_item()
            group, backlog = await env.collect_trajectories(item)
            assert backlog == []
            assert group is not None
            _check_group(dict(group), 2)
            assert group["scores"] == [1.0, 1.0]
            assert "inference_logprobs" not in group  # Phase 1 has none
            messages = group["messages"][0]
            assert messages[0]["content"] == env.format_prompt(item)
            assert messages[1]["tool_calls"][0]["function"]["name"] == "terminal"
        assert len(env.pool) == 0  # every rollout's sandbox was closed
        assert env.stats.rollouts_done == 2 * len(TASKS)
        assert env.stats.infra_failures == 0
    finally:
        await env.close()


async def test_a_wrong_model_scores_zero_on_every_task() -> None:
    wrong = Script(
        [
            Turn(tool_calls=[Call("terminal", {"command": "echo wrong > greeting.txt"})]),
            Turn("Done."),
        ]
    )
    async with ModelServer(wrong) as model:
        env = TerminalTestEnv(env_config(group_size=2), [server(model.base_url)])
        try:
            for task in TASKS:
                group, _ = await env.collect_trajectories(dict(task))
                assert group is not None
                assert group["scores"] == [0.0, 0.0]
        finally:
            await env.close()


class Recording(TerminalTestEnv):
    """Keeps every result its reward saw."""

    async def compute_reward(self, item: Any, result: AgentResult, ctx: ToolContext) -> float:
        self.seen = [*getattr(self, "seen", []), result]
        return await super().compute_reward(item, result, ctx)


async def test_phase2_sends_the_exact_tokens_and_logprobs_of_the_rollout(
    oracle: ModelServer,
) -> None:
    env = Recording(env_config(group_size=2), [server(oracle.url, "vllm")])
    try:
        group, _ = await env.collect_trajectories(dict(TASKS[1]))
        assert group is not None
        _check_group(dict(group), 2)
        assert group["scores"] == [1.0, 1.0]
        nodes = {tuple(r.managed_state["nodes"][-1]["tokens"]): r for r in env.seen}
        for tokens, masks, logprobs in zip(
            group["tokens"], group["masks"], group["inference_logprobs"], strict=True
        ):
            node = nodes[tuple(tokens)].managed_state["nodes"][-1]
            assert masks == node["masked_tokens"]
            assert logprobs == node["logprobs"]
            assert all(lp == 1.0 for lp, m in zip(logprobs, masks, strict=True) if m == -100)
            assert len(nodes[tuple(tokens)].managed_state["nodes"]) == 1
        assert env.stats.token_drift == 0
    finally:
        await env.close()


class FlakyReward(TerminalTestEnv):
    """Reward code that raises on its first ``failures`` calls."""

    failures = 0

    async def compute_reward(self, item: Any, result: AgentResult, ctx: ToolContext) -> float:
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls <= self.failures:
            raise RuntimeError("verifier crashed")
        return await super().compute_reward(item, result, ctx)


async def test_a_reward_that_raises_is_the_env_s_bug_dropped_not_retried_nor_scored(
    oracle: ModelServer, caplog: pytest.LogCaptureFixture
) -> None:
    env = FlakyReward(
        env_config(group_size=2, infra_retries=2, min_rollouts_per_group=1),
        [server(oracle.base_url)],
    )
    env.failures = 1
    try:
        group, backlog = await env.collect_trajectories(dict(TASKS[0]))
        assert backlog == []
        assert group is not None
        assert group["scores"] == [1.0]  # the failed rollout is dropped: never a 0
        assert env.calls == 2  # not retried
        assert env.stats.infra_failures == 0
        assert env.stats.reward_errors == 1
        logged = [r for r in caplog.records if "compute_reward raised" in r.getMessage()]
        assert len(logged) == 1
        assert logged[0].exc_info is not None
        assert "verifier crashed" in caplog.text
        assert len(env.pool) == 0
    finally:
        await env.close()


async def test_many_reward_errors_in_a_row_stop_the_run_naming_compute_reward(
    oracle: ModelServer,
) -> None:
    env = FlakyReward(env_config(group_size=2, max_reward_errors=3), [server(oracle.base_url)])
    env.failures = 10**6
    try:
        await env.collect_trajectories(dict(TASKS[0]))  # two in a row: the item goes back
        with pytest.raises(RewardFunctionError) as caught:
            await env.collect_trajectories(dict(TASKS[0]))
        text = str(caught.value)
        assert "\n" not in text
        assert "FlakyReward.compute_reward raised on 3 rollouts in a row" in text
        assert "RuntimeError: verifier crashed" in text
        assert "--env.max_reward_errors" in text
        assert env.stats.infra_failures == 0
    finally:
        await env.close()


async def test_too_few_good_rollouts_send_the_item_back(oracle: ModelServer) -> None:
    env = FlakyReward(env_config(group_size=2, infra_retries=1), [server(oracle.base_url)])
    env.failures = 1
    try:
        item = dict(TASKS[0])
        group, backlog = await env.collect_trajectories(item)
        assert group is None
        assert backlog == [item]
        assert env.stats.reward_errors == 1
        assert env.stats.groups_requeued == 1
        assert env.stats.rollouts_done == 1
    finally:
        await env.close()


async def test_a_partial_group_goes_out_when_enough_rollouts_remain(oracle: ModelServer) -> None:
    env = FlakyReward(
        env_config(group_size=2, infra_retries=0, min_rollouts_per_group=1),
        [server(oracle.base_url)],
    )
    env.failures = 1
    try:
        group, _ = await env.collect_trajectories(dict(TASKS[0]))
        assert group is not None
        assert group["scores"] == [1.0]
        assert group["group_overrides"] == {"group_size": 1}  # Atropos' size check
        _check_group(dict(group), 1)
    finally:
        await env.close()


async def test_a_failing_model_endpoint_is_an_infra_failure() -> None:
    failing = Policy(lambda request: Turn("hi", faults=[Fault(status=500, retry_after=0)]))
    async with ModelServer(failing) as model:
        env = TerminalTestEnv(env_config(group_size=1, infra_retries=1), [server(model.base_url)])
        try:
            group, backlog = await env.collect_trajectories(dict(TASKS[0]))
            assert group is None
            assert backlog == [dict(TASKS[0])]
            assert env.stats.failures_by_stage == {"model_endpoint": 2}
        finally:
            await env.close()


async def test_cancelling_a_group_closes_its_sandboxes() -> None:
    started = asyncio.Event()
    waiting: list[ModelRequest] = []

    async def slow(request: ModelRequest) -> Turn:
        # Both rollouts are waiting for the model (their sandboxes started, isolated
        # ones take a little longer) before the group is cancelled.
        waiting.append(request)
        if len(waiting) == 2:
            started.set()
        await asyncio.sleep(30)
        return Turn("late")

    async with ModelServer(Policy(slow)) as model:
        env = TerminalTestEnv(env_config(group_size=2), [server(model.base_url)])
        try:
            task = asyncio.create_task(env.collect_trajectories(dict(TASKS[0])))
            await asyncio.wait_for(started.wait(), 30)
            assert len(env.pool) == 2
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert len(env.pool) == 0
        finally:
            await env.close()


class Distributed(TerminalTestEnv):
    def build_tool_registry(self) -> ToolRegistry:
        registry = super().build_tool_registry()
        registry.add_distribution("coin", {"terminal": 0.5, "file": 0.5})
        return registry


async def test_a_group_gets_the_same_tools_every_time(oracle: ModelServer) -> None:
    config = env_config(enabled_toolsets=None, distribution="coin")
    env = Distributed(config, [server(oracle.base_url)])
    other = Distributed(config, [server(oracle.base_url)])
    try:
        items = [{"id": str(n), "path": "x", "content": "y"} for n in range(12)]
        first = [env.resolve_tools(item).names for item in items]
        assert first == [other.resolve_tools(item).names for item in items]
        assert len({tuple(names) for names in first}) > 1  # the seed is the item
    finally:
        await env.close()
        await other.close()


def test_an_unknown_distribution_fails_at_start_up() -> None:
    with pytest.raises(KeyError, match="unknown distribution 'coin'"):
        TerminalTestEnv(env_config(distribution="coin"), [server("http://127.0.0.1:9/v1")])


def test_a_server_type_without_agent_support_is_refused() -> None:
    with pytest.raises(ValueError, match=r"openai.server_type 'trl'.*allowed: openai, vllm"):
        TerminalTestEnv(env_config(), [server("http://127.0.0.1:9/v1", "trl")])


def test_terminal_test_env_is_a_hermes_env() -> None:
    assert issubclass(TerminalTestEnv, HermesAgentBaseEnv)


def test_process_stops_in_one_line_naming_compute_reward(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    with ModelServerThread(Policy(terminal_test_oracle)) as model:
        config = env_config(
            group_size=2,
            total_steps=4,
            max_reward_errors=3,
            data_path_to_save_groups=str(tmp_path / "groups.jsonl"),
        )
        env = FlakyReward(config, [server(model.base_url)])
        env.failures = 10**6
        status = run_command(env, "process", out=out, err=err)
    errors = [line for line in err.getvalue().splitlines() if line.startswith("error:")]
    assert status == 1
    assert len(errors) == 1
    assert "FlakyReward.compute_reward raised on 3 rollouts in a row" in errors[0]
    assert env.stats.reward_errors >= 3
    assert env.stats.infra_failures == 0
    assert (tmp_path / "groups.jsonl").read_text() == ""  # nothing trained on
