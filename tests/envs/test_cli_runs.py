"""``process`` and ``evaluate`` end to end: a real child process, the scripted model server,
local sandboxes; outputs checked line by line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from transformers import AutoTokenizer

from hermes_envs import terminal_test_oracle
from hermes_envs.envs.terminal_test import TASKS, task_prompt
from hermes_loop.server import Call, Fault, ModelRequest, ModelServerThread, Policy, Turn

from .support import TOKENIZER, child_env, run_script

TMP = Path(tempfile.gettempdir())
RUNNER = "from hermes_envs import TerminalTestEnv\nTerminalTestEnv.cli()\n"


def _terminal_test(
    tmp_path: Path, *args: str, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """Run TerminalTestEnv's command line from a script file in ``tmp_path``."""
    return run_script(_runner(tmp_path), *args, cwd=tmp_path, timeout=timeout)


def _runner(tmp_path: Path) -> Path:
    script = tmp_path / "terminal_test_env.py"
    script.write_text(RUNNER)
    return script


@pytest.fixture(scope="module")
def oracle_url() -> Iterator[str]:
    # The env asks for its default model name; the server must serve that name. It also
    # serves "refusing-model", which answers every request with HTTP 400.
    refusing = Policy(_refuse, name="refusing-model")
    oracle = Policy(terminal_test_oracle, name="terminal-test")
    with ModelServerThread({"terminal-test": oracle, "refusing-model": refusing}) as model:
        yield model.base_url


def _refuse(request: ModelRequest) -> Turn:
    return Turn(content="", faults=[Fault(status=400, message="refused (scripted)")])


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_process_writes_every_group_line_by_line(tmp_path: Path, oracle_url: str) -> None:
    out = tmp_path / "groups.jsonl"
    done = _terminal_test(
        tmp_path,
        "process",
        "--openai.base_url",
        oracle_url,
        "--env.data_path_to_save_groups",
        str(out),
        "--env.total_steps",
        str(len(TASKS)),
        "--env.group_size",
        "2",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"writing scored groups to {out}" in done.stdout
    assert f"wrote {len(TASKS)} group(s) to {out}" in done.stdout
    tokenizer = AutoTokenizer.from_pretrained(TOKENIZER)
    groups = _lines(out)
    assert len(groups) == len(TASKS)
    prompts = sorted(group["messages"][0][0]["content"] for group in groups)
    assert prompts == sorted(task_prompt(task) for task in TASKS)  # each task once
    for group in groups:
        assert group["scores"] == [1.0, 1.0]
        assert len(group["tokens"]) == len(group["masks"]) == len(group["messages"]) == 2
        for tokens, masks, messages in zip(
            group["tokens"], group["masks"], group["messages"], strict=True
        ):
            assert len(tokens) == len(masks)
            trained = tokenizer.decode([t for t, m in zip(tokens, masks, strict=True) if m != -100])
            assert '"name": "terminal"' in trained
            assert "Created" in trained
            assert messages[-1] == {"role": "assistant", "content": messages[-1]["content"]}
            assert messages[-1]["content"].startswith("Created ")
    assert out.with_suffix(".html").exists()  # Atropos' viewer
    assert "Successfully generated HTML file" not in done.stdout  # without Atropos' print
    assert any(line.startswith("groups ") for line in done.stderr.splitlines())  # the bar


def test_evaluate_writes_metrics_and_samples(tmp_path: Path, oracle_url: str) -> None:
    where = tmp_path / "eval"
    done = _terminal_test(
        tmp_path,
        "evaluate",
        "--openai.base_url",
        oracle_url,
        "--env.data_dir_to_save_evals",
        str(where),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"results in {where}" in done.stdout
    bar = [line for line in done.stderr.splitlines() if line.startswith("items ")]
    assert bar, done.stderr[-2000:]  # the progress bar, drawn once the checks passed
    assert f"{len(TASKS)}/?" in bar[-1]
    metrics = json.loads((where / "metrics.json").read_text())
    results = metrics["results"]["all"]
    assert results == {
        "eval/accuracy": 1.0,
        "eval/scored": float(len(TASKS)),
        "eval/infra_failures": 0.0,
    }
    assert metrics["config_general"]["model_name"] == "terminal-test"
    samples = _lines(where / "samples.jsonl")
    assert [s["item"]["id"] for s in samples] == [t["id"] for t in TASKS]
    for sample in samples:
        assert sample["score"] == 1.0
        assert sample["infra_failure"] is None
        assert sample["stop_reason"] == "natural"
        assert sample["messages"][0]["content"] == task_prompt(sample["item"])


def test_an_unreachable_tokenizer_names_the_option(tmp_path: Path) -> None:
    done = _terminal_test(
        tmp_path,
        "process",
        "--env.tokenizer_name",
        "no-such-org/no-such-tokenizer",
        "--openai.base_url",
        "http://127.0.0.1:9/v1",
        timeout=120,
    )
    assert done.returncode == 1
    assert "--env.tokenizer_name" in done.stderr
    assert "no-such-org/no-such-tokenizer" in done.stderr


REFERENCE_EXAMPLE = """
from hermes_envs import HermesAgentBaseEnv, HermesAgentEnvConfig
from atroposlib.envs.server_handling.server_manager import APIServerConfig

class MyEnvConfig(HermesAgentEnvConfig):
    my_custom_field: str = "default_value"

class MyEnv(HermesAgentBaseEnv):
    name = "my-env"
    env_config_cls = MyEnvConfig

    @classmethod
    def config_init(cls):
        env_config = MyEnvConfig(
            enabled_toolsets=["terminal", "file"],
            terminal_backend="modal",
            max_agent_turns=30,
        )
        server_configs = [APIServerConfig(
            base_url="https://openrouter.ai/api/v1",
            model_name="anthropic/claude-sonnet-4.6",
            server_type="openai",
        )]
        return env_config, server_configs

    async def setup(self):
        from datasets import load_dataset
        self.dataset = list(load_dataset("my-dataset", split="train"))
        self.iter = 0

    async def get_next_item(self):
        item = self.dataset[self.iter % len(self.dataset)]
        self.iter += 1
        return item

    def format_prompt(self, item):
        return item["instruction"]

    async def compute_reward(self, item, result, ctx):
        # ctx gives full tool access to the rollout's sandbox
        test = ctx.terminal("pytest -v")
        return 1.0 if test["exit_code"] == 0 else 0.0

    async def evaluate(self, *args, **kwargs):
        # Periodic evaluation during training
        pass

if __name__ == "__main__":
    MyEnv.cli()
"""

PASSING = "Write a passing pytest test in test_ok.py."
FAILING = "Write a failing pytest test in test_bad.py."


def _test_writer(request: ModelRequest) -> Turn:
    """Writes the test each instruction asks for, then stops."""
    if any(m.get("role") == "tool" for m in request.messages):
        return Turn("Written.")
    task = str(request.messages[-1]["content"])
    name, body = ("test_ok.py", "def test_ok():\n    assert True\n")
    if task == FAILING:
        name, body = ("test_bad.py", "def test_bad():\n    assert False\n")
    return Turn(tool_calls=[Call("write_file", {"path": name, "content": body})])


def test_the_reference_example_runs_as_written(tmp_path: Path) -> None:
    env_file = tmp_path / "my_env.py"
    env_file.write_text(textwrap.dedent(REFERENCE_EXAMPLE))
    dataset = tmp_path / "my-dataset"
    dataset.mkdir()
    (dataset / "train.jsonl").write_text(
        "\n".join(json.dumps({"instruction": text}) for text in (PASSING, FAILING)) + "\n"
    )
    out = tmp_path / "out.jsonl"
    path = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"
    with ModelServerThread(Policy(_test_writer)) as model:
        done = run_script(
            env_file,
            "process",
            "--env.use_wandb",
            "false",
            "--env.data_path_to_save_groups",
            str(out),
            "--env.tokenizer_name",
            TOKENIZER,
            "--env.total_steps",
            "2",
            "--env.group_size",
            "2",
            "--env.terminal_backend",
            "local",
            "--env.sandbox_options",
            json.dumps({"env": {"PATH": path}}),
            "--openai.base_url",
            model.base_url,
            "--openai.model_name",
            "scripted",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    groups = _lines(out)
    # Groups are written as they finish, in any order.
    scores = {group["messages"][0][0]["content"]: group["scores"] for group in groups}
    assert scores == {PASSING: [1.0, 1.0], FAILING: [0.0, 0.0]}
    for group in groups:
        for tokens, masks in zip(group["tokens"], group["masks"], strict=True):
            assert len(tokens) == len(masks)
            assert any(m != -100 for m in masks)


@pytest.mark.parametrize(
    ("stop", "status", "entry"),
    [
        (signal.SIGTERM, 143, "script"),
        (signal.SIGINT, 130, "script"),
        (signal.SIGTERM, 143, "hermes-envs"),
    ],
)
def test_a_stop_signal_ends_cleanly_keeping_every_written_line(
    tmp_path: Path, stop: signal.Signals, status: int, entry: str
) -> None:
    """The signal policy (``hermes_sandbox.stop_on_sigterm``) of an env script and of
    ``hermes-envs run``: 143 after SIGTERM, 130 after Ctrl-C, every line kept."""
    slow_after = 2  # groups answered at full speed, then the model hangs

    answered: list[int] = []
    release = threading.Event()

    def model(request: ModelRequest) -> Turn:
        if not any(m.get("role") == "tool" for m in request.messages):
            answered.append(1)
            if len(answered) > 2 * slow_after:
                release.wait(120)
        return terminal_test_oracle(request)

    launch = (
        [str(_runner(tmp_path))]
        if entry == "script"
        else ["-m", "hermes_envs.launcher", "run", "hermes_envs.envs.terminal_test"]
    )
    out = tmp_path / "groups.jsonl"
    with ModelServerThread(Policy(model, name="terminal-test")) as server:
        child = subprocess.Popen(
            [
                sys.executable,
                *launch,
                "process",
                "--openai.base_url",
                server.base_url,
                "--env.data_path_to_save_groups",
                str(out),
                "--env.total_steps",
                "50",
                "--env.group_size",
                "2",
                "--env.max_num_workers_per_node",
                "1",
            ],
            cwd=tmp_path,
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if out.exists() and len(out.read_text().splitlines()) >= slow_after:
                    break
                time.sleep(0.2)
            pattern = f"hermes-local-{child.pid}-*"
            while time.monotonic() < deadline and not list(TMP.glob(pattern)):
                time.sleep(0.1)
            assert list(TMP.glob(pattern)), "the next group's sandboxes never opened"
            child.send_signal(stop)
            stdout, stderr = child.communicate(timeout=60)
        finally:
            release.set()
            if child.poll() is None:
                child.kill()
                child.wait()
    assert child.returncode == status, stderr[-3000:]
    assert f"stopped; kept {slow_after} group(s) to {out}" in stdout
    groups = _lines(out)  # every line parses: none was cut
    assert len(groups) == slow_after
    assert out.read_text().endswith("\n")
    assert list(TMP.glob(f"hermes-local-{child.pid}-*")) == []  # every sandbox closed


def test_an_endpoint_that_refuses_every_request_stops_the_run(
    tmp_path: Path, oracle_url: str
) -> None:
    out = tmp_path / "groups.jsonl"
    done = _terminal_test(
        tmp_path,
        "process",
        "--openai.base_url",
        oracle_url,
        "--openai.model_name",
        "refusing-model",
        "--env.data_path_to_save_groups",
        str(out),
        "--env.total_steps",
        "50",
        "--env.infra_retries",
        "0",
        "--env.max_dropped_items",
        "2",
    )
    assert done.returncode == 1, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr[-3000:]
    assert "2 item(s) in a row failed every try" in errors[0]
    assert "refused (scripted)" in errors[0]
    assert "--openai.model_name" in errors[0]
    assert "Traceback" not in done.stderr
    assert not out.exists() or out.read_text() == ""


def test_evaluate_with_nothing_scored_reports_no_accuracy_and_fails(
    tmp_path: Path, oracle_url: str
) -> None:
    where = tmp_path / "eval"
    done = _terminal_test(
        tmp_path,
        "evaluate",
        "--openai.base_url",
        oracle_url,
        "--openai.model",  # served, and every request refused
        "refusing-model",
        "--env.data_dir_to_save_evals",
        str(where),
        "--env.infra_retries",
        "0",
    )
    assert done.returncode == 1, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: nothing was scored: all {len(TASKS)} item(s) ended in infrastructure "
        f"failures or reward errors; see the samples in {where}"
    ], done.stderr[-3000:]
    results = json.loads((where / "metrics.json").read_text())["results"]["all"]
    assert "eval/accuracy" not in results  # no mean of nothing reported as 0.0
    assert results["eval/scored"] == 0.0
    assert results["eval/infra_failures"] == float(len(TASKS))
