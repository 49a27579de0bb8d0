"""Environments written in the reference's style run ``process`` and ``evaluate`` with
only their imports changed: overridden ``collect_trajectories``/``collect_trajectory``
are called, ``_resolve_tools_for_group()``, ``HermesAgentLoop(server=..., ...)`` and
``ToolContext(task_id)`` work, ``dataset_split``/``prompt_field`` are read."""

from __future__ import annotations

import importlib.util
import json
import logging
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from hermes_envs._reference import GroupPath
from hermes_loop.server import Call, ModelRequest, ModelServer, Policy, Turn

from .support import TOKENIZER, server

FIXTURES = Path(__file__).parent / "fixtures" / "reference_style"
DATA = FIXTURES / "data"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("doubling_env", FIXTURES / "doubling_env.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ENVS = _load()


def doubler(request: ModelRequest) -> Turn:
    """Writes twice the number for even numbers, one more than that for odd ones."""
    if not request.tools:
        return Turn("pong")
    if request.turn_index > 0:
        return Turn("done")
    prompt = str(request.messages[-1]["content"])
    number = int(re.findall(r"\d+", prompt)[0])
    answer = 2 * number + (number % 2)
    return Turn(tool_calls=[Call("terminal", {"command": f"echo {answer} > answer.txt"})])


def _config(tmp_path: Path, **values: Any) -> Any:
    return ENVS.config(
        dataset_name=str(DATA),
        tokenizer_name=TOKENIZER,
        data_path_to_save_groups=str(tmp_path / "groups.jsonl"),
        data_dir_to_save_evals=str(tmp_path / "eval"),
        **values,
    )


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("DoublingEnv", GroupPath.COLLECT_TRAJECTORIES),
        ("ByHandDoublingEnv", GroupPath.COLLECT_TRAJECTORY),
    ],
)
async def test_process_calls_the_override_and_rewards_vary(
    tmp_path: Path, name: str, path: GroupPath, caplog: pytest.LogCaptureFixture
) -> None:
    env_class = getattr(ENVS, name)
    caplog.set_level(logging.DEBUG, logger="hermes_envs._base_env")
    async with ModelServer(Policy(doubler)) as model:
        env = env_class(_config(tmp_path, prompt_field="question"), [server(model.base_url)])
        env.n_groups_to_process = 3
        await env.process_manager()
    assert env.group_path is path
    decisions = [r.getMessage() for r in caplog.records if "group path" in r.getMessage()]
    assert len(decisions) == 1
    assert path.value in decisions[0]
    groups = [json.loads(line) for line in (tmp_path / "groups.jsonl").read_text().splitlines()]
    assert len(groups) == 3
    prompts = {group["messages"][0][0]["content"] for group in groups}
    assert prompts == {json.loads(row)["question"] for row in (DATA / "train.jsonl").open()}
    scores = sorted(score for group in groups for score in group["scores"])
    assert scores == [0.25, 0.25, 0.25, 0.25, 1.0, 1.0]  # 7 and 9 are odd: wrong answers
    if name == "DoublingEnv":
        assert env.post_steps == 3
        assert all(group["distill_token_ids"] for group in groups)


async def test_evaluate_by_hand_reads_the_split_and_reaches_each_sandbox(tmp_path: Path) -> None:
    config = _config(tmp_path, prompt_field="question", dataset_split="test")
    async with ModelServer(Policy(doubler)) as model:
        env = ENVS.DoublingEnv(config, [server(model.base_url)])
        await env.run_evaluate()
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert metrics["results"]["all"]["eval/accuracy"] == 0.5  # 10 right, 5 wrong
    samples = [json.loads(line) for line in (tmp_path / "eval" / "samples.jsonl").open()]
    assert sorted(s["score"] for s in samples) == [0.25, 1.0]
    assert {s["prompt"] for s in samples} == {
        json.loads(row)["question"] for row in (DATA / "test.jsonl").open()
    }


async def test_evaluate_through_atropos_server_and_an_overridden_collect_trajectory(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path, prompt_field="question", dataset_split="train")
    async with ModelServer(Policy(doubler)) as model:
        env = ENVS.ByHandDoublingEnv(config, [server(model.base_url)])
        await env.run_evaluate()
    assert env.chat_reply == "pong"
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert metrics["results"]["all"]["eval/accuracy"] == 0.5  # (0.25 + 1.0 + 0.25) / 3
    samples = [json.loads(line) for line in (tmp_path / "eval" / "samples.jsonl").open()]
    assert sorted(s["score"] for s in samples) == [0.25, 0.25, 1.0]
    assert all(s["turns_used"] == 2 for s in samples)
