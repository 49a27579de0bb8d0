"""An environment's settings: ``HermesAgentEnvConfig``, ``AGENT_TOOLSETS``, ``local_endpoint``.

``HermesAgentEnvConfig`` is defined in ``hermes_envs._env_config`` and imported from
there on first use: it extends Atropos' ``BaseEnvConfig``, whose module loads
``transformers`` (over a second, and a banner on stderr), which code that only parses a
command line or names a toolset never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from atroposlib.envs.server_handling.server_baseline import APIServerConfig

from hermes_envs._toolsets import AGENT_TOOLSETS

if TYPE_CHECKING:
    from hermes_envs._env_config import HermesAgentEnvConfig

__all__ = ["AGENT_TOOLSETS", "HermesAgentEnvConfig", "local_endpoint"]


def __getattr__(name: str) -> Any:
    if name == "HermesAgentEnvConfig":
        return importlib.import_module("hermes_envs._env_config").HermesAgentEnvConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def local_endpoint(model_name: str) -> APIServerConfig:
    """A chat-completions endpoint on ``127.0.0.1:8000`` serving ``model_name`` (the
    ready-made environments' default; ``--openai.base_url`` points elsewhere)."""
    return APIServerConfig(
        base_url="http://127.0.0.1:8000/v1",
        model_name=model_name,
        server_type="openai",
        health_check=False,
    )
