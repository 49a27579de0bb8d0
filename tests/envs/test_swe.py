"""HermesSweEnv on real parts: a HumanEvalPack-shaped fixture through datasets, the scripted
model server playing the canonical (or the buggy) solution, local sandboxes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes_envs import DatasetLoadError, HermesSweEnv, HermesSweEnvConfig, swe_oracle
from hermes_envs._dataset import load_items
from hermes_envs.envs.swe import REQUIRED_FIELDS
from hermes_loop.server import Call, ModelServer, ModelServerThread, Policy, Script, Turn

from .support import server

FIXTURE = Path(__file__).parent / "fixtures" / "humanevalpack_python.jsonl"
ITEMS = [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def swe_config(**overrides: Any) -> HermesSweEnvConfig:
    base, _ = HermesSweEnv.config_init()
    values = base.model_dump()
    values.update(dataset_name=str(FIXTURE), group_size=2, test_timeout=30)
    values.update(overrides)
    return HermesSweEnvConfig(**values)


@pytest.fixture
async def swe_env() -> AsyncIterator[Any]:
    envs: list[HermesSweEnv] = []

    async def make(url: str, **overrides: Any) -> HermesSweEnv:
        env = HermesSweEnv(swe_config(**overrides), [server(url)])
        envs.append(env)
        await env.setup()
        return env

    yield make
    for env in envs:
        await env.close()


async def _scores(env: HermesSweEnv) -> dict[str, list[float]]:
    scores = {}
    for _ in ITEMS:
        item = await env.get_next_item()
        group, backlog = await env.collect_trajectories(item)
        assert backlog == []
        assert group is not None
        scores[item["task_id"]] = list(group["scores"])
    return scores


async def test_the_canonical_solution_scores_one_per_item(swe_env: Any) -> None:
    async with ModelServer(Policy(swe_oracle(ITEMS))) as model:
        env = await swe_env(model.base_url)
        assert sorted(item["task_id"] for item in env.items) == [i["task_id"] for i in ITEMS]
        item = await env.get_next_item()
        group, _ = await env.collect_trajectories(item)
        assert group is not None
        messages = group["messages"][0]
        assert messages[1]["tool_calls"][0]["function"]["name"] == "write_file"
        assert messages[3]["tool_calls"][0]["function"]["name"] == "terminal"
        rest = await _scores(env)
    assert set(rest) == {i["task_id"] for i in ITEMS}
    assert all(scores == [1.0, 1.0] for scores in rest.values())
    assert env.stats.infra_failures == 0
    assert len(env.pool) == 0


async def test_a_wrong_solution_scores_zero(swe_env: Any) -> None:
    async with ModelServer(Policy(swe_oracle(ITEMS, solution_field="buggy_solution"))) as model:
        env = await swe_env(model.base_url)
        scores = await _scores(env)
    assert all(s == [0.0, 0.0] for s in scores.values())
    assert env.stats.infra_failures == 0


async def test_a_program_that_exits_early_does_not_pass(swe_env: Any) -> None:
    cheat = Script(
        [
            Turn(
                tool_calls=[
                    Call("write_file", {"path": "solution.py", "content": "raise SystemExit(0)\n"})
                ]
            ),
            Turn("Done."),
        ]
    )
    async with ModelServer(cheat) as model:
        env = await swe_env(model.base_url, group_size=1)
        group, _ = await env.collect_trajectories(ITEMS[0])
    assert group is not None
    assert group["scores"] == [0.0]


async def test_no_solution_file_scores_zero(swe_env: Any) -> None:
    async with ModelServer(Script([Turn("I will not write anything.")])) as model:
        env = await swe_env(model.base_url, group_size=1)
        group, _ = await env.collect_trajectories(ITEMS[1])
    assert group is not None
    assert group["scores"] == [0.0]


async def test_web_tools_come_only_when_enabled(swe_env: Any) -> None:
    plain = await swe_env("http://127.0.0.1:9/v1")
    names = {s["function"]["name"] for s in plain.resolve_tools(ITEMS[0]).schemas()}
    assert {"terminal", "write_file", "read_file"} <= names
    assert not any(name.startswith("web_") for name in names)
    web = await swe_env("http://127.0.0.1:9/v1", enabled_toolsets=["terminal", "file", "web"])
    names = {s["function"]["name"] for s in web.resolve_tools(ITEMS[0]).schemas()}
    assert any(name.startswith("web_") for name in names)


def test_parquet_and_jsonl_give_the_same_items(tmp_path: Path) -> None:
    import datasets

    parquet = tmp_path / "tasks.parquet"
    datasets.Dataset.from_list(ITEMS).to_parquet(str(parquet))
    assert load_items(str(parquet), required=REQUIRED_FIELDS) == ITEMS
    assert load_items(str(FIXTURE), required=REQUIRED_FIELDS) == ITEMS


def test_a_row_without_a_needed_field_is_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    rows = [dict(ITEMS[0]), {k: v for k, v in ITEMS[1].items() if k != "entry_point"}]
    broken.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DatasetLoadError, match=r"row 1 has no entry_point"):
        load_items(str(broken), required=REQUIRED_FIELDS)


def test_an_unknown_file_type_is_named(tmp_path: Path) -> None:
    odd = tmp_path / "tasks.txt"
    odd.write_text("hello\n")
    with pytest.raises(DatasetLoadError, match=r"unknown file type '\.txt'"):
        load_items(str(odd))


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "swe_env.py"
    script.write_text("from hermes_envs import HermesSweEnv\nHermesSweEnv.cli()\n")
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_a_dataset_that_cannot_be_loaded_offline_names_the_option(tmp_path: Path) -> None:
    done = _cli(
        tmp_path,
        "process",
        "--env.dataset_name",
        "no-such-org/no-such-dataset",
        "--openai.base_url",
        "http://127.0.0.1:9/v1",
    )
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert "--env.dataset_name" in errors[0]
    assert "no-such-org/no-such-dataset" in errors[0]
    assert "Traceback" not in done.stderr


def test_process_on_a_local_file_writes_scored_groups(tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    with ModelServerThread(Policy(swe_oracle(ITEMS))) as model:
        done = _cli(
            tmp_path,
            "process",
            "--env.dataset_name",
            str(FIXTURE),
            "--env.total_steps",
            str(len(ITEMS)),
            "--env.group_size",
            "2",
            "--env.data_path_to_save_groups",
            str(out),
            "--openai.base_url",
            model.base_url,
            "--openai.model_name",
            "scripted",
        )
    assert done.returncode == 0, done.stderr[-3000:]
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(groups) == len(ITEMS)
    assert all(group["scores"] == [1.0, 1.0] for group in groups)


async def test_evaluate_writes_the_pass_rate(tmp_path: Path) -> None:
    where = tmp_path / "eval"
    async with ModelServer(Policy(swe_oracle(ITEMS))) as model:
        env = HermesSweEnv(
            swe_config(data_dir_to_save_evals=str(where), eval_limit=2), [server(model.base_url)]
        )
        await env.run_evaluate()
    results = json.loads((where / "metrics.json").read_text())["results"]["all"]
    assert results == {"eval/pass_rate": 1.0, "eval/scored": 2.0, "eval/infra_failures": 0.0}
    samples = [json.loads(line) for line in (where / "samples.jsonl").read_text().splitlines()]
    assert [s["score"] for s in samples] == [1.0, 1.0]
