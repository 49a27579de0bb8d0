"""``hermes-envs``: its subcommand table, ``--version``, and how ``run`` finds the
environment class of a module or a file."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest

from hermes_envs.envs.terminal_test import TerminalTestEnv
from hermes_envs.launcher import LaunchError, environment_class, main


def test_version_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"hermes-envs {version('hermes-envs')}\n"
    assert main([]) == 2
    assert capsys.readouterr().err.startswith("usage: hermes-envs run MODULE[:Class]")
    assert main(["train"]) == 2
    assert capsys.readouterr().err == "error: unknown command 'train'; choose run, view\n"


def test_run_finds_the_class_of_a_module_a_file_or_a_name(tmp_path: Path) -> None:
    assert environment_class("hermes_envs.envs.terminal_test") is TerminalTestEnv
    assert environment_class("hermes_envs.envs.terminal_test:TerminalTestEnv") is TerminalTestEnv
    script = tmp_path / "my_env.py"
    script.write_text(
        "from hermes_envs import TerminalTestEnv\n"
        "class MyEnv(TerminalTestEnv):\n"
        "    name = 'mine'\n"
    )
    found = environment_class(str(script))
    assert found.__name__ == "MyEnv"
    with pytest.raises(LaunchError, match="has no environment class 'Nope'"):
        environment_class("hermes_envs.envs.terminal_test:Nope")
    with pytest.raises(LaunchError, match="no such file"):
        environment_class(str(tmp_path / "missing.py"))
    with pytest.raises(LaunchError, match="no module named 'no_such_module_here'"):
        environment_class("no_such_module_here")
