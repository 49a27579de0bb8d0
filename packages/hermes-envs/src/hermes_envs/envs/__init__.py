"""Ready-made environments."""

from hermes_envs.envs.terminal_test import TASKS, TerminalTestEnv, terminal_test_oracle

__all__ = ["TASKS", "TerminalTestEnv", "terminal_test_oracle"]
