"""A configured secret (an API key from a flag, the YAML or an environment variable, a
tool provider's key) appears in no file a run writes, on plain, isolated and docker
sandboxes: the model's first command greps every process's command line and environment
(which a plain sandbox can read) and prints its own environment; whatever it found is
redacted at the writers. A run holding a secret does not fall back to plain sandboxes
unless asked."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from hermes_envs._redaction import REDACTED, Redactor, configured_secrets
from hermes_envs.envs.terminal_test import TASKS, task_prompt
from hermes_loop.server import Call, ModelRequest, ModelServerThread, Policy, Turn
from tests.sandbox.providers.docker import docker_setup

RUNNER = "from hermes_envs import TerminalTestEnv\nTerminalTestEnv.cli()\n"
NOSY = (
    "for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do tr '\\0' ' ' < $f; echo; done "
    "2>/dev/null | grep -a -i -e sk-hermes -e api_key; env; cat /proc/self/environ"
)


def _nosy(request: ModelRequest) -> Turn:
    """Looks for keys everywhere it can first, then writes the task's file, then stops."""
    done = sum(1 for m in request.messages if m.get("role") == "tool")
    if done == 0:
        return Turn(tool_calls=[Call("terminal", {"command": NOSY})])
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


def _key(channel: str) -> str:
    return f"sk-hermes-{channel}-{secrets.token_hex(12)}"


def _sandbox_args(kind: str) -> list[str]:
    if kind == "plain":
        return ["--env.sandbox_options", json.dumps({"isolation": "none"})]
    if kind == "docker":
        found = docker_setup()
        if found.reason:
            pytest.skip(f"docker tests need a daemon and an image: {found.reason}")
        options = json.dumps({"image": found.image})
        return ["--env.terminal_backend", "docker", "--env.sandbox_options", options]
    return []


@pytest.mark.parametrize("kind", ["plain", "isolated", "docker"])
def test_keys_from_every_channel_appear_in_no_file_written(tmp_path: Path, kind: str) -> None:
    flag_key, env_key, tool_key, yaml_key = (_key(c) for c in ("flag", "env", "tool", "yaml"))
    script = tmp_path / "terminal_test_env.py"
    script.write_text(RUNNER)
    child_env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    child_env.update(OPENAI_API_KEY=env_key, TAVILY_API_KEY=tool_key)
    outputs = []
    with ModelServerThread(Policy(_nosy, name="terminal-test")) as model:
        (tmp_path / "run.yaml").write_text(
            json.dumps({"openai": {"base_url": model.base_url, "api_key": yaml_key}})
        )
        runs = [
            ("process", ["--env.data_path_to_save_groups", str(tmp_path / "groups.jsonl")]),
            ("evaluate", ["--env.data_dir_to_save_evals", str(tmp_path / "eval")]),
        ]
        for number, (command, where) in enumerate(runs):
            # The key of the first run comes from the YAML, of the second from a flag.
            key_args = [] if number == 0 else ["--openai.api_key", flag_key]
            done = subprocess.run(
                [
                    sys.executable,
                    str(script),
                    command,
                    "--config",
                    str(tmp_path / "run.yaml"),
                    *key_args,
                    "--env.total_steps",
                    "2",
                    *_sandbox_args(kind),
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
    (tmp_path / "run.yaml").unlink()  # the user's own file, the only one holding yaml_key
    script.unlink()
    written = _files_text(tmp_path)
    assert "PWD=" in written  # the sandbox's environment was written out: the check is real
    assert '"scores": [1.0' in written.replace("\n", "")  # and the tasks were still solved
    if kind == "plain":
        assert REDACTED in written  # a plain sandbox did read keys from /proc: redacted
    for text in [*outputs, written]:
        for key in (flag_key, env_key, tool_key, yaml_key):
            assert key not in text, key


def test_a_run_holding_a_secret_does_not_fall_back_to_plain_sandboxes(tmp_path: Path) -> None:
    script = tmp_path / "terminal_test_env.py"
    script.write_text(RUNNER)
    # No bubblewrap on this PATH: isolation "auto" would run plain commands.
    child_env = {"PATH": "/nonexistent", "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    child_env["OPENAI_API_KEY"] = _key("env")
    done = subprocess.run(
        [sys.executable, str(script), "evaluate", "--openai.base_url", "http://127.0.0.1:9/v1"],
        cwd=tmp_path,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 1, done.stderr[-3000:]
    assert len(errors) == 1
    assert "holds 1 secret(s)" in errors[0]
    assert '{"isolation": "none"}' in errors[0]
    assert child_env["OPENAI_API_KEY"] not in done.stderr


def test_the_redactor_finds_keys_in_servers_options_and_environment() -> None:
    from atroposlib.envs.server_handling.server_manager import APIServerConfig

    server = APIServerConfig(base_url="http://x/v1", api_key="sk-config-123456")
    found = configured_secrets(
        [server],
        {"env": {"FIRECRAWL_API_KEY": "fc-secret-987654"}, "image": "debian:bookworm"},
        {"HF_TOKEN": "hf_abcdefghijk", "HOME": "/root/some/long/home", "GH_TOKEN": "short"},
    )
    assert found == ["fc-secret-987654", "hf_abcdefghijk", "sk-config-123456"]
    redact = Redactor(found)
    assert redact("a sk-config-123456 b") == f"a {REDACTED} b"
    assert redact.data({"k": ["hf_abcdefghijk"]}) == {"k": [REDACTED]}


def test_log_records_holding_a_secret_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from hermes_envs._redaction import redacting_logs

    log = logging.getLogger("some.library")
    with redacting_logs(Redactor(["sk-logged-key-123456"])):
        log.warning("calling with key %s", "sk-logged-key-123456")
        try:
            raise RuntimeError("auth failed for sk-logged-key-123456")
        except RuntimeError:
            log.exception("request failed")
    log.warning("after: sk-logged-key-123456")  # outside the block: left alone
    assert "sk-logged-key-123456" not in caplog.text.split("after:")[0]
    assert f"calling with key {REDACTED}" in caplog.text
    assert f"RuntimeError: auth failed for {REDACTED}" in caplog.text
