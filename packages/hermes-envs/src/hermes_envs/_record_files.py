"""Where the rollout records of ``process`` and ``evaluate`` are kept, and how their long
texts are cut (light: the viewer imports it without the environment's dependencies)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

__all__ = ["EVAL_RECORDS", "cut_strings", "records_path"]

#: The records file of ``evaluate``, in ``data_dir_to_save_evals``.
EVAL_RECORDS: Final = "records.jsonl"


def records_path(groups_path: str | Path) -> Path:
    """The records file of the group file ``groups_path`` (``x.jsonl`` ->
    ``x.records.jsonl``; another name gets ``.records.jsonl`` added)."""
    path = Path(groups_path)
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.name
    return path.with_name(stem + ".records.jsonl")


def cut_strings(value: Any, limit: int) -> Any:
    """``value`` (JSON-like) with every string longer than ``limit`` characters cut in
    the middle (head and tail kept, the cut said); structure kept, dict keys as strings."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        half = limit // 2
        return f"{value[:half]}\n[... {len(value) - 2 * half} characters cut ...]\n{value[-half:]}"
    if isinstance(value, list | tuple):
        return [cut_strings(item, limit) for item in value]
    if isinstance(value, dict):
        return {str(key): cut_strings(item, limit) for key, item in value.items()}
    return value
