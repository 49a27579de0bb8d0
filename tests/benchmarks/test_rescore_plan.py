"""What a rescore refuses before it starts a sandbox: runs with nothing kept to verify,
and run folders whose artifact folders are damaged (no docker needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_benchmarks import Attempt, RescoreError, TrialResult
from hermes_benchmarks._rescore import plan_rescore


def write_run(out: Path, *results: TrialResult) -> None:
    out.mkdir()
    lines = "".join(result.model_dump_json() + "\n" for result in results)
    (out / "results.jsonl").write_text(lines)


def result(task: str, artifacts: str | None) -> TrialResult:
    attempt = Attempt(status="infra_error", error_kind="agent_crash", error="boom")
    return TrialResult.from_attempts(task, 0, [attempt], artifacts=artifacts)


def test_a_run_whose_trials_kept_no_artifacts_cannot_be_rescored(tmp_path: Path) -> None:
    write_run(tmp_path / "out", result("a", None), result("b", None))
    with pytest.raises(RescoreError) as caught:
        plan_rescore(tmp_path / "out")
    message = str(caught.value)
    assert "no trial of this run can be re-verified (2 trial(s): the trial kept no artifacts)" in (
        message
    )
    assert "\n" not in message


def test_an_artifact_folder_without_its_manifest_is_a_damaged_run(tmp_path: Path) -> None:
    write_run(tmp_path / "out", result("a", "artifacts/a/0"))
    (tmp_path / "out" / "artifacts" / "a" / "0").mkdir(parents=True)
    with pytest.raises(RescoreError) as caught:
        plan_rescore(tmp_path / "out")
    message = str(caught.value)
    assert "task a trial 0" in message
    assert "artifacts.json is missing" in message
    assert "the run folder is damaged" in message


def test_a_run_with_no_finished_trial_has_nothing_to_rescore(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.jsonl").write_text("")
    with pytest.raises(RescoreError, match="holds no finished trial"):
        plan_rescore(tmp_path / "out")


def test_a_results_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "out" / "results.jsonl").mkdir(parents=True)
    with pytest.raises(RescoreError) as caught:
        plan_rescore(tmp_path / "out")
    message = str(caught.value)
    assert "results.jsonl cannot be read" in message
    assert "\n" not in message
