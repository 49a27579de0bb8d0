"""Errors that stop a run of an environment: each message names what to change."""

from __future__ import annotations

__all__ = [
    "CliError",
    "DatasetLoadError",
    "EnvSetupError",
    "GroupFileExistsError",
    "HermesEnvsError",
    "RewardFunctionError",
    "RunAbortedError",
    "TokenizerLoadError",
]


class HermesEnvsError(RuntimeError):
    """Root of the errors a run of an environment stops with; the message says what to
    change. The command line prints it as one line and exits with status 1."""


class RunAbortedError(HermesEnvsError):
    """A run gave up: ``max_dropped_items`` items in a row failed every try for
    infrastructure reasons (an endpoint that refuses every request, a backend that never
    starts); the message quotes the last failure."""


class EnvSetupError(HermesEnvsError):
    """Something an environment needs (a dataset, a file) could not be loaded at
    ``setup()``; the message names the option to change. The command line prints it as
    one line and exits with status 1."""


class DatasetLoadError(EnvSetupError):
    """``env.dataset_name`` could not be loaded, or its rows lack a field the environment
    reads."""


class RewardFunctionError(HermesEnvsError):
    """The environment's ``compute_reward`` raised on ``max_reward_errors`` rollouts in a
    row: the run stops (the command line prints this one line; each traceback was
    logged)."""


class CliError(HermesEnvsError):
    """A bad command line or config file; the message says what to change (the command
    line prints it as one line and exits with status 2)."""


class TokenizerLoadError(HermesEnvsError):
    """The configured tokenizer could not be loaded; the message names the option to set."""


class GroupFileExistsError(HermesEnvsError, ValueError):
    """The group file holds a finished run (or groups of unknown items) and ``resume`` is
    not set; the message names the choices (a ``ValueError`` too: the environment could
    not be built)."""
