"""``HermesAgentEvalEnv``: the base of an evaluation-only environment.

What an environment that only evaluates uses (the TerminalBench 2 and YC-Bench suites
of hermes-benchmarks): the config and its command line, the model endpoints and an
``AgentLoop`` over them, the sandbox options, the run's counters and progress, the
checks before a run, Atropos' ``evaluate_log`` with secrets redacted, wandb, and
closing. It holds no tokenizer, sandbox pool, tool registry or group file: ``process``
and ``serve`` stop at start with one line saying the environment only evaluates.

``HermesAgentBaseEnv`` extends it with the training side (rollouts scored by
``compute_reward``, tokens, ``process`` and ``serve``).
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ClassVar, Generic

from atroposlib.envs.base import BaseEnv
from atroposlib.envs.server_handling.server_manager import APIServerConfig, ServerBaseline

from hermes_envs._cli import run_cli
from hermes_envs._endpoints import atropos_copy, checked_servers, make_endpoint
from hermes_envs._env_config import HermesAgentEnvConfig
from hermes_envs._errors import EnvSetupError, TokenizerLoadError
from hermes_envs._preflight import (
    CLOUD_BACKENDS,
    check_backend,
    check_endpoints,
    check_isolation,
    start_wandb,
)
from hermes_envs._redaction import Redactor, configured_secrets
from hermes_envs._resume import ItemSeeds
from hermes_envs._stats import ProgressReporter, RunStats
from hermes_envs._tokenizer import shipped_tokenizer_dir
from hermes_loop import AgentLoop, ChatServer, ToolSet
from hermes_loop.templates import TransformersTokenizer
from hermes_sandbox import SandboxClosedError, SandboxPool, SandboxStartError

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    #: The type of an environment's items (``get_next_item``, ``format_prompt``, ...).
    ItemT = TypeVar("ItemT", default=Any)
else:
    from typing import TypeVar

    ItemT = TypeVar("ItemT")

__all__ = ["HermesAgentEvalEnv", "ItemT", "chatml"]


class _Silent:
    def update(self, stats: RunStats) -> None:
        return None


class HermesAgentEvalEnv(BaseEnv, Generic[ItemT]):  # type: ignore[misc]  # atroposlib is untyped
    """An Atropos ``BaseEnv`` that evaluates an agent (``evaluate``) and nothing else.

    A subclass implements ``config_init``, ``setup`` and ``evaluate``; ``agent_loop``
    gives an ``AgentLoop`` over the configured endpoint(s), ``log_evaluation`` writes
    the results.

    Args:
        config: a ``HermesAgentEnvConfig`` (or subclass).
        server_configs: the model endpoint(s) (``server_type`` ``openai``).
        slurm, testing: as Atropos' ``BaseEnv``.

    Raises:
        TypeError: if ``config`` is not a ``HermesAgentEnvConfig``.
        ValueError: if no model endpoint is configured, a ``server_type`` is not
            ``openai``, or a hosted (``https://``) endpoint has no API key.
        TokenizerLoadError: if Atropos cannot load the small tokenizer it is given.
    """

    env_config_cls = HermesAgentEnvConfig
    #: The environment's name (Atropos' ``name``): default file names and ``wandb_name``.
    name: ClassVar[str | None] = None

    #: The local backend's ``isolation`` when ``sandbox_options`` does not set it:
    #: ``"auto"``, bubblewrap namespaces where they work, else plain commands with a
    #: logged warning.
    local_isolation: ClassVar[str] = "auto"

    #: Whether the environment keeps the tokenizer ``env.tokenizer_name`` names (an
    #: evaluation-only environment never tokenizes: it holds none).
    holds_tokenizer: ClassVar[bool] = False

    config: HermesAgentEnvConfig
    n_groups_to_process: int
    group_size_to_process: int

    def __init__(
        self,
        config: HermesAgentEnvConfig,
        server_configs: ServerBaseline | APIServerConfig | Sequence[APIServerConfig],
        slurm: bool = False,
        testing: bool = False,
    ) -> None:
        if not isinstance(config, HermesAgentEnvConfig):
            raise TypeError(
                f"{type(self).__name__} needs a HermesAgentEnvConfig, got {type(config).__name__}"
            )
        servers = checked_servers(server_configs, config)
        if not self.holds_tokenizer and any(s.server_type != "openai" for s in servers):
            raise ValueError(
                f"{type(self).__name__} only evaluates, through a chat completions endpoint: "
                "set --openai.server_type openai"
            )
        groups_path = config.data_path_to_save_groups
        #: The seed of an item (``item_seed``), made once per item object.
        self.item_seeds = ItemSeeds()
        self._open_outputs(config)
        # Atropos would open a group file of its own (or start ``<stem>_1.jsonl`` beside
        # an existing one): it never gets the path.
        config = config.model_copy(update={"data_path_to_save_groups": None})
        no_tokenizer = not self.holds_tokenizer or config.tokenizer_name is None
        if no_tokenizer:
            # Atropos' BaseEnv.__init__ always loads ``tokenizer_name``; it gets the small
            # tokenizer hermes-loop ships (a local directory: no hub), dropped below.
            config = config.model_copy(update={"tokenizer_name": shipped_tokenizer_dir()})
        try:
            super().__init__(config, [atropos_copy(s) for s in servers], slurm, testing)
        except (OSError, ValueError) as exc:
            self._close_outputs()
            if "tokenizer" not in str(exc).lower() and not isinstance(exc, OSError):
                raise
            raise TokenizerLoadError(
                f"cannot load tokenizer {config.tokenizer_name!r} ({type(exc).__name__}); "
                "set --env.tokenizer_name to a local tokenizer directory or a reachable "
                "Hugging Face hub name"
            ) from exc
        self.server_configs = servers
        self.config.data_path_to_save_groups = groups_path
        self.stats = RunStats()
        self.reporter: ProgressReporter = _Silent()
        #: Replaces every configured secret in what the run writes (``redaction``).
        self.redactor = Redactor(configured_secrets(servers, config.sandbox_options))
        self.loop_tokenizer: TransformersTokenizer | None = None
        #: Renders a prompt's text for ``/generate`` (Phase 2).
        self.render: Callable[..., str] = chatml
        if no_tokenizer:
            self.tokenizer = None
            config.tokenizer_name = None
        self._attach_parts()
        self.executor = ThreadPoolExecutor(
            max_workers=config.tool_pool_size, thread_name_prefix="hermes-envs-tool"
        )
        self.endpoints: list[ChatServer] = [
            make_endpoint(server, config, tokenizer=self.loop_tokenizer, render=self.render)
            for server in servers
        ]
        self._endpoint_turn = itertools.count()
        self._task_prefix = f"{self.name or type(self).__name__}-{uuid.uuid4().hex[:12]}"
        self._task_count = itertools.count(1)
        self._closed = False

    # -- what a subclass extends --------------------------------------------------------

    def _open_outputs(self, config: HermesAgentEnvConfig) -> None:
        """Before Atropos' ``BaseEnv.__init__``: open what the environment writes (here:
        nothing)."""

    def _close_outputs(self) -> None:
        """Close what ``_open_outputs`` opened (idempotent)."""

    def _attach_parts(self) -> None:
        """After Atropos' ``BaseEnv.__init__``, before the endpoints are made: build the
        parts a subclass adds (tokenizer, sandbox pool, tools). Here: none."""

    async def _release(self) -> None:
        """In ``close``, before the threads and endpoints: release what a subclass holds
        (sandboxes, worker processes). Here: nothing."""

    # -- what an evaluation uses ---------------------------------------------------------

    def format_prompt(self, item: ItemT) -> str | list[dict[str, Any]]:
        """The user message for ``item`` (or a whole list of OpenAI messages).

        Raises:
            NotImplementedError: unless a subclass implements it (``build_messages``
                calls it).
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement format_prompt")

    def build_messages(self, item: ItemT) -> list[dict[str, Any]]:
        """The rollout's opening messages (``format_prompt`` as a user message)."""
        prompt = self.format_prompt(item)
        if isinstance(prompt, str):
            return [{"role": "user", "content": prompt}]
        return [dict(message) for message in prompt]

    def sandbox_options(self) -> dict[str, Any]:
        """The backend options of every sandbox: ``sandbox_options`` from the config, and
        on the ``local`` backend ``isolation=local_isolation`` unless the config sets it."""
        options = dict(self.config.sandbox_options or {})
        if self.config.terminal_backend == "local":
            options.setdefault("isolation", self.local_isolation)
        return options

    def new_task_id(self) -> str:
        """A fresh task id (one sandbox each): the env's name, a random part drawn once
        per environment, and a count, so ids never repeat within or across processes."""
        return f"{self._task_prefix}-{next(self._task_count)}"

    def agent_loop(self, tools: ToolSet) -> AgentLoop:
        """An ``AgentLoop`` over the next endpoint (round robin) with the env's settings."""
        cfg = self.config
        endpoint = self.endpoints[next(self._endpoint_turn) % len(self.endpoints)]
        return AgentLoop(
            endpoint,
            tools,
            max_turns=cfg.max_agent_turns,
            temperature=cfg.agent_temperature,
            max_tokens=cfg.max_tokens_per_turn,
            executor=self.executor,
            tool_timeout=float(cfg.terminal_timeout) + 30.0,
            system_prompt=cfg.system_prompt,
            # A tool that finds its sandbox dead ends the rollout as an infra failure
            # instead of showing the model an error and going on.
            infra_exceptions=(SandboxClosedError, SandboxStartError),
        )

    def require_tokenizer(self, purpose: str) -> TransformersTokenizer:
        """The env's tokenizer, for ``purpose`` (named in the error).

        Raises:
            EnvSetupError: always: an evaluation-only environment holds none.
        """
        raise EnvSetupError(
            f"{purpose} needs a tokenizer and {type(self).__name__} only evaluates: run evaluate"
        )

    # -- the training side, not used -----------------------------------------------------

    async def get_next_item(self) -> ItemT | None:
        """Not used by ``evaluate``: no items. (``None``: no more items.)"""
        return None

    async def collect_trajectories(self, item: ItemT) -> tuple[None, list[Any]]:
        """Evaluation only: no training groups."""
        return None, []

    async def score(self, rollout_group_data: Any) -> None:
        """Evaluation only: nothing to score for training."""

    async def process_manager(self) -> None:
        """``process``: refused.

        Raises:
            EnvSetupError: always (``require_tokenizer``).
        """
        self.require_tokenizer("process")

    async def env_manager(self) -> None:
        """``serve``: refused.

        Raises:
            EnvSetupError: always (``require_tokenizer``).
        """
        self.require_tokenizer("serve")

    # -- runs ------------------------------------------------------------------------------

    def _run_scope(self) -> contextlib.AbstractContextManager[None]:
        """What a run binds for the environment's code (nothing here)."""
        return contextlib.nullcontext()

    async def run_evaluate(self) -> None:
        """``evaluate``: the checks and ``setup()``, then (the progress display told once,
        so that it appears only after the checks passed) ``evaluate()``, then everything
        closed."""
        try:
            with self._run_scope():
                await self._preflight()
                await self.setup()
                await check_endpoints(self.server_configs, self.config)
                await start_wandb(self.config.use_wandb, self._start_wandb)
                self.reporter.update(self.stats)
                await self.evaluate()
        finally:
            await self.close()

    async def _preflight(self) -> None:
        """Before any rollout (``preflight``): a cloud backend must start a sandbox, and
        a run holding a secret must get isolated local sandboxes.

        Raises:
            EnvSetupError: one line naming the setting to change.
        """
        await self._check_backend()
        if self.config.terminal_backend == "local":
            await check_isolation(self.sandbox_options(), len(self.redactor.secrets))

    async def _check_backend(self) -> None:
        """Start (and close) one sandbox of a cloud backend (``check_backend``).

        Raises:
            EnvSetupError: one line naming ``env.terminal_backend``.
        """
        backend = self.config.terminal_backend
        if backend in CLOUD_BACKENDS:
            async with SandboxPool(backend, **self.sandbox_options()) as pool:
                await check_backend(backend, pool, f"{self._task_prefix}-0")

    async def evaluate_log(self, metrics: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        """Atropos' ``evaluate_log`` with every configured secret replaced in the metrics,
        the samples and the rest of what it writes (``redaction``)."""
        redact = self.redactor.data
        await super().evaluate_log(
            redact(metrics),
            *(redact(arg) for arg in args),
            **{key: redact(value) for key, value in kwargs.items()},
        )

    async def log_evaluation(
        self,
        metrics: Mapping[str, float],
        samples: Sequence[Mapping[str, Any]],
        *,
        start_time: float,
        **options: Any,
    ) -> None:
        """Write an evaluation with Atropos' ``evaluate_log`` (``metrics.json``,
        ``samples.jsonl`` in ``data_dir_to_save_evals``; wandb when on), naming the first
        server's model and ending now. ``options`` go to ``evaluate_log`` as they are
        (e.g. ``generation_parameters``, ``verbose``)."""
        await self.evaluate_log(
            dict(metrics),
            samples=[dict(sample) for sample in samples],
            model_name=self.server_configs[0].model_name,
            start_time=start_time,
            end_time=time.time(),
            **options,
        )

    def _start_wandb(self) -> None:
        if not self.config.use_wandb:
            return
        import wandb

        wandb.init(name=self.config.wandb_name, config=self.config.model_dump(mode="json"))

    async def wandb_log(self, wandb_metrics: dict[str, Any] | None = None) -> None:
        """Atropos' metrics plus this run's counters (infra failures, token drift)."""
        metrics = dict(wandb_metrics or {})
        metrics.update(self.stats.as_metrics())
        await super().wandb_log(metrics)

    async def close(self) -> None:
        """Close everything the environment holds: sandboxes, threads, endpoints, files
        (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._release()
        finally:
            self.executor.shutdown(wait=False, cancel_futures=True)
            try:
                for endpoint in self.endpoints:
                    closer = getattr(endpoint, "aclose", None)
                    if closer is not None:
                        await closer()
            finally:
                self._close_outputs()

    @classmethod
    def cli(cls) -> None:
        """``python env.py serve|process|evaluate [--config FILE.yaml] [--env.X V]
        [--openai.X V]``; exits with the command's status."""
        sys.exit(run_cli(cls, sys.argv[1:]))


def chatml(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = True,
) -> str:
    """A prompt's text in the ChatML template (Phase 2 without the tokenizer's own)."""
    from hermes_loop.templates import render_prompt

    return render_prompt(messages, tools, add_generation_prompt)
