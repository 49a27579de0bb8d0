"""TerminalTestEnv on the docker backend: a real dockerd, a locally built image."""

from __future__ import annotations

import pytest

from hermes_envs import TerminalTestEnv, terminal_test_oracle
from hermes_envs.envs.terminal_test import TASKS
from hermes_loop.server import Call, ModelServer, Policy, Script, Turn
from tests.sandbox.providers.docker import DockerSetup, docker_or_skip

from .support import env_config, server


@pytest.fixture(scope="module")
def setup() -> DockerSetup:
    return docker_or_skip()


async def test_the_oracle_scores_one_and_a_wrong_model_zero_in_docker(setup: DockerSetup) -> None:
    config = env_config(
        group_size=1, terminal_backend="docker", sandbox_options={"image": setup.image}
    )
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        env = TerminalTestEnv(config, [server(model.base_url)])
        try:
            for task in TASKS:
                group, _ = await env.collect_trajectories(dict(task))
                assert group is not None, env.stats
                assert group["scores"] == [1.0]
            assert len(env.pool) == 0
        finally:
            await env.close()
    wrong = Script([Turn(tool_calls=[Call("terminal", {"command": "echo no > x"})]), Turn("ok")])
    async with ModelServer(wrong) as model:
        env = TerminalTestEnv(config, [server(model.base_url)])
        try:
            group, _ = await env.collect_trajectories(dict(TASKS[0]))
            assert group is not None
            assert group["scores"] == [0.0]
        finally:
            await env.close()


async def test_a_sandbox_that_will_not_start_is_an_infra_failure(setup: DockerSetup) -> None:
    config = env_config(
        group_size=1,
        infra_retries=1,
        terminal_backend="docker",
        sandbox_options={"image": "hermes-envs-test-no-such-image:absent"},
    )
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        env = TerminalTestEnv(config, [server(model.base_url)])
        try:
            item = dict(TASKS[0])
            group, backlog = await env.collect_trajectories(item)
            assert group is None
            assert backlog == [item]
            assert env.stats.failures_by_stage == {"sandbox_start": 2}
            assert env.stats.rollouts_done == 0
        finally:
            await env.close()
