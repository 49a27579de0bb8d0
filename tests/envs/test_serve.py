"""``serve`` end to end: Atropos' run-api on loopback, TerminalTestEnv against the scripted
model server, and a trainer-side pull of a batch checked against the rollouts."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from hermes_envs import terminal_test_oracle
from hermes_loop.server import ModelServerThread, Policy

RUNNER = "from hermes_envs import TerminalTestEnv\nTerminalTestEnv.cli()\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _call(url: str, body: dict[str, Any] | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        headers={"Content-Type": "application/json"},
        method="POST" if data else "GET",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_a_trainer_pulls_the_groups_the_env_scored(tmp_path: Path) -> None:
    port = _free_port()
    api_url = f"http://127.0.0.1:{port}"
    run_api = Path(sys.executable).parent / "run-api"
    child_env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    api = subprocess.Popen(
        [str(run_api), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        env=child_env,
    )
    env_process: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert _call(f"{api_url}/") == {"message": "AtroposLib API"}
                break
            except OSError:
                assert time.monotonic() < deadline, "run-api did not start"
                time.sleep(0.2)
        _call(
            f"{api_url}/register",
            {
                "wandb_group": "g",
                "wandb_project": "p",
                "batch_size": 4,
                "max_token_len": 16384,
                "checkpoint_dir": str(tmp_path / "ckpt"),
                "save_checkpoint_interval": -1,
                "starting_step": 0,
                "num_steps": 2,
            },
        )
        script = tmp_path / "terminal_test_env.py"
        script.write_text(RUNNER)
        groups_file = tmp_path / "served.jsonl"
        with ModelServerThread(Policy(terminal_test_oracle, name="terminal-test")) as model:
            env_process = subprocess.Popen(
                [
                    sys.executable,
                    str(script),
                    "serve",
                    "--openai.base_url",
                    model.base_url,
                    "--env.rollout_server_url",
                    api_url,
                    "--env.group_size",
                    "2",
                    "--env.total_steps",
                    "1",
                    "--env.ensure_scores_are_not_same",
                    "false",
                    "--env.data_path_to_save_groups",
                    str(groups_file),
                ],
                cwd=tmp_path,
                env=child_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            batch = None
            deadline = time.monotonic() + 180
            while batch is None:
                assert time.monotonic() < deadline, "no batch came"
                batch = _call(f"{api_url}/batch").get("batch")
                if batch is None:
                    time.sleep(0.5)
            _stop(env_process)
        assert sum(len(group["tokens"]) for group in batch) == 4  # exactly batch_size
        written = [json.loads(line) for line in groups_file.read_text().splitlines()]
        by_tokens = {json.dumps(group["tokens"]): group for group in written}
        for group in batch:
            assert group["scores"] == [1.0, 1.0]
            sent = by_tokens[json.dumps(group["tokens"])]  # a group the env scored
            assert group["masks"] == sent["masks"]
            assert group["scores"] == sent["scores"]
            for tokens, masks in zip(group["tokens"], group["masks"], strict=True):
                assert len(tokens) == len(masks)
                assert any(m != -100 for m in masks)
    finally:
        if env_process is not None:
            _stop(env_process)
        _stop(api)
