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

    tasks_dir: str | None = Field(
        default=None,
        description="a local folder of task folders (harbor layout); wins over dataset_name",
    )
    dataset_name: str | None = Field(
        default=None,
        description="a Hugging Face dataset of tasks, or a local parquet/JSONL file or folder",
    )
    dataset_split: str = Field(default="train", description="the dataset's split to read")
    cache_dir: str | None = Field(
        default=None,
        description="where dataset tasks are unpacked (default $XDG_CACHE_HOME/hermes-bench/tasks)",
    )
    task_filter: list[str] = Field(
        default_factory=list,
        description="task names or patterns to run (JSON list or comma-separated); empty: all",
    )
    n_trials: int = Field(
        default=1, ge=1, description="trials per task (pass@k for every k up to it)"
    )
    max_concurrent_tasks: int = Field(default=4, ge=1, description="trials running at once")
    start_ahead: int | None = Field(
        default=None,
        ge=0,
        description="sandboxes started ahead of their trial (default: 1 on docker, else 0)",
    )
    image_map: list[str] = Field(
        default_factory=list,
        description="FROM=TO rewrites of every image a build or task names (e.g. a mirror)",
    )
    offline_builds: bool = Field(
        default=False,
        description="build task images without the network; a missing base image fails in one line",
    )
    build_network: Literal["default", "host"] = Field(
        default="default",
        description="the network of Dockerfile RUN steps: the daemon's default or the host's",
    )
    network: Literal["task", "off", "host"] = Field(
        default="task",
        description="the agent's network: each task's allow_internet, always off, or the host's",
    )
    terminal_backend: str = Field(
        default="docker",
        description="the sandbox backend: docker, modal, daytona, local, ssh or singularity",
    )
    output_dir: str = Field(
        default="runs/benchmark",
        description="where results.jsonl, summary.json, artifacts/ and view.html go",
    )
    resume: bool = Field(
        default=False,
        description="finish the run already in output_dir (only the trials without a result line)",
    )
    infra_retries: int = Field(
        default=1,
        ge=0,
        description="retries of a trial stopped by the infrastructure (never of a scored failure)",
    )
    timeout_multiplier: float = Field(
        default=1.0, gt=0, description="multiplies every agent, verifier and build timeout"
    )
    leaderboard: bool = Field(
        default=False,
        description="refuse settings that are not comparable with the suite's leaderboard",
    )
    unofficial: bool = Field(
        default=False,
        description="allow non-default settings without marking the summary comparable",
    )
    agent: str = Field(
        default="hermes",
        description="hermes (the agent loop on openai:), oracle (the solution) or module:Class",
    )

    @field_validator("task_filter", "image_map", mode="before")
    @classmethod
    def _lists(cls, value: Any) -> Any:
        return as_list(value)


class BenchConfig(HarnessSettings):
    """``hermes-bench``'s ``env:``: the harness settings and the hermes agent's turns."""

    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(
        default=50, ge=1, description="the hermes agent's model calls per trial at most"
    )


class OpenAISection(BaseModel):
    """``openai:``: the model endpoint the hermes agent talks to."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(
        default="http://127.0.0.1:8000/v1", description="the OpenAI-compatible endpoint (.../v1)"
    )
    model: str = Field(
        default="default",
        description="the model name sent with each request (also --openai.model_name)",
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="the environment variable holding the endpoint's key (never on argv)",
    )
    temperature: float = Field(default=1.0, ge=0, description="sampling temperature")
    max_tokens: int | None = Field(
        default=None, ge=1, description="most tokens per answer (unset: the endpoint's default)"
    )


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
