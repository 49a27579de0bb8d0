"""``hermes-bench`` checks before the first trial (issue 23.7): the backend accepts the
tasks' CPUs and memory, the output folder is writable, the hermes agent's endpoint
answers and serves its model. Each stops in one line naming the option, before any trial
(no results file)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_benchmarks._samples import sample_tasks_dir
from hermes_loop.server import ModelRequest, ModelServerThread, Policy

from .docker_support import run_bench


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    with ModelServerThread(Policy(lambda request: "done", name="served-model")) as model:
        yield model.base_url


def _one_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return errors[0]


def _evaluate(out: Path, base_url: str, *more: str) -> subprocess.CompletedProcess[str]:
    """``hermes-bench terminalbench2 evaluate`` of the sample tasks into ``out``."""
    where = ["--env.tasks_dir", str(sample_tasks_dir()), "--env.output_dir", str(out)]
    return run_bench("terminalbench2", "evaluate", *where, "--openai.base_url", base_url, *more)


def _refusing_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_backend_that_cannot_honour_the_tasks_limits_stops_before_any_trial(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    done = run_bench(
        "terminalbench2",
        "check",
        "--env.tasks_dir",
        str(sample_tasks_dir()),
        "--env.terminal_backend",
        "local",
        "--env.output_dir",
        str(out),
    )
    error = _one_error(done)
    assert "the local backend cannot run task 'count-errors' (cpus 1.0, memory_mb 512)" in error
    assert "pass --env.terminal_backend docker" in error
    assert not (out / "results.jsonl").exists()


def test_an_output_folder_that_cannot_be_made_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = run_bench(
        "terminalbench2",
        "check",
        "--env.tasks_dir",
        str(sample_tasks_dir()),
        "--env.output_dir",
        str(blocker / "run"),
    )
    error = _one_error(done)
    assert f"output folder {blocker / 'run'} cannot be written" in error
    assert "--env.output_dir" in error


def test_an_output_folder_that_cannot_be_written_is_said_once_before_any_trial(
    tmp_path: Path,
) -> None:
    asked: list[ModelRequest] = []

    def answer(request: ModelRequest) -> str:
        asked.append(request)
        return "done"

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with ModelServerThread(Policy(answer, name="served-model")) as model:
        done = _evaluate(blocker / "run", model.base_url, "--openai.model_name", "served-model")
    assert (done.returncode, done.stderr.splitlines()) == (
        1,
        [
            f"error: output folder {blocker / 'run'} cannot be written (Not a directory): "
            "make it writable or pass --env.output_dir another folder"
        ],
    )
    assert asked == []  # no trial asked the model anything


def test_an_endpoint_that_does_not_answer_stops_before_any_trial(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_refusing_port()}/v1"
    out = tmp_path / "run"
    done = _evaluate(out, url)
    error = _one_error(done)
    assert f"the model endpoint {url} does not answer" in error
    assert "--openai.base_url" in error
    assert not (out / "results.jsonl").exists()


def test_a_model_the_endpoint_does_not_serve_stops_before_any_trial(
    tmp_path: Path, served_url: str
) -> None:
    out = tmp_path / "run"
    done = _evaluate(out, served_url, "--openai.model_name", "other-model")
    error = _one_error(done)
    assert "does not serve the model 'other-model' (it serves: served-model)" in error
    assert "--openai.model" in error
    assert not (out / "results.jsonl").exists()


def test_no_transformers_banner_on_a_command_that_imports_atropos() -> None:
    # yc-bench's options come from its Atropos environment, whose import loads transformers.
    done = run_bench("yc-bench", "evaluate", "--help")
    assert done.returncode == 0, done.stderr
    assert "--env.presets" in done.stdout
    assert "None of PyTorch" not in done.stderr


@pytest.mark.parametrize("args", [["--help"], ["evaluate", "--help"], ["check", "-h"]])
def test_yc_bench_help_lists_its_own_commands_and_options(args: list[str]) -> None:
    # yc-bench has evaluate and check only (not hermes-envs' serve and process).
    done = run_bench("yc-bench", *args)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("usage: hermes-bench yc-bench {evaluate|check} "), first
    commands = done.stdout.split("env options")[0]
    assert "  evaluate  " in commands
    assert "  check  " in commands
    assert "serve" not in commands
    assert "process" not in commands
    assert "--env.presets" in done.stdout
    assert "--openai.model_name" in done.stdout
