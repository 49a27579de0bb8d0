"""``YCBenchEvalConfig``: ``HermesAgentEnvConfig`` plus the YC-Bench run matrix and scoring."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from hermes_benchmarks._config import as_list
from hermes_benchmarks.yc_bench._install import YC_BENCH_VERSION
from hermes_envs import HermesAgentEnvConfig

__all__ = ["DEFAULT_OUTPUT_DIR", "YCBenchEvalConfig"]

#: Where results go unless ``output_dir`` says otherwise.
DEFAULT_OUTPUT_DIR = "runs/yc-bench"


class YCBenchEvalConfig(HermesAgentEnvConfig):
    """The settings of a YC-Bench evaluation (``--env.NAME``).

    Raises:
        pydantic.ValidationError: a seed below 0, an empty preset or seed list, a
            terminal backend other than ``local``, weights or limits out of range.
    """

    presets: list[str] = Field(
        default_factory=lambda: ["fast_test", "medium", "hard"],
        description="yc-bench presets to run (each with every seed).",
    )
    seeds: list[int] = Field(
        default_factory=lambda: [1, 2, 3], description="World seeds (0 or more)."
    )
    output_dir: str = Field(
        default=DEFAULT_OUTPUT_DIR,
        description="results.jsonl, summary.json and each run's simulation folder.",
    )
    resume: bool = Field(default=False, description="Finish an interrupted run in output_dir.")
    yc_bench_command: str | None = Field(
        default=None,
        description="An installed yc-bench (path or name on PATH) with its python beside it.",
    )
    yc_bench_python: str | None = Field(
        default=None, description="A Python >= 3.12 to make yc-bench's environment with."
    )
    yc_bench_venv: str | None = Field(
        default=None,
        description="Where yc-bench's environment is made and reused "
        "(default ~/.cache/hermes-benchmarks/yc-bench-<version>).",
    )
    yc_bench_version: str = Field(default=YC_BENCH_VERSION, description="yc-bench to install.")
    uv: str | None = Field(
        default="uv", description="uv used to make yc-bench's environment (else pip)."
    )
    run_timeout: float = Field(
        default=3600.0, gt=0, description="Wall-clock seconds an agent may play one run."
    )
    max_auto_resumes: int = Field(
        default=500,
        ge=0,
        description="`sim resume` calls the harness makes to finish a simulation the "
        "agent left unfinished.",
    )
    max_concurrent_runs: int = Field(default=1, ge=1, description="Runs played at once.")
    survival_weight: float = Field(default=0.5, ge=0, description="Weight of survival.")
    funds_weight: float = Field(default=0.5, ge=0, description="Weight of normalised funds.")
    company_name: str = Field(default="BenchCo", description="The simulated company's name.")
    start_date: str = Field(default="2025-01-01", description="Simulation start (YYYY-MM-DD).")
    horizon_years: int | None = Field(
        default=None, ge=1, description="Simulated years (None: the preset's own)."
    )

    @field_validator("presets", "seeds", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return as_list(value)

    @field_validator("presets", "seeds")
    @classmethod
    def _not_empty(cls, value: list[Any]) -> list[Any]:
        if not value:
            raise ValueError("must name at least one")
        return value

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, value: list[int]) -> list[int]:
        bad = [seed for seed in value if seed < 0]
        if bad:
            raise ValueError(f"seeds must be 0 or more, got {bad[0]}")
        return value

    @field_validator("start_date")
    @classmethod
    def _date(cls, value: str) -> str:
        from datetime import date

        try:
            date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"must be a date YYYY-MM-DD, got {value!r}") from None
        return value

    @model_validator(mode="after")
    def _evals_beside_results(self) -> YCBenchEvalConfig:
        # Atropos' metrics.json / samples.jsonl go with results.jsonl unless set apart
        # (the command line fills in data/<env>_eval when nothing is set).
        current: Any = self.__dict__.get("data_dir_to_save_evals")
        if current in (None, "data/yc-bench_eval", DEFAULT_OUTPUT_DIR):
            self.__dict__["data_dir_to_save_evals"] = self.output_dir
        return self

    @field_validator("terminal_backend")
    @classmethod
    def _local_only(cls, value: str) -> str:
        if value != "local":
            raise ValueError(
                "YC-Bench runs on the local backend only (its simulation and database live "
                f"on this machine), got {value!r}"
            )
        return value
