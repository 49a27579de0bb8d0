"""hermes-envs: Atropos environments for tool-using agents.

Subclass ``HermesAgentBaseEnv``, implement ``setup``, ``get_next_item``,
``format_prompt``, ``compute_reward(item, result, ctx)`` and ``evaluate``, and get the
``serve``, ``process`` and ``evaluate`` commands. The command line's parts
(``run_cli``, ``run_command``, ``resolve_config``, ``parse_flags``, ``check_value``,
``describe_options``) and the dataset reader (``load_items``) are exported for the
commands built on them (``hermes-bench``).

The environment classes and their config are imported on first use: they extend
Atropos' ``BaseEnv``, whose module loads ``transformers`` (over a second, and a banner
on stderr) that importing the package, its errors or its command-line parser never needs;
so are the rollout records (they pull in the agent loop and the sandboxes), which the
token worker process never needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_envs._errors import (
    CliError,
    DatasetLoadError,
    EnvSetupError,
    GroupFileExistsError,
    HermesEnvsError,
    RewardFunctionError,
    RunAbortedError,
    TokenizerLoadError,
)
from hermes_envs._stats import RunStats
from hermes_envs.scoring._tokens import TokenizedRollout
from hermes_loop import lazy_exports

if TYPE_CHECKING:
    from hermes_envs._agent_run import (
        SANDBOX_FAILURES,
        AgentRun,
        InfraFailure,
        infra_stage,
        run_agent,
    )
    from hermes_envs._base_env import HermesAgentBaseEnv
    from hermes_envs._cli import resolve_config, run_cli, run_command
    from hermes_envs._config import local_endpoint
    from hermes_envs._config_layers import (
        OPENAI_ALIASES,
        check_value,
        flag_section,
        one_line,
        parse_flags,
        read_config_file,
        read_yaml,
        yaml_section,
    )
    from hermes_envs._dataset import FILE_FORMATS, load_items
    from hermes_envs._env_config import HermesAgentEnvConfig, eval_only_settings
    from hermes_envs._eval_env import HermesAgentEvalEnv
    from hermes_envs._files import write_whole
    from hermes_envs._options_help import describe_options
    from hermes_envs._preflight import check_limits, check_model_endpoint, check_writable
    from hermes_envs._record_files import cut_strings
    from hermes_envs._rollout import RolloutOutcome
    from hermes_envs._toolsets import AGENT_TOOLSETS
    from hermes_envs.envs.swe import HermesSweEnv, HermesSweEnvConfig, swe_oracle
    from hermes_envs.envs.terminal_test import TerminalTestEnv, terminal_test_oracle
    from hermes_envs.launcher import quiet_libraries, reader_gone

__version__ = "0.1.0"

__all__ = [
    "AGENT_TOOLSETS",
    "FILE_FORMATS",
    "OPENAI_ALIASES",
    "SANDBOX_FAILURES",
    "AgentRun",
    "CliError",
    "DatasetLoadError",
    "EnvSetupError",
    "GroupFileExistsError",
    "HermesAgentBaseEnv",
    "HermesAgentEnvConfig",
    "HermesAgentEvalEnv",
    "HermesEnvsError",
    "HermesSweEnv",
    "HermesSweEnvConfig",
    "InfraFailure",
    "RewardFunctionError",
    "RolloutOutcome",
    "RunAbortedError",
    "RunStats",
    "TerminalTestEnv",
    "TokenizedRollout",
    "TokenizerLoadError",
    "__version__",
    "check_limits",
    "check_model_endpoint",
    "check_value",
    "check_writable",
    "cut_strings",
    "describe_options",
    "eval_only_settings",
    "flag_section",
    "infra_stage",
    "load_items",
    "local_endpoint",
    "one_line",
    "parse_flags",
    "quiet_libraries",
    "read_config_file",
    "read_yaml",
    "reader_gone",
    "resolve_config",
    "run_agent",
    "run_cli",
    "run_command",
    "swe_oracle",
    "terminal_test_oracle",
    "write_whole",
    "yaml_section",
]

#: Names imported on first access, and the module that holds each.
_LAZY = {
    "reader_gone": "hermes_envs.launcher",
    "cut_strings": "hermes_envs._record_files",
    "one_line": "hermes_envs._config_layers",
    "flag_section": "hermes_envs._config_layers",
    "read_config_file": "hermes_envs._config_layers",
    "read_yaml": "hermes_envs._config_layers",
    "yaml_section": "hermes_envs._config_layers",
    "check_limits": "hermes_envs._preflight",
    "check_model_endpoint": "hermes_envs._preflight",
    "check_writable": "hermes_envs._preflight",
    "quiet_libraries": "hermes_envs.launcher",
    "write_whole": "hermes_envs._files",
    "HermesAgentEvalEnv": "hermes_envs._eval_env",
    "AGENT_TOOLSETS": "hermes_envs._toolsets",
    "InfraFailure": "hermes_envs._agent_run",
    "SANDBOX_FAILURES": "hermes_envs._agent_run",
    "AgentRun": "hermes_envs._agent_run",
    "infra_stage": "hermes_envs._agent_run",
    "run_agent": "hermes_envs._agent_run",
    "RolloutOutcome": "hermes_envs._rollout",
    "OPENAI_ALIASES": "hermes_envs._config_layers",
    "check_value": "hermes_envs._config_layers",
    "parse_flags": "hermes_envs._config_layers",
    "resolve_config": "hermes_envs._cli",
    "run_cli": "hermes_envs._cli",
    "run_command": "hermes_envs._cli",
    "local_endpoint": "hermes_envs._config",
    "FILE_FORMATS": "hermes_envs._dataset",
    "load_items": "hermes_envs._dataset",
    "describe_options": "hermes_envs._options_help",
    "HermesAgentBaseEnv": "hermes_envs._base_env",
    "HermesAgentEnvConfig": "hermes_envs._env_config",
    "eval_only_settings": "hermes_envs._env_config",
    "HermesSweEnv": "hermes_envs.envs.swe",
    "HermesSweEnvConfig": "hermes_envs.envs.swe",
    "swe_oracle": "hermes_envs.envs.swe",
    "TerminalTestEnv": "hermes_envs.envs.terminal_test",
    "terminal_test_oracle": "hermes_envs.envs.terminal_test",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
