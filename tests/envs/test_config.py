"""HermesAgentEnvConfig: the reference's fields and defaults, and clear start-up errors."""

from __future__ import annotations

import pytest
from atroposlib.envs.base import BaseEnvConfig, EvalHandlingEnum
from pydantic import ValidationError

from hermes_envs import HermesAgentEnvConfig, TerminalTestEnv
from hermes_envs._cli import resolve_config

REFERENCE_DEFAULTS = {
    "enabled_toolsets": None,
    "disabled_toolsets": None,
    "distribution": None,
    "max_agent_turns": 30,
    "agent_temperature": 1.0,
    "system_prompt": None,
    "terminal_backend": "local",
    "terminal_timeout": 120,
    "terminal_lifetime": 3600,
    "dataset_name": None,
    "dataset_split": "train",
    "prompt_field": "prompt",
    "tool_pool_size": 128,
    "tool_call_parser": "hermes",
    "extra_body": None,
    "eval_handling": EvalHandlingEnum.STOP_TRAIN,
}


def test_reference_fields_and_defaults_on_top_of_atropos_config() -> None:
    config = HermesAgentEnvConfig()
    assert isinstance(config, BaseEnvConfig)
    for name, default in REFERENCE_DEFAULTS.items():
        assert getattr(config, name) == default, name
    assert config.use_wandb is False  # off unless asked
    assert config.group_size == BaseEnvConfig().group_size


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("terminal_backend", "kubernetes", ["terminal_backend", "kubernetes", "docker", "local"]),
        ("tool_call_parser", "nope", ["tool_call_parser", "nope", "hermes", "qwen3_coder"]),
        ("enabled_toolsets", ["terminal", "shell"], ["enabled_toolsets", "shell", "file"]),
        ("disabled_toolsets", ["gpu"], ["disabled_toolsets", "gpu", "terminal"]),
        ("terminal_timeout", -5, ["terminal_timeout", "-5", "positive"]),
        ("terminal_lifetime", 0, ["terminal_lifetime", "positive"]),
        ("max_agent_turns", 0, ["max_agent_turns", "positive"]),
        ("agent_temperature", 3.0, ["agent_temperature", "between 0 and 2"]),
        ("infra_retries", -1, ["infra_retries", "0 or more"]),
    ],
)
def test_a_wrong_value_names_the_field_and_what_is_allowed(
    field: str, value: object, named: list[str]
) -> None:
    with pytest.raises(ValidationError) as caught:
        HermesAgentEnvConfig(**{field: value})
    text = str(caught.value)
    for word in named:
        assert word in text, (word, text)


def test_toolsets_from_text_as_the_cli_gives_them() -> None:
    assert HermesAgentEnvConfig(enabled_toolsets="terminal,file").enabled_toolsets == [
        "terminal",
        "file",
    ]
    assert HermesAgentEnvConfig(enabled_toolsets='["web"]').enabled_toolsets == ["web"]
    assert HermesAgentEnvConfig(enabled_toolsets="None").enabled_toolsets is None
    assert HermesAgentEnvConfig(extra_body='{"provider": {"order": ["x"]}}').extra_body == {
        "provider": {"order": ["x"]}
    }


def test_min_rollouts_per_group_must_fit_the_group() -> None:
    assert HermesAgentEnvConfig(group_size=4).group_minimum == 4
    assert HermesAgentEnvConfig(group_size=4, min_rollouts_per_group=2).group_minimum == 2
    with pytest.raises(ValidationError, match="between 1 and group_size"):
        HermesAgentEnvConfig(group_size=4, min_rollouts_per_group=5)


def test_dataset_split_and_prompt_field_are_kept_and_set_from_the_command_line() -> None:
    config = HermesAgentEnvConfig(dataset_split="validation", prompt_field="question")
    assert (config.dataset_split, config.prompt_field) == ("validation", "question")
    resolved = resolve_config(
        TerminalTestEnv, "evaluate", ["--env.dataset_split", "test", "--env.prompt_field=task"]
    )
    assert (resolved.env.dataset_split, resolved.env.prompt_field) == ("test", "task")
