"""Ready-made environments.

Each is imported on first use, so that ``python -m hermes_envs.envs.terminal_test`` runs
its module once, as ``__main__`` (an eager import here would load it a second time under
its own name first, which runpy warns about).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
