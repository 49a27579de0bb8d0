"""GroupFile: the group file's lines are exactly what Atropos' jsonlines writer writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_envs._chunk_texts import packed
from hermes_envs._group_file import GroupFile

#: Ids as tokenizers and masks give them (-100 masked), and the odd huge one.
IDS = st.one_of(st.integers(-100, 300), st.integers(-(2**63), 2**63 - 1))
ROWS = st.lists(st.lists(IDS, max_size=700), max_size=3)
PREFIX = st.lists(st.integers(0, 50_000), min_size=0, max_size=400)


def _atropos(group: Any) -> str:
    return json.dumps(group, ensure_ascii=False)  # jsonlines' default dumps


@pytest.fixture
def writer(tmp_path: Path) -> GroupFile:
    return GroupFile(tmp_path / "groups.jsonl")


@settings(max_examples=150, deadline=None)
@given(prefix=PREFIX, tails=st.lists(ROWS, min_size=1, max_size=4))
def test_lines_equal_json_for_groups_sharing_a_prefix(
    tmp_path_factory: pytest.TempPathFactory, prefix: list[int], tails: list[list[list[int]]]
) -> None:
    # Several groups in a row (as in a run): remembered stretches must never leak into
    # a group whose ids differ.
    writer = GroupFile(tmp_path_factory.mktemp("g") / "groups.jsonl")
    for rows in tails:
        tokens = [prefix + row for row in rows]
        masks = [[-100] * len(prefix) + row for row in rows]
        group = {
            "tokens": tokens,
            "masks": masks,
            "scores": [1.0] * len(rows),
            "messages": [[{"role": "user", "content": 'caf\u00e9 \u2028 "q"\n'}]],
            "group_overrides": {},
            "overrides": None,
        }
        assert writer.encode(group) == _atropos(group)
        # The same line from rows the caller packed (the token worker packs them once).
        rows_packed = {"tokens": [packed(r) for r in tokens], "masks": [packed(r) for r in masks]}
        assert writer.encode(group, rows_packed) == _atropos(group)
    writer.close()


@pytest.mark.parametrize(
    "group",
    [
        {"tokens": [[1.5, 2]]},  # a float among the ids
        {"tokens": [[1, None]]},
        {"tokens": [(1, 2)]},  # a tuple row
        {"tokens": "not a list"},
        {"tokens": [[2**70]]},  # past 64 bits
        {"masks": [[], [-100] * 300]},
        {1: "int key"},
        [1, 2, 3],  # not a dict
        {"tokens": [[1, 2]], "scores": [float("nan")]},
    ],
)
def test_anything_else_is_written_by_json_itself(writer: GroupFile, group: Any) -> None:
    assert writer.encode(group) == _atropos(group)
    if isinstance(group, dict) and isinstance(group.get("tokens"), list):
        rows = group["tokens"]
        rows_packed = [packed(row) if isinstance(row, list) else None for row in rows]
        assert rows_packed == [None] * len(rows) or rows == [[1, 2]]
        assert writer.encode(group, {"tokens": rows_packed}) == _atropos(group)


def test_what_json_cannot_write_raises_type_error(writer: GroupFile) -> None:
    with pytest.raises(TypeError):
        writer.encode({"tokens": [[1]], "scores": [object()]})


def test_a_bool_among_ids_is_written_as_a_number(writer: GroupFile) -> None:
    # The documented difference from json: ids are integers; a bool is written as 0/1.
    assert writer.encode({"tokens": [[True, 2, False]]}) == '{"tokens": [[1, 2, 0]]}'


def test_lines_are_appended_flushed_and_whole(tmp_path: Path) -> None:
    path = tmp_path / "groups.jsonl"
    writer = GroupFile(path)
    group = {"tokens": [list(range(1000))], "scores": [1.0]}
    written = writer.write(group)
    # Flushed: another reader sees the whole line before the writer is closed.
    assert path.read_text() == _atropos(group) + "\n"
    assert written == len(_atropos(group)) + 1
    writer.write_line("{}")
    writer.close()
    writer.close()  # idempotent
    assert path.read_text().splitlines() == [_atropos(group), "{}"]
    with pytest.raises(ValueError, match="closed file"):
        writer.write_line("{}")
