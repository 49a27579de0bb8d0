"""``serve`` end to end: Atropos' run-api on loopback, TerminalTestEnv against the scripted
model server, and a trainer-side pull of a batch checked against the rollouts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from hermes_envs import terminal_test_oracle
from hermes_envs._run_api import RunApiProcess, child_environment, stop_process
from hermes_loop.server import ModelServerThread, Policy

RUNNER = "from hermes_envs import TerminalTestEnv\nTerminalTestEnv.cli()\n"


def test_a_trainer_pulls_the_groups_the_env_scored(tmp_path: Path) -> None:
    api = RunApiProcess()
    api.start()
    assert api.call("/") == {"message": "AtroposLib API"}
    env_process: subprocess.Popen[str] | None = None
    try:
        api.register_trainer(batch_size=4, checkpoint_dir=tmp_path / "ckpt", num_steps=2)
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
                    api.url,
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
                env=child_environment(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            batch = None
            deadline = time.monotonic() + 180
            while batch is None:
                assert time.monotonic() < deadline, "no batch came"
                batch = api.pull_batch()
                if batch is None:
                    time.sleep(0.5)
            stop_process(env_process)
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
            stop_process(env_process)
        api.stop()
