"""Ready-made environments.

Each is imported on first use, so that ``python -m hermes_envs.envs.terminal_test`` runs
its module once, as ``__main__`` (an eager import here would load it a second time under
its own name first, which runpy warns about).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_loop import lazy_exports

if TYPE_CHECKING:
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

#: Names imported on first access, and the module that holds each.
_LAZY = {
    "TASKS": "hermes_envs.envs.terminal_test",
    "HermesSweEnv": "hermes_envs.envs.swe",
    "HermesSweEnvConfig": "hermes_envs.envs.swe",
    "TerminalTestEnv": "hermes_envs.envs.terminal_test",
    "swe_oracle": "hermes_envs.envs.swe",
    "terminal_test_oracle": "hermes_envs.envs.terminal_test",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
