"""Where the rollout records of ``process`` and ``evaluate`` are kept (light: the viewer
imports it without the environment's dependencies)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["EVAL_RECORDS", "records_path"]

#: The records file of ``evaluate``, in ``data_dir_to_save_evals``.
EVAL_RECORDS: Final = "records.jsonl"


def records_path(groups_path: str | Path) -> Path:
    """The records file of the group file ``groups_path`` (``x.jsonl`` ->
    ``x.records.jsonl``; another name gets ``.records.jsonl`` added)."""
    path = Path(groups_path)
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.name
    return path.with_name(stem + ".records.jsonl")
