"""``HermesAgentBaseEnv``: Atropos' ``BaseEnv`` with an agent loop, sandboxes and rewards.

A subclass implements ``setup``, ``get_next_item``, ``format_prompt``,
``compute_reward(item, result, ctx)`` and ``evaluate``; the base class does the rest:

- per group, the tools are resolved once, seeded by the item (a group is reproducible);
- per rollout, one sandbox for its task id from the env's one ``SandboxPool``, the
  ``AgentLoop``, ``compute_reward`` with a ``ToolContext`` on that same sandbox, then the
  sandbox is closed;
- the group becomes Atropos scored data: tokens, masks, scores, messages (and inference
  logprobs in Phase 2);
- a rollout lost to infrastructure (sandbox, model endpoint, reward code) is retried up
  to ``infra_retries`` times and never scored; a group with fewer than
  ``min_rollouts_per_group`` good rollouts goes back to the queue.

Where Atropos' behaviour does not suit (wandb forced on in ``process``, the group file
written unflushed, a ``ServerManager`` built for inference we do not route through it),
this class overrides Atropos' documented hooks; each place says so.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import json
import logging
import os
import sys
import time
import uuid
from abc import abstractmethod
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

from atroposlib.envs.base import BaseEnv, ScoredDataGroup
from atroposlib.envs.server_handling.server_manager import APIServerConfig, ServerBaseline
from atroposlib.frontend.jsonl2html import generate_html

from hermes_envs.cli import run_cli
from hermes_envs.config import AGENT_TOOLSETS, HermesAgentEnvConfig
from hermes_envs.endpoint_limits import TimeoutStreak, request_timeout
from hermes_envs.errors import EnvSetupError, RunAbortedError
from hermes_envs.group_file import GroupFile
from hermes_envs.preflight import (
    check_backend,
    check_endpoint_key,
    check_endpoints,
    check_isolation,
    start_wandb,
)
from hermes_envs.redaction import Redactor, configured_secrets
from hermes_envs.reference import (
    GroupPath,
    collect_by_trajectory,
    collect_one,
    group_item,
    group_path,
    outcome_of_collect_trajectory,
    resolve_tools_for_group,
    run_scope,
)
from hermes_envs.resume import GroupLog
from hermes_envs.reward_errors import RewardErrors
from hermes_envs.rollout import RolloutOutcome, run_rollout
from hermes_envs.scoring.encoding import TextEncoder
from hermes_envs.scoring.group import ScoredRollout, scored_group, skip_reason, wire_messages
from hermes_envs.scoring.token_worker import TokenWorker, TokenWorkerUnavailable
from hermes_envs.scoring.tokens import (
    Marked,
    TokenizedRollout,
    chat_template_tokens,
    managed_tokens,
)
from hermes_envs.stats import ProgressReporter, RunStats
from hermes_envs.tokenizer import (
    TemplateRenderer,
    TokenizerLoadError,
    chat_template_renderer,
    shipped_tokenizer_dir,
)
from hermes_loop import (
    AgentLoop,
    AgentResult,
    ChatServer,
    GenerateChatServer,
    OpenAIChatServer,
    Tool,
    ToolRegistry,
    ToolSet,
)
from hermes_loop.transformers_tokenizer import TransformersTokenizer
from hermes_sandbox import (
    SandboxClosedError,
    SandboxPool,
    SandboxStartError,
    ToolContext,
    sandbox_tools,
)
from hermes_sandbox.backends.local import reap_orphans

__all__ = ["HermesAgentBaseEnv", "RunStats"]

logger = logging.getLogger(__name__)

#: ``openai.server_type`` values and the phase each one runs in.
PHASES = {"openai": 1, "vllm": 2}

_SET_TOKENIZER = (
    "set --env.tokenizer_name to a local tokenizer directory or a Hugging Face hub name"
)


class _Silent:
    def update(self, stats: RunStats) -> None:
        return None


@dataclass(slots=True)
class _Pending:
    item: Any
    attempts: int = 0


@dataclass(slots=True)
class _Scored:
    """A group as ``collect_trajectories`` returns it (``group``, ``backlog``) and, when
    made with its tokens, its line of the group file ("" when the checks skip it)."""

    group: ScoredDataGroup | list[ScoredDataGroup | None] | None
    backlog: list[Any]
    line: str | None = None

    @property
    def scored(self) -> bool:
        """Whether the group was scored (else its item goes back to the queue)."""
        return self.group is not None or self.line is not None


def item_seed(item: Any) -> str:
    """A stable seed for ``item`` (same item, same tools, across processes)."""
    text = json.dumps(item, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _construction_safe(config: APIServerConfig) -> APIServerConfig:
    # Atropos' BaseEnv builds a ServerManager from these configs. Inference goes through
    # hermes-loop endpoints instead, so Atropos gets a copy it can always construct:
    # openai type (a vllm one would fetch a tokenizer from the hub), a non-empty key
    # (openai>=2 rejects ""; OPENAI_API_KEY when the config has none, as our endpoints
    # read, so that the reference's ``self.server.chat_completion`` in an environment's
    # evaluate reaches the same endpoint), no health-check traffic.
    data = config.model_dump()
    key = config.api_key or os.environ.get("OPENAI_API_KEY") or "unused"
    data.update(server_type="openai", api_key=key, health_check=False)
    return APIServerConfig(**data)


def _server_list(
    server_configs: ServerBaseline | APIServerConfig | Sequence[APIServerConfig],
) -> list[APIServerConfig]:
    if isinstance(server_configs, APIServerConfig):
        return [server_configs]
    if isinstance(server_configs, ServerBaseline):
        return []
    return list(server_configs)


class HermesAgentBaseEnv(BaseEnv):  # type: ignore[misc]  # atroposlib is untyped
    """Atropos ``BaseEnv`` running a tool-using agent per rollout.

    Args:
        config: a ``HermesAgentEnvConfig`` (or subclass).
        server_configs: the model endpoint(s); ``server_type`` ``openai`` runs Phase 1
            (chat completions), ``vllm`` runs Phase 2 (``/generate``, exact tokens).
        slurm, testing: as Atropos' ``BaseEnv``.

    Raises:
        TypeError: if ``config`` is not a ``HermesAgentEnvConfig``.
        TokenizerLoadError: if ``env.tokenizer_name`` cannot be loaded (names the option).
        ValueError: if no model endpoint is configured, a ``server_type`` is not
            supported, Phase 2 is asked for without ``env.tokenizer_name``, the toolset
            distribution is unknown, or a hosted (``https://``) endpoint has no API key.
        GroupFileExistsError: (a ``ValueError``) if ``data_path_to_save_groups`` holds a
            finished run and ``resume`` is false, or groups with no record of their items
            (``hermes_envs.resume``).

    With ``env.tokenizer_name`` unset (``None``/``"none"``) the environment holds no
    tokenizer (``self.tokenizer`` is ``None``) and reaches no hub: ``evaluate`` runs
    (Phase 1), ``process`` and ``serve`` stop at start with ``EnvSetupError`` naming
    ``--env.tokenizer_name``.
    """

    env_config_cls = HermesAgentEnvConfig
    #: The environment's name (Atropos' ``name``): default file names and ``wandb_name``.
    name: ClassVar[str | None] = None

    #: The local backend's ``isolation`` when ``sandbox_options`` does not set it:
    #: ``"auto"``, bubblewrap namespaces where they work, else plain commands with a
    #: logged warning. A blocking ``ctx.terminal(...)`` inside an ``async def
    #: compute_reward`` (the reference's example) works with either.
    local_isolation: ClassVar[str] = "auto"

    config: HermesAgentEnvConfig
    jsonl_writer: Any
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
        servers = _server_list(server_configs)
        if not servers:
            raise ValueError(
                "no model endpoint configured: set --openai.base_url and --openai.model_name "
                "(or return an APIServerConfig from config_init)"
            )
        for server in servers:
            if server.server_type not in PHASES:
                raise ValueError(
                    f"openai.server_type {server.server_type!r} is not supported for agent "
                    f"rollouts; allowed: {', '.join(PHASES)}"
                )
            if not server.base_url:
                raise ValueError("openai.base_url is empty: set --openai.base_url")
            if server.server_type == "vllm" and config.tokenizer_name is None:
                raise ValueError(
                    "openai.server_type 'vllm' (Phase 2) renders prompts with the model's "
                    f"tokenizer: {_SET_TOKENIZER}"
                )
        check_endpoint_key(servers)
        # The group file is ours to open: Atropos would start ``<stem>_1.jsonl`` beside an
        # existing one without a word; ``GroupLog`` continues an unfinished run or says
        # what to do (``hermes_envs.resume``).
        groups_path = config.data_path_to_save_groups
        self.group_log = (
            GroupLog(groups_path, resume=config.resume) if groups_path is not None else None
        )
        config = config.model_copy(update={"data_path_to_save_groups": None})
        eval_only = config.tokenizer_name is None
        if eval_only:
            # Atropos' BaseEnv.__init__ always loads ``tokenizer_name``; it gets the small
            # tokenizer hermes-loop ships (a local directory: no hub), dropped below.
            config = config.model_copy(update={"tokenizer_name": shipped_tokenizer_dir()})
        try:
            super().__init__(config, [_construction_safe(s) for s in servers], slurm, testing)
        except (OSError, ValueError) as exc:
            if self.group_log is not None:
                self.group_log.close()
            if "tokenizer" not in str(exc).lower() and not isinstance(exc, OSError):
                raise
            raise TokenizerLoadError(
                f"cannot load tokenizer {config.tokenizer_name!r} ({type(exc).__name__}); "
                "set --env.tokenizer_name to a local tokenizer directory or a reachable "
                "Hugging Face hub name"
            ) from exc
        self.server_configs = servers
        self.stats = RunStats()
        self.last_failure: str | None = None
        self.reporter: ProgressReporter = _Silent()
        self.reward_errors = RewardErrors(type(self).__name__, config.max_reward_errors)
        self.endpoint_timeouts = TimeoutStreak(config.max_endpoint_timeouts)
        self.config.data_path_to_save_groups = groups_path
        #: Replaces every configured secret in what the run writes (``redaction``).
        self.redactor = Redactor(configured_secrets(servers, config.sandbox_options))
        self.jsonl_writer = (
            GroupFile(groups_path, self.redactor) if groups_path is not None else None
        )
        self.loop_tokenizer: TransformersTokenizer | None = None
        self.render: Callable[..., str] = _chatml
        self.marked: Marked | None = None
        self.encode: TextEncoder | None = None
        if eval_only:
            self.tokenizer = None
            config.tokenizer_name = None
        else:
            self.loop_tokenizer = TransformersTokenizer(self.tokenizer)
            renderer = chat_template_renderer(self.tokenizer)
            if renderer is not None:
                self.render = renderer
                self.marked = renderer.marked
            self.encode = TextEncoder(self.tokenizer)
        self.pool = SandboxPool(
            config.terminal_backend,
            terminal_timeout=config.terminal_timeout,
            terminal_lifetime=config.terminal_lifetime,
            **self.sandbox_options(),
        )
        self.executor = ThreadPoolExecutor(
            max_workers=config.tool_pool_size, thread_name_prefix="hermes-envs-tool"
        )
        # One thread: the tokenizer's settings are not made for concurrent callers.
        self.token_executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="hermes-envs-tokens"
        )
        self.tool_registry = self.build_tool_registry()
        # Unknown toolset or distribution names fail here, at start-up.
        self.tool_registry.select(
            config.enabled_toolsets, config.disabled_toolsets, config.distribution, seed=0
        )
        self.endpoints: list[ChatServer] = [self._endpoint(server) for server in servers]
        self.phase = PHASES[servers[0].server_type]
        self._endpoint_turn = itertools.count()
        self._task_prefix = f"{self.name or type(self).__name__}-{uuid.uuid4().hex[:12]}"
        self._task_count = itertools.count(1)
        self._token_worker: TokenWorker | None = None
        self._worker_checked = False
        self._closed = False

    # -- what a subclass writes -------------------------------------------------------

    @abstractmethod
    def format_prompt(self, item: Any) -> str | list[dict[str, Any]]:
        """The user message for ``item`` (or a whole list of OpenAI messages)."""

    @abstractmethod
    async def compute_reward(self, item: Any, result: AgentResult, ctx: ToolContext) -> float:
        """Score a finished rollout (0.0-1.0); ``ctx`` reaches the rollout's sandbox.

        Raising (or returning no number) is the environment's bug: the rollout is dropped
        from its group (never a 0), logged with its traceback and counted; see
        ``hermes_envs.reward_errors``.
        """

    # -- overridable pieces ------------------------------------------------------------

    def sandbox_options(self) -> dict[str, Any]:
        """The backend options of every sandbox: ``sandbox_options`` from the config, and
        on the ``local`` backend ``isolation=local_isolation`` unless the config sets it."""
        options = dict(self.config.sandbox_options or {})
        if self.config.terminal_backend == "local":
            options.setdefault("isolation", self.local_isolation)
        return options

    def build_tool_registry(self) -> ToolRegistry:
        """The tools rollouts may get, by toolset (override to add tools or distributions)."""
        registry = ToolRegistry()
        for tool in sandbox_tools(self.pool, toolsets=AGENT_TOOLSETS):
            registry.add(
                Tool(tool.name, tool.description, tool.parameters, tool.handler),
                toolset=tool.toolset,
            )
        return registry

    def resolve_tools(self, item: Any) -> ToolSet:
        """The tools of ``item``'s group: same item, same tools (seeded by the item)."""
        cfg = self.config
        return self.tool_registry.select(
            cfg.enabled_toolsets, cfg.disabled_toolsets, cfg.distribution, seed=item_seed(item)
        )

    def build_messages(self, item: Any) -> list[dict[str, Any]]:
        """The rollout's opening messages (``format_prompt`` as a user message)."""
        prompt = self.format_prompt(item)
        if isinstance(prompt, str):
            return [{"role": "user", "content": prompt}]
        return [dict(message) for message in prompt]

    def require_tokenizer(self, purpose: str) -> TransformersTokenizer:
        """The env's tokenizer, for ``purpose`` (named in the error).

        Raises:
            EnvSetupError: if the environment has none (``env.tokenizer_name`` unset);
                the message names ``--env.tokenizer_name``.
        """
        if self.loop_tokenizer is None:
            raise EnvSetupError(
                f"{purpose} needs a tokenizer and env.tokenizer_name is not set: "
                f"{_SET_TOKENIZER} (only evaluate runs without one)"
            )
        return self.loop_tokenizer

    def new_task_id(self) -> str:
        """A fresh task id (one sandbox each): the env's name, a random part drawn once
        per environment, and a count, so ids never repeat within or across processes."""
        return f"{self._task_prefix}-{next(self._task_count)}"

    # -- rollouts ------------------------------------------------------------------------

    def _endpoint(self, server: APIServerConfig) -> ChatServer:
        # The config's literal key (Atropos' ``api_key``) goes to the endpoint's client
        # only: never logged, written out, or put in a sandbox's environment. Without one,
        # the endpoint reads OPENAI_API_KEY.
        url = str(server.base_url)
        if server.server_type == "openai":
            return OpenAIChatServer(
                base_url=url,
                model=server.model_name,
                api_key=server.api_key or None,
                timeout=request_timeout(server),
                extra_body=self.config.extra_body,
            )
        tokenizer = self.require_tokenizer("Phase 2 (openai.server_type 'vllm')")
        return GenerateChatServer(
            base_url=url,
            tokenizer=tokenizer,
            parser=self.config.tool_call_parser,
            render=self.render,
            stop_text=tokenizer.eos_token,
            model=server.model_name,
            api_key=server.api_key or None,
            timeout=request_timeout(server),
            extra_body=self.config.extra_body,
        )

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

    async def run_rollouts(
        self, item: Any, count: int, *, tools: ToolSet | None = None
    ) -> list[RolloutOutcome]:
        """``count`` rollouts of ``item`` concurrently, each retried on infrastructure
        failure up to ``infra_retries`` times, with ``tools`` (default: the item's,
        ``resolve_tools``). Returns the good outcomes (in start order) and, for a
        rollout that never succeeded, its last failure. A rollout whose
        ``compute_reward`` raised is not retried: it comes back with its
        ``reward_error`` (logged once with its traceback and counted in
        ``self.reward_errors``).

        Raises:
            RewardFunctionError: when ``compute_reward`` raised on ``max_reward_errors``
                rollouts in a row.
            RunAbortedError: when ``max_endpoint_timeouts`` rollouts in a row ended on a
                model request timeout.
            asyncio.CancelledError: when cancelled (every rollout's sandbox is released).
        """
        if tools is None:
            tools = self.resolve_tools(item)
        messages = self.build_messages(item)
        loop = self.agent_loop(tools)

        def reward(result: AgentResult, ctx: ToolContext) -> Any:
            # An ``async def`` (as in the reference) or a plain function both work.
            return self.compute_reward(item, result, ctx)

        async def one() -> RolloutOutcome:
            outcome: RolloutOutcome | None = None
            for _ in range(self.config.infra_retries + 1):
                outcome = await run_rollout(
                    messages, loop=loop, pool=self.pool, task_id=self.new_task_id(), reward=reward
                )
                if outcome.reward_error is not None:
                    self.stats.reward_errors += 1
                    self.reporter.update(self.stats)
                    self.reward_errors.failed(outcome.reward_error)
                    return outcome
                if outcome.result is not None and outcome.result.turns_used:
                    self.endpoint_timeouts.answered()
                if outcome.ok:
                    self.reward_errors.succeeded()
                    self.stats.rollouts_done += 1
                    self.reporter.update(self.stats)
                    return outcome
                failure = outcome.failure
                assert failure is not None
                self.stats.infra_failures += 1
                self.last_failure = f"{failure.stage}: {failure.message}"
                by_stage = self.stats.failures_by_stage
                by_stage[failure.stage] = by_stage.get(failure.stage, 0) + 1
                logger.warning(
                    "infrastructure failure (%s) in %s: %s",
                    failure.stage,
                    failure.task_id,
                    failure.message,
                )
                self.reporter.update(self.stats)
                self._count_timeout(outcome)
            assert outcome is not None
            return outcome

        async with loop:
            if count == 1:
                return [await one()]  # no task of its own: one rollout runs in ours
            return list(await asyncio.gather(*(one() for _ in range(count))))

    def _count_timeout(self, outcome: RolloutOutcome) -> None:
        """Count a rollout that ended on a model request timeout.

        Raises:
            RunAbortedError: after ``max_endpoint_timeouts`` such rollouts in a row.
        """
        error = outcome.result.infra_error if outcome.result is not None else None
        if error is None or error.kind != "timeout":
            return
        server = self.server_configs[0]
        self.endpoint_timeouts.timed_out(str(server.base_url), request_timeout(server))

    def tokenize_rollout(self, result: AgentResult, tools: ToolSet) -> TokenizedRollout:
        """Training tokens of a rollout: Phase 2 from ``managed_state``, Phase 1 from the
        chat template.

        Raises:
            ValueError: if the rollout cannot be tokenized.
            EnvSetupError: if the environment has no tokenizer (Phase 1).
        """
        if result.managed_state is not None:
            return managed_tokens(result.managed_state)
        tokenizer = self.require_tokenizer("tokenizing a rollout")
        assert self.encode is not None  # set with the tokenizer
        return chat_template_tokens(
            result.messages,
            render=self.render,
            encode_many=self.encode.encode_many,
            eos_token=tokenizer.eos_token,
            tools=tools.schemas() or None,
            marked=self.marked,
        )

    def build_group(
        self,
        item: Any,
        outcomes: Sequence[RolloutOutcome],
        tokenized: Sequence[TokenizedRollout] | None = None,
    ) -> ScoredDataGroup:
        """Atropos scored data of the good ``outcomes`` of one group (``tokenized``: their
        tokens, when already made; else they are made here). Turns whose tokens did not
        extend the previous ones are logged and counted in ``stats.token_drift``."""
        if tokenized is None:
            tokenized = self._tokenize_all(outcomes, self.resolve_tools(item))
        group, drift = self._scored_data(outcomes, tokenized)
        self.stats.token_drift += drift
        return group

    def _scored_data(
        self, outcomes: Sequence[RolloutOutcome], tokenized: Sequence[TokenizedRollout]
    ) -> tuple[ScoredDataGroup, int]:
        """The group of ``build_group`` and its turns of drift (each logged); changes
        nothing of the environment (it runs on the tokenizer thread too)."""
        rollouts = []
        for outcome, tokens in zip(outcomes, tokenized, strict=True):
            assert outcome.result is not None
            assert outcome.score is not None
            rollouts.append(
                ScoredRollout(outcome.task_id, outcome.result.messages, outcome.score, tokens)
            )
        group, drift = scored_group(rollouts, self.config.group_size)
        return group, _log_drift(drift)

    def _tokenize_all(
        self, outcomes: Sequence[RolloutOutcome], tools: ToolSet
    ) -> list[TokenizedRollout]:
        tokenized = []
        for outcome in outcomes:
            assert outcome.result is not None
            tokenized.append(self.tokenize_rollout(outcome.result, tools))
        return tokenized

    async def collect_trajectories(self, item: Any) -> tuple[ScoredDataGroup | None, list[Any]]:
        """One group of ``group_size`` rollouts of ``item``.

        Returns ``(group, [])``, or ``(None, [item])`` when fewer than
        ``min_rollouts_per_group`` rollouts survived infrastructure failures (the item
        goes back to the queue). An environment that overrides ``collect_trajectory``
        gets its group from ``group_size`` calls of it (as Atropos' default does).
        """
        if type(self).collect_trajectory is not HermesAgentBaseEnv.collect_trajectory:
            return await collect_by_trajectory(self, item)
        tools = self.resolve_tools(item)
        outcomes = await self.run_rollouts(item, self.config.group_size, tools=tools)
        return await self.score_group(item, outcomes, tools=tools)

    async def score_group(
        self, item: Any, outcomes: Sequence[RolloutOutcome], *, tools: ToolSet | None = None
    ) -> tuple[ScoredDataGroup | None, list[Any]]:
        """The scored group of ``item``'s finished ``outcomes``, as ``collect_trajectories``
        returns it (``tools``: the group's, default ``resolve_tools(item)``). Tokens are
        made on the env's tokenizer thread, so the event loop keeps running rollouts
        meanwhile."""
        scored = await self._score(item, outcomes, tools, with_line=False)
        return scored.group, scored.backlog

    async def _score(
        self,
        item: Any,
        outcomes: Sequence[RolloutOutcome],
        tools: ToolSet | None,
        *,
        with_line: bool,
    ) -> _Scored:
        good = [outcome for outcome in outcomes if outcome.ok]
        if len(good) < self.config.group_minimum:
            self.stats.groups_requeued += 1
            self.reporter.update(self.stats)
            logger.warning(
                "only %d of %d rollouts were scored (need %d); the item goes back to the queue",
                len(good),
                len(outcomes),
                self.config.group_minimum,
            )
            return _Scored(None, [item])
        if tools is None:
            tools = self.resolve_tools(item)
        worker = self._token_worker
        if worker is not None and worker.gone is not None:
            await self._drop_token_worker(worker, worker.gone)
        elif with_line and worker is not None and worker.ready:
            made = await self._line_from_worker(worker, good, tools)
            if made is not None:
                return made
        group, drift, line = await asyncio.get_running_loop().run_in_executor(
            self.token_executor, self._group_and_line, good, tools, with_line
        )
        self.stats.token_drift += drift
        return _Scored(group, [], line)

    async def _line_from_worker(
        self, worker: TokenWorker, good: Sequence[RolloutOutcome], tools: ToolSet
    ) -> _Scored | None:
        """The group's line from the token worker, or ``None`` when it cannot make it
        (the caller then makes it here). Its first line is checked against the one made
        here; on a difference the worker is closed and not used again."""
        rollouts = []
        for outcome in good:
            assert outcome.result is not None
            rollouts.append(
                {
                    "task_id": outcome.task_id,
                    "messages": outcome.result.messages,
                    "score": outcome.score,
                }
            )
        try:
            header, line = await worker.make_line(tools.schemas() or None, rollouts)
        except TokenWorkerUnavailable as exc:
            if worker.gone is not None:
                await self._drop_token_worker(worker, str(exc))
            return None
        skip = header.get("skip")
        if not self._worker_checked:
            _, _, own = await asyncio.get_running_loop().run_in_executor(
                self.token_executor, self._group_and_line, good, tools, True
            )
            if own != (line if skip is None else ""):
                reason = "the token worker's group line differs from the environment's own"
                await self._drop_token_worker(worker, reason)
                return None
            self._worker_checked = True
            logger.debug("token worker ready (pid %s): group lines are made there", worker.pid)
        self.stats.token_drift += _log_drift([(task, turns) for task, turns in header["drift"]])
        if skip is not None:
            logger.warning("%s", skip)
        return _Scored(None, [], "" if skip is not None else line)

    @property
    def token_worker(self) -> TokenWorker | None:
        """The token worker process ``process`` makes Phase 1 group lines in, while one
        is in use (see ``token_worker`` in the config)."""
        return self._token_worker

    async def _drop_token_worker(self, worker: TokenWorker, reason: str) -> None:
        if self._token_worker is worker:
            self._token_worker = None
            logger.warning("%s; making tokens on the tokenizer thread from now on", reason)
        await worker.aclose()

    async def _start_token_worker(self) -> None:
        """Start the token worker (``process``, Phase 1), where it can stand in for the
        environment: ``token_worker`` on, lines made with the tokens, the default
        ``tokenize_rollout``, the tokenizer's own chat template and a fast tokenizer."""
        cls = type(self)
        if not (
            self.config.token_worker
            and self.phase == 1
            and self._lines_with_tokens()
            and cls.tokenize_rollout is HermesAgentBaseEnv.tokenize_rollout
            and isinstance(self.render, TemplateRenderer)
        ):
            return
        tokenizer = self.require_tokenizer("process")
        setup = await asyncio.get_running_loop().run_in_executor(
            self.token_executor,
            functools.partial(
                TokenWorker.setup_for,
                self.tokenizer,
                eos_token=tokenizer.eos_token,
                group_size=self.config.group_size,
                ensure_scores_are_not_same=self.config.ensure_scores_are_not_same,
            ),
        )
        if setup is None:
            return
        worker = TokenWorker(setup)
        try:
            await worker.start()
        except OSError as exc:
            logger.warning("the token worker did not start (%s); tokens on a thread", exc)
            return
        self._token_worker = worker

    def _group_and_line(
        self, good: Sequence[RolloutOutcome], tools: ToolSet, with_line: bool
    ) -> tuple[ScoredDataGroup, int, str | None]:
        """On the tokenizer thread: the group's tokens, its scored data, its turns of
        drift and (``with_line``) its line of the group file ("" when ``write_group``
        would skip it), all in one hand-off from the event loop."""
        group, drift = self._scored_data(good, self._tokenize_all(good, tools))
        if not with_line:
            return group, drift, None
        writer = self.jsonl_writer
        assert isinstance(writer, GroupFile)
        return group, drift, writer.encode(group) if self._ready_to_write(group) else ""

    def _lines_with_tokens(self) -> bool:
        """Whether ``process`` makes a group's file line together with its tokens: the
        group goes to the group file (wandb off), and neither ``score_group``,
        ``postprocess_histories`` nor ``write_group`` is overridden (each may change or
        replace the group on its way there, so each is then called as it is)."""
        cls = type(self)
        return (
            not self.config.use_wandb
            and isinstance(self.jsonl_writer, GroupFile)
            and cls.score_group is HermesAgentBaseEnv.score_group
            and cls.postprocess_histories is BaseEnv.postprocess_histories
            and cls.write_group is HermesAgentBaseEnv.write_group
        )

    async def collect_trajectory(self, item: Any) -> tuple[dict[str, Any] | None, list[Any]]:
        """One rollout of ``item`` as an Atropos scored item (the reference's per-rollout
        override point): ``tokens``, ``masks``, ``scores``, ``messages``; ``(None, [])``
        when the rollout could not be scored. Overriding it makes every mode build groups
        from it (``hermes_envs.reference.GroupPath``)."""
        return await collect_one(self, item)

    def _resolve_tools_for_group(self) -> tuple[list[dict[str, Any]], set[str]]:
        """The reference's helper: ``(tool_schemas, valid_tool_names)`` of the group being
        collected (its item's tools, as ``resolve_tools``; a fresh draw outside a group).
        Pass them to ``HermesAgentLoop(tool_schemas=..., valid_tool_names=...)``."""
        return resolve_tools_for_group(self)

    def _use_managed_server(self) -> bool:
        """The reference's helper: whether rollouts run in Phase 2 (``server_type``
        ``vllm``: ``/generate``, exact tokens and logprobs) rather than Phase 1."""
        return self.phase == 2

    @functools.cached_property
    def group_path(self) -> GroupPath:
        """How ``process`` gets this environment's groups (``hermes_envs.reference``),
        decided from what its class overrides; the decision is logged once at debug."""
        path, why = group_path(type(self), HermesAgentBaseEnv)
        logger.debug("group path %s: %s", path.value, why)
        return path

    # -- runs ----------------------------------------------------------------------------

    async def write_group(self, group: ScoredDataGroup, item: Any) -> bool:
        """Write one group as a line of the group file (flushed), as Atropos' ``process``
        does: a group whose token lists do not match its group size, or (with
        ``ensure_scores_are_not_same``) whose scores are all equal, is skipped with a
        warning; the optional fields Atropos fills in are set to ``None``.

        With wandb on this is Atropos' own ``handle_send_to_api``; off, the same checks
        and line without what only wandb uses (per-token completion lengths, the rollout
        table) and without an INFO log record per line. Returns whether it was written.
        """
        if self.config.use_wandb:
            await self.handle_send_to_api(
                group, item, do_send_to_api=False, abort_on_any_max_length_exceeded=False
            )
            return True
        if not self._ready_to_write(group):
            return False
        writer = self.jsonl_writer
        if isinstance(writer, GroupFile):
            # The text is made on the tokenizer thread (a group's tokens make long lines).
            loop = asyncio.get_running_loop()
            writer.write_line(await loop.run_in_executor(self.token_executor, writer.encode, group))
        elif writer is not None:
            writer.write(group)
        return True

    def _ready_to_write(self, group: ScoredDataGroup) -> bool:
        """Atropos' checks before a group is written (``write_group``), a failure
        logged; fills in the optional fields. Changes only ``group``."""
        reason = skip_reason(group, self.config.group_size, self.config.ensure_scores_are_not_same)
        if reason is not None:
            logger.warning("%s", reason)
        return reason is None

    async def _write_scored(self, scored: _Scored, item: Any) -> None:
        """Write a finished group in ``process``: its line when it came with one, else
        through ``postprocess_histories`` and ``write_group``."""
        if scored.line is None:
            made = scored.group
            for one in made if isinstance(made, list) else [made]:
                if one is not None and await self.write_group(
                    await self.postprocess_histories(one), item
                ):
                    self._record(item)
        elif scored.line:
            writer = self.jsonl_writer
            assert isinstance(writer, GroupFile)
            writer.write_line(scored.line)
            self._record(item)

    def _record(self, item: Any) -> None:
        if self.group_log is not None:
            self.group_log.record(item)

    async def process_manager(self) -> None:
        """``process``: ``n_groups_to_process`` groups to the JSONL file, as they finish.

        Overrides Atropos' version: groups run concurrently (``max_num_workers_per_node``
        at a time running rollouts, while finished ones are scored on the tokenizer
        thread), wandb only starts when ``use_wandb`` is set, a group with too few scored
        rollouts goes back to the queue (at most ``infra_retries + 1`` tries), the run
        stops with ``RunAbortedError`` after ``max_dropped_items`` items in a row were
        given up on, and everything is closed however the run ends.

        Raises:
            EnvSetupError: at start, if the environment has no tokenizer.
            asyncio.CancelledError: when cancelled; groups already written stay intact.
        """
        try:
            with run_scope(self):
                await self._process_groups()
        finally:
            await self.close()
        path = self.config.data_path_to_save_groups
        if path is not None and self.stats.groups_done and self.config.write_viewer_html:
            generate_html(path)  # Atropos' viewer page, <same name>.html

    async def _process_groups(self) -> None:
        """The body of ``process_manager``, run with the env's ``run_scope`` bound."""
        self.require_tokenizer("process")
        if int(getattr(self, "max_token_len", -1)) <= 0:
            # No trainer registers a length in process mode: use the config's, so that
            # Atropos does not warn on every group that lengths are ignored.
            self.max_token_len = self.config.max_token_length
        await self._preflight()
        if self.config.terminal_backend == "local":
            # What the sandboxes of a killed earlier run left behind goes first.
            removed = await asyncio.to_thread(reap_orphans)
            if removed:
                logger.warning("removed %d sandbox directories of dead runs", len(removed))
        await self.setup()
        await check_endpoints(self.server_configs, self.config)  # [cli] issue 23.7
        await start_wandb(self.config.use_wandb, self._start_wandb)
        await self._start_token_worker()
        target = int(getattr(self, "n_groups_to_process", None) or self.config.total_steps)
        if self.group_log is not None:
            self.stats.groups_done = self.group_log.done
        width = max(1, self.config.max_num_workers_per_node)
        retry: deque[_Pending] = deque()
        running: dict[asyncio.Task[Any], _Pending] = {}
        exhausted = False
        dropped_in_a_row = 0
        # At most ``width`` groups run rollouts at once; up to as many more are being
        # scored (tokens on the tokenizer thread) or waiting for a slot.
        slots = asyncio.Semaphore(width)
        try:
            while self.stats.groups_done < target:
                while (
                    len(running) < 2 * width
                    and self.stats.groups_done + len(running) < target
                    and (retry or not exhausted)
                ):
                    pending = retry.popleft() if retry else None
                    if pending is None:
                        item = await self._next_item()
                        if item is None:
                            exhausted = True
                            break
                        pending = _Pending(item)
                    pending.attempts += 1
                    task = asyncio.create_task(self._collect_in_slot(pending.item, slots))
                    running[task] = pending
                if not running:
                    break
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    pending = running.pop(task)
                    scored = task.result()
                    if scored.scored:
                        await self._write_scored(scored, pending.item)
                        self.stats.groups_done += 1
                        if self.config.use_wandb:
                            await self.wandb_log()
                    elif pending.attempts <= self.config.infra_retries:
                        retry.append(pending)
                    else:
                        self.stats.groups_dropped += 1
                        dropped_in_a_row += 1
                        logger.error("giving up on an item after %d tries", pending.attempts)
                        if dropped_in_a_row >= self.config.max_dropped_items:
                            raise RunAbortedError(
                                f"{dropped_in_a_row} item(s) in a row failed every try "
                                "for infrastructure reasons; last failure: "
                                f"{self.last_failure or 'unknown'}; check the model "
                                "endpoint (--openai.base_url, --openai.model_name, "
                                "--openai.api_key) and the sandbox backend "
                                "(--env.max_dropped_items sets this limit)"
                            )
                    if scored.scored:
                        dropped_in_a_row = 0
                    self.reporter.update(self.stats)
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
        if self.group_log is not None and self.stats.groups_done >= target:
            self.group_log.finish()

    async def _next_item(self) -> Any:
        """The next item of ``get_next_item`` whose group is not in the group file yet
        (``None``: no more items)."""
        log = self.group_log
        while True:
            item = await self.get_next_item()
            if item is None or log is None or not log.skip(item):
                return item
            if log.exhausted:
                return None

    async def _collect_in_slot(self, item: Any, slots: asyncio.Semaphore) -> _Scored:
        if self.group_path is not GroupPath.FAST:
            with group_item(item):
                async with slots:
                    return _Scored(*await self.collect_trajectories(item))
        tools = self.resolve_tools(item)
        async with slots:
            outcomes = await self.run_rollouts(item, self.config.group_size, tools=tools)
        if type(self).score_group is not HermesAgentBaseEnv.score_group:
            return _Scored(*await self.score_group(item, outcomes))
        return await self._score(item, outcomes, tools, with_line=self._lines_with_tokens())

    async def env_manager(self) -> None:
        """``serve``: Atropos' loop, then every sandbox and thread closed.

        Raises:
            EnvSetupError: at start, if the environment has no tokenizer.
        """
        try:
            self.require_tokenizer("serve")
            await self._preflight()
            await check_endpoints(self.server_configs, self.config)  # [cli] issue 23.7
            with run_scope(self):
                await super().env_manager()
        finally:
            await self.close()

    async def run_evaluate(self) -> None:
        """``evaluate``: ``setup()`` then ``evaluate()``, then everything closed."""
        try:
            with run_scope(self):
                await self._preflight()
                await self.setup()
                await check_endpoints(self.server_configs, self.config)  # [cli] issue 23.7
                await start_wandb(self.config.use_wandb, self._start_wandb)
                await self.evaluate()
        finally:
            await self.close()

    async def evaluate_items(self, items: Sequence[Any]) -> list[tuple[Any, RolloutOutcome]]:
        """One rollout per item (at most ``max_eval_workers`` at once), retried on
        infrastructure failure; ``(item, outcome)`` in the order of ``items``. An
        environment that overrides ``collect_trajectory`` gets each item's rollout from
        it."""
        gate = asyncio.Semaphore(max(1, self.config.max_eval_workers))

        async def one(item: Any) -> tuple[Any, RolloutOutcome]:
            async with gate:
                if self.group_path is GroupPath.COLLECT_TRAJECTORY:
                    outcome = await outcome_of_collect_trajectory(self, item)
                else:
                    (outcome,) = await self.run_rollouts(item, 1)
                self.stats.groups_done += 1
                self.reporter.update(self.stats)
                return item, outcome

        return list(await asyncio.gather(*(one(item) for item in items)))

    async def evaluate_and_log(self, items: Sequence[Any], score_metric: str) -> None:
        """Evaluate ``items`` (``evaluate_items``) and write, with Atropos'
        ``evaluate_log``, the mean score as ``eval/{score_metric}`` (over scored items;
        infrastructure failures counted apart; left out when no item was scored) and one
        sample per item."""
        start = time.time()
        pairs = await self.evaluate_items(items)
        scores = [outcome.score for _, outcome in pairs if outcome.score is not None]
        metrics = {
            "eval/scored": float(len(scores)),
            "eval/infra_failures": float(sum(1 for _, outcome in pairs if not outcome.ok)),
        }
        if scores:  # no score at all is not a mean of 0: the metric is left out
            metrics[f"eval/{score_metric}"] = sum(scores) / len(scores)
        self.stats.eval_scored = len(scores)
        samples = [json.loads(json.dumps(self.eval_sample(i, o), default=str)) for i, o in pairs]
        await self.log_evaluation(metrics, samples, start_time=start)

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

    @staticmethod
    def eval_sample(item: Any, outcome: RolloutOutcome) -> dict[str, Any]:
        """A JSON-ready record of one evaluated item (for ``samples.jsonl``)."""
        result = outcome.result
        return {
            "item": item,
            "task_id": outcome.task_id,
            "score": outcome.score,
            "infra_failure": outcome.failure.to_dict() if outcome.failure else None,
            "stop_reason": result.stop_reason if result else None,
            "turns_used": result.turns_used if result else 0,
            "messages": wire_messages(result.messages) if result else [],
        }

    async def _preflight(self) -> None:
        """Before any rollout (``preflight``): a cloud backend must start a sandbox, and
        a run holding a secret must get isolated local sandboxes.

        Raises:
            EnvSetupError: one line naming the setting to change.
        """
        await check_backend(self.config.terminal_backend, self.pool, f"{self._task_prefix}-0")
        if self.config.terminal_backend == "local":
            await check_isolation(self.sandbox_options(), len(self.redactor.secrets))

    async def setup_wandb(self) -> None:
        """Atropos' wandb start in ``serve``; a failure is one line naming ``use_wandb``.

        Raises:
            EnvSetupError: when wandb is missing or does not start.
        """
        await start_wandb(self.config.use_wandb, super().setup_wandb)

    def _start_wandb(self) -> None:
        if not self.config.use_wandb:
            return
        import wandb

        wandb.init(name=self.config.wandb_name, config=self.config.model_dump(mode="json"))

    async def add_rollouts_for_wandb(
        self, scored_data: ScoredDataGroup | list[ScoredDataGroup], item: Any = None
    ) -> None:
        """Keep rollouts for wandb's table only when wandb is on (Atropos decodes every
        rollout's tokens here, which costs more than the rest of writing a group)."""
        if self.config.use_wandb:
            await super().add_rollouts_for_wandb(scored_data, item)

    async def wandb_log(self, wandb_metrics: dict[str, Any] | None = None) -> None:
        """Atropos' metrics plus this run's counters (infra failures, token drift)."""
        metrics = dict(wandb_metrics or {})
        metrics.update(self.stats.as_metrics())
        await super().wandb_log(metrics)

    async def close(self) -> None:
        """Close every sandbox, the tool threads, the endpoints and the group file
        (idempotent)."""
        if self._closed:
            return
        self._closed = True
        try:
            worker, self._token_worker = self._token_worker, None
            if worker is not None:
                await worker.aclose()
            await self.pool.close_all()
        finally:
            self.executor.shutdown(wait=False, cancel_futures=True)
            self.token_executor.shutdown(wait=False, cancel_futures=True)
            for endpoint in self.endpoints:
                closer = getattr(endpoint, "aclose", None)
                if closer is not None:
                    await closer()
            if self.jsonl_writer is not None:
                self.jsonl_writer.close()
            if self.group_log is not None:
                self.group_log.close()

    @classmethod
    def cli(cls) -> None:
        """``python env.py serve|process|evaluate [--config FILE.yaml] [--env.X V]
        [--openai.X V]``; exits with the command's status."""
        sys.exit(run_cli(cls, sys.argv[1:]))


def _log_drift(drift: Sequence[tuple[str, int]]) -> int:
    """Log each rollout's turns of token drift; returns the total."""
    for task_id, turns in drift:
        logger.warning("%s: %d turn(s) did not extend the previous tokens (drift)", task_id, turns)
    return sum(turns for _, turns in drift)


def _chatml(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = True,
) -> str:
    from hermes_loop.chat_template import render_prompt

    return render_prompt(messages, tools, add_generation_prompt)
