"""Rollout records of groups whose line the token worker made: made from the rows'
outcomes and the worker's token texts, without reading the line back, and the same
text as the records made from the line (``hermes_envs._records.group_records``)."""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from hermes_envs import terminal_test_oracle
from hermes_envs._agent_run import InfraFailure
from hermes_envs._chunk_texts import packed
from hermes_envs._group_file import LineEncoder
from hermes_envs._record_files import records_path
from hermes_envs._records import group_records, rows_with_tokens
from hermes_envs._rollout import RolloutOutcome
from hermes_envs.scoring._group import ScoredRollout, scored_group
from hermes_envs.scoring._record_tokens import (
    PieceDecoder,
    RecordTokensText,
    record_tokens_text,
)
from hermes_envs.scoring._tokens import TokenizedRollout
from hermes_loop import AgentResult, TurnRecord
from hermes_loop.server import ModelServer, Policy

from .support import WorkerFirst, process_config, server


def decode(ids: Any) -> list[str]:
    return [f"<{i}>" for i in ids]


def outcome(task_id: str, messages: list[dict[str, Any]], score: float) -> RolloutOutcome:
    turns = [TurnRecord(started_at=1000.0 + len(task_id), model_seconds=0.25, usage={"n": 1})]
    result = AgentResult(messages, 1, True, [None], [], task_id=task_id, turns=turns)
    return RolloutOutcome(task_id, result, score)


def failed(task_id: str) -> RolloutOutcome:
    return RolloutOutcome(task_id, None, None, InfraFailure(task_id, "sandbox_start", "no"))


def line_of(rows: list[RolloutOutcome]) -> tuple[str, list[str]]:
    """The group line of ``rows`` (as the worker makes it) and its rows' token texts."""
    made = []
    for number, row in enumerate(rows):
        assert row.result is not None
        assert row.score is not None
        ids = [number, 7, 8, 9 + number]
        tokens = TokenizedRollout(ids, [-100, -100, 8, 9 + number])
        made.append(ScoredRollout(row.task_id, row.result.messages, row.score, tokens))
    group, _ = scored_group(made, len(rows))
    texts = [
        record_tokens_text(ids, masks, score, decode)
        for ids, masks, score in zip(group["tokens"], group["masks"], group["scores"], strict=True)
    ]
    return LineEncoder().encode(group), texts


def from_line(line: str, held: list[RolloutOutcome]) -> list[str]:
    """The record texts made by reading the line back."""
    records = group_records(json.loads(line), held, decode)
    return [json.dumps(record, ensure_ascii=False, default=str) for record in records]


SAME: list[dict[str, Any]] = [
    {"role": "user", "content": "Write it."},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]},
    {"role": "tool", "content": "ok", "tool_call_id": "c"},
    {"role": "assistant", "content": "Done, 1.5 \udcff é"},
]


def test_rows_with_tokens_are_the_records_read_from_the_line() -> None:
    # Two rollouts with the same messages and different scores, held in the other order
    # than the rows: each row gets the first held outcome with its messages (as reading
    # the line back does), with the row's own score and tokens; failures come last.
    a, b = outcome("a", SAME, 0.0), outcome("bb", SAME, 1.0)
    c = outcome("ccc", [{"role": "user", "content": "other"}], 0.5)
    rows = [a, c, b]
    held = [failed("x"), b, c, a, failed("y")]
    line, texts = line_of(rows)
    made = rows_with_tokens(held, rows, texts)
    assert made == from_line(line, held)
    assert made is not None
    assert [json.loads(text)["task_id"] for text in made] == ["bb", "ccc", "a", "x", "y"]
    assert [json.loads(text)["score"] for text in made[:3]] == [0.0, 0.5, 1.0]


@pytest.mark.parametrize(
    "content", [("a", "tuple"), float("nan")], ids=["tuple, a list in the line", "NaN"]
)
def test_rows_whose_messages_do_not_survive_json_are_left_to_the_line(content: Any) -> None:
    odd = [{"role": "user", "content": content}]
    rows = [outcome("a", odd, 1.0), outcome("b", odd, 1.0)]
    _, texts = line_of(rows)
    assert rows_with_tokens(rows, rows, texts) is None


def test_remembered_stretches_write_the_same_token_texts() -> None:
    texts = ['"quoted"', "back\\slash", "tab\there", "é ✓", "\u0000", " ", ""]

    def odd(ids: list[list[int]]) -> list[str]:
        return [texts[i % len(texts)] + str(i) for (i,) in ids]

    made, reference = RecordTokensText(odd), PieceDecoder(odd)
    rows = [list(range(n, n + size)) for n in (0, 5, 0) for size in (0, 1, 127, 128, 129, 300)]
    rows.append([2**70, 1])  # beyond 64 bits: written without stretches
    for ids in [*rows, *rows]:  # the second time from remembered stretches
        masks = [-100 if i % 3 else i for i in ids]
        for score in (1.0, 0.25, float("nan")):
            expected = record_tokens_text(ids, masks, score, reference)
            assert made.text(ids, masks, score) == expected
            # The same from ids the caller packed once (None: not 64-bit integers).
            assert made.text(ids, masks, score, (packed(ids), packed(masks))) == expected


def test_an_earlier_attempt_held_beside_the_rows_is_left_to_the_line() -> None:
    rows = [outcome("a", SAME, 1.0)]
    earlier = outcome("old", SAME, 0.0)  # a scored rollout of a group that was requeued
    line, texts = line_of(rows)
    assert rows_with_tokens([earlier, *rows], rows, texts) is None
    assert rows_with_tokens(rows, rows, texts[:0]) is None
    assert rows_with_tokens(rows, rows, texts) == from_line(line, rows)


async def test_process_records_from_the_worker_equal_those_from_the_thread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="hermes_envs")

    made: dict[bool, list[dict[str, Any]]] = {}
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        for worker in (True, False):
            out = tmp_path / f"worker-{worker}.jsonl"
            config = process_config(out, write_viewer_html=False, token_worker=worker)
            env = WorkerFirst(config, [server(model.base_url)])
            env.n_groups_to_process = 8
            await env.process_manager()
            # The worker's token texts were checked against the line's and then used.
            assert env.rollout_records._worker_tokens is (True if worker else None)
            made[worker] = [json.loads(line) for line in records_path(out).read_text().splitlines()]
    assert not [r for r in caplog.records if "differ" in r.getMessage()]

    def kept(records: list[dict[str, Any]]) -> list[str]:
        return sorted(
            json.dumps(
                [r["item"], [(x["messages"], x["tokens"], x["score"]) for x in r["rollouts"]]]
            )
            for r in records
        )

    assert len(made[True]) == 8
    assert kept(made[True]) == kept(made[False])


def _open_paths() -> set[str]:
    """The files this process holds open."""
    return {os.path.realpath(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")}


async def test_after_the_first_checked_group_records_are_appended_without_the_thread(
    tmp_path: Path,
) -> None:
    handed: list[str] = []

    class Counting(ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            handed.append(getattr(fn, "func", fn).__name__)
            return super().submit(fn, *args, **kwargs)

    async with ModelServer(Policy(terminal_test_oracle)) as model:
        out = tmp_path / "groups.jsonl"
        config = process_config(out, write_viewer_html=False)
        env = WorkerFirst(config, [server(model.base_url)])
        env.token_executor = Counting(max_workers=1)
        env.n_groups_to_process = 6
        await env.process_manager()
    assert env.rollout_records._worker_tokens is True
    # The first group's records set the file up and check the worker's texts there.
    assert handed.count("_write_group") == 1
    # The group file's reader and the records file's writer, kept open, are closed.
    assert not _open_paths() & {str(out.resolve()), str(records_path(out).resolve())}
    records = [json.loads(line) for line in records_path(out).read_text().splitlines()]
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["group"] for r in records] == list(range(6))
    for record, group in zip(records, groups, strict=True):
        assert [x["messages"] for x in record["rollouts"]] == group["messages"]
        assert [x["score"] for x in record["rollouts"]] == group["scores"]
