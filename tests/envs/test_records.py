"""Per-rollout records of ``process`` and ``evaluate`` (``hermes_envs._records``): one
records line per written group (or evaluated item), its rollouts' transcripts, failures
and tokens, secrets redacted, each record capped, and a continued run neither losing
nor repeating a group's record."""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from atroposlib.envs.server_handling.server_manager import APIServerConfig

from hermes_envs import TerminalTestEnv, terminal_test_oracle
from hermes_envs._record_files import EVAL_RECORDS, records_path
from hermes_envs._records import RECORD_CAP, capped
from hermes_envs.envs.terminal_test import TASKS, task_prompt
from hermes_loop.server import Call, ModelRequest, ModelServer, Policy, Turn

from .support import TOKENIZER, env_config, kill_9_half_way, process_config, run_command, server

KEY = "sk-records-secret-0123456789"


def mixed(request: ModelRequest) -> Turn:
    """The oracle, except: the greeting task gets the wrong text (score 0, and a tool
    output that says so), the todo task's model call fails (an infrastructure failure),
    the quote task's final answer repeats the API key."""
    text = str([m for m in request.messages if m.get("role") == "user"][-1]["content"])
    answered = any(m.get("role") == "tool" for m in request.messages)
    if text == task_prompt(TASKS[0]):
        if answered:
            return Turn("Done.")
        command = "echo 'writing the wrong greeting'; printf goodbye > greeting.txt"
        return Turn(tool_calls=[Call("terminal", {"command": command})])
    if text == task_prompt(TASKS[2]):
        raise RuntimeError("the scripted model breaks here")
    if text == task_prompt(TASKS[3]) and answered:
        return Turn(f"Created it. My key is {KEY}.", reasoning="I should not say the key")
    return terminal_test_oracle(request)


def wrong_greeting(request: ModelRequest) -> Turn:
    """The oracle, except that the greeting task gets the wrong text (score 0)."""
    text = str([m for m in request.messages if m.get("role") == "user"][-1]["content"])
    if text == task_prompt(TASKS[0]) and not any(m.get("role") == "tool" for m in request.messages):
        return Turn(tool_calls=[Call("terminal", {"command": "printf goodbye > greeting.txt"})])
    return terminal_test_oracle(request)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def process(out: Path, groups: int, *, url: str, kind: str = "openai", **more: Any) -> None:
    env = TerminalTestEnv(process_config(out, write_viewer_html=False, **more), [server(url, kind)])
    env.n_groups_to_process = groups
    await env.process_manager()


def check_against_group_file(out: Path) -> list[dict[str, Any]]:
    """Every group line has its records line (same index, same scores, the tokens'
    trained marks equal to its masks); returns the records lines."""
    written = lines(out)
    records = lines(records_path(out))
    assert [r["group"] for r in records] == list(range(len(written)))
    for group, record in zip(written, records, strict=True):
        scored = [r for r in record["rollouts"] if r["status"] == "scored"]
        assert [r["score"] for r in scored] == group["scores"]
        for rollout, tokens, masks in zip(scored, group["tokens"], group["masks"], strict=True):
            made = rollout["tokens"]
            assert made["count"] == len(tokens) == len(made["pieces"])
            assert made["trained"] == "".join("0" if m == -100 else "1" for m in masks)
            assert made["trained_count"] == sum(1 for m in masks if m != -100) > 0
        for rollout, messages in zip(scored, group["messages"], strict=True):
            if not rollout.get("from_group_line"):
                assert rollout["messages"] == messages
    return records


async def test_process_records_every_written_group_beside_its_file(tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    async with ModelServer(Policy(wrong_greeting)) as model:
        await process(out, len(TASKS), url=model.base_url)
    records = check_against_group_file(out)
    assert len(records) == len(TASKS)
    greeting = next(r for r in records if r["item"]["id"] == "greeting")
    for rollout in greeting["rollouts"]:
        assert rollout["score"] == 0.0
        assert rollout["stop_reason"] == "natural"
        assert rollout["turns_used"] == len(rollout["turns"]) == 2
        assert rollout["turns"][0]["usage"]["completion_tokens"] > 0
        assert rollout["turns"][0]["model_seconds"] > 0
        call = rollout["messages"][1]["tool_calls"][0]
        assert json.loads(call["function"]["arguments"])["command"].startswith("printf goodbye")
        assert rollout["messages"][2]["role"] == "tool"
        # The trained tokens are the model's own text: its tool call is among them.
        trained = "".join(
            piece
            for piece, mark in zip(
                rollout["tokens"]["pieces"], rollout["tokens"]["trained"], strict=True
            )
            if mark == "1"
        )
        assert "printf goodbye" in trained
        assert "Create the file" not in trained
    # The group file holds only what Atropos reads: nothing of the records.
    assert all("rollouts" not in group and "turns" not in group for group in lines(out))


async def test_phase2_records_the_served_tokens_and_masks(tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        await process(out, 2, url=model.url, kind="vllm")
    records = check_against_group_file(out)
    assert len(records) == 2
    assert all(r["tokens"]["score"] == 1.0 for line in records for r in line["rollouts"])


async def test_a_continued_run_neither_loses_nor_repeats_a_record(tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        await process(out, 2, url=model.base_url, total_steps=2)
        # As a kill -9 between a group's line and its record leaves it: the last record
        # missing and a torn line in its place.
        target = records_path(out)
        first = target.read_text().splitlines()[0]
        target.write_text(first + "\n" + '{"group": 1, "rollo')
        await process(out, 4, url=model.base_url, total_steps=4, resume=True)
    records = check_against_group_file(out)
    assert [r["group"] for r in records] == [0, 1, 2, 3]
    assert records[0] == json.loads(first)
    rebuilt = records[1]["rollouts"]
    assert len(rebuilt) == 2
    assert all(r["from_group_line"] and r["tokens"]["count"] > 0 for r in rebuilt)
    assert not any(r.get("from_group_line") for line in records[2:] for r in line["rollouts"])


async def test_evaluate_records_each_item_with_failures_and_no_secret(tmp_path: Path) -> None:
    where = tmp_path / "eval"
    async with ModelServer(Policy(mixed)) as model:
        endpoint = APIServerConfig(
            base_url=model.base_url,
            model_name="scripted",
            server_type="openai",
            health_check=False,
            api_key=KEY,
        )
        config = env_config(data_dir_to_save_evals=str(where), infra_retries=1)
        env = TerminalTestEnv(config, [endpoint])
        await env.run_evaluate()
    text = (where / EVAL_RECORDS).read_text()
    assert KEY not in text
    records = sorted(lines(where / EVAL_RECORDS), key=lambda line: line["group"])
    assert [r["item"]["id"] for r in records] == [t["id"] for t in TASKS]
    samples = {json.loads(s)["item"]["id"]: json.loads(s) for s in (where / "samples.jsonl").open()}
    for record in records:
        last = record["rollouts"][0]
        assert last["score"] == samples[record["item"]["id"]]["score"]
    greeting, answer, todo, quote = (r["rollouts"] for r in records)
    assert greeting[0]["score"] == 0.0
    assert "writing the wrong greeting" in greeting[0]["messages"][2]["content"]
    assert answer[0]["score"] == 1.0
    # The broken item: its last try, then the one retried before it.
    assert [(r["status"], r["error_kind"], r.get("retried")) for r in todo] == [
        ("infra_failure", "model_endpoint", None),
        ("infra_failure", "model_endpoint", True),
    ]
    assert "the scripted model breaks here" in todo[0]["error"]
    assert quote[0]["messages"][-1]["content"] == "Created it. My key is [REDACTED]."
    assert quote[0]["reasoning"][-1] == "I should not say the key"
    # A second evaluation in the same folder starts its records afresh.
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        env = TerminalTestEnv(config, [server(model.base_url)])
        await env.run_evaluate()
    again = lines(where / EVAL_RECORDS)
    assert len(again) == len(TASKS)
    assert all(r["rollouts"][0]["score"] == 1.0 for r in again)


async def test_a_group_the_writer_skips_shifts_no_record(tmp_path: Path) -> None:
    # Scores must differ: only the greeting group (one wrong try, one right) is written.
    tries = itertools.count()

    def every_other_greeting_wrong(request: ModelRequest) -> Turn:
        text = str([m for m in request.messages if m.get("role") == "user"][-1]["content"])
        first = not any(m.get("role") == "tool" for m in request.messages)
        if text == task_prompt(TASKS[0]) and first and next(tries) % 2 == 0:
            return Turn(tool_calls=[Call("terminal", {"command": "printf no > greeting.txt"})])
        return terminal_test_oracle(request)

    out = tmp_path / "groups.jsonl"
    async with ModelServer(Policy(every_other_greeting_wrong)) as model:
        await process(out, len(TASKS), url=model.base_url, ensure_scores_are_not_same=True)
    records = check_against_group_file(out)
    assert [(r["group"], r["item"]["id"]) for r in records] == [(0, "greeting")]
    assert sorted(r["score"] for r in records[0]["rollouts"]) == [0.0, 1.0]


def slow_oracle(request: ModelRequest) -> Turn:
    """The oracle, taking its time (so that a run can be killed half way)."""
    time.sleep(0.2)
    return terminal_test_oracle(request)


async def test_kill_9_then_the_same_command_keeps_each_record_once(tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    script = tmp_path / "terminal_test_env.py"
    script.write_text("from hermes_envs import TerminalTestEnv\nTerminalTestEnv.cli()\n")
    async with ModelServer(Policy(slow_oracle, name="terminal-test")) as model:
        argv = [
            sys.executable,
            str(script),
            "process",
            "--env.tokenizer_name",
            TOKENIZER,
            "--env.group_size",
            "2",
            "--env.total_steps",
            "6",
            "--env.max_num_workers_per_node",
            "1",
            "--env.data_path_to_save_groups",
            str(out),
            "--openai.base_url",
            model.base_url,
        ]
        await kill_9_half_way(argv, cwd=tmp_path, out=out)
        assert 2 <= len(lines(out)) < 6
        again = await asyncio.to_thread(run_command, argv, cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    records = check_against_group_file(out)
    assert [r["group"] for r in records] == list(range(6))


async def test_records_that_cannot_be_written_stop_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out = tmp_path / "groups.jsonl"
    records_path(out).mkdir()  # a folder where the records file would go
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        await process(out, len(TASKS), url=model.base_url)
    assert len(lines(out)) == len(TASKS)
    warnings = [r.getMessage() for r in caplog.records if "rollout records" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].startswith("cannot keep rollout records: ")


class _BrokenReward(TerminalTestEnv):
    """Reward code that raises on the answer task (the environment's bug)."""

    async def compute_reward(self, item: Any, result: Any, ctx: Any) -> float:
        if item["id"] == "answer":
            raise ZeroDivisionError("the reward divides by nothing")
        return await super().compute_reward(item, result, ctx)


async def test_a_reward_that_raises_is_recorded_as_such(tmp_path: Path) -> None:
    where = tmp_path / "eval"
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        config = env_config(data_dir_to_save_evals=str(where))
        await _BrokenReward(config, [server(model.base_url)]).run_evaluate()
    records = {r["item"]["id"]: r["rollouts"] for r in lines(where / EVAL_RECORDS)}
    (broken,) = records["answer"]
    assert broken["status"] == "reward_error"
    assert broken["score"] is None
    assert "ZeroDivisionError" in broken["error"]
    assert "the reward divides by nothing" in broken["error"]
    assert broken["messages"][-1]["content"] == "Created out/answer.txt."
    assert all(records[t["id"]][0]["status"] == "scored" for t in TASKS if t["id"] != "answer")


def test_a_record_is_cut_to_its_cap() -> None:
    huge = "x" * (3 * RECORD_CAP)
    record: dict[str, Any] = {
        "status": "scored",
        "messages": [{"role": "tool", "content": huge + "THE END"}],
        "tokens": {"pieces": ["tok"] * 400_000, "trained": "1" * 400_000, "count": 400_000},
    }
    made = capped(record)
    size = len(json.dumps(made).encode())
    assert size <= RECORD_CAP
    content = made["messages"][0]["content"]
    assert content.endswith("THE END")
    assert "characters cut" in content
    assert made["tokens"]["cut"] == 400_000 - len(made["tokens"]["pieces"]) > 0
    assert len(made["tokens"]["trained"]) == len(made["tokens"]["pieces"])
    small = {"status": "scored", "messages": [{"role": "user", "content": "hi"}]}
    assert capped(small) is small


def test_a_very_long_conversation_keeps_its_ends_within_the_cap() -> None:
    messages = [{"role": "tool", "content": f"{i} " + "y" * 2000} for i in range(5000)]
    made = capped({"status": "scored", "messages": messages})
    assert len(json.dumps(made).encode()) <= RECORD_CAP
    kept = made["messages"]
    assert kept[0]["content"].startswith("0 ")
    assert kept[-1]["content"].startswith("4999 ")
    notes = [m for m in kept if m["role"] == "note"]
    assert len(notes) == 1
    assert notes[0]["cut_items"] == 5000 - len(kept) + 1 > 0
