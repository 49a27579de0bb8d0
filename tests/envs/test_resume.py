"""``process`` continues a killed run in the same file, every group once, and refuses to
write over (or beside) a finished one without being asked."""

from __future__ import annotations

import asyncio
import glob
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from hermes_envs import GroupFileExistsError
from hermes_loop.server import Call, ModelRequest, ModelServer, Policy, Turn

from .support import TOKENIZER, kill_9_half_way, run_command

SCRIPT = Path(__file__).parent / "fixtures" / "reference_style" / "doubling_env.py"
DATA = SCRIPT.parent / "data"
QUESTIONS = [json.loads(row)["question"] for row in (DATA / "train.jsonl").open()]


def slow_doubler(request: ModelRequest) -> Turn:
    """Doubles the number into answer.txt, taking its time (so a run can be killed)."""
    time.sleep(0.3)
    if request.turn_index > 0:
        return Turn("done")
    number = int(re.findall(r"\d+", str(request.messages[-1]["content"]))[0])
    return Turn(tool_calls=[Call("terminal", {"command": f"echo {2 * number} > answer.txt"})])


def command(out: Path, url: str, *more: str) -> list[str]:
    return [
        sys.executable,
        str(SCRIPT),
        "process",
        "--env.dataset_name",
        str(DATA),
        "--env.prompt_field",
        "question",
        "--env.tokenizer_name",
        TOKENIZER,
        "--env.enabled_toolsets",
        "terminal,file",
        "--env.group_size",
        "2",
        "--env.max_num_workers_per_node",
        "1",
        "--env.data_path_to_save_groups",
        str(out),
        "--openai.base_url",
        url,
        "--openai.model_name",
        "scripted",
        *more,
    ]


def lines(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def questions(out: Path) -> Counter[str]:
    return Counter(str(group["messages"][0][0]["content"]) for group in lines(out))  # type: ignore[index]


async def test_kill_9_half_way_then_the_same_command_finishes_the_same_file(
    tmp_path: Path,
) -> None:
    out = tmp_path / "groups.jsonl"
    async with ModelServer(Policy(slow_doubler)) as model:
        argv = command(out, model.base_url, "--env.total_steps", "6")
        first = await kill_9_half_way(argv, cwd=tmp_path, out=out)
        written = len(lines(out))
        assert 2 <= written < 6
        again = await asyncio.to_thread(run_command, argv, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(lines(out)) == 6
    assert questions(out) == Counter(dict.fromkeys(QUESTIONS, 2))  # each twice
    assert not (tmp_path / "groups_1.jsonl").exists()
    left = glob.glob(os.path.join(tempfile.gettempdir(), f"hermes-local-{first}-*"))
    assert left == []
    # Finished: the same command again is refused in one line naming the choices.
    async with ModelServer(Policy(slow_doubler)) as model:
        argv = command(out, model.base_url, "--env.total_steps", "6")
        refused = await asyncio.to_thread(run_command, argv, cwd=tmp_path)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 1
    assert len(errors) == 1
    assert "already holds the 6 group(s) of a finished run: pass --env.resume true" in errors[0]
    assert len(lines(out)) == 6


async def test_resume_adds_to_a_finished_file_and_a_foreign_file_is_refused(
    tmp_path: Path,
) -> None:
    from tests.envs.fixtures.reference_style.doubling_env import DoublingEnv, config

    out = tmp_path / "groups.jsonl"
    values = {
        "dataset_name": str(DATA),
        "prompt_field": "question",
        "tokenizer_name": TOKENIZER,
        "data_path_to_save_groups": str(out),
    }
    async with ModelServer(Policy(slow_doubler)) as model:
        from .support import server

        for total, resume in ((2, False), (3, True)):
            env = DoublingEnv(config(resume=resume, **values), [server(model.base_url)])
            env.n_groups_to_process = total
            await env.process_manager()
            assert len(lines(out)) == total
    assert questions(out) == Counter(dict.fromkeys(QUESTIONS, 1))
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"tokens": []}\n')
    unrecorded = tmp_path / "served.jsonl"  # e.g. written by serve: never cut
    unrecorded.write_text('{"tokens": []}\n' * 3)
    (tmp_path / "served.jsonl.items").write_text("")
    with pytest.raises(GroupFileExistsError, match="holds 3 group"):
        DoublingEnv(
            config(**{**values, "data_path_to_save_groups": str(unrecorded)}),
            [server("http://127.0.0.1:9/v1")],
        )
    assert len(unrecorded.read_text().splitlines()) == 3
    with pytest.raises(GroupFileExistsError, match="no record of their items"):
        DoublingEnv(
            config(**{**values, "data_path_to_save_groups": str(foreign)}),
            [server("http://127.0.0.1:9/v1")],
        )


def test_item_seeds_are_made_once_per_item_and_equal_item_seed() -> None:
    from hermes_envs._resume import ItemSeeds, item_seed

    seeds = ItemSeeds(size=2)
    first, twin = {"n": 1, "q": "é"}, {"n": 1, "q": "é"}
    assert seeds(first) == item_seed(first) == seeds(twin)  # equal items, equal seeds
    first["n"] = 2  # changed after its seed was made: its group keeps that seed
    assert seeds(first) == item_seed(twin) != item_seed(first)
    seeds({"other": 1})
    seeds({"other": 2})  # the oldest two are forgotten: first's seed is made anew
    assert seeds(first) == item_seed(first)
    assert seeds(7) == item_seed(7)
    assert seeds("7") == item_seed("7") != seeds(7)
