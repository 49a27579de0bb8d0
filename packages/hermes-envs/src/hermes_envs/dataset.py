"""Items from ``datasets.load_dataset``: a Hugging Face hub name, or a local file or folder.

``load_items("bigcode/humanevalpack", split="test", config="python")`` asks the hub (or
its cache); ``load_items("tasks.jsonl")`` (also ``.json``, ``.parquet``, ``.csv``) or a
local dataset folder reads from disk. A name that cannot be loaded (offline, a typo, no
such split) raises ``DatasetLoadError`` naming ``--env.dataset_name``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hermes_envs.errors import DatasetLoadError

__all__ = ["FILE_FORMATS", "load_items"]

#: Local file suffixes and the ``datasets`` builder that reads them.
FILE_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_items(
    name: str,
    *,
    split: str = "test",
    config: str | None = None,
    required: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Every row of ``name``'s ``split`` as a dict (blocking: call it in a thread).

    A local file is read whole as ``split``; a hub name or local dataset folder is loaded
    with ``config`` (e.g. ``python`` for ``bigcode/humanevalpack``) and ``split``.

    Raises:
        DatasetLoadError: if the dataset cannot be loaded, is empty, or a row lacks one of
            the ``required`` fields; the message names the option to set.
    """
    import datasets  # heavy: imported only when used

    where = "--env.dataset_name"
    path = Path(name).expanduser()
    try:
        if path.is_file():
            builder = FILE_FORMATS.get(path.suffix.lower())
            if builder is None:
                raise DatasetLoadError(
                    f"{where} {name!r}: unknown file type {path.suffix!r}; "
                    f"use one of {', '.join(FILE_FORMATS)}"
                )
            rows = datasets.load_dataset(builder, data_files={split: str(path)}, split=split)
        else:
            rows = datasets.load_dataset(name, config, split=split)
    except DatasetLoadError:
        raise
    except Exception as exc:  # datasets raises many kinds (hub, network, file, split)
        raise DatasetLoadError(
            f"cannot load dataset {name!r} (split {split!r}"
            + (f", config {config!r}" if config else "")
            + f"): {_first_line(exc)}; set {where} to a local JSONL/parquet file or a "
            "reachable Hugging Face hub name (and --env.dataset_split / "
            "--env.dataset_config to match)"
        ) from exc
    items = [dict(row) for row in rows]
    if not items:
        raise DatasetLoadError(f"{where} {name!r}: split {split!r} has no rows")
    for index, item in enumerate(items):
        missing = [field for field in required if item.get(field) in (None, "")]
        if missing:
            raise DatasetLoadError(
                f"{where} {name!r}: row {index} has no {', '.join(missing)} "
                f"(each row needs {', '.join(required)})"
            )
    return items
