"""An API key given in the config (``--openai.api_key``) never appears in the run's output,
its files, or a sandbox's environment (the model runs ``env`` there and we look)."""

from __future__ import annotations

import os
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

from hermes_envs.envs.terminal_test import TASKS, task_prompt
from hermes_loop.server import Call, ModelRequest, ModelServerThread, Policy, Turn

RUNNER = "from hermes_envs import TerminalTestEnv\nTerminalTestEnv.cli()\n"


def _nosy(request: ModelRequest) -> Turn:
    """Prints the sandbox's environment first, then writes the task's file, then stops."""
    done = sum(1 for m in request.messages if m.get("role") == "tool")
    if done == 0:
        return Turn(tool_calls=[Call("terminal", {"command": "env; cat /proc/self/environ"})])
    if done == 1:
        prompt = request.messages[-3]["content"]
        task = next(t for t in TASKS if task_prompt(t) == prompt)
        command = f"mkdir -p $(dirname {task['path']}) && printf %s {shlex.quote(task['content'])}"
        return Turn(tool_calls=[Call("terminal", {"command": f"{command} > {task['path']}"})])
    return Turn("Done.")


def _files_text(root: Path) -> str:
    return "\n".join(
        path.read_bytes().decode("utf-8", "replace") for path in root.rglob("*") if path.is_file()
    )


def test_a_config_key_appears_in_no_output_file_or_sandbox(tmp_path: Path) -> None:
    key = f"sk-hermes-test-{secrets.token_hex(12)}"
    script = tmp_path / "terminal_test_env.py"
    script.write_text(RUNNER)
    child_env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    child_env.pop("OPENAI_API_KEY", None)
    outputs = []
    with ModelServerThread(Policy(_nosy, name="terminal-test")) as model:
        for command, where in (
            ("process", ["--env.data_path_to_save_groups", str(tmp_path / "groups.jsonl")]),
            ("evaluate", ["--env.data_dir_to_save_evals", str(tmp_path / "eval")]),
        ):
            done = subprocess.run(
                [
                    sys.executable,
                    str(script),
                    command,
                    "--openai.base_url",
                    model.base_url,
                    "--openai.api_key",
                    key,
                    "--env.total_steps",
                    "2",
                    *where,
                ],
                cwd=tmp_path,
                env=child_env,
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            outputs += [done.stdout, done.stderr]
    written = _files_text(tmp_path)
    assert "PWD=" in written  # the sandbox's environment was written out: the check is real
    assert '"scores": [1.0' in written.replace("\n", "")  # and the tasks were still solved
    for text in [*outputs, written]:
        assert key not in text
