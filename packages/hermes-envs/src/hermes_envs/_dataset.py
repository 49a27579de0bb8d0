"""Items from ``datasets.load_dataset``: a Hugging Face hub name, or a local file or folder.

``load_items("bigcode/humanevalpack", split="test", config="python")`` asks the hub (or
its cache); ``load_items("tasks.jsonl")`` (also ``.json``, ``.parquet``, ``.csv``) or a
local dataset folder reads from disk. A name that cannot be loaded (offline, a typo, no
such split) raises ``DatasetLoadError`` naming what to set.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hermes_envs._errors import DatasetLoadError, EnvSetupError

__all__ = ["DEFAULT_HINT", "FILE_FORMATS", "load_items"]

#: Local file suffixes and the ``datasets`` builder that reads them.
FILE_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


#: What to do when the dataset cannot be loaded (the default ``hint`` of :func:`load_items`).
DEFAULT_HINT = (
    "set --env.dataset_name to a local JSONL/parquet file or dataset folder, or a reachable "
    "Hugging Face hub name (and --env.dataset_split / --env.dataset_config to match)"
)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _probe_hub(name: str, hint: str) -> None:
    """Fail fast, in one line, when the hub does not answer for ``name`` (``datasets``
    itself retries an unreachable hub for half a minute, logging each retry): the hub
    check of ``hermes_envs._preflight`` (skipped in offline mode, ``HF_HUB_OFFLINE=1``,
    where ``datasets`` reads its local cache), its message ending with ``hint``."""
    from hermes_envs._preflight import check_hub

    try:
        check_hub(name, "the dataset", "--env.dataset_name", repo_type="dataset", instead=hint)
    except EnvSetupError as exc:
        raise DatasetLoadError(str(exc)) from None


def load_items(
    name: str,
    *,
    split: str = "test",
    config: str | None = None,
    required: Sequence[str] = (),
    hint: str = DEFAULT_HINT,
) -> list[dict[str, Any]]:
    """Every row of ``name``'s ``split`` as a dict (blocking: call it in a thread).

    A local file is read whole as ``split``; a local dataset folder or a hub name is
    loaded with ``config`` (e.g. ``python`` for ``bigcode/humanevalpack``) and ``split``.
    A hub name is asked of the hub first, so an unreachable hub fails at once. ``hint``
    ends every error message: what the user should set.

    Raises:
        DatasetLoadError: if the dataset cannot be loaded (no such file, unknown file
            type, unreachable hub, no such split), is empty, or a row lacks one of the
            ``required`` fields; the message names ``name`` and ends with ``hint``.
    """
    import datasets  # heavy: imported only when used

    path = Path(name).expanduser()
    looks_local = name.startswith(("/", ".", "~")) or path.suffix.lower() in FILE_FORMATS
    if looks_local and not path.exists():
        raise DatasetLoadError(f"dataset {name!r}: no such file or folder; {hint}")
    try:
        if path.is_file():
            builder = FILE_FORMATS.get(path.suffix.lower())
            if builder is None:
                raise DatasetLoadError(
                    f"dataset {name!r}: unknown file type {path.suffix!r}; "
                    f"use one of {', '.join(FILE_FORMATS)}"
                )
            rows = datasets.load_dataset(builder, data_files={split: str(path)}, split=split)
        elif path.is_dir():
            rows = datasets.load_dataset(str(path), config, split=split)
        else:
            _probe_hub(name, hint)
            rows = datasets.load_dataset(name, config, split=split)
    except DatasetLoadError:
        raise
    except Exception as exc:  # datasets raises many kinds (hub, network, file, split)
        raise DatasetLoadError(
            f"cannot load dataset {name!r} (split {split!r}"
            + (f", config {config!r}" if config else "")
            + f"): {_first_line(exc)}; {hint}"
        ) from exc
    items = [dict(row) for row in rows]
    if not items:
        raise DatasetLoadError(f"dataset {name!r}: split {split!r} has no rows; {hint}")
    for index, item in enumerate(items):
        missing = [field for field in required if item.get(field) in (None, "")]
        if missing:
            raise DatasetLoadError(
                f"dataset {name!r}: row {index} has no {', '.join(missing)} "
                f"(each row needs {', '.join(required)})"
            )
    return items
