"""The suites' Atropos environments (``python -m hermes_benchmarks.suites.<suite>
evaluate``) run the same harness as ``hermes-bench <suite> evaluate``: the same settings
give the same results, line by line, on a real dockerd."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_benchmarks import load_tasks
from hermes_benchmarks._config import HarnessSettings
from hermes_benchmarks.cli import resolve
from hermes_benchmarks.run import RESULTS_FILE, RUNS_FILE, SUMMARY_FILE
from hermes_benchmarks.suites import TBLITE, TERMINALBENCH2
from hermes_benchmarks.suites.tblite import TBLiteEvalEnv
from hermes_benchmarks.suites.terminalbench2 import TerminalBench2EvalEnv
from hermes_envs import resolve_config
from hermes_loop.server import Call, ModelRequest, ModelServerThread, Policy, Turn
from hermes_sandbox.backends.docker import list_containers
from tests.benchmarks.dataset_fixture import shipped_rows, write_parquet_dataset
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason

REASON = docker_skip_reason()
needs_docker = pytest.mark.skipif(REASON is not None, reason=REASON or "")

ROOT = Path(__file__).parents[2]
SUITES_DIR = ROOT / "packages/hermes-benchmarks/src/hermes_benchmarks/suites"
# Evaluation never tokenizes; the shipped tiny tokenizer keeps Atropos'
# BaseEnv from fetching one from the hub.
COMMON = ["--env.infra_retries", "0", "--env.max_concurrent_tasks", "3"]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, timeout=900, cwd=ROOT
    )


def hermes_bench(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from hermes_benchmarks.cli import main; sys.exit(main())"
    return run("-c", code, *args)


def env_args(out: Path) -> list[str]:
    return ["--env.data_dir_to_save_evals", str(out)]


def env_evaluate(suite: str, out: Path, *args: str) -> list[str]:
    """``-m hermes_benchmarks.suites.<suite> evaluate`` into ``out`` (evals beside it)."""
    module = f"hermes_benchmarks.suites.{suite}"
    where = ["--env.output_dir", str(out), *env_args(out.parent / "evals")]
    return ["-m", module, "evaluate", *args, *where]


def results(folder: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Each trial's result line, without its timings."""
    rows = [json.loads(line) for line in (folder / RESULTS_FILE).read_text().splitlines()]
    for row in rows:
        row.pop("timings")
        for attempt in row["attempts"]:
            attempt.pop("timings")
    keyed = {(row["task"], row["trial"]): row for row in rows}
    assert len(keyed) == len(rows), "a trial was written twice"
    return keyed


def summary(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / SUMMARY_FILE).read_text())
    return {key: data[key] for key in ("overall", "tiers", "tasks", "error_kinds")}


def test_the_env_config_is_the_suites_default_yaml_and_takes_the_same_options() -> None:
    for env_cls, suite in ((TerminalBench2EvalEnv, TERMINALBENCH2), (TBLiteEvalEnv, TBLITE)):
        config, (server,) = env_cls.config_init()
        bench, openai = resolve(suite, [])
        for name in HarnessSettings.model_fields:
            assert getattr(config, name) == getattr(bench, name), name
        assert (config.max_agent_turns, config.agent_temperature) == (
            bench.max_turns,
            openai.temperature,
        )
        assert (server.base_url, server.model_name) == (openai.base_url, openai.model)
        assert (config.total_steps, config.steps_per_eval, config.eval_handling.name) == (
            1,
            1,
            "STOP_TRAIN",
        )
    resolved = resolve_config(
        TBLiteEvalEnv,
        "evaluate",
        ["--env.task_filter", "a,b*", "--env.n_trials", "3", "--env.image_map", '["x=y"]'],
    )
    assert (resolved.env.task_filter, resolved.env.n_trials) == (["a", "b*"], 3)
    assert resolved.env.image_map == ["x=y"]
    assert resolved.env.dataset_name == TBLITE.dataset_name
    assert resolved.env.terminal_backend == "docker"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--env.dataset_name", "/nonexistent/rows.parquet"], "no such file or folder; set"),
        (
            ["--env.dataset_name", "hermes-bench-tests/no-such-dataset"],
            "cannot reach the Hugging Face hub",
        ),
        (["--env.tasks_dir", "/nonexistent"], "tasks_dir /nonexistent does not exist"),
        (
            ["--env.tasks_dir", str(SHIPPED), "--env.leaderboard", "true"],
            "leaderboard mode refuses these settings (n_trials is 1, under 5)",
        ),
        (
            ["--env.tasks_dir", str(SHIPPED), "--env.agent", "no_such_module_here:Agent"],
            "cannot import no_such_module_here",
        ),
    ],
)
def test_the_env_script_refuses_bad_settings_in_one_line(
    tmp_path: Path, args: list[str], says: str
) -> None:
    # An endpoint serving the suite's default model: the model check passes.
    with ModelServerThread(Policy(lambda request: "done", name="default")) as model:
        endpoint = ("--openai.base_url", model.base_url)
        done = run(*env_evaluate("terminalbench2", tmp_path / "out", *args, *endpoint))
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 1, done.stderr
    assert len(errors) == 1, done.stderr
    assert says in errors[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / RESULTS_FILE).exists()


@needs_docker
def test_the_oracle_over_a_dataset_matches_hermes_bench_over_the_task_folders(
    tmp_path: Path,
) -> None:
    dataset = write_parquet_dataset(tmp_path / "dataset", shipped_rows())
    bench = hermes_bench(
        "terminalbench2",
        "evaluate",
        "--env.agent",
        "oracle",
        "--env.tasks_dir",
        str(SHIPPED),
        "--env.output_dir",
        str(tmp_path / "bench"),
        *COMMON,
    )
    assert bench.returncode == 0, bench.stderr
    env = run(
        *env_evaluate(
            "terminalbench2",
            tmp_path / "env",
            "--env.agent",
            "oracle",
            "--env.dataset_name",
            str(dataset),
            "--env.cache_dir",
            str(tmp_path / "cache"),
            *COMMON,
        )
    )
    assert env.returncode == 0, env.stderr
    expected = results(tmp_path / "bench")
    assert len(expected) == len(load_tasks(SHIPPED))
    assert {row["status"] for row in expected.values()} == {"pass"}
    assert results(tmp_path / "env") == expected
    assert summary(tmp_path / "env") == summary(tmp_path / "bench")
    metrics = json.loads((tmp_path / "evals" / "metrics.json").read_text())
    assert metrics["results"]["all"]["eval/pass_rate"] == 1.0
    assert metrics["results"]["all"]["eval/trials"] == len(expected)
    samples = (tmp_path / "evals" / "samples.jsonl").read_text().splitlines()
    assert len(samples) == len(expected)


SOLVED = {"write-greeting", "fix-sum-script", "count-errors"}


def solve_some(request: ModelRequest) -> Turn:
    """The hermes agent's model: runs the reference solution of the tasks in SOLVED,
    does nothing useful on the others."""
    if request.turn_index > 0:
        return Turn("done")
    instruction = next(m["content"] for m in request.messages if m["role"] == "user")
    task = next(t for t in load_tasks(SHIPPED) if t.instruction == instruction)
    command = "echo I will not do it"
    if task.name in SOLVED and task.solution_script is not None:
        command = f"bash -c {shlex.quote(task.solution_script.read_text())}"
    return Turn(tool_calls=[Call("terminal", {"command": command})])


@needs_docker
def test_the_scripted_hermes_agent_through_the_env_script_matches_hermes_bench(
    tmp_path: Path,
) -> None:
    with ModelServerThread(Policy(solve_some, name="solve-some")) as server:
        bench = hermes_bench(
            "tblite",
            "evaluate",
            "--env.tasks_dir",
            str(SHIPPED),
            "--env.output_dir",
            str(tmp_path / "bench"),
            "--openai.base_url",
            server.base_url,
            "--openai.model",
            "solve-some",
            *COMMON,
        )
        assert bench.returncode == 0, bench.stderr
        env = run(
            str(SUITES_DIR / "tblite.py"),
            "evaluate",
            "--env.tasks_dir",
            str(SHIPPED),
            "--env.output_dir",
            str(tmp_path / "env"),
            "--openai.base_url",
            server.base_url,
            "--openai.model_name",
            "solve-some",
            "--openai.api_key",
            "sk-test",
            *COMMON,
            *env_args(tmp_path / "evals"),
        )
        assert env.returncode == 0, env.stderr
    expected = results(tmp_path / "bench")
    verdicts = {task: row["status"] for (task, _), row in expected.items()}
    assert verdicts == {
        task.name: "pass" if task.name in SOLVED else "fail" for task in load_tasks(SHIPPED)
    }
    assert {row["agent"] for row in expected.values()} == {"hermes"}
    assert results(tmp_path / "env") == expected
    assert summary(tmp_path / "env") == summary(tmp_path / "bench")
    assert set(summary(tmp_path / "env")["tiers"]) >= {"easy", "medium"}


@needs_docker
def test_sigterm_stops_the_env_cleanly_and_resume_finishes_the_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = env_evaluate(
        "tblite",
        out,
        "--env.agent",
        "oracle",
        "--env.tasks_dir",
        str(SHIPPED),
        "--env.infra_retries",
        "0",
        "--env.max_concurrent_tasks",
        "1",
    )
    first = subprocess.Popen(
        [sys.executable, *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (
        (out / RESULTS_FILE).exists() and (out / RESULTS_FILE).read_text()
    ):
        time.sleep(0.05)
    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 143, err
    assert b"Traceback" not in err
    kept = results(out)
    assert 1 <= len(kept) < len(load_tasks(SHIPPED))
    assert json.loads((out / SUMMARY_FILE).read_text())["overall"]["trials"] == len(kept)
    for run_id in (out / RUNS_FILE).read_text().split():
        assert list_containers(run_id=run_id) == [], f"run {run_id} left containers"
    resumed = run(*argv, "--env.resume", "true")
    assert resumed.returncode == 0, resumed.stderr
    finished = results(out)
    assert len(finished) == len(load_tasks(SHIPPED))
    assert {key: finished[key] for key in kept} == kept
    assert {row["status"] for row in finished.values()} == {"pass"}


@needs_docker
async def test_rollout_and_score_eval_runs_one_verified_trial(tmp_path: Path) -> None:
    config, servers = TerminalBench2EvalEnv.config_init()
    config = config.model_copy(
        update={
            "tasks_dir": str(SHIPPED),
            "task_filter": ["write-greeting"],
            "agent": "oracle",
            "output_dir": str(tmp_path),
        }
    )
    env = TerminalBench2EvalEnv(config, servers)
    try:
        await env.setup()
        (task,) = env.tasks
        result = await env.rollout_and_score_eval(task, trial=2)
        assert await env.collect_trajectories(task) == (None, [])
        assert env.format_prompt(task) == task.instruction
    finally:
        await env.close()
    assert (result.task, result.trial, result.status, result.reward) == (
        "write-greeting",
        2,
        "pass",
        1.0,
    )
    assert result.agent == "oracle"
