"""Tasks from a dataset in the hub's shape: rows unpacked into task folders, cached by
content, read with the ordinary task loader; every bad row or dataset in one line."""

from __future__ import annotations

import base64
import io
import tarfile
from pathlib import Path

import pytest

from hermes_benchmarks import load_tasks
from hermes_benchmarks._config import BenchConfig
from hermes_benchmarks._errors import DatasetError, TaskError
from hermes_benchmarks._evaluation import load_suite_tasks
from hermes_benchmarks.dataset import load_dataset_tasks, materialize_row
from hermes_benchmarks.suites import TBLITE, TERMINALBENCH2
from tests.benchmarks.dataset_fixture import (
    Row,
    shipped_rows,
    write_jsonl_dataset,
    write_parquet_dataset,
)
from tests.benchmarks.docker_support import SHIPPED


def files_of(folder: Path) -> dict[str, tuple[bytes, bool]]:
    return {
        path.relative_to(folder).as_posix(): (path.read_bytes(), bool(path.stat().st_mode & 0o100))
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name not in ("task.toml", "instruction.md")
    }


def tar_b64(members: dict[str, bytes]) -> str:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return base64.b64encode(buffer.getvalue()).decode()


def test_a_parquet_dataset_in_the_hub_layout_gives_back_the_shipped_tasks(
    tmp_path: Path,
) -> None:
    dataset = write_parquet_dataset(tmp_path / "tb2", shipped_rows())
    tasks = load_dataset_tasks(str(dataset), cache_dir=tmp_path / "cache")
    originals = {task.name: task for task in load_tasks(SHIPPED)}
    assert [task.name for task in tasks] == sorted(originals)
    for task in tasks:
        original = originals[task.name]
        assert task.instruction == original.instruction
        assert task.config.metadata == original.config.metadata
        assert task.config.agent.timeout_sec == original.config.agent.timeout_sec
        assert task.config.verifier.timeout_sec == original.config.verifier.timeout_sec
        # Same build inputs, so the same cached image; same tests and solution, bit for bit.
        assert task.environment_hash() == original.environment_hash()
        assert files_of(task.path) == files_of(original.path)
        assert task.path.is_relative_to(tmp_path / "cache")


def test_a_jsonl_file_with_a_filter_and_tags_as_a_list(tmp_path: Path) -> None:
    def tags_as_list(row: Row) -> Row:
        return {**row, "tags": ["listed", "tags"]}

    file = write_jsonl_dataset(tmp_path / "rows.jsonl", shipped_rows(), tags_as_list)
    tasks = load_dataset_tasks(
        str(file), task_filter=["write-*", "unique-words"], cache_dir=tmp_path / "cache"
    )
    assert [task.name for task in tasks] == ["unique-words", "write-greeting"]
    assert tasks[0].config.metadata.tags == ["listed", "tags"]
    with pytest.raises(TaskError, match=r"task_filter names no task: nope \(known tasks: "):
        load_dataset_tasks(str(file), task_filter=["nope"], cache_dir=tmp_path / "cache")


def test_rows_are_unpacked_once_and_a_changed_row_gets_its_own_folder(tmp_path: Path) -> None:
    row = shipped_rows(names=["write-greeting"])[0]
    first = materialize_row(row, tmp_path)
    stamp = (first / "task.toml").stat().st_mtime_ns
    (first / "instruction.md").write_text("marker: not unpacked again")
    again = materialize_row(dict(row), tmp_path)
    assert again == first
    assert (again / "task.toml").stat().st_mtime_ns == stamp
    assert (again / "instruction.md").read_text() == "marker: not unpacked again"
    changed = materialize_row({**row, "instruction": "Something else."}, tmp_path)
    assert changed != first
    assert changed.name == first.name == "write-greeting"
    assert (changed / "instruction.md").read_text() == "Something else."
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".unpacking-")]


def test_a_row_without_timeouts_gets_the_suites_and_a_prebuilt_image_is_kept(
    tmp_path: Path,
) -> None:
    row = shipped_rows(names=["write-greeting"])[0]
    row.update(
        agent_timeout_sec=None, test_timeout_sec="", docker_image="example/img:1", tags='["a"]'
    )
    row["environment_tar"] = ""
    file = write_jsonl_dataset(tmp_path / "rows.jsonl", [row])
    for suite in (TERMINALBENCH2, TBLITE):
        config = BenchConfig(dataset_name=str(file), cache_dir=str(tmp_path / "cache"))
        (task,) = load_suite_tasks(suite, config)
        assert task.config.agent.timeout_sec == suite.agent_timeout_sec
        assert task.config.verifier.timeout_sec == suite.verifier_timeout_sec
        assert task.config.environment.docker_image == "example/img:1"
        assert task.dockerfile is None
    assert TBLITE.agent_timeout_sec != TERMINALBENCH2.agent_timeout_sec


def test_task_rows_are_reproducible() -> None:
    assert shipped_rows() == shipped_rows()


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"task_name": ""}, "dataset row 0 has no task_name"),
        ({"task_name": "../escape"}, "task_name '../escape' cannot be a folder name"),
        ({"instruction": " "}, "task write-greeting: the row has no instruction"),
        (
            {"environment_tar": "", "docker_image": ""},
            "has neither docker_image nor environment_tar",
        ),
        ({"tests_tar": "", "test_sh": ""}, "has neither tests_tar nor test_sh"),
        ({"tests_tar": "not base64!"}, "tests_tar is not base64"),
        ({"tests_tar": base64.b64encode(b"plain text").decode()}, "not a readable tar"),
        ({"tests_tar": tar_b64({"../../evil.sh": b"x"})}, "tests_tar is not a readable tar"),
        ({"agent_timeout_sec": "soon"}, "agent_timeout_sec is not a number (got 'soon')"),
        ({"test_timeout_sec": -1}, "test_timeout_sec must be positive"),
        ({"tags": "[oops"}, "tags is not a JSON list"),
    ],
)
def test_a_bad_row_is_refused_in_one_line_naming_the_task(
    tmp_path: Path, edit: Row, says: str
) -> None:
    row = {**shipped_rows(names=["write-greeting"])[0], **edit}
    with pytest.raises(DatasetError) as caught:
        materialize_row(row, tmp_path)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "evil.sh").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".unpacking-")]


def test_two_rows_with_one_name_are_refused(tmp_path: Path) -> None:
    rows = shipped_rows(names=["write-greeting"]) * 2
    file = write_jsonl_dataset(tmp_path / "rows.jsonl", rows)
    with pytest.raises(DatasetError, match="two rows are named 'write-greeting'"):
        load_dataset_tasks(str(file), cache_dir=tmp_path / "cache")


def test_a_cache_that_cannot_be_written_names_the_option(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    row = shipped_rows(names=["write-greeting"])[0]
    with pytest.raises(DatasetError, match=r"set --env\.cache_dir to a writable folder"):
        materialize_row(row, blocker / "cache")


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("/nonexistent/rows.parquet", "no such file or folder"),
        ("hermes-bench-tests/no-such-dataset", "cannot reach the Hugging Face hub"),
    ],
)
def test_a_dataset_that_cannot_be_loaded_names_both_options(name: str, says: str) -> None:
    with pytest.raises(DatasetError) as caught:
        load_dataset_tasks(name)
    message = str(caught.value)
    assert says in message
    assert "\n" not in message
    assert "--env.tasks_dir" in message
    assert "--env.dataset_name" in message


def test_a_file_of_another_type_or_without_rows(tmp_path: Path) -> None:
    odd = tmp_path / "rows.txt"
    odd.write_text("hello\n")
    with pytest.raises(DatasetError, match=r"unknown file type '.txt'"):
        load_dataset_tasks(str(odd))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(DatasetError, match=r"cannot load dataset|has no rows"):
        load_dataset_tasks(str(empty))
