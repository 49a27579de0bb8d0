"""Helpers of the hermes-envs tests: envs built on the scripted model server."""

from __future__ import annotations

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


def server(url: str, server_type: str = "openai") -> APIServerConfig:
    """A server config for the model server at ``url`` (``base_url`` or root)."""
    return APIServerConfig(
        base_url=url, model_name="scripted", server_type=server_type, health_check=False
    )
