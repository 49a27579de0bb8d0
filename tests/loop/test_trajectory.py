"""A rollout as harbor's ATIF trajectory: per-turn records, and harbor's own models read it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import urllib.request
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hermes_loop import (
    AgentLoop,
    AgentResult,
    OpenAIChatServer,
    RolloutProgress,
    Tool,
    ToolInvocation,
)
from hermes_loop._trajectory import ATIF_VERSION, atif_trajectory
from hermes_loop.server import Call, ModelServer, Script, Turn

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
USER = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Echo hello and hi."},
]

#: harbor's release whose ATIF models the trajectory is checked against (Python >= 3.12).
HARBOR_WHEEL = "harbor-0.26.0-py3-none-any.whl"
PYPI_SIMPLE = "https://pypi.org/simple/harbor/"


async def echo(arguments: dict[str, Any], call: ToolInvocation) -> str:
    return f"echo: {arguments['text']}"


async def _rollout() -> AgentResult:
    script = Script(
        [
            Turn(
                "Two echoes.",
                tool_calls=[
                    Call("echo", {"text": "hello"}, id="c1"),
                    Call("echo", "{not json", id="c2"),
                ],
                reasoning="Both at once.",
            ),
            Turn("Done: echo: hello"),
        ]
    )
    async with ModelServer(script) as server:
        endpoint = OpenAIChatServer(
            base_url=server.base_url, model="scripted", max_retries=0, timeout=10
        )
        async with AgentLoop(endpoint, [Tool("echo", "Echo.", SCHEMA, echo)]) as loop:
            return await loop.run(USER, task_id="t-atif")


async def test_the_loop_records_each_turn() -> None:
    result = await _rollout()
    assert len(result.turns) == result.turns_used == 2
    first, last = result.turns
    assert first.started_at <= last.started_at
    assert first.model_seconds > 0
    assert last.model_seconds > 0
    assert first.tools_seconds > 0  # two tool calls ran in the first turn
    assert last.tools_seconds == 0.0  # the last answer called nothing
    for turn in result.turns:
        assert turn.usage["prompt_tokens"] > 0
        assert turn.usage["completion_tokens"] > 0
    assert sum(t.usage["prompt_tokens"] for t in result.turns) == result.usage["prompt_tokens"]
    again = AgentResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.turns == result.turns


async def test_a_rollout_becomes_atif_steps() -> None:
    result = await _rollout()
    made = atif_trajectory(result, model_name="scripted", agent_version="1.2.3")
    assert made["schema_version"] == ATIF_VERSION
    assert made["session_id"] == "t-atif"
    assert made["agent"] == {"name": "hermes-agent", "version": "1.2.3", "model_name": "scripted"}
    steps = made["steps"]
    assert [s["step_id"] for s in steps] == [1, 2, 3, 4]
    assert [s["source"] for s in steps] == ["system", "user", "agent", "agent"]
    assert steps[0]["message"] == "You are terse."
    call_step = steps[2]
    assert call_step["message"] == "Two echoes."
    assert call_step["reasoning_content"] == "Both at once."
    assert call_step["tool_calls"][0] == {
        "tool_call_id": "c1",
        "function_name": "echo",
        "arguments": {"text": "hello"},
    }
    # Malformed arguments: an object as ATIF requires, the model's text kept.
    assert call_step["tool_calls"][1]["arguments"] == {}
    assert call_step["tool_calls"][1]["extra"] == {"raw_arguments": "{not json"}
    results = call_step["observation"]["results"]
    assert [r["source_call_id"] for r in results] == ["c1", "c2"]
    assert results[0]["content"] == "echo: hello"
    assert "invalid" in results[1]["content"].lower() or "json" in results[1]["content"].lower()
    assert call_step["metrics"]["prompt_tokens"] == result.turns[0].usage["prompt_tokens"]
    assert call_step["extra"]["tools_seconds"] == result.turns[0].tools_seconds
    datetime.fromisoformat(call_step["timestamp"].replace("Z", "+00:00"))
    assert steps[3]["message"] == "Done: echo: hello"
    assert "observation" not in steps[3]
    final = made["final_metrics"]
    assert final["total_steps"] == 4
    assert final["total_prompt_tokens"] == result.usage["prompt_tokens"]
    assert final["total_completion_tokens"] == result.usage["completion_tokens"]
    assert made["extra"]["stop_reason"] == "natural"
    assert [e["kind"] for e in made["extra"]["tool_errors"]] == ["invalid_arguments"]
    json.dumps(made)  # JSON-ready as it is


def test_odd_conversations_still_make_a_valid_shape() -> None:
    odd = AgentResult(
        messages=[
            {"role": "developer", "content": [{"type": "text", "text": "be brief"}]},
            {"role": "tool", "tool_call_id": "x", "content": "nobody asked"},
            {"role": "assistant", "content": None, "tool_calls": ["not a call"]},
        ],
        turns_used=1,
        finished_naturally=False,
        reasoning_per_turn=[None],
        tool_errors=[],
        stop_reason="max_turns",
    )
    made = atif_trajectory(odd)
    assert [s["source"] for s in made["steps"]] == ["system", "system", "agent"]
    assert made["steps"][0]["message"] == "be brief"
    assert made["steps"][0]["extra"] == {"role": "developer"}
    assert made["steps"][1]["observation"]["results"][0]["source_call_id"] == "x"
    assert made["steps"][2]["tool_calls"][0]["arguments"] == {}
    empty = AgentResult([], 0, False, [], [])
    assert atif_trajectory(empty)["steps"] == [
        {"step_id": 1, "source": "system", "message": "", "extra": {"empty": True}}
    ]


@pytest.fixture(scope="session")
def harbor_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """harbor's ATIF models (``harbor/models/trajectories``), from its wheel on PyPI.

    Only those modules are unpacked (they need nothing but pydantic); the rest of harbor
    (litellm, supabase, ...) is not installed. Skipped when PyPI cannot be reached.
    """
    if sys.version_info < (3, 12):
        pytest.skip(f"{HARBOR_WHEEL} needs Python 3.12+")
    cache = Path(os.environ.get("HERMES_TEST_CACHE", Path.home() / ".cache" / "hermes-tests"))
    wheel_path = cache / HARBOR_WHEEL
    if not wheel_path.is_file():
        try:
            _download_wheel(wheel_path)
        except OSError as exc:
            pytest.skip(f"cannot download {HARBOR_WHEEL} from PyPI: {exc}")
    root = tmp_path_factory.mktemp("harbor")
    with zipfile.ZipFile(wheel_path) as wheel:
        for name in wheel.namelist():
            if name.startswith("harbor/models/trajectories/"):
                wheel.extract(name, root)
    # A bare package root: harbor's own __init__ pulls in the whole framework.
    (root / "harbor" / "__init__.py").write_text("")
    (root / "harbor" / "models" / "__init__.py").write_text("")
    return root


def _download_wheel(target: Path) -> None:
    """Fetch harbor's wheel through PyPI's simple index (PEP 691 JSON), checking its hash.

    Raises:
        OSError: PyPI unreachable, the file not listed, or a hash mismatch.
    """
    request = urllib.request.Request(
        PYPI_SIMPLE, headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        index = json.load(answer)
    files = [f for f in index.get("files", []) if f.get("filename") == HARBOR_WHEEL]
    if not files:
        raise OSError(f"{HARBOR_WHEEL} is not listed at {PYPI_SIMPLE}")
    with urllib.request.urlopen(files[0]["url"], timeout=120) as answer:
        data = answer.read()
    expected = files[0].get("hashes", {}).get("sha256")
    if expected and hashlib.sha256(data).hexdigest() != expected:
        raise OSError(f"{HARBOR_WHEEL}: sha256 does not match the index")
    target.parent.mkdir(parents=True, exist_ok=True)
    aside = target.with_suffix(".part")
    aside.write_bytes(data)
    aside.replace(target)


def _harbor_reads(models: Path, trajectory: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    program = (
        "import json, sys\n"
        "from harbor.models.trajectories import Trajectory\n"
        "t = Trajectory.model_validate(json.load(sys.stdin))\n"
        "print(len(t.steps))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", program],
        input=json.dumps(trajectory),
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(models)},
    )


async def test_harbors_own_models_accept_the_trajectory(harbor_models: Path) -> None:
    result = await _rollout()
    made = atif_trajectory(
        result,
        model_name="scripted",
        tools=[{"type": "function", "function": {"name": "echo", "parameters": SCHEMA}}],
    )
    checked = _harbor_reads(harbor_models, made)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == "4"
    # The check can fail: a step harbor forbids (reasoning on a user step) is refused.
    broken = json.loads(json.dumps(made))
    broken["steps"][1]["reasoning_content"] = "users do not reason here"
    refused = _harbor_reads(harbor_models, broken)
    assert refused.returncode != 0
    assert "only applicable when source is 'agent'" in refused.stderr


async def test_a_cancelled_rollout_keeps_what_it_did() -> None:
    started = asyncio.Event()

    async def hang(arguments: dict[str, Any], call: ToolInvocation) -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    script = Script([Turn("first", tool_calls=[Call("hang", {"text": "x"}, id="h1")])])
    async with ModelServer(script) as server:
        endpoint = OpenAIChatServer(
            base_url=server.base_url, model="scripted", max_retries=0, timeout=10
        )
        async with AgentLoop(endpoint, [Tool("hang", "Hang.", SCHEMA, hang)]) as loop:
            progress = RolloutProgress()
            running = asyncio.ensure_future(loop.run(USER, task_id="t-cut", progress=progress))
            await asyncio.wait_for(started.wait(), 10)
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await running
    cut = progress.result()
    assert cut.stop_reason == "budget"
    assert cut.task_id == "t-cut"
    assert [m["role"] for m in cut.messages] == ["system", "user", "assistant"]
    assert cut.messages[2]["tool_calls"][0]["id"] == "h1"
    assert cut.turns_used == 1
    (turn,) = cut.turns  # the model's answer is recorded; its tool never finished
    assert turn.usage["prompt_tokens"] > 0
    assert turn.tools_seconds == 0.0
    assert cut.usage["prompt_tokens"] > 0
    assert atif_trajectory(cut)["steps"][2]["tool_calls"][0]["tool_call_id"] == "h1"
