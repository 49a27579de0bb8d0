"""results.jsonl: streamed, crash-safe, resumable without loss or duplicates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from hermes_benchmarks import Attempt, ResultsFileError, ResultsLog, TrialResult


def result(task: str, trial: int, status: str = "pass") -> TrialResult:
    reward = None if status == "infra_error" else (1.0 if status == "pass" else 0.0)
    kind = "sandbox_start" if status == "infra_error" else None
    return TrialResult.from_attempts(
        task,
        trial,
        [Attempt(status=status, reward=reward, error_kind=kind)],  # type: ignore[arg-type]
    )


def test_append_then_resume_reads_every_line(tmp_path: Path) -> None:
    path = tmp_path / "out" / "results.jsonl"
    log = ResultsLog.open(path, resume=False)
    assert log.append(result("a", 0))
    assert log.append(result("a", 1, "fail"))
    assert not log.append(result("a", 0, "fail")), "a finished trial is never written twice"
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert {"task", "trial", "status", "reward", "error_kind", "attempts"} <= set(first)
    resumed = ResultsLog.open(path, resume=True)
    assert resumed.finished == {("a", 0): result("a", 0), ("a", 1): result("a", 1, "fail")}
    assert resumed.is_finished("a", 1)
    assert not resumed.is_finished("a", 2)


def test_an_existing_file_needs_resume(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    ResultsLog.open(path, resume=False).append(result("a", 0))
    with pytest.raises(ResultsFileError, match="pass --resume"):
        ResultsLog.open(path, resume=False)


@pytest.mark.parametrize("cut", [1, 10, -1])
def test_a_cut_short_last_line_is_dropped_and_rerun(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "results.jsonl"
    log = ResultsLog.open(path, resume=False)
    log.append(result("a", 0))
    whole = path.read_bytes()
    partial = (result("a", 1).model_dump_json() + "\n").encode()[:cut]
    path.write_bytes(whole + partial)
    resumed = ResultsLog.open(path, resume=True)
    assert list(resumed.finished) == [("a", 0)]
    assert resumed.dropped_tail == len(partial)
    assert path.read_bytes() == whole
    assert resumed.append(result("a", 1))
    assert len(path.read_text().splitlines()) == 2


def test_a_corrupt_middle_line_is_refused_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    good = result("a", 0).model_dump_json()
    path.write_text(f"{good}\nnot json\n{good}\n")
    with pytest.raises(ResultsFileError, match="line 2 is not a trial result"):
        ResultsLog.open(path, resume=True)


def test_concurrent_appends_give_whole_lines(tmp_path: Path) -> None:
    log = ResultsLog.open(tmp_path / "r.jsonl", resume=False)
    threads = [
        threading.Thread(target=lambda i=i: [log.append(result(f"t{i}", j)) for j in range(20)])
        for i in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(lines) == 160
    assert {(json.loads(x)["task"], json.loads(x)["trial"]) for x in lines} == {
        (f"t{i}", j) for i in range(8) for j in range(20)
    }


def test_infra_attempts_are_kept_in_the_result() -> None:
    attempts = [
        Attempt(status="infra_error", error_kind="sandbox_start", error="daemon gone"),
        Attempt(status="pass", reward=1.0),
    ]
    final = TrialResult.from_attempts("a", 0, attempts, difficulty="easy")
    assert final.status == "pass"
    assert final.reward == 1.0
    assert final.error_kind is None
    assert [a.status for a in final.attempts] == ["infra_error", "pass"]
    with pytest.raises(ValueError, match="at least one attempt"):
        TrialResult.from_attempts("a", 0, [])


WRITER = textwrap.dedent(
    """
    import sys
    from hermes_benchmarks import Attempt, ResultsLog, TrialResult
    log = ResultsLog.open(sys.argv[1], resume=True)
    n = 0
    while True:
        key = ("task", n)
        if not log.is_finished(*key):
            log.append(TrialResult.from_attempts("task", n, [Attempt(status="pass", reward=1.0)]))
            if n == 50:
                print("ready", flush=True)
        n += 1
    """
)


def test_sigkill_mid_stream_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    """A real writer process killed with SIGKILL while appending; the resume is exact."""
    path = tmp_path / "results.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    resumed = ResultsLog.open(path, resume=True)
    trials = sorted(trial for _task, trial in resumed.finished)
    assert trials == list(range(len(trials))), "finished trials form an unbroken prefix"
    assert len(trials) > 50
    assert len(path.read_text().splitlines()) == len(trials)
