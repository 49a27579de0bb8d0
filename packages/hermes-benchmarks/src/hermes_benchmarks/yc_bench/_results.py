"""A YC-Bench run's result line, the run summary and its table.

Each finished (preset, seed) run is one line of ``results.jsonl`` written through
:class:`~hermes_benchmarks._results.ResultsLog` (fsynced, resumable): the harness's
common fields (``task`` = the preset, ``trial`` = the seed, ``status``, ``reward`` = the
score, ``error_kind``, ``attempts``) plus ``preset``, ``seed``, ``survival``,
``funds_cents``, ``normalised_funds``, ``score``, ``terminal_reason``. ``status`` is
``pass`` when the company survived to the horizon, ``fail`` when it did not, and
``infra_error`` when something other than the model stopped the run: such a run has no
score and is never averaged in as a 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError
from rich.table import Table

from hermes_benchmarks._results import TrialResult

__all__ = ["PresetSummary", "YCRunResult", "YCSummary", "read_runs", "summarize_runs", "table"]


class YCRunResult(TrialResult):
    """One finished (preset, seed) run (``task`` = preset, ``trial`` = seed)."""

    line_name: ClassVar[str] = "YC-Bench run result"

    preset: str
    seed: int
    survival: float | None = None
    funds_cents: int | None = None
    normalised_funds: float | None = None
    score: float | None = None
    terminal_reason: str | None = None


def read_runs(path: str | Path) -> list[YCRunResult]:
    """The complete run lines of ``results.jsonl`` (a cut-short last line is skipped).
    Blocking.

    Raises:
        ValueError: a complete line is not a YC-Bench run result (names the line).
    """
    runs: list[YCRunResult] = []
    file = Path(path)
    if not file.exists():
        return runs
    lines = file.read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines[:-1], start=1):
        try:
            runs.append(YCRunResult.model_validate(json.loads(line)))
        except (ValueError, ValidationError):
            raise ValueError(
                f"{file} line {number} is not a YC-Bench run result: move the file away "
                "or choose another output_dir"
            ) from None
    return runs


class PresetSummary(BaseModel):
    """Several runs together (one preset, or all of them)."""

    model_config = ConfigDict(frozen=True)

    runs: int
    scored: int
    survived: int
    infra_errors: int
    mean_score: float | None
    survival_rate: float | None
    mean_normalised_funds: float | None
    mean_funds_usd: float | None


class YCSummary(BaseModel):
    """``summary.json``: overall, per preset, and what kept runs from a score."""

    model_config = ConfigDict(frozen=True)

    overall: PresetSummary
    presets: dict[str, PresetSummary]
    error_kinds: dict[str, int]
    notes: list[str] = []


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _group(runs: Sequence[YCRunResult]) -> PresetSummary:
    scored = [r for r in runs if r.status != "infra_error"]
    return PresetSummary(
        runs=len(runs),
        scored=len(scored),
        survived=sum(1 for r in scored if r.survival == 1.0),
        infra_errors=len(runs) - len(scored),
        mean_score=_mean([r.score for r in scored if r.score is not None]),
        survival_rate=_mean([r.survival for r in scored if r.survival is not None]),
        mean_normalised_funds=_mean(
            [r.normalised_funds for r in scored if r.normalised_funds is not None]
        ),
        mean_funds_usd=_mean([r.funds_cents / 100 for r in scored if r.funds_cents is not None]),
    )


def summarize_runs(runs: Iterable[YCRunResult], notes: Sequence[str] = ()) -> YCSummary:
    """Overall and per-preset means over scored runs; infra errors counted apart."""
    every = list(runs)
    kinds: dict[str, int] = {}
    for run in every:
        if run.status == "infra_error" and run.error_kind:
            kinds[run.error_kind] = kinds.get(run.error_kind, 0) + 1
    presets = sorted({r.preset for r in every})
    return YCSummary(
        overall=_group(every),
        presets={p: _group([r for r in every if r.preset == p]) for p in presets},
        error_kinds=kinds,
        notes=list(notes),
    )


def _num(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def table(runs: Sequence[YCRunResult], summary: YCSummary) -> Table:
    """Every run, then each preset's and the overall means."""
    out = Table(title="YC-Bench")
    for column in ("preset", "seed", "status", "survival", "funds $", "norm. funds", "score"):
        out.add_column(column)
    for run in sorted(runs, key=lambda r: (r.preset, r.seed)):
        status = run.status if run.status != "infra_error" else f"infra ({run.error_kind})"
        funds = None if run.funds_cents is None else run.funds_cents / 100
        out.add_row(
            run.preset,
            str(run.seed),
            status,
            _num(run.survival, ".0f"),
            _num(funds, ",.0f"),
            _num(run.normalised_funds),
            _num(run.score),
        )
    out.add_section()
    for name, group in [*summary.presets.items(), ("overall", summary.overall)]:
        out.add_row(
            name,
            f"{group.runs} runs",
            f"{group.survived}/{group.scored} survived, {group.infra_errors} infra",
            _num(group.survival_rate, ".2f"),
            _num(group.mean_funds_usd, ",.0f"),
            _num(group.mean_normalised_funds),
            _num(group.mean_score),
        )
    return out
