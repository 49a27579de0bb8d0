"""YC-Bench pieces that need no yc-bench: the score, the database reader, the results,
the scripted player's decisions, the config and the command line's one-line answers."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from hermes_benchmarks._results import Attempt
from hermes_benchmarks.cli import USAGE
from hermes_benchmarks.cli import main as bench_main
from hermes_benchmarks.yc_bench import (
    YCBenchMissingError,
    YCRunResult,
    composite_score,
    ensure_yc_bench,
    greedy_player,
    normalised_funds,
    read_outcome,
    read_runs,
    summarize_runs,
)
from hermes_benchmarks.yc_bench._config import YCBenchEvalConfig
from hermes_benchmarks.yc_bench._player import terminal_steps
from hermes_benchmarks.yc_bench._results import table
from hermes_loop.server import ModelRequest, ModelServerThread, Policy, Turn
from hermes_parsers import get_parser

INITIAL = 25_000_000
OLD_PYTHON = shutil.which("python3.11") or shutil.which("python3.10")


def test_normalised_funds_is_log_scaled_and_capped() -> None:
    assert normalised_funds(INITIAL, INITIAL) == pytest.approx(math.log(2) / math.log(101))
    assert normalised_funds(10 * INITIAL, INITIAL) == pytest.approx(math.log(11) / math.log(101))
    assert normalised_funds(100 * INITIAL, INITIAL) == pytest.approx(1.0)
    assert normalised_funds(1000 * INITIAL, INITIAL) == 1.0
    assert normalised_funds(0, INITIAL) == 0.0
    assert normalised_funds(-5, INITIAL) == 0.0
    with pytest.raises(ValueError, match="initial funds must be positive"):
        normalised_funds(1, 0)


def test_composite_score_weighs_survival_and_funds() -> None:
    assert composite_score(1.0, 0.2, survival_weight=0.5, funds_weight=0.5) == pytest.approx(0.6)
    assert composite_score(0.0, 0.0, survival_weight=0.5, funds_weight=0.5) == 0.0
    assert composite_score(1.0, 1.0, survival_weight=0.7, funds_weight=0.3) == pytest.approx(1.0)


def make_db(
    path: Path,
    *,
    funds: int,
    ledger: list[int],
    sim_time: str,
    bankrupt_at: str | None = None,
) -> Path:
    """A database with the tables and columns yc-bench 0.1.0 writes (the end-to-end test
    reads a real one)."""
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE companies (id TEXT, name TEXT, funds_cents INTEGER);
        CREATE TABLE sim_state (company_id TEXT, sim_time TEXT, run_seed INTEGER,
                                horizon_end TEXT, replenish_counter INTEGER);
        CREATE TABLE sim_events (id TEXT, company_id TEXT, event_type TEXT,
                                 scheduled_at TEXT, payload TEXT, dedupe_key TEXT,
                                 consumed INTEGER);
        CREATE TABLE ledger_entries (id TEXT, company_id TEXT, occurred_at TEXT,
                                     category TEXT, amount_cents INTEGER, ref_type TEXT,
                                     ref_id TEXT);
        """
    )
    db.execute("INSERT INTO companies VALUES ('c1', 'BenchCo', ?)", (funds,))
    db.execute(
        "INSERT INTO sim_state VALUES ('c1', ?, 1, '2026-01-01 09:00:00.000000', 0)", (sim_time,)
    )
    db.execute(
        "INSERT INTO sim_events VALUES ('e1', 'c1', 'horizon_end', "
        "'2026-01-01 09:00:00.000000', '{}', 'horizon_end', 0)"
    )
    if bankrupt_at:
        db.execute(
            "INSERT INTO sim_events VALUES ('e2', 'c1', 'bankruptcy', ?, '{}', 'b', 0)",
            (bankrupt_at,),
        )
    for index, amount in enumerate(ledger):
        db.execute(
            "INSERT INTO ledger_entries VALUES (?, 'c1', '2025-02-03', 'x', ?, 'x', 'x')",
            (f"l{index}", amount),
        )
    db.commit()
    db.close()
    return path


def test_read_outcome_survival_needs_the_horizon_and_no_bankruptcy(tmp_path: Path) -> None:
    end = "2026-01-01 09:00:00.000000"
    survived = read_outcome(
        make_db(tmp_path / "a.db", funds=INITIAL + 500, ledger=[800, -300], sim_time=end)
    )
    assert (survived.ended, survived.survived, survived.terminal_reason) == (
        True,
        True,
        "horizon_end",
    )
    assert not survived.tampered(INITIAL)

    midway = read_outcome(
        make_db(tmp_path / "b.db", funds=INITIAL, ledger=[], sim_time="2025-03-01 09:00:00")
    )
    assert (midway.ended, midway.survived, midway.terminal_reason) == (False, False, None)

    # Bankrupt in September, then played on to the horizon with funds back above zero:
    # the first terminal event decides.
    recovered = read_outcome(
        make_db(
            tmp_path / "c.db",
            funds=INITIAL + 10,
            ledger=[10],
            sim_time=end,
            bankrupt_at="2025-09-01 09:00:00.000000",
        )
    )
    assert (recovered.survived, recovered.terminal_reason) == (False, "bankruptcy")


def test_read_outcome_sees_funds_edited_by_hand(tmp_path: Path) -> None:
    end = "2026-01-01 09:00:00.000000"
    outcome = read_outcome(
        make_db(tmp_path / "t.db", funds=100 * INITIAL, ledger=[-1000], sim_time=end)
    )
    assert outcome.tampered(INITIAL)


def test_read_outcome_names_a_missing_or_foreign_database(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no yc-bench database"):
        read_outcome(tmp_path / "none.db")
    other = tmp_path / "other.db"
    sqlite3.connect(other).close()
    with pytest.raises(ValueError, match="not a readable yc-bench database"):
        read_outcome(other)


def run(
    seed: int, status: str, score: float | None, survival: float | None, kind: str | None = None
) -> YCRunResult:
    attempt = Attempt.model_validate(
        {"status": status, "reward": score, "error_kind": kind, "error": kind}
    )
    result = YCRunResult.from_attempts(
        "fast_test",
        seed,
        [attempt],
        preset="fast_test",
        seed=seed,
        score=score,
        survival=survival,
        funds_cents=None if score is None else 1000,
        normalised_funds=None if score is None else 0.0,
    )
    assert isinstance(result, YCRunResult)
    return result


def test_infra_errors_are_counted_apart_never_a_zero(tmp_path: Path) -> None:
    runs = [
        run(1, "pass", 0.6, 1.0),
        run(2, "fail", 0.0, 0.0),
        run(3, "infra_error", None, None, "model_endpoint"),
    ]
    summary = summarize_runs(runs)
    overall = summary.overall
    assert (overall.runs, overall.scored, overall.survived, overall.infra_errors) == (3, 2, 1, 1)
    assert overall.mean_score == pytest.approx(0.3)
    assert overall.survival_rate == pytest.approx(0.5)
    assert summary.error_kinds == {"model_endpoint": 1}
    assert set(summary.presets) == {"fast_test"}
    rendered = table(runs, summary)
    assert rendered.row_count == 3 + 2

    file = tmp_path / "results.jsonl"
    file.write_text("".join(r.model_dump_json() + "\n" for r in runs) + '{"task": "cut')
    back = read_runs(file)
    assert [(r.seed, r.status, r.score) for r in back] == [
        (r.seed, r.status, r.score) for r in runs
    ]
    file.write_text('{"not": "a run"}\n')
    with pytest.raises(ValueError, match="line 1 is not a YC-Bench run result"):
        read_runs(file)


def request(messages: list[dict[str, Any]]) -> ModelRequest:
    turns = sum(1 for m in messages if m["role"] == "assistant")
    return ModelRequest(
        endpoint="chat",
        model="p",
        turn_index=turns,
        body={},
        parser=get_parser("hermes"),
        messages=messages,
    )


def play(messages: list[dict[str, Any]], turn: Turn, output: Any, code: int = 0) -> None:
    """Append ``turn``'s one terminal call and its answer to ``messages``."""
    (call,) = turn.tool_calls
    call_id = f"c{len(messages)}"
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "terminal", "arguments": json.dumps(call.arguments)},
                }
            ],
        }
    )
    text = output if isinstance(output, str) else json.dumps(output)
    content = json.dumps({"output": text, "exit_code": code})
    messages.append({"role": "tool", "tool_call_id": call_id, "content": content})


def command(turn: Turn) -> str:
    (call,) = turn.tool_calls
    assert isinstance(call.arguments, dict)
    return str(call.arguments["command"])


def test_the_player_takes_tasks_then_stops_or_reports_the_end() -> None:
    player = greedy_player(max_tasks=1)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "play"}]
    turn = player(request(messages))
    assert command(turn) == "yc-bench employee list"
    employees = {"employees": [{"employee_id": "e1"}, {"employee_id": "e2"}]}
    play(messages, turn, employees)
    turn = player(request(messages))
    assert command(turn) == "yc-bench market browse --required-prestige-lte 1 --limit 1"
    play(messages, turn, {"tasks": [{"task_id": "t1"}]})
    expected = [
        "yc-bench task accept --task-id t1",
        "yc-bench task assign --task-id t1 --employee-id e1",
        "yc-bench task assign --task-id t1 --employee-id e2",
        "yc-bench task dispatch --task-id t1",
    ]
    for want in expected:
        turn = player(request(messages))
        assert command(turn) == want
        play(messages, turn, {"ok": True})
    turn = player(request(messages))
    assert command(turn) == "yc-bench sim resume"
    play(messages, turn, {"wake_events": [{"type": "task_half"}], "terminal_reason": None})
    assert command(player(request(messages))) == "yc-bench sim resume"
    play(messages, turn, {"wake_events": [{"type": "task_completed"}], "terminal_reason": None})
    done = player(request(messages))
    assert not done.tool_calls
    assert "finished 1 task" in str(done.content)
    assert [step[0] for step in terminal_steps(messages)][:2] == [
        "yc-bench employee list",
        "yc-bench market browse --required-prestige-lte 1 --limit 1",
    ]

    ended = list(messages[:-2])
    play(ended, turn, {"wake_events": [], "terminal_reason": "bankruptcy"})
    assert "ended: bankruptcy" in str(player(request(ended)).content)

    failed = list(messages[:5])
    play(failed, Turn(tool_calls=turn.tool_calls), "Traceback\nboom", code=1)
    assert "failed (exit 1): boom" in str(player(request(failed)).content)


def test_ensure_yc_bench_names_what_to_set(tmp_path: Path) -> None:
    with pytest.raises(YCBenchMissingError, match="not an executable"):
        ensure_yc_bench(command=str(tmp_path / "nope"))
    lonely = tmp_path / "bin" / "yc-bench"
    lonely.parent.mkdir()
    lonely.write_text("#!/bin/sh\n")
    lonely.chmod(0o755)
    with pytest.raises(YCBenchMissingError, match="no python beside it"):
        ensure_yc_bench(command=str(lonely))
    with pytest.raises(YCBenchMissingError, match=r"does not run; yc-bench needs Python >= 3\.12"):
        ensure_yc_bench(python=str(tmp_path / "python9"), venv_dir=tmp_path / "venv")


@pytest.mark.skipif(OLD_PYTHON is None, reason="no python3.11 or older on PATH to refuse")
def test_ensure_yc_bench_refuses_an_old_python(tmp_path: Path) -> None:
    assert OLD_PYTHON is not None
    with pytest.raises(YCBenchMissingError, match=r"is Python 3\.\d+; yc-bench needs"):
        ensure_yc_bench(python=OLD_PYTHON, venv_dir=tmp_path / "venv")


def test_the_config_refuses_bad_runs() -> None:
    with pytest.raises(ValidationError, match="seeds must be 0 or more"):
        YCBenchEvalConfig(seeds="[-1]")
    with pytest.raises(ValidationError, match="must name at least one"):
        YCBenchEvalConfig(presets="[]")
    with pytest.raises(ValidationError, match="must be a date YYYY-MM-DD"):
        YCBenchEvalConfig(start_date="01/01/2025")
    config = YCBenchEvalConfig(presets='["fast_test"]', seeds="1,2", output_dir="/x")
    assert (config.presets, config.seeds) == (["fast_test"], [1, 2])
    assert config.data_dir_to_save_evals == "/x"


def yc_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The suite's own script (``hermes-bench yc-bench`` hands its arguments to it)."""
    return subprocess.run(
        [sys.executable, "-m", "hermes_benchmarks.suites.yc_bench", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_hermes_bench_hands_yc_bench_to_the_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_main(["yc-bench", "run"]) == 2
    assert capsys.readouterr().err == "error: unknown command 'run'; choose evaluate or check\n"
    assert bench_main(["yc-bench"]) == 2
    assert "hermes-bench yc-bench {evaluate|check}" in capsys.readouterr().err
    assert "yc-bench" in USAGE


@pytest.mark.parametrize(
    ("args", "says", "status"),
    [
        (["run"], "error: unknown command 'run'; choose evaluate or check", 2),
        (["evaluate", "--env.nope", "1"], "error: unknown option --env.nope", 2),
        (
            ["evaluate", "--env.terminal_backend", "docker"],
            "error: env.terminal_backend: YC-Bench runs on the local backend only",
            2,
        ),
        (
            ["evaluate", "--env.yc_bench_command", "/nonexistent/yc-bench"],
            "error: yc_bench_command '/nonexistent/yc-bench' is not an executable",
            1,
        ),
    ],
)
def test_the_suite_script_answers_in_one_line(
    args: list[str], says: str, status: int, tmp_path: Path
) -> None:
    # An endpoint serving the env's model: the model check before the first run passes.
    with ModelServerThread(Policy(lambda request: "done", name="yc-bench")) as model:
        endpoint = ["--openai.base_url", model.base_url] if len(args) > 1 else []
        done = yc_cli(
            *args, *endpoint, *(["--env.output_dir", str(tmp_path)] if len(args) > 1 else [])
        )
    errors = [line for line in done.stderr.splitlines() if line.startswith("error")]
    assert done.returncode == status, done.stderr
    assert len(errors) == 1, done.stderr
    assert says in errors[0], done.stderr
    assert "Traceback" not in done.stderr
