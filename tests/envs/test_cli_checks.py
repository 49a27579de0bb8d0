"""Checks before spending (issue 23.7) and a quiet start (23.10) of the env commands:
``hermes-envs run MODULE COMMAND`` in a child process against real servers on 127.0.0.1.
Each check stops the command in one line naming the option to change, before any
rollout and with nothing written."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from hermes_envs import terminal_test_oracle
from hermes_envs._errors import EnvSetupError
from hermes_envs._preflight import check_model_endpoint, check_writable
from hermes_loop.server import ModelServerThread, Policy

from .support import TOKENIZER

ENV = "hermes_envs.envs.terminal_test"
BANNER = "None of PyTorch, TensorFlow >= 2.0, or Flax have been found"


@pytest.fixture(scope="module")
def oracle_url() -> Iterator[str]:
    with ModelServerThread(Policy(terminal_test_oracle, name="terminal-test")) as model:
        yield model.base_url


def _refusing_port() -> int:
    """A port on 127.0.0.1 where nothing listens (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _hermes_envs(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {**os.environ, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "hermes_envs.launcher", *args],
        cwd=tmp_path,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _one_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return errors[0]


def _process(tmp_path: Path, *args: str) -> list[str]:
    out = tmp_path / "groups.jsonl"
    return [
        "run",
        ENV,
        "process",
        "--env.tokenizer_name",
        TOKENIZER,
        "--env.data_path_to_save_groups",
        str(out),
        "--env.total_steps",
        "1",
        *args,
    ]


def test_a_command_run_through_hermes_envs_prints_no_banner(
    tmp_path: Path, oracle_url: str
) -> None:
    out = tmp_path / "groups.jsonl"
    done = _hermes_envs(tmp_path, *_process(tmp_path, "--openai.base_url", oracle_url))
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(out.read_text().splitlines()) == 1
    assert BANNER not in done.stderr + done.stdout
    # The same module run with python -m prints it (what the launcher exists for).
    plain = subprocess.run(
        [sys.executable, "-m", ENV, "--help"], capture_output=True, text=True, timeout=120
    )
    assert BANNER in plain.stderr


def test_an_endpoint_that_does_not_answer_stops_before_any_rollout(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_refusing_port()}/v1"
    error = _one_error(_hermes_envs(tmp_path, *_process(tmp_path, "--openai.base_url", url)))
    assert f"the model endpoint {url} does not answer" in error
    assert "Connection refused" in error
    assert "--openai.base_url" in error
    assert not (tmp_path / "groups.jsonl").exists() or not (tmp_path / "groups.jsonl").read_text()


@pytest.mark.parametrize("command", ["evaluate", "process"])
def test_a_failed_check_is_the_only_line_no_progress_bar_above_it(
    tmp_path: Path, command: str
) -> None:
    url = f"http://127.0.0.1:{_refusing_port()}/v1"
    args = _process(tmp_path, "--openai.base_url", url)
    if command == "evaluate":
        args = ["run", ENV, "evaluate", "--openai.base_url", url]
    done = _hermes_envs(tmp_path, *args)
    error = _one_error(done)
    assert f"the model endpoint {url} does not answer" in error
    assert done.stderr.strip().splitlines() == [error]  # the bar shows once checks pass


def test_a_model_the_endpoint_does_not_serve_is_named_with_the_served_ones(
    tmp_path: Path, oracle_url: str
) -> None:
    done = _hermes_envs(
        tmp_path,
        *_process(tmp_path, "--openai.base_url", oracle_url, "--openai.model", "other-model"),
    )
    error = _one_error(done)
    assert "does not serve the model 'other-model' (it serves: terminal-test)" in error
    assert "--openai.model" in error


def test_an_unreachable_hub_fails_at_once_naming_offline_mode(tmp_path: Path) -> None:
    hub = f"http://127.0.0.1:{_refusing_port()}"
    done = _hermes_envs(
        tmp_path,
        "run",
        ENV,
        "process",
        "--env.tokenizer_name",
        "some-org/some-tokenizer",
        env={"HF_ENDPOINT": hub, "HF_HUB_OFFLINE": "0"},
    )
    error = _one_error(done)
    assert f"cannot reach the Hugging Face hub at {hub}" in error
    assert "HF_HUB_OFFLINE" in error
    assert "--env.tokenizer_name" in error
    assert "retry" not in done.stderr.lower()
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_an_unreachable_hub_for_a_dataset_fails_at_once_naming_offline_mode(
    tmp_path: Path,
) -> None:
    # The same hub check as the tokenizer's, for a dataset an environment loads at setup.
    hub = f"http://127.0.0.1:{_refusing_port()}"
    done = _hermes_envs(
        tmp_path,
        "run",
        "hermes_envs.envs.swe",
        "evaluate",
        "--env.dataset_name",
        "some-org/some-dataset",
        "--env.tokenizer_name",
        "none",
        "--openai.base_url",
        f"http://127.0.0.1:{_refusing_port()}/v1",
        env={"HF_ENDPOINT": hub, "HF_HUB_OFFLINE": "0"},
    )
    error = _one_error(done)
    assert f"cannot reach the Hugging Face hub at {hub} for the dataset" in error
    assert "'some-org/some-dataset'" in error
    assert "set HF_HUB_OFFLINE=1 to use the local cache" in error
    assert "set --env.dataset_name to a local JSONL/parquet file" in error
    assert "retry" not in done.stderr.lower()


def test_evaluate_into_a_folder_it_cannot_make_stops_naming_the_option(
    tmp_path: Path, oracle_url: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = _hermes_envs(
        tmp_path,
        "run",
        ENV,
        "evaluate",
        "--openai.base_url",
        oracle_url,
        "--env.data_dir_to_save_evals",
        str(blocker / "evals"),
    )
    error = _one_error(done)
    assert f"output folder {blocker / 'evals'} cannot be written" in error
    assert "--env.data_dir_to_save_evals" in error


@pytest.mark.parametrize(
    ("option", "hint"),
    [("--x.out", "make it writable or pass --x.out another folder"), (None, "make it writable")],
)
def test_an_unwritable_folder_names_the_option_that_chooses_another(
    tmp_path: Path, option: str | None, hint: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(EnvSetupError) as caught:
        check_writable(blocker / "out", option)
    assert str(caught.value) == (
        f"output folder {blocker / 'out'} cannot be written (Not a directory): {hint}"
    )


def test_the_launcher_refuses_a_module_without_an_environment(tmp_path: Path) -> None:
    done = _hermes_envs(tmp_path, "run", "hermes_envs._errors", "process")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: hermes_envs._errors defines 0 environment classes (none): "
        "pass hermes_envs._errors:ClassName"
    )


class _Answer(BaseHTTPRequestHandler):
    """``GET /v1/models`` with the status and body the server was made with."""

    def do_GET(self) -> None:
        status, body = self.server.answer  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def models_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _check(server: ThreadingHTTPServer, status: int, body: object, model: str) -> None:
    server.answer = (status, body)  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    asyncio.run(check_model_endpoint(url, model, "secret-key"))


LLAMA_CPP = {"object": "list", "data": [{"id": "gemma.gguf", "owned_by": "llamacpp"}]}
VLLM = {"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "owned_by": "vllm"}]}
OLLAMA = {"object": "list", "data": [{"id": "llama3:latest", "owned_by": "library"}]}


@pytest.mark.parametrize(
    ("status", "body", "model"),
    [
        (200, VLLM, "Qwen/Qwen3-8B"),
        (200, LLAMA_CPP, "any-name"),  # llama.cpp serves its one model under any name
        (200, OLLAMA, "llama3"),
        (404, {"error": "not found"}, "m"),  # no /v1/models route: not checked
        (200, ["not", "a", "list", "of", "models"], "m"),
    ],
)
def test_the_model_check_passes_what_the_server_would_serve(
    models_server: ThreadingHTTPServer, status: int, body: object, model: str
) -> None:
    _check(models_server, status, body, model)


@pytest.mark.parametrize(
    ("status", "body", "model", "said"),
    [
        (200, VLLM, "qwen3", "does not serve the model 'qwen3' (it serves: Qwen/Qwen3-8B)"),
        (401, {"error": "no key"}, "m", "refused the API key (HTTP 401 on /models)"),
        (503, {"error": "loading"}, "m", "answers /models with HTTP 503"),
    ],
)
def test_the_model_check_refuses_in_one_line(
    models_server: ThreadingHTTPServer, status: int, body: object, model: str, said: str
) -> None:
    with pytest.raises(EnvSetupError) as raised:
        _check(models_server, status, body, model)
    assert said in str(raised.value)
    assert "\n" not in str(raised.value)
