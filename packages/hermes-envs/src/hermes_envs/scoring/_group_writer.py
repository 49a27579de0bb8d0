"""``GroupWriter``: a group's finished rollouts to Atropos scored data and, in
``process``, to its line of the group file, off the event loop.

The tokens (and the line) of a group are made in one hand-off to the environment's
tokenizer thread, or, in Phase 1 ``process`` where it can stand in for the environment,
in the token worker process (``hermes_envs.scoring._token_worker``), whose first line is
checked against the thread's own. Turns whose tokens did not extend the previous ones
(drift) are logged and counted in the run's ``RunStats.token_drift``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_envs._group_file import GroupFile
from hermes_envs._stats import RunStats
from hermes_envs.scoring._group import ScoredRollout, scored_group, skip_reason
from hermes_envs.scoring._token_worker import TokenWorker, TokenWorkerUnavailable
from hermes_envs.scoring._tokens import TokenizedRollout

if TYPE_CHECKING:
    from atroposlib.envs.base import ScoredDataGroup

    from hermes_envs._env_config import HermesAgentEnvConfig
    from hermes_envs._rollout import RolloutOutcome
    from hermes_loop import AgentResult, ToolSet

__all__ = ["GroupWriter", "Scored", "log_drift"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Scored:
    """A group as ``collect_trajectories`` returns it (``group``, ``backlog``) and, when
    made with its tokens, its line of the group file ("" when the checks skip it).

    A line from the token worker also comes with ``rows`` (the outcomes of its rows, in
    order) and, when the worker made them, ``record_tokens`` (each row's ``tokens``
    entry of its rollout record, as JSON text: ``hermes_envs.scoring._record_tokens``).
    """

    group: ScoredDataGroup | list[ScoredDataGroup | None] | None
    backlog: list[Any]
    line: str | None = None
    rows: Sequence[RolloutOutcome] | None = None
    record_tokens: list[str] | None = None

    @property
    def scored(self) -> bool:
        """Whether the group was scored (else its item goes back to the queue)."""
        return self.group is not None or self.line is not None


def log_drift(drift: Sequence[tuple[str, int]]) -> int:
    """Log each rollout's turns of token drift; returns the total."""
    for task_id, turns in drift:
        logger.warning("%s: %d turn(s) did not extend the previous tokens (drift)", task_id, turns)
    return sum(turns for _, turns in drift)


class GroupWriter:
    """Scored data and group-file lines of finished groups, made off the event loop.

    Args:
        settings: the environment's settings as they are now (``group_size``,
            ``ensure_scores_are_not_same``; an environment's ``config`` may be replaced).
        token_executor: the environment's one tokenizer thread.
        tokenize: the environment's ``tokenize_rollout`` (called on that thread).
        stats: the run's counters (``token_drift`` is added to).
    """

    def __init__(
        self,
        settings: Callable[[], HermesAgentEnvConfig],
        token_executor: ThreadPoolExecutor,
        tokenize: Callable[[AgentResult, ToolSet], TokenizedRollout],
        stats: RunStats,
    ) -> None:
        self.settings = settings
        self.token_executor = token_executor
        self.tokenize = tokenize
        self.stats = stats
        self._worker: TokenWorker | None = None
        self._worker_checked = False

    @property
    def token_worker(self) -> TokenWorker | None:
        """The token worker process lines are made in, while one is in use."""
        return self._worker

    def ready(self, group: ScoredDataGroup) -> bool:
        """Atropos' checks before a group is written, a failure logged; fills in the
        optional fields. Changes only ``group``."""
        cfg = self.settings()
        reason = skip_reason(group, cfg.group_size, cfg.ensure_scores_are_not_same)
        if reason is not None:
            logger.warning("%s", reason)
        return reason is None

    def scored_data(
        self, outcomes: Sequence[RolloutOutcome], tokenized: Sequence[TokenizedRollout]
    ) -> tuple[ScoredDataGroup, int]:
        """The Atropos group of the good ``outcomes`` with their tokens, and its turns of
        drift (each logged); changes nothing else (it runs on the tokenizer thread)."""
        rollouts = []
        for outcome, tokens in zip(outcomes, tokenized, strict=True):
            assert outcome.result is not None
            assert outcome.score is not None
            rollouts.append(
                ScoredRollout(outcome.task_id, outcome.result.messages, outcome.score, tokens)
            )
        group, drift = scored_group(rollouts, self.settings().group_size)
        return group, log_drift(drift)

    def tokenize_all(
        self, outcomes: Sequence[RolloutOutcome], tools: ToolSet
    ) -> list[TokenizedRollout]:
        """The tokens of each of ``outcomes`` (``tokenize``), in order.

        Raises:
            ValueError: if a rollout cannot be tokenized.
        """
        tokenized = []
        for outcome in outcomes:
            assert outcome.result is not None
            tokenized.append(self.tokenize(outcome.result, tools))
        return tokenized

    async def score(
        self, good: Sequence[RolloutOutcome], tools: ToolSet, file: GroupFile | None
    ) -> Scored:
        """The scored group of the good outcomes ``good``; with ``file``, made together with
        its line of that file (from the token worker when one is in use and ready).

        Raises:
            ValueError: if a rollout cannot be tokenized.
        """
        worker = self._worker
        if worker is not None and worker.gone is not None:
            await self._drop_worker(worker, worker.gone)
        elif file is not None and worker is not None and worker.ready:
            made = await self._line_from_worker(worker, good, tools, file)
            if made is not None:
                return made
        group, drift, line = await asyncio.get_running_loop().run_in_executor(
            self.token_executor, self._group_and_line, good, tools, file
        )
        self.stats.token_drift += drift
        return Scored(group, [], line)

    def _group_and_line(
        self, good: Sequence[RolloutOutcome], tools: ToolSet, file: GroupFile | None
    ) -> tuple[ScoredDataGroup, int, str | None]:
        """On the tokenizer thread: the group's tokens, its scored data, its turns of
        drift and (with ``file``) its line ("" when the checks skip it), all in one
        hand-off from the event loop."""
        group, drift = self.scored_data(good, self.tokenize_all(good, tools))
        if file is None:
            return group, drift, None
        return group, drift, file.encode(group) if self.ready(group) else ""

    async def _line_from_worker(
        self,
        worker: TokenWorker,
        good: Sequence[RolloutOutcome],
        tools: ToolSet,
        file: GroupFile,
    ) -> Scored | None:
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
            header, line, texts = await worker.make_line(
                tools.schemas() or None, rollouts, record_tokens=worker.makes_record_tokens
            )
        except TokenWorkerUnavailable as exc:
            if worker.gone is not None:
                await self._drop_worker(worker, str(exc))
            return None
        skip = header.get("skip")
        if not self._worker_checked:
            _, _, own = await asyncio.get_running_loop().run_in_executor(
                self.token_executor, self._group_and_line, good, tools, file
            )
            if own != (line if skip is None else ""):
                reason = "the token worker's group line differs from the environment's own"
                await self._drop_worker(worker, reason)
                return None
            self._worker_checked = True
            logger.debug("token worker ready (pid %s): group lines are made there", worker.pid)
        self.stats.token_drift += log_drift([(task, turns) for task, turns in header["drift"]])
        if skip is not None:
            logger.warning("%s", skip)
            return Scored(None, [], "")
        return Scored(None, [], line, good, texts if len(texts) == len(good) else None)

    async def start_worker(self, tokenizer: Any, eos_token: str) -> None:
        """Start the token worker for ``tokenizer`` (a transformers tokenizer); when it
        cannot stand in for the environment (``TokenWorker.setup_for``) or does not start
        (logged), lines go on being made on the tokenizer thread."""
        cfg = self.settings()
        setup = await asyncio.get_running_loop().run_in_executor(
            self.token_executor,
            functools.partial(
                TokenWorker.setup_for,
                tokenizer,
                eos_token=eos_token,
                group_size=cfg.group_size,
                ensure_scores_are_not_same=cfg.ensure_scores_are_not_same,
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
        self._worker = worker

    async def _drop_worker(self, worker: TokenWorker, reason: str) -> None:
        if self._worker is worker:
            self._worker = None
            logger.warning("%s; making tokens on the tokenizer thread from now on", reason)
        await worker.aclose()

    async def aclose(self) -> None:
        """Close the token worker, if one runs (idempotent)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            await worker.aclose()
