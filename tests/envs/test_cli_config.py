"""The command line's config: config_init < YAML < CLI, Atropos' flags, one-line errors."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from atroposlib.envs.server_handling.server_manager import APIServerConfig

from hermes_envs import CliError, TerminalTestEnv
from hermes_envs._cli import resolve_config, run_cli
from hermes_envs._config_layers import parse_flags


def test_flags_with_values_equals_and_negative_numbers() -> None:
    flags = parse_flags(
        [
            "--env.group_size",
            "4",
            "--env.max_num_workers=-1",
            "--env.total_steps",
            "-1",
            "--env.use_wandb",
            "--openai.model_name",
            "m",
        ]
    )
    assert flags == {
        "env.group_size": "4",
        "env.max_num_workers": "-1",
        "env.total_steps": "-1",
        "env.use_wandb": "true",
        "openai.model_name": "m",
    }
    with pytest.raises(CliError, match="unexpected argument 'stray'"):
        parse_flags(["stray"])


def test_cli_over_yaml_over_config_init(tmp_path: Path) -> None:
    config = tmp_path / "cfg.yaml"
    config.write_text(
        "env:\n  group_size: 3\n  max_agent_turns: 9\n  enabled_toolsets: [terminal]\n"
        "openai:\n  model_name: from-yaml\n  base_url: http://127.0.0.1:1/v1\n"
    )
    resolved = resolve_config(
        TerminalTestEnv,
        "process",
        ["--config", str(config), "--env.group_size", "2", "--openai.model_name", "from-cli"],
    )
    env = resolved.env
    assert env.group_size == 2  # CLI over YAML
    assert env.max_agent_turns == 9  # YAML over config_init (6)
    assert env.enabled_toolsets == ["terminal"]
    assert env.terminal_timeout == 30  # config_init over the class default (120)
    assert env.include_messages is True
    assert env.ensure_scores_are_not_same is False
    assert env.data_path_to_save_groups == "data/terminal-test.jsonl"
    assert env.use_wandb is False  # never forced on
    assert env.wandb_name == "terminal-test"  # serve needs one
    assert isinstance(resolved.servers, APIServerConfig)
    assert resolved.servers.model_name == "from-cli"
    assert resolved.servers.base_url == "http://127.0.0.1:1/v1"


def test_wandb_is_on_only_when_asked() -> None:
    resolved = resolve_config(TerminalTestEnv, "evaluate", ["--env.use_wandb", "true"])
    assert resolved.env.use_wandb is True
    assert resolved.env.data_dir_to_save_evals == "data/terminal-test_eval"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--env.terminal_backend", "k8s"],
            "env.terminal_backend: unknown backend 'k8s'; allowed:",
        ),
        (["--env.terminal_timeout", "-3"], "env.terminal_timeout: must be a positive"),
        (["--env.tool_call_parser", "x"], "env.tool_call_parser: unknown parser 'x'; allowed:"),
        (["--env.enabled_toolsets", "terminal,shell"], "unknown toolset 'shell'; allowed:"),
        (["--env.no_such_field", "1"], "unknown option --env.no_such_field"),
        (["--openai.nope", "1"], "unknown option --openai.nope"),
        (["--bogus", "1"], "unknown option --bogus"),
    ],
)
def test_a_bad_option_is_one_line_naming_it(args: list[str], expected: str) -> None:
    err = io.StringIO()
    status = run_cli(TerminalTestEnv, ["process", *args], out=io.StringIO(), err=err)
    assert status == 2
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1, lines
    assert expected in lines[0]


def test_unknown_command_and_help() -> None:
    err = io.StringIO()
    assert run_cli(TerminalTestEnv, ["train"], out=io.StringIO(), err=err) == 2
    assert "unknown command 'train'" in err.getvalue()
    out = io.StringIO()
    assert run_cli(TerminalTestEnv, ["process", "--help"], out=out, err=io.StringIO()) == 0
    assert "serve,process,evaluate" in out.getvalue()
    assert "terminal_backend" in out.getvalue()


def test_a_missing_config_file_is_named(tmp_path: Path) -> None:
    err = io.StringIO()
    missing = tmp_path / "nope.yaml"
    assert run_cli(TerminalTestEnv, ["process", "--config", str(missing)], err=err) == 2
    assert f"--config {missing}: cannot read it" in err.getvalue()


def test_a_bare_flag_is_true_for_yes_no_options_only() -> None:
    resolved = resolve_config(TerminalTestEnv, "process", ["--env.use_wandb", "--env.resume"])
    assert resolved.env.use_wandb is True
    # A file named "true" is never written: a path option needs its value.
    with pytest.raises(CliError, match=r"--env.data_path_to_save_groups needs a value"):
        resolve_config(TerminalTestEnv, "process", ["--env.data_path_to_save_groups"])
    with pytest.raises(CliError, match=r"--openai.base_url needs a value"):
        resolve_config(TerminalTestEnv, "process", ["--openai.base_url", "--env.group_size", "2"])


def test_openai_model_and_model_name_are_one_option(tmp_path: Path) -> None:
    resolved = resolve_config(TerminalTestEnv, "process", ["--openai.model", "from-cli"])
    assert isinstance(resolved.servers, APIServerConfig)
    assert resolved.servers.model_name == "from-cli"
    config = tmp_path / "cfg.yaml"
    config.write_text("openai:\n  model: from-yaml\n")
    resolved = resolve_config(TerminalTestEnv, "process", ["--config", str(config)])
    assert isinstance(resolved.servers, APIServerConfig)
    assert resolved.servers.model_name == "from-yaml"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("env:\n  group_sise: 3\n", "--config: unknown key env.group_sise; known env keys:"),
        ("openai:\n  modle: m\n", "--config: unknown key openai.modle; known openai keys:"),
        ("environment:\n  group_size: 3\n", "--config: unknown section 'environment'"),
    ],
)
def test_unknown_yaml_keys_are_refused(tmp_path: Path, text: str, expected: str) -> None:
    config = tmp_path / "cfg.yaml"
    config.write_text(text)
    with pytest.raises(CliError) as caught:
        resolve_config(TerminalTestEnv, "process", ["--config", str(config)])
    assert str(caught.value).startswith(expected.replace("--config", f"--config {config}"))
    assert "\n" not in str(caught.value)


def test_help_lists_every_option_with_its_type_default_and_description() -> None:
    out = io.StringIO()
    assert run_cli(TerminalTestEnv, ["evaluate", "--help"], out=out, err=io.StringIO()) == 0
    lines = out.getvalue().splitlines()
    for prefix, model in (
        ("env", TerminalTestEnv.env_config_cls),
        ("openai", APIServerConfig),
    ):
        for name, field in model.model_fields.items():
            (line,) = [x for x in lines if x.split()[:1] == [f"--{prefix}.{name}"]]
            assert "(default " in line, line
            if field.description:
                first_words = " ".join(field.description.split()[:3]).rstrip(".")
                assert first_words in line, (name, line)
    (group,) = [x for x in lines if x.split()[:1] == ["--env.group_size"]]
    assert group.split()[1] == "INT"
    (wandb,) = [x for x in lines if x.split()[:1] == ["--env.use_wandb"]]
    assert wandb.split()[1:4] == ["yes/no", "(default", "no)"]
