"""A ``process`` or ``evaluate`` output read into the data the viewer page shows.

- ``process``: give the group file (``x.jsonl``; its ``x.records.jsonl`` beside it is
  found, or give that). Only records of lines the group file holds count, the last one
  written for each line (a run killed and continued never shows a group twice). Scores
  come from the group file itself; the page goes to ``x.view.html``.
- ``evaluate``: give its folder (``data_dir_to_save_evals``): ``records.jsonl`` and, once
  the evaluation ended, ``metrics.json`` (its figures are shown as written). The page
  goes to ``view.html`` in it.

A torn last line (a killed run) is skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from hermes_envs._record_files import EVAL_RECORDS, cut_strings, records_path

__all__ = ["PAGE_BUDGET", "TEXT_CAP", "Output", "ViewData", "find_output", "load_output"]

ViewData = dict[str, Any]

#: Characters of one text (a message, a tool output) the page holds (head and tail kept).
TEXT_CAP: Final = 20_000
#: Bytes of rollout details (transcripts, tokens) one page holds; rollouts beyond it are
#: listed with their figures only (the records file holds them whole).
PAGE_BUDGET: Final = 50_000_000
#: What a rollout keeps on the page once the budget is spent.
_FIGURES: Final = (
    "group",
    "index",
    "item",
    "task_id",
    "status",
    "score",
    "error_kind",
    "error",
    "stop_reason",
    "turns_used",
    "seconds",
    "retried",
    "from_group_line",
)


@dataclass(frozen=True, slots=True)
class Output:
    """Where an output's parts are: ``kind`` (``process`` or ``evaluate``), its records
    file, its group file (``process``), and the page to write."""

    kind: str
    records: Path
    page: Path
    groups: Path | None = None


def find_output(path: Path) -> Output:
    """The output ``path`` names: a group file of ``process`` (or its records file), or
    an ``evaluate`` folder.

    Raises:
        FileNotFoundError: ``path`` is neither (the message says what to give).
    """
    if path.is_dir():
        records = path / EVAL_RECORDS
        if not records.is_file():
            raise FileNotFoundError(
                f"{path} holds no {EVAL_RECORDS}: give the --env.data_dir_to_save_evals of an "
                "evaluate run, or the group file (--env.data_path_to_save_groups) of a "
                "process run"
            )
        return Output("evaluate", records, path / "view.html")
    name = path.name
    if name.endswith(".records.jsonl"):
        groups = path.with_name(name[: -len(".records.jsonl")] + ".jsonl")
    else:
        groups = path
    if not groups.is_file():
        raise FileNotFoundError(
            f"{path} is not a file: give the group file (--env.data_path_to_save_groups) of "
            "a process run, or the --env.data_dir_to_save_evals of an evaluate run"
        )
    records = records_path(groups)
    if not records.is_file():
        raise FileNotFoundError(
            f"{groups} has no records beside it ({records.name}): it was written by a "
            "hermes-envs older than its rollout records, or not by process"
        )
    stem = records.name[: -len(".records.jsonl")]
    return Output("process", records, records.with_name(stem + ".view.html"), groups)


def _lines(path: Path) -> list[Any]:
    found = []
    with path.open("rb") as file:
        for raw in file:
            try:
                found.append(json.loads(raw))
            except ValueError:  # the torn tail of a killed run
                continue
    return found


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _group_scores(path: Path) -> list[list[float]]:
    """Each complete line's ``scores`` (a torn last line is not a group)."""
    scores = []
    with path.open("rb") as file:
        for raw in file:
            if not raw.endswith(b"\n"):
                break
            try:
                group = json.loads(raw)
            except ValueError:
                break
            rows = group.get("scores") if isinstance(group, dict) else None
            scores.append([float(s) for s in rows or [] if _number(s)])
    return scores


def _rows(lines: list[Any], groups: int | None) -> list[dict[str, Any]]:
    """The rollouts of the records ``lines`` (for each group, its last line; ``groups``:
    how many lines the group file holds)."""
    last: dict[int, dict[str, Any]] = {}
    for line in lines:
        if not isinstance(line, dict) or not isinstance(line.get("group"), int):
            continue
        if groups is not None and not 0 <= line["group"] < groups:
            continue
        last[line["group"]] = line
    rows = []
    for index in sorted(last):
        line = last[index]
        for at, record in enumerate(line.get("rollouts") or []):
            if isinstance(record, dict):
                rows.append({**record, "group": index, "index": at, "item": line.get("item")})
    return rows


def _fit(rows: list[dict[str, Any]], budget: int) -> int:
    """Cut each row's texts to :data:`TEXT_CAP`, and keep the details of rows only while
    they fit ``budget`` bytes (later ones keep their figures, ``detail_cut`` set).
    Returns how many rows lost their details."""
    spent = 0
    cut = 0
    for at, row in enumerate(rows):
        if spent <= budget:
            made = cut_strings(row, TEXT_CAP)
            spent += len(json.dumps(made, ensure_ascii=False, default=str))
            if spent <= budget:
                rows[at] = made
                continue
        rows[at] = {key: row[key] for key in _FIGURES if key in row}
        rows[at]["error"] = cut_strings(row.get("error"), TEXT_CAP)
        rows[at]["detail_cut"] = True
        cut += 1
    return cut


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [
        r["score"] for r in rows if r.get("status") == "scored" and r.get("score") is not None
    ]
    return {
        "rollouts": len(rows),
        "scored": len(scored),
        "mean_score": sum(scored) / len(scored) if scored else None,
        "infra_failures": sum(
            1 for r in rows if r.get("status") == "infra_failure" and not r.get("retried")
        ),
        "retried": sum(1 for r in rows if r.get("retried")),
        "reward_errors": sum(1 for r in rows if r.get("status") == "reward_error"),
        "zero_scores": sum(1 for s in scored if s == 0),
    }


def load_output(output: Output, *, budget: int = PAGE_BUDGET) -> ViewData:
    """Everything the page shows of ``output`` (texts cut to :data:`TEXT_CAP` characters,
    rollout details up to ``budget`` bytes: see :func:`_fit`).

    Raises:
        OSError: a file of the output cannot be read.
    """
    lines = _lines(output.records)
    data: ViewData = {"kind": output.kind, "notes": []}
    if output.groups is not None:
        scores = _group_scores(output.groups)
        rows = _rows(lines, len(scores))
        summary = _summary(rows)
        flat = [s for group in scores for s in group]
        summary.update(
            groups=len(scores),
            group_file_rollouts=len(flat),
            mean_score=sum(flat) / len(flat) if flat else None,
        )
        recorded = {r["group"] for r in rows}
        if len(recorded) < len(scores):
            data["notes"].append(
                f"{len(scores) - len(recorded)} group(s) of the group file have no record."
            )
        data.update(run=output.groups.name, folder=str(output.groups.resolve().parent))
    else:
        rows = _rows(lines, None)
        summary = _summary(rows)
        summary["groups"] = len({r["group"] for r in rows})
        metrics_file = output.records.parent / "metrics.json"
        metrics = None
        if metrics_file.is_file():
            try:
                metrics = json.loads(metrics_file.read_bytes())
            except ValueError:
                data["notes"].append("metrics.json is not JSON.")
        results = metrics.get("results") if isinstance(metrics, dict) else None
        results = results.get("all") if isinstance(results, dict) else None
        started = min(
            (line["recorded_at"] for line in lines if _number(_get(line, "recorded_at"))),
            default=None,
        )
        if (
            isinstance(results, dict)
            and started is not None
            and metrics_file.stat().st_mtime < started
        ):
            results = None
            data["notes"].append(
                "metrics.json is older than these records (an earlier evaluation): not shown."
            )
        if isinstance(results, dict):
            summary["metrics"] = results
        elif metrics is None:
            data["notes"].append("No metrics.json yet (the evaluation is going on or stopped).")
        data.update(run=output.records.parent.name, folder=str(output.records.parent.resolve()))
    cut = _fit(rows, budget)
    if cut:
        data["notes"].append(
            f"The page holds the details of the first {len(rows) - cut} rollouts; "
            f"{cut} more are listed with their figures only ({output.records.name} holds all)."
        )
    data.update(summary=summary, rollouts=rows, text_cap=TEXT_CAP)
    return data
