"""Tasks from a Hugging Face dataset: one row per task, unpacked into a task folder.

The datasets the suites name (``NousResearch/terminal-bench-2``,
``NousResearch/openthoughts-tblite``, split ``train``) hold one row per task:

==================== ==========================================================
``task_name``        the task's name (its folder name)
``instruction``      the prompt (``instruction.md``)
``docker_image``     a prebuilt image (``[environment] docker_image``), or empty
``environment_tar``  base64 of a gzipped tar of ``environment/`` (the Dockerfile at
                     its root), or empty when ``docker_image`` is set
``tests_tar``        base64 of a gzipped tar of ``tests/``
``test_sh``          the text of ``tests/test.sh`` (written over the archive's)
``category``,        ``[metadata]``; ``tags`` is a list or its JSON text
``difficulty``,
``tags``
``agent_timeout_sec``, ``test_timeout_sec``: ``[agent]`` / ``[verifier] timeout_sec``
``solution_tar``     (not in the hub datasets; optional) base64 of a gzipped tar of
                     ``solution/``: a reference solution for the oracle
==================== ==========================================================

:func:`load_dataset_tasks` reads the rows with ``datasets.load_dataset`` (a hub name, a
local dataset folder, or a local ``.parquet`` / ``.jsonl`` file in that shape), unpacks
each row into ``<cache_dir>/<hash of the row>/<task_name>/`` (once: a row whose folder
is there is not unpacked again), and reads the folders with the ordinary task loader.
:func:`task_row` packs a task folder into such a row (to publish tasks, or to make a
local dataset from task folders).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hermes_benchmarks._errors import DatasetError
from hermes_benchmarks._task import Task, load_task, select_tasks
from hermes_envs import FILE_FORMATS, DatasetLoadError, load_items

__all__ = [
    "DATASET_FILE_FORMATS",
    "default_cache_dir",
    "load_dataset_rows",
    "load_dataset_tasks",
    "materialize_row",
    "task_row",
]

#: Local file suffixes and the ``datasets`` builder that reads them.
DATASET_FILE_FORMATS = FILE_FORMATS

#: Bumped when the folder a row unpacks into changes shape (old cache entries unused).
_LAYOUT = "hermes-bench-row-v1"

_WHAT_TO_DO = (
    "set --env.tasks_dir to a local folder of task folders, or --env.dataset_name to a "
    "reachable Hugging Face dataset or a local parquet/JSONL file or dataset folder in "
    "its shape"
)


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/hermes-bench/tasks`` (``~/.cache/hermes-bench/tasks`` by default)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "hermes-bench" / "tasks"


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def load_dataset_rows(name: str, *, split: str = "train") -> list[dict[str, Any]]:
    """Every row of ``name``'s ``split`` (blocking: call it in a thread).

    ``name`` is a local ``.parquet`` / ``.jsonl`` / ``.json`` file (read whole as
    ``split``), a local dataset folder, or a hub dataset name (asked of the hub first, so
    an unreachable hub fails at once; with ``HF_HUB_OFFLINE=1`` the local cache is read).

    Raises:
        DatasetError: the dataset cannot be loaded (unreachable hub, no such file or
            split, unreadable file) or has no rows; the message names
            ``--env.tasks_dir`` and ``--env.dataset_name``.
    """
    try:
        return load_items(name, split=split, hint=_WHAT_TO_DO)
    except DatasetLoadError as error:
        raise DatasetError(str(error)) from None


def _text(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    return "" if value is None else str(value)


def _row_name(row: dict[str, Any], index: int) -> str:
    name = _text(row, "task_name").strip()
    if not name:
        raise DatasetError(f"dataset row {index} has no task_name")
    if name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise DatasetError(f"dataset row {index}: task_name {name!r} cannot be a folder name")
    return name


def _digest(row: dict[str, Any], defaults: tuple[float, float]) -> str:
    def plain(value: Any) -> Any:
        if isinstance(value, bytes):
            return {"bytes": base64.b64encode(value).decode()}
        return value

    text = json.dumps(
        {"layout": _LAYOUT, "defaults": defaults, "row": {k: plain(v) for k, v in row.items()}},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _archive(row: dict[str, Any], column: str, name: str) -> bytes | None:
    value = row.get(column)
    if value is None or value == "" or value == b"":
        return None
    if isinstance(value, bytes):
        return value
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as error:
        raise DatasetError(f"task {name}: {column} is not base64 ({error})") from None


def _unpack(blob: bytes, target: Path, *, column: str, name: str) -> None:
    target.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:*") as archive:
            # "data": no absolute paths, no escaping links, no devices, no setuid bits.
            archive.extractall(target, filter="data")
    except (tarfile.TarError, OSError, EOFError) as error:
        raise DatasetError(
            f"task {name}: {column} is not a readable tar archive ({_first_line(error)})"
        ) from None


def _number(row: dict[str, Any], column: str, default: float, name: str) -> float:
    value = row.get(column)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise DatasetError(f"task {name}: {column} is not a number (got {value!r})") from None
    if number <= 0:
        raise DatasetError(f"task {name}: {column} must be positive (got {value!r})")
    return number


def _tags(row: dict[str, Any], name: str) -> list[str]:
    value = row.get("tags")
    if value is None or value == "":
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise DatasetError(f"task {name}: tags is not a JSON list (got {text!r})") from None
        else:
            value = [part.strip() for part in text.split(",") if part.strip()]
    if not isinstance(value, list | tuple):
        raise DatasetError(f"task {name}: tags must be a list (got {value!r})")
    return [str(tag) for tag in value]


def _toml(value: str | float | list[str]) -> str:
    # A JSON string is a TOML basic string (kept unescaped beyond what JSON escapes).
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(json.dumps(item, ensure_ascii=False) for item in value) + "]"
    return repr(float(value))


def _task_toml(row: dict[str, Any], name: str, defaults: tuple[float, float]) -> str:
    metadata: dict[str, str | float | list[str]] = {"tags": _tags(row, name)}
    for column in ("difficulty", "category"):
        if _text(row, column).strip():
            metadata[column] = _text(row, column).strip()
    sections: dict[str, dict[str, str | float | list[str]]] = {
        "metadata": metadata,
        "agent": {"timeout_sec": _number(row, "agent_timeout_sec", defaults[0], name)},
        "verifier": {"timeout_sec": _number(row, "test_timeout_sec", defaults[1], name)},
        "environment": {},
    }
    image = _text(row, "docker_image").strip()
    if image:
        sections["environment"]["docker_image"] = image
    lines = ['version = "1.0"']
    for section, values in sections.items():
        lines.append(f"\n[{section}]")
        lines.extend(f"{key} = {_toml(value)}" for key, value in values.items())
    return "\n".join(lines) + "\n"


def _write_task(
    row: dict[str, Any], folder: Path, name: str, defaults: tuple[float, float]
) -> None:
    instruction = _text(row, "instruction")
    if not instruction.strip():
        raise DatasetError(f"task {name}: the row has no instruction")
    environment = _archive(row, "environment_tar", name)
    if environment is None and not _text(row, "docker_image").strip():
        raise DatasetError(
            f"task {name}: the row has neither docker_image nor environment_tar: it needs one"
        )
    tests = _archive(row, "tests_tar", name)
    test_sh = _text(row, "test_sh")
    if tests is None and not test_sh.strip():
        raise DatasetError(f"task {name}: the row has neither tests_tar nor test_sh")
    folder.mkdir(parents=True)
    (folder / "instruction.md").write_text(instruction, encoding="utf-8")
    if environment is not None:
        _unpack(environment, folder / "environment", column="environment_tar", name=name)
    tests_dir = folder / "tests"
    if tests is not None:
        _unpack(tests, tests_dir, column="tests_tar", name=name)
    if test_sh.strip():
        tests_dir.mkdir(parents=True, exist_ok=True)
        (tests_dir / "test.sh").write_text(test_sh, encoding="utf-8")
        (tests_dir / "test.sh").chmod(0o755)
    solution = _archive(row, "solution_tar", name)
    if solution is not None:
        _unpack(solution, folder / "solution", column="solution_tar", name=name)
    # Written last: a folder with a task.toml is complete.
    (folder / "task.toml").write_text(_task_toml(row, name, defaults), encoding="utf-8")


def materialize_row(
    row: dict[str, Any],
    cache_dir: str | os.PathLike[str],
    *,
    index: int = 0,
    agent_timeout_sec: float = 600.0,
    verifier_timeout_sec: float = 600.0,
) -> Path:
    """The task folder of ``row``: ``<cache_dir>/<hash of the row>/<task_name>``, unpacked
    there unless an earlier call did (blocking).

    ``agent_timeout_sec`` / ``verifier_timeout_sec``: the timeouts when the row carries
    none. The folder is unpacked beside its final place and renamed into it, so a killed
    run never leaves a half-written task behind.

    Raises:
        DatasetError: the row lacks a name, an instruction, an image (``docker_image`` or
            ``environment_tar``) or tests (``tests_tar`` or ``test_sh``); an archive is
            not base64 of a tar; a number is not a positive number; or the cache folder
            cannot be written.
    """
    name = _row_name(row, index)
    defaults = (agent_timeout_sec, verifier_timeout_sec)
    cache = Path(cache_dir)
    home = cache / _digest(row, defaults)
    target = home / name
    if (target / "task.toml").is_file():
        return target
    try:
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=cache))
    except OSError as error:
        raise DatasetError(
            f"cannot write the task cache {cache} ({error.strerror or error}); set "
            "--env.cache_dir to a writable folder"
        ) from None
    try:
        _write_task(row, staging / name, name, defaults)
        try:
            os.rename(staging, home)
        except OSError:
            if not (target / "task.toml").is_file():  # not another process's finished copy
                raise
    except OSError as error:
        raise DatasetError(
            f"task {name}: cannot unpack it into {home} ({error.strerror or error}); set "
            "--env.cache_dir to a writable folder"
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def load_dataset_tasks(
    name: str,
    *,
    split: str = "train",
    task_filter: Sequence[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    agent_timeout_sec: float = 600.0,
    verifier_timeout_sec: float = 600.0,
) -> list[Task]:
    """The tasks of dataset ``name`` that ``task_filter`` keeps, by name (blocking).

    Each kept row is unpacked with :func:`materialize_row` under ``cache_dir`` (default
    :func:`default_cache_dir`) and read with :func:`~hermes_benchmarks._task.load_task`.

    Raises:
        DatasetError: the dataset cannot be loaded, two rows share a task name, or a
            row cannot be unpacked (see :func:`load_dataset_rows`,
            :func:`materialize_row`).
        TaskError: ``task_filter`` names no task, or an unpacked task is malformed.
    """
    rows = load_dataset_rows(name, split=split)
    names = [_row_name(row, index) for index, row in enumerate(rows)]
    seen: set[str] = set()
    for task_name in names:
        if task_name in seen:
            raise DatasetError(f"dataset {name!r}: two rows are named {task_name!r}")
        seen.add(task_name)
    kept = set(select_tasks(sorted(names), task_filter))
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    tasks = [
        load_task(
            materialize_row(
                row,
                cache,
                index=index,
                agent_timeout_sec=agent_timeout_sec,
                verifier_timeout_sec=verifier_timeout_sec,
            )
        )
        for index, row in enumerate(rows)
        if names[index] in kept
    ]
    return sorted(tasks, key=lambda task: task.name)


def _pack(folder: Path) -> str:
    """Base64 of a gzipped tar of ``folder``'s contents, byte-for-byte reproducible."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for path in sorted(folder.rglob("*")):
            info = archive.gettarinfo(str(path), arcname=path.relative_to(folder).as_posix())
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isfile():
                with path.open("rb") as handle:
                    archive.addfile(info, handle)
            else:
                archive.addfile(info)
    return base64.b64encode(buffer.getvalue()).decode()


def task_row(task: Task) -> dict[str, Any]:
    """``task`` as a dataset row (the columns above; ``solution_tar`` when it has a
    solution). Resources and the build timeout are not carried (the hub's rows have no
    column for them). Blocking.
    """
    config = task.config
    environment = task.environment_dir
    solution = task.path / "solution"
    return {
        "task_name": task.name,
        "instruction": task.instruction,
        "docker_image": config.environment.docker_image or "",
        "category": config.metadata.category or "",
        "difficulty": config.metadata.difficulty or "",
        "tags": json.dumps(list(config.metadata.tags)),
        "agent_timeout_sec": config.agent.timeout_sec,
        "test_timeout_sec": config.verifier.timeout_sec,
        "environment_tar": _pack(environment) if environment.is_dir() else "",
        "tests_tar": _pack(task.tests_dir),
        "test_sh": (task.tests_dir / "test.sh").read_text(encoding="utf-8"),
        "solution_tar": _pack(solution) if solution.is_dir() else "",
    }
