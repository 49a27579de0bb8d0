"""A hung model endpoint does not hold a run for hours: a request timeout a person would
choose unless one is set, and repeated timeouts stop the run in one line."""

from __future__ import annotations

import pytest
from atroposlib.envs.server_handling.server_manager import APIServerConfig

from hermes_envs import RunAbortedError, TerminalTestEnv
from hermes_envs._cli import resolve_config
from hermes_envs._endpoint_limits import DEFAULT_REQUEST_TIMEOUT, request_timeout
from hermes_envs.envs.terminal_test import TASKS
from hermes_loop.server import Fault, ModelServer, Policy, Turn

from .support import env_config


def test_atropos_default_is_replaced_and_an_explicit_timeout_kept() -> None:
    assert APIServerConfig().timeout > DEFAULT_REQUEST_TIMEOUT
    assert request_timeout(APIServerConfig(base_url="http://127.0.0.1:9/v1")) == 300.0
    assert request_timeout(APIServerConfig(base_url="http://x/v1", timeout=1200)) == 1200.0
    plain = resolve_config(TerminalTestEnv, "evaluate", []).servers
    chosen = resolve_config(TerminalTestEnv, "evaluate", ["--openai.timeout", "7"]).servers
    assert isinstance(plain, APIServerConfig)
    assert isinstance(chosen, APIServerConfig)
    assert request_timeout(plain) == DEFAULT_REQUEST_TIMEOUT
    assert request_timeout(chosen) == 7.0


async def test_repeated_timeouts_stop_the_run_in_one_line() -> None:
    hung = Policy(lambda request: Turn("hi", faults=[Fault(hang=True)]))
    async with ModelServer(hung) as model:
        server = APIServerConfig(
            base_url=model.base_url, model_name="scripted", timeout=1, health_check=False
        )
        config = env_config(group_size=2, infra_retries=2, max_endpoint_timeouts=3)
        env = TerminalTestEnv(config, [server])
        try:
            with pytest.raises(RunAbortedError) as caught:
                await env.collect_trajectories(dict(TASKS[0]))
        finally:
            await env.close()
    text = str(caught.value)
    assert "\n" not in text
    assert f"the model endpoint {model.base_url} timed out on 3 rollouts in a row" in text
    assert "--openai.timeout" in text
