"""``HermesAgentEnvConfig``: the agent, sandbox and tool settings on top of Atropos' config.

Every field of the reference's ``HermesAgentEnvConfig`` (its code, not only its table:
``dataset_split`` and ``prompt_field`` too) keeps its name, default and meaning. A wrong value (an
unknown backend, parser or toolset, a timeout that is not positive) fails when the
config is built, with a message naming the field and the allowed values.
"""

from __future__ import annotations

import json
from typing import Any

from atroposlib.envs.base import BaseEnvConfig, EvalHandlingEnum
from pydantic import Field, field_validator, model_validator

from hermes_envs._toolsets import AGENT_TOOLSETS
from hermes_parsers import get_parser, list_parsers
from hermes_sandbox import default_backends

__all__ = ["HermesAgentEnvConfig", "eval_only_settings"]


def _names(value: Any) -> Any:
    """CLI values arrive as text: accept a JSON list or ``a,b,c``; ``None``/``null`` is None."""
    if isinstance(value, str):
        text = value.strip()
        if text in ("", "None", "null"):
            return None
        if text.startswith("["):
            return json.loads(text)
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class HermesAgentEnvConfig(BaseEnvConfig):  # type: ignore[misc]  # atroposlib is untyped
    """Atropos' ``BaseEnvConfig`` plus the agent's settings.

    Differences from Atropos' own defaults: ``use_wandb`` is ``False`` (wandb runs only
    when asked, and never needs a login otherwise); ``tokenizer_name`` is ``None`` (no
    tokenizer: ``evaluate`` runs, ``process`` and ``serve`` ask for
    ``--env.tokenizer_name``) instead of a model on the Hugging Face hub.

    Raises:
        pydantic.ValidationError: at construction, for any value outside what is allowed;
            each error names the field and the allowed values.
    """

    enabled_toolsets: list[str] | None = Field(
        default=None, description="Toolsets to enable (None: all of them)."
    )
    disabled_toolsets: list[str] | None = Field(
        default=None, description="Toolsets removed after enabling."
    )
    distribution: str | None = Field(
        default=None, description="Name of a probabilistic toolset distribution."
    )
    max_agent_turns: int = Field(default=30, description="Most model calls per rollout.")
    agent_temperature: float = Field(default=1.0, description="Sampling temperature.")
    system_prompt: str | None = Field(default=None, description="System message for the agent.")
    terminal_backend: str = Field(
        default="local",
        description="Sandbox backend: local, docker, modal, daytona, ssh, singularity.",
    )
    terminal_timeout: int = Field(default=120, description="Seconds per terminal command.")
    terminal_lifetime: int = Field(default=3600, description="Most seconds a sandbox lives.")
    dataset_name: str | None = Field(default=None, description="Hugging Face dataset name.")
    dataset_split: str = Field(
        default="train", description="The dataset split an environment's setup() loads."
    )
    prompt_field: str = Field(
        default="prompt", description="The dataset field that holds each item's prompt."
    )
    tool_pool_size: int = Field(default=128, description="Threads for blocking tool calls.")
    tool_call_parser: str = Field(
        default="hermes", description="hermes_parsers format of raw (Phase 2) model output."
    )
    extra_body: dict[str, Any] | None = Field(
        default=None, description="Extra request fields (e.g. OpenRouter provider settings)."
    )
    eval_handling: EvalHandlingEnum = Field(
        default=EvalHandlingEnum.STOP_TRAIN,
        description="How training workers behave during an eval: STOP_TRAIN, LIMIT_TRAIN, NONE.",
    )
    use_wandb: bool = Field(default=False, description="Log to wandb (off unless asked).")
    tokenizer_name: str | None = Field(
        default=None,
        description="Tokenizer of the training tokens: a local directory or a Hugging Face "
        "hub name; None (or 'none'): no tokenizer, and only evaluate runs (Phase 1).",
    )
    # Beyond the reference's table:
    sandbox_options: dict[str, Any] | None = Field(
        default=None,
        description="More SandboxOptions for the backend (image, cpus, memory_mb, env, ...).",
    )
    max_tokens_per_turn: int | None = Field(
        default=None, description="max_tokens of each model call (None: the server's default)."
    )
    infra_retries: int = Field(
        default=2,
        description="Times a rollout that failed for infrastructure reasons is run again.",
    )
    min_rollouts_per_group: int | None = Field(
        default=None,
        description="Fewest good rollouts a group is sent with (None: the whole group_size); "
        "with fewer, the item goes back to the queue.",
    )

    token_worker: bool = Field(
        default=True,
        description="process makes Phase 1 tokens and group lines in a child process, so "
        "that work never holds the event loop (false: on a thread of the environment).",
    )
    write_viewer_html: bool = Field(
        default=True,
        description="process writes Atropos' HTML viewer of the groups (<file>.html) at the end.",
    )
    resume: bool = Field(
        default=False,
        description="process adds to a group file of a finished run (up to total_steps "
        "groups); an unfinished (killed) run is continued without it.",
    )
    max_endpoint_timeouts: int = Field(
        default=3,
        description="The run stops after this many rollouts in a row ended because a model "
        "request timed out (openai.timeout; 300 s unless set).",
    )
    max_reward_errors: int = Field(
        default=5,
        description="The run stops after compute_reward raised on this many rollouts in a "
        "row (each is logged with its traceback and dropped from its group).",
    )
    max_dropped_items: int = Field(
        default=3,
        description="process stops with an error after this many items in a row were given "
        "up on (every try lost to infrastructure failures).",
    )

    @field_validator("tokenizer_name", mode="before")
    @classmethod
    def _tokenizer_or_none(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("", "none", "null"):
            return None
        return value

    @field_validator("enabled_toolsets", "disabled_toolsets", mode="before")
    @classmethod
    def _toolset_list(cls, value: Any) -> Any:
        return _names(value)

    @field_validator("enabled_toolsets", "disabled_toolsets")
    @classmethod
    def _known_toolsets(cls, value: list[str] | None) -> list[str] | None:
        for name in value or ():
            if name not in AGENT_TOOLSETS:
                raise ValueError(f"unknown toolset {name!r}; allowed: {', '.join(AGENT_TOOLSETS)}")
        return value

    @field_validator("extra_body", "sandbox_options", mode="before")
    @classmethod
    def _json_mapping(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text in ("", "None", "null"):
                return None
            return json.loads(text)
        return value

    @field_validator("terminal_backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        known = default_backends.names()
        if value not in known:
            raise ValueError(f"unknown backend {value!r}; allowed: {', '.join(known)}")
        return value

    @field_validator("tool_call_parser")
    @classmethod
    def _known_parser(cls, value: str) -> str:
        try:
            get_parser(value)
        except KeyError:
            raise ValueError(
                f"unknown parser {value!r}; allowed: {', '.join(list_parsers())}"
            ) from None
        return value

    @field_validator(
        "terminal_timeout",
        "terminal_lifetime",
        "max_agent_turns",
        "tool_pool_size",
        "max_dropped_items",
        "max_reward_errors",
        "max_endpoint_timeouts",
    )
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError(f"must be a positive whole number, got {value}")
        return value

    @field_validator("infra_retries")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"must be 0 or more, got {value}")
        return value

    @field_validator("agent_temperature")
    @classmethod
    def _temperature(cls, value: float) -> float:
        if not 0 <= value <= 2:
            raise ValueError(f"must be between 0 and 2, got {value}")
        return value

    @model_validator(mode="after")
    def _group_minimum(self) -> HermesAgentEnvConfig:
        low = self.min_rollouts_per_group
        if low is not None and not 1 <= low <= self.group_size:
            raise ValueError(
                f"min_rollouts_per_group must be between 1 and group_size ({self.group_size}), "
                f"got {low}"
            )
        return self

    @property
    def group_minimum(self) -> int:
        """Fewest good rollouts a group is sent with."""
        return self.min_rollouts_per_group or self.group_size


def eval_only_settings() -> dict[str, Any]:
    """The config fields of an eval-only environment (a benchmark), to splat into its
    config in ``config_init``: the reference's ``eval_handling=STOP_TRAIN``,
    ``steps_per_eval=1``, ``total_steps=1``, groups of one whose scores may all be equal,
    and no tokenizer (``evaluate`` never tokenizes, so none is loaded)."""
    return {
        "eval_handling": EvalHandlingEnum.STOP_TRAIN,
        "group_size": 1,
        "steps_per_eval": 1,
        "total_steps": 1,
        "tokenizer_name": None,
        "ensure_scores_are_not_same": False,
    }
