"""The reference framework's override points and helpers, for environments written
against its ``HermesAgentBaseEnv``.

- ``GroupPath``: how ``process`` gets a group, decided once per environment class from
  what it overrides (``group_path``). ``FAST``: neither ``collect_trajectories`` nor
  ``collect_trajectory`` is overridden, so ``process`` runs the rollouts itself and
  makes each group's tokens and line beside them. Otherwise ``process`` calls the
  environment's ``collect_trajectories`` for every group, as ``serve`` (Atropos) does:
  ``COLLECT_TRAJECTORIES`` when that is overridden, ``COLLECT_TRAJECTORY`` when only the
  per-rollout method is (the group is then built from ``group_size`` of its items, as
  Atropos' default does, dropping the rollouts that returned ``None``).
- ``RunScope``: what a running environment binds for code written in the reference's
  spelling: ``HermesAgentLoop(server=self.server, tool_schemas=..., ...)`` gets the
  environment's endpoints (round robin) and tool handlers (``hermes_loop.bind_loop_scope``), and
  ``ToolContext(task_id)`` the environment's sandbox pool (``hermes_sandbox.ToolContext``).
- ``resolve_tools_for_group``, ``collect_one`` and ``collect_by_trajectory``: the bodies
  of ``_resolve_tools_for_group()``, ``collect_trajectory()`` and the per-rollout
  ``collect_trajectories()`` of ``HermesAgentBaseEnv``.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import logging
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Any

from hermes_envs._rollout import InfraFailure, RolloutOutcome
from hermes_loop import AgentResult, ChatServer, ChatSession, LoopScope, ToolSet, bind_loop_scope
from hermes_sandbox import SandboxClosedError, SandboxStartError, bind_sandbox_pool

#: A ``HermesAgentBaseEnv`` (typed loosely: this module is imported by that one).
Env = Any

__all__ = [
    "GroupPath",
    "RoundRobin",
    "collect_by_trajectory",
    "collect_one",
    "group_item",
    "group_path",
    "outcome_of_collect_trajectory",
    "resolve_tools_for_group",
    "run_scope",
]

logger = logging.getLogger(__name__)

#: The item of the group being collected in this context (seeds the group's tools).
_GROUP_ITEM: ContextVar[tuple[Any] | None] = ContextVar("hermes_envs_group_item", default=None)


class GroupPath(enum.Enum):
    """How ``process`` gets a group of an environment class (see the module docstring)."""

    FAST = "fast"
    COLLECT_TRAJECTORIES = "collect_trajectories"
    COLLECT_TRAJECTORY = "collect_trajectory"


def group_path(cls: type[Any], base: type[Any]) -> tuple[GroupPath, str]:
    """The ``GroupPath`` of ``cls`` (a subclass of ``base``, ``HermesAgentBaseEnv``) and
    why, in words (for the debug log).

    An override of either method may change what a group holds (tools resolved once,
    a distillation step after ``super()``), which ``process``'s own path would skip: such
    an environment gets the reference's path, where its method is called.
    """
    name = cls.__name__
    if cls.collect_trajectories is not base.collect_trajectories:
        return GroupPath.COLLECT_TRAJECTORIES, (
            f"{name} overrides collect_trajectories: process calls it for every group"
        )
    if cls.collect_trajectory is not base.collect_trajectory:
        return GroupPath.COLLECT_TRAJECTORY, (
            f"{name} overrides collect_trajectory: each group is group_size of its items"
        )
    return GroupPath.FAST, (
        f"{name} overrides neither collect_trajectories nor collect_trajectory: process runs "
        "the rollouts and makes each group's tokens and line beside them"
    )


class RoundRobin:
    """A ``ChatServer`` over the environment's endpoints, the next one per rollout."""

    def __init__(self, endpoints: Sequence[ChatServer]) -> None:
        self._endpoints = list(endpoints)
        self._turn = itertools.count()

    def session(self, task_id: str) -> ChatSession:
        """A session on the next endpoint."""
        return self._endpoints[next(self._turn) % len(self._endpoints)].session(task_id)


@contextmanager
def run_scope(env: Env) -> Iterator[None]:
    """Bind, for the block (a run of ``process``, ``serve`` or ``evaluate``), what code in
    the reference's spelling reaches: the env's endpoints and tools for
    ``HermesAgentLoop``, its sandbox pool for ``ToolContext(task_id)``."""
    cfg = env.config
    tools = {tool.name: tool for tool in env.tool_registry.select(None, None, None, seed=0)}
    scope = LoopScope(
        RoundRobin(env.endpoints),
        tools,
        {
            "executor": env.executor,
            "tool_timeout": float(cfg.terminal_timeout) + 30.0,
            "infra_exceptions": (SandboxClosedError, SandboxStartError),
        },
    )
    with ExitStack() as stack:
        stack.enter_context(bind_loop_scope(scope))
        stack.enter_context(bind_sandbox_pool(env.pool))
        yield


@contextmanager
def group_item(item: Any) -> Iterator[None]:
    """Mark ``item`` as the group being collected (``_resolve_tools_for_group`` seeds its
    draw of tools with it)."""
    token = _GROUP_ITEM.set((item,))
    try:
        yield
    finally:
        _GROUP_ITEM.reset(token)


def resolve_tools_for_group(env: Env) -> tuple[list[dict[str, Any]], set[str]]:
    """``(tool_schemas, valid_tool_names)`` of the group being collected: the tools
    ``resolve_tools`` gives its item (a fresh draw when called outside a group)."""
    marked = _GROUP_ITEM.get()
    if marked is None:
        cfg = env.config
        tools = env.tool_registry.select(
            cfg.enabled_toolsets, cfg.disabled_toolsets, cfg.distribution, seed=None
        )
    else:
        tools = env.resolve_tools(marked[0])
    return tools.schemas(), set(tools.names)


async def collect_one(
    env: Env, item: Any, tools: ToolSet | None = None
) -> tuple[dict[str, Any] | None, list[Any]]:
    """One rollout of ``item`` as an Atropos scored item (``tokens``, ``masks``,
    ``scores``, ``messages``; ``inference_logprobs`` in Phase 2), or ``None`` when it could
    not be scored (an infrastructure failure after its retries, or the reward raised).
    Without a tokenizer (``evaluate``) ``tokens`` and ``masks`` are empty."""
    from hermes_envs.scoring._group import wire_messages

    (outcome,) = await env.run_rollouts(item, 1, tools=tools)
    if not outcome.ok:
        return None, []
    result = outcome.result
    assert result is not None
    assert outcome.score is not None
    scored: dict[str, Any] = {
        "tokens": [],
        "masks": [],
        "scores": outcome.score,
        "messages": wire_messages(result.messages),
    }
    if env.loop_tokenizer is not None or result.managed_state is not None:
        made = await asyncio.get_running_loop().run_in_executor(
            env.token_executor,
            env.tokenize_rollout,
            result,
            tools if tools is not None else env.resolve_tools(item),
        )
        scored["tokens"], scored["masks"] = made.tokens, made.masks
        if made.logprobs is not None:
            scored["inference_logprobs"] = made.logprobs
    return scored, []


async def collect_by_trajectory(env: Env, item: Any) -> tuple[dict[str, Any] | None, list[Any]]:
    """A group of ``group_size`` calls of the env's ``collect_trajectory(item)``: the
    items that came back, as one Atropos group; ``(None, [item])`` (the item goes back to
    the queue) when fewer than ``min_rollouts_per_group`` did."""
    results = await asyncio.gather(
        *(env.collect_trajectory(item) for _ in range(env.config.group_size))
    )
    backlog: list[Any] = []
    scored = []
    for made, more in results:
        backlog.extend(more)
        if made is not None:
            scored.append(made)
    if len(scored) < env.config.group_minimum:
        logger.warning(
            "only %d of %d rollouts were scored (need %d); the item goes back to the queue",
            len(scored),
            len(results),
            env.config.group_minimum,
        )
        return None, [item, *backlog]
    group: dict[str, Any] = {"tokens": [], "masks": [], "scores": [], "messages": []}
    for made in scored:
        for key in group:
            group[key].append(made.get(key))
    for key in ("advantages", "ref_logprobs", "inference_logprobs"):
        if all(made.get(key) is not None for made in scored):
            group[key] = [made[key] for made in scored]
    group["group_overrides"] = (
        {"group_size": len(scored)} if len(scored) != env.config.group_size else {}
    )
    return group, backlog


async def outcome_of_collect_trajectory(env: Env, item: Any) -> RolloutOutcome:
    """One rollout of ``item`` through the env's own ``collect_trajectory`` (``evaluate``
    of an environment that overrides it), as a ``RolloutOutcome``: its score and
    messages; an infrastructure failure of stage ``collect_trajectory`` when it returned
    no scored item."""
    task_id = env.new_task_id()
    with run_scope(env), group_item(item):
        made, _ = await env.collect_trajectory(item)
    if made is None:
        message = "collect_trajectory returned no scored item"
        return RolloutOutcome(
            task_id, None, failure=InfraFailure(task_id, "collect_trajectory", message)
        )
    messages = [dict(message) for message in made.get("messages") or []]
    turns = sum(1 for message in messages if message.get("role") == "assistant")
    result = AgentResult(messages, turns, True, [None] * turns, [], task_id=task_id)
    return RolloutOutcome(task_id, result, float(made["scores"]))
