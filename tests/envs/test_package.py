"""The public names of hermes_envs, and what importing the package costs."""

from __future__ import annotations

import subprocess
import sys

import pytest

import hermes_envs
from hermes_envs._base_env import HermesAgentBaseEnv
from hermes_envs._env_config import HermesAgentEnvConfig
from hermes_envs.envs.terminal_test import TerminalTestEnv


def test_public_names_are_pinned() -> None:
    assert hermes_envs.__all__ == [
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
    for name in hermes_envs.__all__:
        assert getattr(hermes_envs, name) is not None
    assert set(hermes_envs.__all__) <= set(dir(hermes_envs))


def test_names_imported_on_first_use_are_the_defining_modules_own() -> None:
    from hermes_envs import HermesAgentBaseEnv as Base
    from hermes_envs import HermesAgentEnvConfig as Config
    from hermes_envs._config import HermesAgentEnvConfig as ConfigFromConfig

    assert Base is HermesAgentBaseEnv
    assert Config is HermesAgentEnvConfig
    assert ConfigFromConfig is HermesAgentEnvConfig
    assert hermes_envs.TerminalTestEnv is TerminalTestEnv


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchEnv'"):
        _ = hermes_envs.NoSuchEnv
    with pytest.raises(ImportError, match="NoSuchConfig"):
        exec("from hermes_envs._config import NoSuchConfig", {})


#: Modules the command lines (``python env.py ...``, ``hermes-bench``) import to parse
#: options and answer ``--help``: none of them may load transformers (over a second,
#: and a banner on stderr that would break one-line answers).
LIGHT_MODULES = ("hermes_envs", "hermes_envs._cli", "hermes_envs._config", "hermes_benchmarks.cli")


@pytest.mark.parametrize("module", LIGHT_MODULES)
def test_importing_does_not_load_transformers(module: str) -> None:
    code = f"import sys, {module}; print('transformers' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    assert done.stderr == ""


def test_the_reference_import_loads_the_classes_in_a_fresh_process() -> None:
    code = (
        "import sys\n"
        "from hermes_envs import HermesAgentBaseEnv, HermesAgentEnvConfig\n"
        "assert HermesAgentEnvConfig().use_wandb is False\n"
        "print(HermesAgentBaseEnv.__module__, 'transformers' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["hermes_envs._base_env", "True"]


def test_running_an_env_module_warns_nothing() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "hermes_envs.envs.terminal_test", "process", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "RuntimeWarning" not in done.stderr  # runpy's: the module imported twice
    assert done.stdout.startswith("usage:")
