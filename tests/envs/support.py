"""Helpers of the hermes-envs tests: envs built on the scripted model server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from atroposlib.envs.server_handling.server_manager import APIServerConfig

from hermes_envs import HermesAgentEnvConfig, TerminalTestEnv
from hermes_envs.envs.terminal_test import shipped_tokenizer_dir

TOKENIZER = shipped_tokenizer_dir()


def env_config(**overrides: Any) -> HermesAgentEnvConfig:
    """TerminalTestEnv's config_init values with ``overrides``."""
    base, _ = TerminalTestEnv.config_init()
    values = base.model_dump()
    values.update(overrides)
    return HermesAgentEnvConfig(**values)


def process_config(out: Path, **overrides: Any) -> HermesAgentEnvConfig:
    """``env_config`` for a ``process`` run writing its groups to ``out``: messages kept,
    tied scores written, 2 groups at once (``overrides`` win)."""
    values: dict[str, Any] = {
        "data_path_to_save_groups": str(out),
        "include_messages": True,
        "ensure_scores_are_not_same": False,
        "max_num_workers_per_node": 2,
    }
    values.update(overrides)
    return env_config(**values)


def server(url: str, server_type: str = "openai") -> APIServerConfig:
    """A server config for the model server at ``url`` (``base_url`` or root)."""
    return APIServerConfig(
        base_url=url, model_name="scripted", server_type=server_type, health_check=False
    )


def child_env() -> dict[str, str]:
    """The environment of a child env process: the hub and wandb off (anything that tries
    the hub fails fast instead of retrying for ~50 s)."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}


def run_script(
    script: Path, *args: str, cwd: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """``python script *args`` in ``cwd`` with ``child_env()``; output captured as text."""
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
