"""The sample tasks ship in the package; `hermes-bench samples` and `<suite> list` show them."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from hermes_benchmarks import load_tasks
from hermes_benchmarks._samples import sample_tasks_dir
from tests.benchmarks.docker_support import run_bench

ROOT = Path(__file__).resolve().parents[2]
NAMES = [
    "count-errors",
    "extract-secret",
    "fix-sum-script",
    "make-executable",
    "unique-words",
    "write-greeting",
]


def test_the_samples_are_six_valid_tasks_in_the_package() -> None:
    folder = sample_tasks_dir()
    assert folder.is_relative_to(ROOT / "packages" / "hermes-benchmarks" / "src")
    assert [task.name for task in load_tasks(folder)] == NAMES


def test_samples_prints_the_folder() -> None:
    done = run_bench("samples", timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert Path(done.stdout.strip()) == sample_tasks_dir()


def test_list_prints_every_task_and_runs_nothing(tmp_path: Path) -> None:
    done = run_bench(
        "terminalbench2",
        "list",
        "--env.tasks_dir",
        str(sample_tasks_dir()),
        cwd=tmp_path,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (0, "")
    lines = [line.split("\t") for line in done.stdout.splitlines()]
    assert lines[0] == ["task", "tier", "category", "agent_s", "verifier_s", "image", "verifier"]
    assert [line[0] for line in lines[1:]] == NAMES
    assert lines[NAMES.index("make-executable") + 1][1:] == [
        "hard",
        "permissions",
        "60",
        "30",
        "Dockerfile",
        "shared",
    ]
    assert list(tmp_path.iterdir()) == []  # no output folder, no results: nothing ran


def test_list_of_a_missing_folder_is_one_line() -> None:
    done = run_bench("tblite", "list", "--env.tasks_dir", "/nonexistent/tasks", timeout=120)
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == "error: tasks_dir /nonexistent/tasks does not exist or is not a folder"
    )


def test_the_wheel_carries_the_samples(tmp_path: Path) -> None:
    uv = os.environ.get("UV") or shutil.which("uv")
    if not uv:
        pytest.skip("uv is not available to build the wheel (run the tests through ./dev test)")
    subprocess.run(
        [uv, "build", "--package", "hermes-benchmarks", "--wheel", "--out-dir", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("hermes_benchmarks-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for name in NAMES:
        assert f"hermes_benchmarks/sample_tasks/{name}/task.toml" in names
        assert f"hermes_benchmarks/sample_tasks/{name}/solution/solve.sh" in names
    assert "hermes_benchmarks/view/viewer.html" in names
