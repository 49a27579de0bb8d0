"""A finished (or running) run's folder read into the data the viewer shows.

What is read, all optional but ``results.jsonl``:

- ``summary.json`` (the run's summary as written at its end; a run still going or
  killed has none: the viewer then counts from the result lines);
- ``results.jsonl``, one line per finished trial (a torn last line is skipped);
- per trial, its record folder (``artifacts/<task>/<trial>/``, named by the line's
  ``artifacts``): ``agent/trajectory.json`` (harbor's ATIF), ``agent/output.txt`` (what
  the oracle's ``solve.sh`` or a ``module:Class`` agent printed), ``verifier/``
  (``test-stdout.txt``, ``test-stderr.txt``, ``result.json``), ``changes.json`` (the
  agent's changes outside its work directory), ``artifacts.json`` and ``files/``.

Texts are cut to :data:`TEXT_CAP` characters each (head and tail kept, the cut said),
so that a page of a large run stays small enough for a browser; the files themselves
are linked in full.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

__all__ = ["TEXT_CAP", "RunData", "load_run"]

#: Characters of one text (a tool output, a verifier log) the page holds.
TEXT_CAP: Final = 20_000
#: Files of a trial's ``files/`` listed (the rest counted).
FILES_LISTED: Final = 200

RunData = dict[str, Any]

_TEXT_FILES: Final = {
    "agent_output": "agent/output.txt",
    "verifier_stdout": "verifier/test-stdout.txt",
    "verifier_stderr": "verifier/test-stderr.txt",
}
_JSON_FILES: Final = {
    "trajectory": "agent/trajectory.json",
    "verifier_result": "verifier/result.json",
    "changes": "changes.json",
    "manifest": "artifacts.json",
}


def load_run(folder: Path) -> RunData:
    """Everything the page shows of the run in ``folder``.

    Raises:
        FileNotFoundError: ``folder`` holds no ``results.jsonl`` (not a run's folder).
        OSError: a file of the run cannot be read.
    """
    results_file = folder / "results.jsonl"
    if not results_file.is_file():
        raise FileNotFoundError(
            f"{folder} holds no results.jsonl: give the --env.output_dir of a hermes-bench run"
        )
    trials = [_trial(folder, line) for line in _lines(results_file)]
    summary_file = folder / "summary.json"
    summary = _json(summary_file) if summary_file.is_file() else None
    return {
        "run": folder.resolve().name,
        "folder": str(folder.resolve()),
        "summary": summary if isinstance(summary, dict) else None,
        "trials": trials,
        "text_cap": TEXT_CAP,
    }


def _lines(path: Path) -> list[dict[str, Any]]:
    lines = []
    for raw in path.read_bytes().splitlines():
        try:
            value = json.loads(raw)
        except ValueError:  # the torn tail of a killed run
            continue
        if isinstance(value, dict):
            lines.append(value)
    return lines


def _trial(folder: Path, line: dict[str, Any]) -> dict[str, Any]:
    trial = dict(line)
    record: dict[str, Any] = {}
    where = line.get("artifacts")
    if isinstance(where, str) and where:
        base = (folder / where).resolve()
        if base.is_relative_to(folder.resolve()) and base.is_dir():
            record["path"] = where
            for key, name in _TEXT_FILES.items():
                text = _text(base / name)
                if text is not None:
                    record[key] = text
            for key, name in _JSON_FILES.items():
                path = base / name
                if path.is_file():
                    record[key] = _capped(_json(path))
            record["files"], record["files_more"] = _files(base / "files")
    trial["record"] = record
    return trial


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except ValueError:
        return {"unreadable": f"{path.name} is not JSON"}


def _text(path: Path) -> str | None:
    if not path.is_file():
        return None
    with path.open("rb") as file:
        head = file.read(TEXT_CAP * 4 + 1)
    return cap(head.decode("utf-8", errors="replace"), more=path.stat().st_size > len(head))


def cap(text: str, *, more: bool = False) -> str:
    """``text`` cut to :data:`TEXT_CAP` characters, head and tail kept, the cut said."""
    if len(text) <= TEXT_CAP and not more:
        return text
    half = TEXT_CAP // 2
    if len(text) <= TEXT_CAP:
        return text + "\n[... cut here: the file holds more; open it for the rest]"
    return (
        text[:half]
        + f"\n[... {len(text) - 2 * half} characters cut; open the file for all of it ...]\n"
        + text[-half:]
    )


def _capped(value: Any) -> Any:
    """``value`` with every string cut to the cap (structure kept)."""
    if isinstance(value, str):
        return cap(value)
    if isinstance(value, list):
        return [_capped(item) for item in value]
    if isinstance(value, dict):
        return {key: _capped(item) for key, item in value.items()}
    return value


def _files(root: Path) -> tuple[list[dict[str, Any]], int]:
    """The kept files under ``root`` (path relative to the trial's folder, size)."""
    if not root.is_dir():
        return [], 0
    found: list[dict[str, Any]] = []
    more = 0
    for directory, _, names in os.walk(root):
        for name in sorted(names):
            path = Path(directory) / name
            if len(found) >= FILES_LISTED:
                more += 1
                continue
            try:
                size = path.lstat().st_size
            except OSError:
                continue
            found.append({"path": str(path.relative_to(root.parent)), "size": size})
    return found, more
