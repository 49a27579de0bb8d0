"""What a trial keeps to explain its verdict: the agent's conversation (ATIF), what the
oracle printed, the verifier's output; capped, secrets redacted, kept on a timeout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hermes_benchmarks import HermesAgent, OracleAgent, TrialSettings, load_task, run_trial
from hermes_benchmarks._record import REDACTED, TrialRecord, agent_secrets
from hermes_loop.server import Call, ModelServer, Script, Turn
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason

DOCKER = docker_skip_reason()
needs_docker = pytest.mark.skipif(DOCKER is not None, reason=str(DOCKER))
SETTINGS = TrialSettings(infra_retries=0)
KEY = "sk-test-0123456789abcdef"


def test_files_are_capped_and_stay_whole(tmp_path: Path) -> None:
    record = TrialRecord(tmp_path, cap=10_000)
    written = record.write_text("agent/output.txt", "a" * 50_000 + "THE END")
    data = written.read_text()
    assert len(data) < 10_100
    assert data.endswith("THE END")
    assert "bytes cut by the record's cap" in data
    big = {"steps": [{"message": "b" * 40_000}, {"message": "c" * 40_000}], "n": 2}
    path = record.write_json("agent/trajectory.json", big)
    assert path.stat().st_size <= 10_000
    kept = json.loads(path.read_text())  # still JSON, shape kept
    assert kept["n"] == 2
    assert len(kept["steps"]) == 2
    assert list(tmp_path.rglob("*.tmp")) == []
    with pytest.raises(ValueError, match="leaves the trial's folder"):
        record.write_text("../outside.txt", "x")


def test_secrets_never_reach_a_file(tmp_path: Path) -> None:
    record = TrialRecord(tmp_path, secrets=[KEY, "short", ""])
    record.write_text("a.txt", f"the key is {KEY}; short stays")
    record.write_json("b.json", {"nested": [f"Bearer {KEY}"], KEY: 1})
    text = (tmp_path / "a.txt").read_text() + (tmp_path / "b.json").read_text()
    assert KEY not in text
    assert text.count(REDACTED) == 3
    assert "short stays" in text  # too short to look for: ordinary words are not cut


def test_an_agent_names_its_secrets() -> None:
    assert agent_secrets(HermesAgent("http://127.0.0.1:1/v1", "m", api_key=KEY)) == [KEY]
    assert agent_secrets(object()) == []


@needs_docker
async def test_an_oracle_trial_keeps_its_conversation_and_the_verifier_output(
    tmp_path: Path,
) -> None:
    task = load_task(SHIPPED / "count-errors")
    result = await run_trial(task, OracleAgent(), SETTINGS, trial=0, output_dir=tmp_path)
    assert result.status == "pass"
    assert result.artifacts == "artifacts/count-errors/0"
    folder = tmp_path / result.artifacts
    trajectory = json.loads((folder / "agent" / "trajectory.json").read_text())
    assert trajectory["schema_version"].startswith("ATIF-v1.")
    assert trajectory["agent"]["name"] == "oracle"
    assert [s["source"] for s in trajectory["steps"]] == ["user", "agent", "agent"]
    call = trajectory["steps"][1]["tool_calls"][0]
    assert call["function_name"] == "terminal"
    assert "bash /solution/solve.sh" in call["arguments"]["command"]
    output = json.loads(trajectory["steps"][1]["observation"]["results"][0]["content"])
    assert (folder / "agent" / "output.txt").read_text() == output["output"]
    assert output["exit_code"] == 0
    messages = json.loads((folder / "agent" / "messages.json").read_text())
    assert messages["stop_reason"] == "natural"
    verdict = json.loads((folder / "verifier" / "result.json").read_text())
    assert verdict == {"exit_code": 0, "timed_out": False, "output_truncated": False}
    assert (folder / "verifier" / "test-stdout.txt").is_file()


@needs_docker
async def test_a_model_that_prints_the_key_leaves_it_in_no_file(tmp_path: Path) -> None:
    task = load_task(SHIPPED / "write-greeting")
    script = Script(
        [
            Turn(
                f"I will echo {KEY}",
                tool_calls=[Call("terminal", {"command": f"echo {KEY} | tee /app/leak.txt"})],
            ),
            Turn(f"done, key {KEY}"),
        ]
    )
    async with ModelServer(script) as server:
        agent = HermesAgent(server.base_url, "scripted", api_key=KEY)
        result = await run_trial(task, agent, SETTINGS, trial=0, output_dir=tmp_path)
    assert result.status == "fail"  # it never wrote the greeting
    trajectory = json.loads(
        (tmp_path / str(result.artifacts) / "agent" / "trajectory.json").read_text()
    )
    assert REDACTED in trajectory["steps"][1]["message"]
    assert files_holding(tmp_path, KEY) == []


def files_holding(root: Path, secret: str) -> list[Path]:
    """Every file under ``root`` whose bytes hold ``secret``."""
    return [p for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


@needs_docker
async def test_an_agent_stopped_by_its_timeout_keeps_its_conversation(tmp_path: Path) -> None:
    folder = tmp_path / "task"
    shutil.copytree(SHIPPED / "write-greeting", folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 60", "timeout_sec = 3", 1))
    script = Script(
        [Turn("sleeping", tool_calls=[Call("terminal", {"command": "sleep 30", "timeout": 60})])]
    )
    async with ModelServer(script) as server:
        agent = HermesAgent(server.base_url, "scripted")
        result = await run_trial(
            load_task(folder), agent, SETTINGS, trial=0, output_dir=tmp_path / "out"
        )
    assert result.extra.get("agent_timed_out") is True
    trajectory = json.loads(
        (tmp_path / "out" / str(result.artifacts) / "agent" / "trajectory.json").read_text()
    )
    assert trajectory["extra"]["stop_reason"] == "budget"
    assert trajectory["steps"][1]["tool_calls"][0]["arguments"]["command"] == "sleep 30"
