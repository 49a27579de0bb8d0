"""A suite's settings: the ``env:`` and ``openai:`` sections of its YAML and command line.

The ``env`` field names are the ones others script against: ``tasks_dir``,
``dataset_name``, ``task_filter``, ``n_trials``, ``max_concurrent_tasks``, ``image_map``
(``FROM=TO`` strings), ``terminal_backend``, ``output_dir``, ``resume``,
``infra_retries``, ``leaderboard``.

They are defined once, in :class:`HarnessSettings`: ``hermes-bench`` reads them into
:class:`BenchConfig`, and the suites' Atropos environments
(:mod:`hermes_benchmarks.env`) mix the same class into their environment config.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "BenchConfig",
    "HarnessSettings",
    "OpenAISection",
    "Suite",
    "as_list",
    "leaderboard_problems",
]


@dataclass(frozen=True)
class Suite:
    """A benchmark suite: its name, dataset, tiers and leaderboard rule.

    ``leaderboard_trials``: the trials per task a leaderboard run needs (None: the suite
    has no leaderboard mode). ``agent_timeout_sec`` and ``verifier_timeout_sec``: the
    timeouts of a dataset task whose row does not carry its own.
    """

    name: str
    dataset_name: str
    tiers: tuple[str, ...] = ()
    leaderboard_trials: int | None = None
    agent_timeout_sec: float = 1800.0
    verifier_timeout_sec: float = 600.0


def as_list(value: Any) -> Any:
    """A command-line string as a list: JSON (``["a","b"]``) or comma-separated."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return json.loads(text)
            except ValueError:
                raise ValueError(
                    f"{text!r} is not a JSON list: give one, or comma-separated values"
                ) from None
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class HarnessSettings(BaseModel):
    """What to run and where the results go: the ``env:`` fields of every suite.

    ``tasks_dir`` (a local folder of task folders) wins over ``dataset_name`` (a Hugging
    Face dataset, or a local parquet/JSONL file or dataset folder in its shape, read from
    its ``dataset_split``; its tasks are unpacked under ``cache_dir``, by default
    ``$XDG_CACHE_HOME/hermes-bench/tasks``).
    """

    tasks_dir: str | None = None
    dataset_name: str | None = None
    dataset_split: str = "train"
    cache_dir: str | None = None
    task_filter: list[str] = Field(default_factory=list)
    n_trials: int = Field(default=1, ge=1)
    max_concurrent_tasks: int = Field(default=4, ge=1)
    image_map: list[str] = Field(default_factory=list)
    offline_builds: bool = False
    build_network: Literal["default", "host"] = "default"
    network: Literal["task", "off", "host"] = "task"
    terminal_backend: str = "docker"
    output_dir: str = "runs/benchmark"
    resume: bool = False
    infra_retries: int = Field(default=1, ge=0)
    timeout_multiplier: float = Field(default=1.0, gt=0)
    leaderboard: bool = False
    unofficial: bool = False
    agent: str = "hermes"

    @field_validator("task_filter", "image_map", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return as_list(value)


class BenchConfig(HarnessSettings):
    """``hermes-bench``'s ``env:``: the harness settings and the hermes agent's turns."""

    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(default=50, ge=1)


class OpenAISection(BaseModel):
    """``openai:``: the model endpoint the hermes agent talks to."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "default"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = Field(default=1.0, ge=0)
    max_tokens: int | None = Field(default=None, ge=1)


def leaderboard_problems(config: HarnessSettings, suite: Suite) -> list[str]:
    """Why a run's settings are not comparable with the leaderboard (empty: they are)."""
    problems = []
    if suite.leaderboard_trials is None:
        return [f"{suite.name} has no leaderboard mode"]
    if config.n_trials < suite.leaderboard_trials:
        problems.append(f"n_trials is {config.n_trials}, under {suite.leaderboard_trials}")
    if config.timeout_multiplier != 1.0:
        problems.append(f"timeout_multiplier is {config.timeout_multiplier:g}, not 1")
    if config.task_filter:
        problems.append("task_filter leaves tasks out")
    if config.agent == "oracle":
        problems.append("the agent is the oracle")
    if config.network != "task":
        problems.append(f"network is {config.network}, not each task's allow_internet")
    return problems
