"""Eval-only environments: no tokenizer configured, no tokenizer loaded, no hub reached.

``evaluate`` runs with ``env.tokenizer_name`` unset or ``none``; ``process`` and ``serve``
stop at start with one line naming ``--env.tokenizer_name``. The command lines run in a
child process with the hub switched off (any attempt to reach it fails the run).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_envs import EnvSetupError, HermesAgentEnvConfig, TerminalTestEnv, terminal_test_oracle
from hermes_envs.envs.terminal_test import TASKS
from hermes_loop.server import ModelServerThread, Policy

from .support import TOKENIZER, env_config, run_script, server

#: A HermesAgentBaseEnv subclass that only evaluates, as benchmark environments do: its
#: config_init sets no tokenizer.
EVAL_ONLY_ENV = """
from hermes_envs import HermesAgentEnvConfig, TerminalTestEnv
from hermes_envs._config import local_endpoint


class EvalOnlyEnv(TerminalTestEnv):
    name = "eval-only"

    @classmethod
    def config_init(cls):
        config = HermesAgentEnvConfig(
            enabled_toolsets=["terminal", "file"], terminal_backend="local", max_agent_turns=6
        )
        return config, [local_endpoint("terminal-test")]


if __name__ == "__main__":
    EvalOnlyEnv.cli()
"""


@pytest.fixture(scope="module")
def oracle_url() -> Iterator[str]:
    with ModelServerThread(Policy(terminal_test_oracle, name="terminal-test")) as model:
        yield model.base_url


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "eval_only_env.py"
    script.write_text(EVAL_ONLY_ENV)
    return run_script(script, *args, cwd=tmp_path)


@pytest.mark.parametrize("tokenizer", [None, "none"])
def test_evaluate_runs_without_a_tokenizer(
    tmp_path: Path, oracle_url: str, tokenizer: str | None
) -> None:
    where = tmp_path / "eval"
    extra = [] if tokenizer is None else ["--env.tokenizer_name", tokenizer]
    done = _run(
        tmp_path,
        "evaluate",
        "--openai.base_url",
        oracle_url,
        "--env.data_dir_to_save_evals",
        str(where),
        *extra,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads((where / "metrics.json").read_text())
    assert metrics["results"]["all"]["eval/accuracy"] == 1.0
    assert metrics["results"]["all"]["eval/scored"] == float(len(TASKS))


@pytest.mark.parametrize("command", ["process", "serve"])
def test_training_commands_without_a_tokenizer_stop_at_start_in_one_line(
    tmp_path: Path, command: str
) -> None:
    out = tmp_path / "groups.jsonl"
    done = _run(
        tmp_path,
        command,
        "--openai.base_url",
        "http://127.0.0.1:9/v1",
        "--env.data_path_to_save_groups",
        str(out),
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {command} needs a tokenizer"), last
    assert "--env.tokenizer_name" in last
    # Only transformers' own import banner may come before it.
    assert all("PyTorch" in line for line in done.stderr.strip().splitlines()[:-1])


async def test_an_env_without_a_tokenizer_holds_none() -> None:
    env = TerminalTestEnv(env_config(tokenizer_name="none"), [server("http://127.0.0.1:9/v1")])
    try:
        assert env.tokenizer is None
        assert env.config.tokenizer_name is None
        with pytest.raises(EnvSetupError, match=r"--env\.tokenizer_name"):
            env.require_tokenizer("process")
        with pytest.raises(EnvSetupError, match="process needs a tokenizer"):
            await env.process_manager()
    finally:
        await env.close()


async def test_an_env_with_a_tokenizer_keeps_it() -> None:
    env = TerminalTestEnv(env_config(tokenizer_name=TOKENIZER), [server("http://127.0.0.1:9/v1")])
    try:
        assert env.tokenizer is not None
        assert env.config.tokenizer_name == TOKENIZER
        assert env.require_tokenizer("process").eos_token == "<|im_end|>"
    finally:
        await env.close()


def test_phase_2_without_a_tokenizer_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match=r"Phase 2.*--env\.tokenizer_name"):
        TerminalTestEnv(env_config(tokenizer_name=None), [server("http://127.0.0.1:9", "vllm")])


@pytest.mark.parametrize("value", [None, "none", "None", "null", ""])
def test_no_tokenizer_is_spelt_several_ways(value: str | None) -> None:
    assert HermesAgentEnvConfig(tokenizer_name=value).tokenizer_name is None
    assert HermesAgentEnvConfig().tokenizer_name is None
