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

The class is the training side over ``HermesAgentEvalEnv`` (``hermes_envs._eval_env``:
config, endpoints, ``agent_loop``, evaluation logging, wandb, closing); its parts live in
their own modules: ``endpoints`` (server configs to endpoints), ``process_plan`` (which
fast paths ``process`` takes, from the hooks a class overrides), ``scheduler`` (the loop of
``process``), ``scoring.group_writer`` (tokens, the token worker and group-file lines),
``evaluation`` (``evaluate_items``, ``evaluate_and_log``) and ``reference`` (the
reference framework's override points).

Where Atropos' behaviour does not suit (wandb forced on in ``process``, the group file
written unflushed, a ``ServerManager`` built for inference we do not route through it),
this class overrides Atropos' documented hooks; each place says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from abc import abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

from atroposlib.envs.base import ScoredDataGroup

from hermes_envs._config import AGENT_TOOLSETS, HermesAgentEnvConfig
from hermes_envs._endpoint_limits import TimeoutStreak, request_timeout
from hermes_envs._endpoints import PHASES, SET_TOKENIZER
from hermes_envs._errors import EnvSetupError
from hermes_envs._eval_env import HermesAgentEvalEnv, ItemT
from hermes_envs._evaluation import eval_sample, evaluate_and_log, evaluate_items
from hermes_envs._group_file import GroupFile
from hermes_envs._preflight import check_backend, check_endpoints, start_wandb
from hermes_envs._records import RolloutRecords
from hermes_envs._reference import (
    GroupPath,
    collect_by_trajectory,
    collect_one,
    group_item,
    resolve_tools_for_group,
    run_scope,
)
from hermes_envs._resume import GroupLog
from hermes_envs._reward_errors import RewardErrors
from hermes_envs._rollout import RolloutOutcome, run_rollout
from hermes_envs._scheduler import GroupScheduler
from hermes_envs._stats import RunStats
from hermes_envs._tokenizer import TemplateRenderer, chat_template_renderer
from hermes_envs.process_plan import ProcessPlan
from hermes_envs.scoring._encoding import TextEncoder
from hermes_envs.scoring._group_writer import GroupWriter, Scored
from hermes_envs.scoring._token_worker import TokenWorker
from hermes_envs.scoring._tokens import (
    Marked,
    TokenizedRollout,
    chat_template_tokens,
    managed_tokens,
)
from hermes_loop import AgentResult, ToolRegistry, ToolSet
from hermes_loop.templates import TransformersTokenizer
from hermes_sandbox import SandboxPool, ToolContext, sandbox_tools
from hermes_sandbox.backends.local import reap_orphans

__all__ = ["PHASES", "HermesAgentBaseEnv", "RunStats"]

logger = logging.getLogger(__name__)


class HermesAgentBaseEnv(HermesAgentEvalEnv[ItemT]):
    """Atropos ``BaseEnv`` running a tool-using agent per rollout.

    ``ItemT`` is the type of the environment's items (``get_next_item``,
    ``format_prompt``, ``compute_reward``, ...): ``HermesAgentBaseEnv[dict[str, Any]]``;
    unparameterized, ``Any``.

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
            (``hermes_envs._resume``).

    With ``env.tokenizer_name`` unset (``None``/``"none"``) the environment holds no
    tokenizer (``self.tokenizer`` is ``None``) and reaches no hub: ``evaluate`` runs
    (Phase 1), ``process`` and ``serve`` stop at start with ``EnvSetupError`` naming
    ``--env.tokenizer_name``.
    """

    #: A tool-using environment keeps the tokenizer ``env.tokenizer_name`` names.
    holds_tokenizer: ClassVar[bool] = True

    jsonl_writer: Any

    # -- construction (hooks of HermesAgentEvalEnv.__init__) ----------------------------

    def _open_outputs(self, config: HermesAgentEnvConfig) -> None:
        """Open the group file's record of items (``GroupLog``: it continues an unfinished
        run or says what to do, ``hermes_envs._resume``).

        Raises:
            GroupFileExistsError: as the class says.
        """
        path = config.data_path_to_save_groups
        self.group_log = (
            GroupLog(path, resume=config.resume, seed_of=self.item_seeds)
            if path is not None
            else None
        )

    def _close_outputs(self) -> None:
        """Close the group file, its record of items and the records' files (idempotent)."""
        writer = getattr(self, "jsonl_writer", None)
        if writer is not None:
            writer.close()
        records = self.__dict__.get("rollout_records")  # made on first use
        if records is not None:
            records.close()
        if self.group_log is not None:
            self.group_log.close()

    def _attach_parts(self) -> None:
        """The tokenizer (when one is named), the group file, the sandbox pool, the
        tokenizer thread, the group writer and the tool registry.

        Raises:
            ValueError: if a toolset or distribution name is unknown.
        """
        config = self.config
        groups_path = config.data_path_to_save_groups
        self.last_failure: str | None = None
        self.reward_errors = RewardErrors(type(self).__name__, config.max_reward_errors)
        self.endpoint_timeouts = TimeoutStreak(config.max_endpoint_timeouts)
        self.jsonl_writer = (
            GroupFile(groups_path, self.redactor) if groups_path is not None else None
        )
        self.marked: Marked | None = None
        self.encode: TextEncoder | None = None
        if self.tokenizer is not None:
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
        # One thread: the tokenizer's settings are not made for concurrent callers.
        self.token_executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="hermes-envs-tokens"
        )
        #: Tokens and group-file lines of finished groups (and the token worker).
        self.group_writer = GroupWriter(
            lambda: self.config, self.token_executor, self.tokenize_rollout, self.stats
        )
        self.tool_registry = self.build_tool_registry()
        # Unknown toolset or distribution names fail here, at start-up.
        self.tool_registry.select(
            config.enabled_toolsets, config.disabled_toolsets, config.distribution, seed=0
        )
        self.phase = PHASES[self.server_configs[0].server_type]

    # -- what a subclass writes -------------------------------------------------------

    @abstractmethod
    def format_prompt(self, item: ItemT) -> str | list[dict[str, Any]]:
        """The user message for ``item`` (or a whole list of OpenAI messages)."""

    @abstractmethod
    async def compute_reward(self, item: ItemT, result: AgentResult, ctx: ToolContext) -> float:
        """Score a finished rollout (0.0-1.0); ``ctx`` reaches the rollout's sandbox.

        Raising (or returning no number) is the environment's bug: the rollout is dropped
        from its group (never a 0), logged with its traceback and counted; see
        ``hermes_envs._reward_errors``.
        """

    @abstractmethod
    async def get_next_item(self) -> ItemT | None:
        """The next item to make a group of (``None``: no more items)."""

    # -- overridable pieces ------------------------------------------------------------

    def build_tool_registry(self) -> ToolRegistry:
        """The tools rollouts may get, by toolset (override to add tools or distributions)."""
        registry = ToolRegistry()
        for tool in sandbox_tools(self.pool, toolsets=AGENT_TOOLSETS):
            registry.add(tool)
        return registry

    def resolve_tools(self, item: ItemT) -> ToolSet:
        """The tools of ``item``'s group: same item, same tools (seeded by the item)."""
        cfg = self.config
        return self.tool_registry.select(
            cfg.enabled_toolsets,
            cfg.disabled_toolsets,
            cfg.distribution,
            seed=self.item_seeds(item),
        )

    def require_tokenizer(self, purpose: str) -> TransformersTokenizer:
        """The env's tokenizer, for ``purpose`` (named in the error).

        Raises:
            EnvSetupError: if the environment has none (``env.tokenizer_name`` unset);
                the message names ``--env.tokenizer_name``.
        """
        if self.loop_tokenizer is None:
            raise EnvSetupError(
                f"{purpose} needs a tokenizer and env.tokenizer_name is not set: "
                f"{SET_TOKENIZER} (only evaluate runs without one)"
            )
        return self.loop_tokenizer

    # -- rollouts ------------------------------------------------------------------------

    async def run_rollouts(
        self, item: ItemT, count: int, *, tools: ToolSet | None = None
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
        return await self._prepared_rollouts(item, tools)(count)

    def _prepared_rollouts(
        self, item: ItemT, tools: ToolSet | None = None
    ) -> Callable[[int], Coroutine[Any, Any, list[RolloutOutcome]]]:
        """``run_rollouts`` of ``item`` with ``tools``, as a function of the count: the
        opening messages and the agent loop are made here, so that ``process`` makes them
        before its group waits for a slot and not between one group and the next. The
        function raises as ``run_rollouts`` does."""
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
                self.rollout_records.attempt(item, outcome)
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

        async def run(count: int) -> list[RolloutOutcome]:
            async with loop:
                if count == 1:
                    return [await one()]  # no task of its own: one rollout runs in ours
                return list(await asyncio.gather(*(one() for _ in range(count))))

        return run

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

    async def collect_trajectories(self, item: ItemT) -> tuple[ScoredDataGroup | None, list[Any]]:
        """One group of ``group_size`` rollouts of ``item``.

        Returns ``(group, [])``, or ``(None, [item])`` when fewer than
        ``min_rollouts_per_group`` rollouts survived infrastructure failures (the item
        goes back to the queue). An environment that overrides ``collect_trajectory``
        gets its group from ``group_size`` calls of it (as Atropos' default does).
        """
        if self.process_plan.overrides("collect_trajectory"):
            return await collect_by_trajectory(self, item)
        tools = self.resolve_tools(item)
        outcomes = await self.run_rollouts(item, self.config.group_size, tools=tools)
        return await self.score_group(item, outcomes, tools=tools)

    async def score_group(
        self, item: ItemT, outcomes: Sequence[RolloutOutcome], *, tools: ToolSet | None = None
    ) -> tuple[ScoredDataGroup | None, list[Any]]:
        """The scored group of ``item``'s finished ``outcomes``, as ``collect_trajectories``
        returns it (``tools``: the group's, default ``resolve_tools(item)``). Tokens are
        made on the env's tokenizer thread, so the event loop keeps running rollouts
        meanwhile."""
        scored = await self._score(item, outcomes, tools, file=None)
        return scored.group, scored.backlog

    async def _score(
        self,
        item: ItemT,
        outcomes: Sequence[RolloutOutcome],
        tools: ToolSet | None,
        *,
        file: GroupFile | None,
    ) -> Scored:
        """The scored group of ``item`` (with ``file``: with its line of that file), or
        the item back to the queue when too few of ``outcomes`` are good."""
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
            return Scored(None, [item])
        if tools is None:
            tools = self.resolve_tools(item)
        return await self.group_writer.score(good, tools, file)

    @property
    def token_worker(self) -> TokenWorker | None:
        """The token worker process ``process`` makes Phase 1 group lines in, while one
        is in use (see ``token_worker`` in the config)."""
        return self.group_writer.token_worker

    async def _start_token_worker(self) -> None:
        """Start the token worker (``process``, Phase 1), where it can stand in for the
        environment: ``token_worker`` on, lines made with the tokens
        (``_line_file``), the plan's ``token_worker`` fast path (``tokenize_rollout`` not
        overridden), the tokenizer's own chat template and a fast tokenizer."""
        if not (
            self.config.token_worker
            and self.phase == 1
            and self._line_file() is not None
            and self.process_plan.allows("token_worker")
            and isinstance(self.render, TemplateRenderer)
        ):
            return
        tokenizer = self.require_tokenizer("process")
        await self.group_writer.start_worker(self.tokenizer, tokenizer.eos_token)

    def _line_file(self) -> GroupFile | None:
        """The group file when ``process`` makes a group's line together with its tokens
        (else ``None``): the group goes to our group file (wandb off) and the plan's
        ``lines_with_tokens`` fast path holds (neither ``score_group``,
        ``postprocess_histories`` nor ``write_group`` is overridden: each may change or
        replace the group on its way there, so each is then called as it is)."""
        writer = self.jsonl_writer
        if (
            not self.config.use_wandb
            and isinstance(writer, GroupFile)
            and self.process_plan.allows("lines_with_tokens")
        ):
            return writer
        return None

    async def collect_trajectory(self, item: ItemT) -> tuple[dict[str, Any] | None, list[Any]]:
        """One rollout of ``item`` as an Atropos scored item (the reference's per-rollout
        override point): ``tokens``, ``masks``, ``scores``, ``messages``; ``(None, [])``
        when the rollout could not be scored. Overriding it makes every mode build groups
        from it (``hermes_envs._reference.GroupPath``)."""
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
    def process_plan(self) -> ProcessPlan:
        """Which fast paths ``process`` may take for this environment's class
        (``hermes_envs.process_plan``), decided from the hooks it overrides; the decision
        is logged once at debug."""
        plan = ProcessPlan.of(type(self), HermesAgentBaseEnv)
        logger.debug("%s", plan.describe())
        return plan

    @functools.cached_property
    def rollout_records(self) -> RolloutRecords:
        """The per-rollout records of ``process`` and ``evaluate`` (``hermes_envs._records``)."""
        return RolloutRecords(self)

    @property
    def group_path(self) -> GroupPath:
        """How ``process`` gets this environment's groups (``hermes_envs._reference``):
        the ``process_plan``'s ``group_path``."""
        return self.process_plan.group_path

    # -- runs ----------------------------------------------------------------------------

    async def write_group(self, group: ScoredDataGroup, item: ItemT) -> bool:
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
        if not self.group_writer.ready(group):
            return False
        writer = self.jsonl_writer
        if isinstance(writer, GroupFile):
            # The text is made on the tokenizer thread (a group's tokens make long lines).
            loop = asyncio.get_running_loop()
            writer.write_line(await loop.run_in_executor(self.token_executor, writer.encode, group))
        elif writer is not None:
            writer.write(group)
        return True

    async def _write_scored(self, scored: Scored, item: ItemT) -> None:
        """Write a finished group in ``process``: its line when it came with one, else
        through ``postprocess_histories`` and ``write_group``. Each group written is
        recorded (``_record``)."""
        if scored.line is None:
            made = scored.group
            for one in made if isinstance(made, list) else [made]:
                if one is not None and await self.write_group(
                    await self.postprocess_histories(one), item
                ):
                    self._record(item)
                    await self.rollout_records.group_written(item, one)
        elif scored.line:
            writer = self.jsonl_writer
            assert isinstance(writer, GroupFile)
            writer.write_line(scored.line)
            self._record(item)
            await self.rollout_records.group_written(
                item,
                scored.group or scored.line,
                rows=scored.rows,
                record_tokens=scored.record_tokens,
            )

    def _record(self, item: ItemT) -> None:
        """A group of ``item`` is written: recorded in the group file's log of items."""
        if self.group_log is not None:
            self.group_log.record(item)

    async def process_manager(self) -> None:
        """``process``: ``n_groups_to_process`` groups to the JSONL file, as they finish.

        Overrides Atropos' version: groups run concurrently (``max_num_workers_per_node``
        at a time running rollouts, while finished ones are scored on the tokenizer
        thread; ``hermes_envs._scheduler``), wandb only starts when ``use_wandb`` is set, a
        group with too few scored rollouts goes back to the queue (at most
        ``infra_retries + 1`` tries), the run stops with ``RunAbortedError`` after
        ``max_dropped_items`` items in a row were given up on, and everything is closed
        however the run ends.

        Raises:
            EnvSetupError: at start, if the environment has no tokenizer.
            RunAbortedError: after ``max_dropped_items`` items in a row were given up on.
            asyncio.CancelledError: when cancelled; groups already written stay intact.
        """
        try:
            with run_scope(self):
                await self._process_groups()
        finally:
            await self.close()
        path = self.config.data_path_to_save_groups
        if path is not None and self.stats.groups_done and self.config.write_viewer_html:
            # Atropos' viewer page, <same name>.html, without generate_html's print.
            from hermes_envs._atropos_page import write_atropos_page

            await asyncio.to_thread(write_atropos_page, path)

    async def _process_groups(self) -> None:
        """The body of ``process_manager``, run with the env's ``run_scope`` bound."""
        self.require_tokenizer("process")
        if int(getattr(self, "max_token_len", -1)) <= 0:
            # No trainer registers a length in process mode: use the config's, so that
            # Atropos does not warn on every group that lengths are ignored.
            self.max_token_len = self.config.max_token_length
        # First: its start (a Python process, about 0.3 s of CPU) overlaps the checks
        # and setup below instead of the first rollouts (whose lines the thread makes
        # until it is ready).
        await self._start_token_worker()
        await self._preflight()
        if self.config.terminal_backend == "local":
            # What the sandboxes of a killed earlier run left behind goes first.
            removed = await asyncio.to_thread(reap_orphans)
            if removed:
                logger.warning("removed %d sandbox directories of dead runs", len(removed))
        await self.setup()
        await check_endpoints(self.server_configs, self.config)
        await start_wandb(self.config.use_wandb, self._start_wandb)
        target = int(getattr(self, "n_groups_to_process", None) or self.config.total_steps)
        if self.group_log is not None:
            self.stats.groups_done = self.group_log.done
        self.reporter.update(self.stats)  # the checks passed: the progress display appears

        async def after_write() -> None:
            if self.config.use_wandb:
                await self.wandb_log()

        scheduler: GroupScheduler[ItemT] = GroupScheduler(
            width=self.config.max_num_workers_per_node,
            infra_retries=self.config.infra_retries,
            max_dropped_items=self.config.max_dropped_items,
            stats=self.stats,
            reporter=self.reporter,
            next_item=self._next_item,
            collect=self._collect_in_slot,
            write=self._write_scored,
            after_write=after_write,
            last_failure=lambda: self.last_failure,
        )
        await scheduler.run(target)
        if self.group_log is not None and self.stats.groups_done >= target:
            self.group_log.finish()

    async def _next_item(self) -> ItemT | None:
        """The next item of ``get_next_item`` whose group is not in the group file yet
        (``None``: no more items)."""
        log = self.group_log
        while True:
            item = await self.get_next_item()
            if item is None or log is None or not log.skip(item):
                return item
            if log.exhausted:
                return None

    async def _collect_in_slot(self, item: ItemT, slots: asyncio.Semaphore) -> Scored:
        """One group of ``item`` for ``process``, its rollouts run while holding a slot,
        by the ``process_plan``'s fast paths where they hold, else through the
        environment's own ``collect_trajectories`` / ``score_group``."""
        plan = self.process_plan
        if not plan.allows("own_rollouts"):
            with group_item(item):
                async with slots:
                    return Scored(*await self.collect_trajectories(item))
        tools = self.resolve_tools(item)
        if plan.allows("prepared_rollouts"):
            run = self._prepared_rollouts(item, tools)
        else:
            run = functools.partial(self.run_rollouts, item, tools=tools)
        async with slots:
            outcomes = await run(self.config.group_size)
        # The group waiting for the slot starts its rollouts first: this group's scoring
        # (its request to the token worker) then runs while they wait on the model.
        await asyncio.sleep(0)
        if not plan.allows("inline_scoring"):
            return Scored(*await self.score_group(item, outcomes))
        return await self._score(item, outcomes, tools, file=self._line_file())

    async def env_manager(self) -> None:
        """``serve``: Atropos' loop, then every sandbox and thread closed.

        Raises:
            EnvSetupError: at start, if the environment has no tokenizer.
        """
        try:
            self.require_tokenizer("serve")
            await self._preflight()
            await check_endpoints(self.server_configs, self.config)
            with run_scope(self):
                # Atropos' own (HermesAgentEvalEnv's refuses: it only evaluates).
                await super(HermesAgentEvalEnv, self).env_manager()
        finally:
            await self.close()

    def _run_scope(self) -> contextlib.AbstractContextManager[None]:
        """``evaluate`` runs with the env's ``run_scope`` bound (``hermes_envs._reference``)."""
        return run_scope(self)

    async def evaluate_items(self, items: Sequence[ItemT]) -> list[tuple[ItemT, RolloutOutcome]]:
        """One rollout per item (at most ``max_eval_workers`` at once), retried on
        infrastructure failure; ``(item, outcome)`` in the order of ``items``. An
        environment that overrides ``collect_trajectory`` gets each item's rollout from
        it (``hermes_envs._evaluation``).

        Raises:
            RewardFunctionError, RunAbortedError: as ``run_rollouts``.
        """
        return await evaluate_items(self, items)

    async def evaluate_and_log(self, items: Sequence[ItemT], score_metric: str) -> None:
        """Evaluate ``items`` (``evaluate_items``) and write, with Atropos'
        ``evaluate_log``, the mean score as ``eval/{score_metric}`` (over scored items;
        infrastructure failures counted apart; left out when no item was scored) and one
        sample per item.

        Raises:
            RewardFunctionError, RunAbortedError: as ``run_rollouts``.
        """
        await evaluate_and_log(self, items, score_metric)

    @staticmethod
    def eval_sample(item: Any, outcome: RolloutOutcome) -> dict[str, Any]:
        """A JSON-ready record of one evaluated item (for ``samples.jsonl``)."""
        return eval_sample(item, outcome)

    async def _check_backend(self) -> None:
        """A cloud backend must start a sandbox of the env's own pool (``check_backend``).

        Raises:
            EnvSetupError: one line naming ``env.terminal_backend``.
        """
        await check_backend(self.config.terminal_backend, self.pool, f"{self._task_prefix}-0")

    async def setup_wandb(self) -> None:
        """Atropos' wandb start in ``serve``; a failure is one line naming ``use_wandb``.

        Raises:
            EnvSetupError: when wandb is missing or does not start.
        """
        await start_wandb(self.config.use_wandb, super().setup_wandb)

    async def add_rollouts_for_wandb(
        self, scored_data: ScoredDataGroup | list[ScoredDataGroup], item: ItemT | None = None
    ) -> None:
        """Keep rollouts for wandb's table only when wandb is on (Atropos decodes every
        rollout's tokens here, which costs more than the rest of writing a group)."""
        if self.config.use_wandb:
            await super().add_rollouts_for_wandb(scored_data, item)

    async def _release(self) -> None:
        """Close the token worker and every sandbox, then the tokenizer thread."""
        try:
            await self.group_writer.aclose()
            await self.pool.close_all()
        finally:
            self.token_executor.shutdown(wait=False, cancel_futures=True)
