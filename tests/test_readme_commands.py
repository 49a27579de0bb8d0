"""The root README's commands, as they are written: the two set-up commands exist where
the README says (``./dev`` jobs, ``.ci/run``; ``./dev demo`` itself runs in
test_quickstart), the envs ``process`` block runs (against a scripted model server on
127.0.0.1 and the shipped tokenizer, given after the README's options, which they
override), ``hermes-bench samples`` and ``list`` run, and every option the README's
inline ``hermes-bench`` commands use is one their ``--help`` lists."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_envs import terminal_test_oracle
from hermes_envs.envs.terminal_test import TASKS, shipped_tokenizer_dir
from hermes_loop.server import ModelServerThread, Policy

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BIN = Path(sys.executable).parent
BANNER = "None of PyTorch, TensorFlow >= 2.0, or Flax have been found"


def _bash_blocks() -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", README, re.S | re.M)


def _inline(prefix: str) -> list[str]:
    """The README's inline code spans that start with ``prefix`` (joined over lines)."""
    prose = re.sub(r"^```.*?^```", "", README, flags=re.S | re.M)
    spans = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]
    return [span for span in spans if span.startswith(prefix)]


def _run(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, "WANDB_MODE": "disabled", **env},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_the_two_set_up_commands_are_jobs_of_dev_and_ci_runs_the_test_one() -> None:
    assert _bash_blocks()[0].split("#")[0].strip() == "./dev demo"
    jobs = re.findall(r"^    ([a-z]+)\)$", (ROOT / "dev").read_text(), re.M)
    assert {"demo", "test"} <= set(jobs)
    assert re.search(r"^\./dev test$", (ROOT / ".ci" / "run").read_text(), re.M)
    demo = re.search(r"demo\)\n(.*?);;", (ROOT / "dev").read_text(), re.S)
    assert demo is not None
    assert "examples/quickstart.py" in demo.group(1)


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    # The README names a hosted endpoint and its model: the model name is served here.
    block = next(b for b in _bash_blocks() if "hermes_envs.envs.terminal_test" in b)
    model = re.search(r"--openai.model_name (\S+)", block)
    assert model is not None
    with ModelServerThread(Policy(terminal_test_oracle, name=model.group(1))) as server:
        yield server.base_url


def test_the_envs_process_command_runs_as_written(tmp_path: Path, model_url: str) -> None:
    block = next(b for b in _bash_blocks() if "hermes_envs.envs.terminal_test" in b)
    lines = block.replace("\\\n", " ").splitlines()
    export = next(line for line in lines if line.startswith("export OPENAI_API_KEY="))
    command = shlex.split(next(line for line in lines if line.startswith("./dev uv run")))
    assert command[:3] == ["./dev", "uv", "run"]  # the venv's own script, run directly
    argv = [str(BIN / command[3]), *command[4:]]
    argv += ["--openai.base_url", model_url, "--env.tokenizer_name", shipped_tokenizer_dir()]
    assert export.split("#")[0].strip() == "export OPENAI_API_KEY=..."
    done = _run(argv, tmp_path, OPENAI_API_KEY="a-key", HF_HUB_OFFLINE="1")
    assert done.returncode == 0, done.stderr[-3000:]
    out = tmp_path / "out" / "terminal-test.jsonl"  # the README's own path
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(groups) == len(TASKS)
    assert all(score == 1.0 for group in groups for score in group["scores"])
    assert BANNER not in done.stderr
    assert "a-key" not in out.read_text()


def test_hermes_bench_samples_and_list_run_as_written(tmp_path: Path) -> None:
    assert "hermes-bench samples" in " ".join(README.split())
    samples = _run([str(BIN / "hermes-bench"), "samples"], tmp_path)
    assert samples.returncode == 0, samples.stderr
    folder = Path(samples.stdout.strip())
    (listed,) = _inline("hermes-bench terminalbench2 list")
    argv = shlex.split(listed.replace("DIR", str(folder)))
    done = _run([str(BIN / argv[0]), *argv[1:]], tmp_path)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()
    assert rows[0].split("\t")[0] == "task"
    assert sorted(row.split("\t")[0] for row in rows[1:]) == sorted(
        p.name for p in folder.iterdir() if (p / "task.toml").exists()
    )


def test_every_option_of_the_inline_bench_commands_is_one_their_help_lists(
    tmp_path: Path,
) -> None:
    commands = [c for c in _inline("hermes-bench ") if re.match(r"hermes-bench [a-z0-9-]+ ", c)]
    checked = 0
    for command in commands:
        words = command.split()
        if (
            len(words) < 3
            or words[1] in ("view", "samples")
            or words[2]
            not in (
                "evaluate",
                "check",
                "list",
                "rescore",
            )
        ):
            continue
        options = {w.split("=")[0] for w in words if w.startswith("--")}
        done = _run([str(BIN / "hermes-bench"), words[1], words[2], "--help"], tmp_path)
        assert done.returncode == 0, (command, done.stderr)
        for option in options:
            assert f"{option} " in done.stdout, (command, option)
        checked += 1
    assert checked >= 4  # evaluate, rescore, yc-bench evaluate, list


def _bench_lines(readme: str) -> list[str]:
    """The ``hermes-bench`` command lines of a README's bash blocks (continuations joined,
    comments dropped)."""
    lines = []
    for block in re.findall(r"^```bash\n(.*?)^```", readme, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            command = line.split("  #")[0].strip()
            if command.startswith("hermes-bench "):
                lines.append(" ".join(command.split()))
    return lines


def test_every_option_of_the_benchmarks_readme_commands_is_one_their_help_lists(
    tmp_path: Path,
) -> None:
    readme = (ROOT / "packages" / "hermes-benchmarks" / "README.md").read_text()
    lines = _bench_lines(readme)
    assert len(lines) >= 6, lines
    helps: dict[tuple[str, str], str] = {}
    for line in lines:
        words = line.split()
        suite, command = words[1], words[2]
        if (suite, command) not in helps:
            done = _run([str(BIN / "hermes-bench"), suite, command, "--help"], tmp_path)
            assert done.returncode == 0, (line, done.stderr)
            helps[(suite, command)] = done.stdout
        for word in words[3:]:
            option = word.strip("[]").split("=")[0]
            if option.startswith("--") and option != "--config":
                assert f"{option} " in helps[(suite, command)], (line, option)
