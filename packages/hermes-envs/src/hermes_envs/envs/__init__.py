"""Ready-made environments."""

from hermes_envs.envs.swe import HermesSweEnv, HermesSweEnvConfig, swe_oracle
from hermes_envs.envs.terminal_test import TASKS, TerminalTestEnv, terminal_test_oracle

__all__ = [
    "TASKS",
    "HermesSweEnv",
    "HermesSweEnvConfig",
    "TerminalTestEnv",
    "swe_oracle",
    "terminal_test_oracle",
]
