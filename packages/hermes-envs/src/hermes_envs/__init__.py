"""hermes-envs: Atropos environments for tool-using agents.

Subclass ``HermesAgentBaseEnv``, implement ``setup``, ``get_next_item``,
``format_prompt``, ``compute_reward(item, result, ctx)`` and ``evaluate``, and get the
``serve``, ``process`` and ``evaluate`` commands.
"""

from __future__ import annotations

from hermes_envs.base_env import HermesAgentBaseEnv, RunStats
from hermes_envs.config import AGENT_TOOLSETS, HermesAgentEnvConfig
from hermes_envs.envs.swe import HermesSweEnv, HermesSweEnvConfig, swe_oracle
from hermes_envs.envs.terminal_test import TerminalTestEnv, terminal_test_oracle
from hermes_envs.errors import DatasetLoadError, EnvSetupError, HermesEnvsError, RunAbortedError
from hermes_envs.rollout import InfraFailure, RolloutOutcome
from hermes_envs.scoring.tokens import TokenizedRollout
from hermes_envs.tokenizer import TokenizerLoadError

__version__ = "0.1.0"

__all__ = [
    "AGENT_TOOLSETS",
    "DatasetLoadError",
    "EnvSetupError",
    "HermesAgentBaseEnv",
    "HermesAgentEnvConfig",
    "HermesEnvsError",
    "HermesSweEnv",
    "HermesSweEnvConfig",
    "InfraFailure",
    "RolloutOutcome",
    "RunAbortedError",
    "RunStats",
    "TerminalTestEnv",
    "TokenizedRollout",
    "TokenizerLoadError",
    "__version__",
    "swe_oracle",
    "terminal_test_oracle",
]
