"""What the command line needs of an environment: ``RunnableEnv`` and ``RunnableEnvClass``.

``hermes_envs._cli`` runs any class with this shape (``HermesAgentBaseEnv`` and its
subclasses have it) without importing the base class, so the command line stays light to
import and the base class can hand itself to the command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from atroposlib.envs.server_handling.server_baseline import APIServerConfig, ServerBaseline

from hermes_envs._stats import ProgressReporter, RunStats

if TYPE_CHECKING:
    from hermes_envs._env_config import HermesAgentEnvConfig
    from hermes_envs._redaction import Redactor

__all__ = ["RunnableEnv", "RunnableEnvClass"]


class RunnableEnv(Protocol):
    """An environment built for one command: its config, its counters, its three runs."""

    reporter: ProgressReporter
    n_groups_to_process: int
    group_size_to_process: int

    @property
    def config(self) -> HermesAgentEnvConfig:
        """The environment's settings."""
        ...

    @property
    def stats(self) -> RunStats:
        """The run's counters."""
        ...

    @property
    def redactor(self) -> Redactor:
        """Replaces the run's configured secrets (applied to its log records)."""
        ...

    def require_tokenizer(self, purpose: str) -> object:
        """The env's tokenizer; raises ``EnvSetupError`` naming ``--env.tokenizer_name``
        when it has none (``purpose`` is named in the message)."""
        ...

    async def close(self) -> None:
        """Close every sandbox, thread and file the environment holds (idempotent)."""

    async def process_manager(self) -> None:
        """``process``: scored groups to the JSONL file."""

    async def run_evaluate(self) -> None:
        """``evaluate``: ``setup()`` then ``evaluate()``."""

    async def env_manager(self) -> None:
        """``serve``: feed an Atropos API."""


class RunnableEnvClass(Protocol):
    """An environment class: its defaults, its name, and its constructor.

    The constructor raises ``TokenizerLoadError``, ``ValueError`` or ``TypeError`` for a
    setting it cannot start with (the command line prints the message as one line).
    """

    @property
    def name(self) -> str | None:
        """The environment's name (``None``: the class's ``__name__`` is used)."""
        ...

    @property
    def env_config_cls(self) -> type[HermesAgentEnvConfig]:
        """The config class whose fields are the ``--env.NAME`` options."""
        ...

    def config_init(self) -> tuple[Any, Any]:
        """The default env config and server config(s)."""
        ...

    def __call__(
        self,
        config: HermesAgentEnvConfig,
        server_configs: ServerBaseline | APIServerConfig | Sequence[APIServerConfig],
        slurm: bool = ...,
        testing: bool = ...,
    ) -> RunnableEnv:
        """Build the environment."""
        ...
