"""Separate-mode verification and rescore on a real dockerd, with the tasks of
``tasks_separate/``: the verifier sees only the kept artifacts, tampering in the agent's
container cannot reach it, a missing artifact is recorded, and a finished run re-verified
from its artifacts gives the same verdicts."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hermes_benchmarks import (
    ArtifactManifest,
    ImageMap,
    OracleAgent,
    ResultsLog,
    TrialResult,
    TrialSettings,
    load_agent,
    load_task,
    load_tasks,
    run_trial,
)
from hermes_benchmarks.cli import main
from hermes_benchmarks.run import run_benchmark
from hermes_sandbox.backends.docker import RUN_ID, list_containers
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason, hermes_bench

REASON = docker_skip_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

SEPARATE = Path(__file__).parent / "tasks_separate"
SETTINGS = TrialSettings(infra_retries=0)
AGENTS = "tests.benchmarks.agents_for_tests"


def copy_tasks(root: Path) -> Path:
    """The separate tasks and one shipped shared-mode task, in a folder of their own."""
    tasks = root / "tasks"
    shutil.copytree(SEPARATE, tasks)
    shutil.copytree(SHIPPED / "write-greeting", tasks / "write-greeting")
    return tasks


def edited(tmp_path: Path, name: str, *edits: tuple[str, str], add: str = "") -> Path:
    """A copy of ``tasks_separate/<name>`` whose task.toml has each (old, new) replaced
    and ``add`` appended."""
    folder = tmp_path / name
    shutil.copytree(SEPARATE / name, folder)
    toml = folder / "task.toml"
    text = toml.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    toml.write_text(text + add)
    return folder


def verdicts(results: dict[tuple[str, int], TrialResult]) -> dict[str, tuple[str, float | None]]:
    return {task: (r.status, r.reward) for (task, _trial), r in sorted(results.items())}


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One oracle run over the separate tasks and write-greeting, kept for the module."""
    root = tmp_path_factory.mktemp("separate-run")
    tasks = load_tasks(copy_tasks(root))
    asyncio.run(
        run_benchmark(
            tasks, OracleAgent(), SETTINGS, output_dir=root / "out", max_concurrent_tasks=2
        )
    )
    return root


def test_the_verifier_sees_the_kept_artifacts_and_records_a_missing_one(
    oracle_run: Path,
) -> None:
    results = ResultsLog.read(oracle_run / "out" / "results.jsonl")
    assert verdicts(results) == {
        "answer-artifact": ("pass", 1.0),
        "missing-artifact": ("fail", 0.0),
        "tamper-proof": ("pass", 1.0),
        "write-greeting": ("pass", 1.0),
    }
    missing = results[("missing-artifact", 0)]
    assert missing.extra["missing_artifacts"] == ["/app/report.txt"]
    assert missing.error_kind is None
    for (task, trial), result in results.items():
        assert result.artifacts == f"artifacts/{task}/{trial}"
        manifest = ArtifactManifest.load(oracle_run / "out" / result.artifacts)
        assert manifest.task == task
    kept = oracle_run / "out" / "artifacts" / "answer-artifact" / "0" / "files"
    assert (kept / "app" / "answer.txt").read_text() == "42\n"
    assert (kept / "logs" / "artifacts" / "work.log").read_text() == "solved\n"
    # The object form's destination names where the folder is kept.
    assert (oracle_run / "out" / "artifacts" / "tamper-proof" / "0" / "files" / "kept-bin").is_dir()
    leftovers = list((oracle_run / "out" / "artifacts").glob("*/.*partial*"))
    assert leftovers == []
    timings = results[("tamper-proof", 0)].timings
    assert {"artifacts", "verifier_image", "verifier_start", "verifier"} <= set(timings)


async def test_without_its_declared_artifacts_the_verifier_cannot_pass(tmp_path: Path) -> None:
    folder = edited(tmp_path, "answer-artifact", ('["/app/answer.txt", "/app/answer.sh"]', "[]"))
    result = await run_trial(load_task(folder), OracleAgent(), SETTINGS, trial=0)
    assert (result.status, result.reward) == ("fail", 0.0), result.error


@pytest.mark.parametrize("task", ["answer-artifact", "tamper-proof"])
async def test_tampering_in_the_agents_container_cannot_reach_a_separate_verifier(
    task: str, tmp_path: Path
) -> None:
    agent = load_agent(f"{AGENTS}:SeparateTamperer")
    result = await run_trial(load_task(SEPARATE / task), agent, SETTINGS, trial=0)
    assert (result.status, result.reward, result.error_kind) == ("fail", 0.0, None), result.error
    # The control: the same tampering fools the same tests sharing the agent's container
    # (its lying cat is on the default PATH), so the attack is real.
    mode = (
        ("[verifier.environment]", "[unused]")
        if task == "tamper-proof"
        else ('environment_mode = "separate"', "")
    )
    shared = edited(tmp_path, task, mode)
    (shared / "tests" / "Dockerfile").unlink(missing_ok=True)
    assert load_task(shared).config.verifier.environment_mode == "shared"
    control = await run_trial(load_task(shared), agent, SETTINGS, trial=0)
    # Shared mode cannot stop it, only see it: the lying cat shadows the image's cat (the
    # trial is suspect) and the background writer is caught changing the reward.
    assert (control.status, control.error_kind) == ("fail", "reward_tampered"), control.error
    assert control.suspect
    reasons = control.attempts[-1].suspect_reasons
    assert any(reason.startswith("/usr/local/bin/cat:") for reason in reasons), reasons


async def test_a_verifier_sandbox_that_does_not_start_is_a_verifier_failure(
    tmp_path: Path,
) -> None:
    folder = edited(tmp_path, "tamper-proof", ("cpus = 1", "cpus = 4096"))
    result = await run_trial(load_task(folder), OracleAgent(), SETTINGS, trial=0)
    assert (result.status, result.error_kind) == ("infra_error", "verifier_crash")
    assert result.error is not None
    assert "the verifier's sandbox did not start" in result.error
    assert await asyncio.to_thread(list_containers, run_id=RUN_ID) == []


async def test_a_prebuilt_verifier_image_is_mapped_and_gets_the_tests_uploaded(
    tmp_path: Path,
) -> None:
    add = '\n[verifier.environment]\ndocker_image = "python:3.13-slim"\n'
    folder = edited(tmp_path, "answer-artifact", add=add)
    image_map = ImageMap.parse(["python:3.13-slim=hermes-sandbox/debian:bookworm"])
    mapped = TrialSettings(infra_retries=0, image_map=image_map)
    result = await run_trial(load_task(folder), OracleAgent(), mapped, trial=0)
    assert (result.status, result.reward) == ("pass", 1.0), result.error
    offline = TrialSettings(infra_retries=0, offline_builds=True)  # no pull tried
    unmapped = await run_trial(load_task(folder), OracleAgent(), offline, trial=0)
    assert (unmapped.status, unmapped.error_kind) == ("infra_error", "image_build")
    assert unmapped.error is not None
    assert unmapped.error.startswith("verifier image: task answer-artifact: ")
    assert "python:3.13-slim" in unmapped.error
    assert "image_map" in unmapped.error


async def test_a_verifier_image_without_its_tests_is_a_verifier_failure(tmp_path: Path) -> None:
    folder = edited(tmp_path, "tamper-proof")
    (folder / "tests" / "Dockerfile").write_text("FROM hermes-sandbox/debian:bookworm\n")
    result = await run_trial(load_task(folder), OracleAgent(), SETTINGS, trial=0)
    assert (result.status, result.error_kind) == ("infra_error", "verifier_crash")
    assert result.error is not None
    assert "the verifier image has no /tests/test.sh" in result.error


def test_rescore_gives_the_same_results_as_the_run(
    oracle_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = oracle_run / "out"
    assert main(["terminalbench2", "rescore", str(out), "--env.max_concurrent_tasks", "2"]) == 0
    run = ResultsLog.read(out / "results.jsonl")
    rescored = ResultsLog.read(out / "rescore" / "results.jsonl")
    assert verdicts(rescored) == verdicts(run)
    assert rescored[("answer-artifact", 0)].extra["rescored_from"] == {
        "status": "pass",
        "reward": 1.0,
    }
    # write-greeting runs its tests in the agent's sandbox and declares no artifacts.
    assert "shared-mode task" in rescored[("write-greeting", 0)].extra["rescore"]
    summary = json.loads((out / "rescore" / "summary.json").read_text())
    assert summary["overall"]["passed"] == 3
    printed = capsys.readouterr().out
    assert "results per task" in printed
    assert str(out / "rescore" / "summary.json") in printed
    # A second rescore without --env.resume is refused in one line.
    assert main(["terminalbench2", "rescore", str(out)]) == 1
    assert "already holds a rescore" in capsys.readouterr().err


def test_rescore_of_a_run_whose_tasks_moved_names_the_folder_and_the_option(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    shutil.copytree(oracle_run / "out", out, ignore=shutil.ignore_patterns("rescore"))
    moved = tmp_path / "moved"
    shutil.copytree(oracle_run / "tasks", moved)
    tasks = tmp_path / "tasks-here-then-gone"
    shutil.copytree(moved, tasks)
    for manifest_file in out.glob("artifacts/*/*/artifacts.json"):
        data = json.loads(manifest_file.read_text())
        data["task_path"] = str(tasks / data["task"])
        manifest_file.write_text(json.dumps(data))
    shutil.rmtree(tasks)
    assert main(["terminalbench2", "rescore", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "is gone" in err
    assert "--env.tasks_dir" in err
    # Tests edited since the run: the rescore uses them, and says so.
    test_sh = moved / "answer-artifact" / "tests" / "test.sh"
    test_sh.write_text(test_sh.read_text().replace('= "42" ]', '= "43" ]', 1))
    assert main(["terminalbench2", "rescore", str(out), "--env.tasks_dir", str(moved)]) == 0
    rescored = ResultsLog.read(out / "rescore" / "results.jsonl")
    assert rescored[("tamper-proof", 0)].status == "pass"
    assert "tests_changed" not in rescored[("tamper-proof", 0)].extra
    edited = rescored[("answer-artifact", 0)]
    assert (edited.status, edited.extra["tests_changed"]) == ("fail", True)


def test_a_rescore_folder_that_cannot_be_written_is_named_as_such(
    oracle_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    shutil.copytree(oracle_run / "out", out, ignore=shutil.ignore_patterns("rescore"))
    (out / "rescore").write_text("a file where the rescore folder goes")
    assert main(["terminalbench2", "rescore", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert f"output folder {out / 'rescore'} cannot be written" in err
    assert "already holds a rescore" not in err


@pytest.mark.parametrize(
    ("make", "says"),
    [
        ("nothing", "is not a folder"),
        ("empty", "is not a hermes-bench run: it holds no results.jsonl"),
        ("foreign", "is not a trial result"),
    ],
)
def test_rescore_of_a_folder_that_is_not_a_run_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: str, says: str
) -> None:
    folder = tmp_path / "not-a-run"
    if make != "nothing":
        folder.mkdir()
    if make == "foreign":
        (folder / "results.jsonl").write_text('{"hello": 1}\n{"hello": 2}\n')
    assert main(["terminalbench2", "rescore", str(folder)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ")
    assert "\n" not in err
    assert says in err


def test_rescore_without_a_folder_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["terminalbench2", "rescore", "--env.tasks_dir", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "rescore needs the run's folder" in err


def test_rescore_of_a_run_with_nothing_to_reverify_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(SHIPPED / "write-greeting", tasks / "write-greeting")
    out = tmp_path / "out"
    asyncio.run(run_benchmark(load_tasks(tasks), OracleAgent(), SETTINGS, output_dir=out))
    assert main(["terminalbench2", "rescore", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "no trial of this run can be re-verified" in err
    assert "shared-mode task that declares no artifacts" in err


def rescore_process(out: Path, *more: str) -> subprocess.Popen[str]:
    return hermes_bench(
        "terminalbench2", "rescore", str(out), "--env.max_concurrent_tasks", "1", *more
    )


def test_sigterm_stops_a_rescore_cleanly_and_resume_finishes_it(
    oracle_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(oracle_run / "out", out, ignore=shutil.ignore_patterns("rescore"))
    lines = out / "rescore" / "results.jsonl"
    carried = 1  # write-greeting's line is carried over at the start
    first = rescore_process(out)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and (
        not lines.exists() or len(lines.read_text().splitlines()) <= carried
    ):
        time.sleep(0.05)
    first.send_signal(signal.SIGTERM)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 143, err  # 128 + SIGTERM (hermes_sandbox.stop_on_sigterm)
    assert f"results so far kept in {out / 'rescore'}" in err
    assert "Traceback" not in err
    for run_id in (out / "rescore" / "runs.txt").read_text().split():
        assert list_containers(run_id=run_id) == [], f"rescore {run_id} left containers"
    resumed = rescore_process(out, "--env.resume", "true")
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err
    run = ResultsLog.read(out / "results.jsonl")
    assert verdicts(ResultsLog.read(lines)) == verdicts(run)
