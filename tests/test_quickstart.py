"""The main job (``./dev demo``, examples/quickstart.py) runs end to end and passes its checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "quickstart.py"


def _demo(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DEMO), *args],
        cwd=cwd,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_demo_runs_terminal_test_process_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    done = _demo("--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.rstrip().splitlines()
    assert lines[-1] == "ok"
    assert lines[-2] == f"scored groups: {out}"
    header = next(line for line in lines if "tasks" in line and "mean score" in line)
    row = lines[lines.index(header) + 2]
    columns = [cell.strip() for cell in header.strip("┃ ").split("┃")]
    values = [cell.strip() for cell in row.strip("│ ").split("│")]
    table = dict(zip(columns, values, strict=True))
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(groups) == 4
    assert table["tasks"] == "4"
    assert table["rollouts"] == "8"
    assert table["mean score"] == "1.000"
    assert table["infra failures"] == "0"
    assert int(table["tokens"]) == sum(len(t) for g in groups for t in g["tokens"]) > 0
    assert all(g["scores"] == [1.0, 1.0] for g in groups)
    assert "UserWarning" not in done.stderr


def test_demo_help_explains_the_options_and_runs_nothing(tmp_path: Path) -> None:
    done = _demo("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ./dev demo")
    for option in ("--groups", "--group-size", "--phase", "--backend", "--isolation", "--out"):
        assert option in done.stdout
    assert "writing scored groups" not in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_the_dev_script_passes_help_to_the_demo() -> None:
    done = subprocess.run(
        [str(ROOT / "dev"), "demo", "--help"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: ./dev demo" in done.stdout
