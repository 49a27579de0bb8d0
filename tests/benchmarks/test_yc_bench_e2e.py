"""YC-Bench end to end: real yc-bench, real local sandboxes, a real model server on
127.0.0.1 playing the scripted greedy player through the terminal tool.

yc-bench needs Python >= 3.12: its environment is made once (cached under
``~/.cache/hermes-benchmarks``) from the first Python >= 3.12 found; without one these
tests are skipped and say why.
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from atroposlib.envs.server_handling.server_manager import APIServerConfig

from hermes_benchmarks.yc_bench import YCBenchInstall, ensure_yc_bench, find_python
from hermes_benchmarks.yc_bench._config import YCBenchEvalConfig
from hermes_benchmarks.yc_bench._player import PLAYER_MODEL, greedy_player
from hermes_benchmarks.yc_bench.env import YCBenchEvalEnv
from hermes_envs import EnvSetupError
from hermes_loop.server import (
    Call,
    Fault,
    ModelRequest,
    ModelServer,
    ModelServerThread,
    Policy,
    PolicyFunction,
    Turn,
)
from hermes_sandbox import DEFAULT_PATH

PYTHON = find_python()
pytestmark = pytest.mark.skipif(
    PYTHON is None,
    reason="yc-bench needs Python >= 3.12 and none was found (python3.12..3.14 on PATH, "
    "~/.pyenv/versions)",
)
DEV_UV = Path.home() / ".cache" / "hermes-dev" / "uv-venv" / "bin" / "uv"
UV = shutil.which("uv") or (str(DEV_UV) if DEV_UV.exists() else None)


@pytest.fixture(scope="module")
def install() -> YCBenchInstall:
    return ensure_yc_bench(python=str(PYTHON), uv=UV)


def make_env(base_url: str, **fields: Any) -> YCBenchEvalEnv:
    defaults, _ = YCBenchEvalEnv.config_init()
    config = YCBenchEvalConfig(**{**defaults.model_dump(), **fields})
    server = APIServerConfig(
        base_url=base_url,
        model_name=PLAYER_MODEL,
        server_type="openai",
        api_key="unused",
        health_check=False,
    )
    return YCBenchEvalEnv(config, [server])


async def evaluate(player: PolicyFunction, **fields: Any) -> None:
    async with ModelServer(Policy(player, name=PLAYER_MODEL)) as server:
        env = make_env(server.base_url, **fields)
        await env.run_evaluate()


def rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def yc_bench_reports(install: YCBenchInstall, sim_dir: Path) -> dict[str, Any]:
    """What ``yc-bench company status`` itself says about the finished simulation."""
    done = subprocess.run(
        [str(install.command), "company", "status"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=sim_dir,
        env={
            "PATH": f"{install.bin_dir}:{DEFAULT_PATH}",
            "DATABASE_URL": f"sqlite:///{sim_dir / 'yc_bench.db'}",
            "YC_BENCH_EXPERIMENT": "fast_test",
        },
        check=True,
    )
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_fast_test_runs_end_to_end_and_scores_what_yc_bench_reports(
    install: YCBenchInstall, tmp_path: Path
) -> None:
    # Two tasks taken and finished by the player, then the harness runs the clock to the
    # horizon: with seed 1 the company survives the year with a little money left.
    asyncio.run(
        evaluate(
            greedy_player(max_tasks=2),
            presets=["fast_test"],
            seeds=[1],
            output_dir=str(tmp_path),
            yc_bench_command=str(install.command),
            infra_retries=0,
        )
    )
    (row,) = rows(tmp_path)
    assert (row["task"], row["trial"], row["preset"], row["seed"]) == (
        "fast_test",
        1,
        "fast_test",
        1,
    )
    assert row["status"] == "pass", json.dumps(row)
    assert row["error_kind"] is None
    assert len(row["attempts"]) == 1
    assert row["extra"]["turns_used"] >= 2 * 9
    assert row["extra"]["stop_reason"] == "natural"
    assert row["extra"]["auto_resumes"] >= 1  # the player stopped; the harness finished

    report = yc_bench_reports(install, Path(row["extra"]["sim_dir"]))
    survived = report["sim_time"] >= report["horizon_end"] and not report["risk"]["bankrupt"]
    funds = report["funds_cents"]
    assert survived
    assert funds > 0
    funds_score = min(math.log1p(funds / 25_000_000) / math.log1p(100), 1.0)
    assert row["funds_cents"] == funds
    assert row["survival"] == 1.0
    assert row["terminal_reason"] == "horizon_end"
    assert row["normalised_funds"] == pytest.approx(funds_score)
    assert row["score"] == pytest.approx(0.5 * 1.0 + 0.5 * funds_score)
    assert row["reward"] == row["score"]

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["overall"]["mean_score"] == pytest.approx(row["score"])
    assert summary["presets"]["fast_test"]["survival_rate"] == 1.0


def failing_endpoint(request: ModelRequest) -> Turn:
    return Turn("never answered", faults=[Fault(status=500)])


def test_a_failing_model_endpoint_is_an_infra_error_never_a_zero_and_resumes(
    install: YCBenchInstall, tmp_path: Path
) -> None:
    settings: dict[str, Any] = {
        "presets": ["fast_test"],
        "seeds": [2],
        "output_dir": str(tmp_path),
        "yc_bench_command": str(install.command),
        "infra_retries": 1,
    }
    asyncio.run(evaluate(failing_endpoint, **settings))
    (row,) = rows(tmp_path)
    assert row["status"] == "infra_error"
    assert row["error_kind"] == "model_endpoint"
    assert row["score"] is None
    assert row["reward"] is None
    assert [a["error_kind"] for a in row["attempts"]] == ["model_endpoint", "model_endpoint"]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["overall"]["infra_errors"] == 1
    assert summary["overall"]["scored"] == 0
    assert summary["overall"]["mean_score"] is None
    assert summary["error_kinds"] == {"model_endpoint": 1}

    # The same output folder again: refused without resume, nothing re-run with it.
    with pytest.raises(EnvSetupError, match="already holds results: pass --resume"):
        asyncio.run(evaluate(failing_endpoint, **settings))
    asyncio.run(evaluate(failing_endpoint, **{**settings, "resume": True}))
    assert rows(tmp_path) == [row]


EDIT_FUNDS = (
    'python -c "import os, sqlite3; '
    "db = sqlite3.connect(os.environ['DATABASE_URL'].removeprefix('sqlite:///')); "
    "db.execute('UPDATE companies SET funds_cents = funds_cents * 1000'); db.commit()\""
)


def funds_editor(request: ModelRequest) -> Turn:
    """Cheats: multiplies the company's funds in the database, then stops."""
    if request.turn_index == 0:
        return Turn(tool_calls=[Call("terminal", {"command": EDIT_FUNDS})])
    return Turn("done")


def test_funds_edited_in_the_database_score_zero(install: YCBenchInstall, tmp_path: Path) -> None:
    asyncio.run(
        evaluate(
            funds_editor,
            presets=["fast_test"],
            seeds=[3],
            output_dir=str(tmp_path),
            yc_bench_command=str(install.command),
            infra_retries=0,
        )
    )
    (row,) = rows(tmp_path)
    # Left alone, the harness ran the clock to the horizon, rich on paper.
    assert row["extra"]["auto_resumes"] >= 1
    assert row["terminal_reason"] == "horizon_end"
    assert row["funds_cents"] > 1000 * 20_000_000
    assert (row["status"], row["survival"], row["score"]) == ("fail", 0.0, 0.0)
    assert "the database was edited" in row["error"]


def test_check_exits_1_when_yc_bench_cannot_start_the_preset(
    install: YCBenchInstall, tmp_path: Path
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hermes_benchmarks.suites.yc_bench",
            "check",
            "--env.presets",
            '["no_such_preset"]',
            "--env.seeds",
            "[1]",
            "--env.infra_retries",
            "0",
            "--env.output_dir",
            str(tmp_path),
            "--env.yc_bench_command",
            str(install.command),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "check: 1 run(s) ended in an infrastructure failure" in done.stderr
    (row,) = rows(tmp_path)
    assert (row["status"], row["error_kind"], row["score"]) == (
        "infra_error",
        "sandbox_start",
        None,
    )
    assert "yc-bench could not start preset 'no_such_preset'" in row["error"]
    assert "Unknown preset" in row["error"]


def stalling_model(request: ModelRequest) -> Turn:
    """A model that takes ten minutes to answer."""
    return Turn("late", faults=[Fault(delay=600)])


def test_sigterm_stops_cleanly_and_resume_runs_what_did_not_finish(
    install: YCBenchInstall, tmp_path: Path
) -> None:
    def suite(base_url: str, *extra: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "hermes_benchmarks.suites.yc_bench",
            "evaluate",
            "--openai.base_url",
            base_url,
            "--openai.model_name",
            PLAYER_MODEL,
            "--openai.api_key",
            "unused",
            "--env.presets",
            '["fast_test"]',
            "--env.seeds",
            "[4]",
            "--env.infra_retries",
            "0",
            "--env.output_dir",
            str(tmp_path),
            "--env.yc_bench_command",
            str(install.command),
            *extra,
        ]

    database = tmp_path / "sims" / "fast_test-seed4" / "yc_bench.db"
    with ModelServerThread(Policy(stalling_model, name=PLAYER_MODEL)) as server:
        process = subprocess.Popen(
            suite(server.base_url), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 300
        while not (database.exists() and server.server and server.server.requests.get("chat")):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the run never reached the model"
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    assert process.returncode == 143, out + err
    assert "Traceback" not in err
    assert (tmp_path / "results.jsonl").read_text() == ""
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["overall"]["runs"] == 0

    with ModelServerThread(Policy(failing_endpoint, name=PLAYER_MODEL)) as server:
        done = subprocess.run(
            suite(server.base_url, "--env.resume", "true"),
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = rows(tmp_path)
    assert (row["seed"], row["status"], row["error_kind"]) == (4, "infra_error", "model_endpoint")
