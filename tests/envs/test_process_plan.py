"""``ProcessPlan``: ``process``'s fast paths are chosen from the hooks a class overrides,
in one place, and an overridden hook is called: its effect is in the group file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from hermes_envs import HermesAgentBaseEnv, TerminalTestEnv, terminal_test_oracle
from hermes_envs._reference import GroupPath
from hermes_envs._rollout import RolloutOutcome
from hermes_envs.process_plan import FAST_PATH_HOOKS, ProcessPlan
from hermes_envs.scoring._tokens import TokenizedRollout
from hermes_loop import AgentResult, ToolSet
from hermes_loop.server import ModelServer, Policy

from .support import process_config, server

HOOKS = sorted({hook for hooks in FAST_PATH_HOOKS.values() for hook in hooks})


def _overriding(hook: str) -> type[TerminalTestEnv]:
    """A TerminalTestEnv whose ``hook`` is its own function (calling the base's)."""
    inherited = getattr(TerminalTestEnv, hook)

    def same(self: Any, *args: Any, **kwargs: Any) -> Any:
        return inherited(self, *args, **kwargs)

    return type(f"Overrides_{hook}", (TerminalTestEnv,), {hook: same})


def test_the_base_class_allows_every_fast_path() -> None:
    plan = ProcessPlan.of(TerminalTestEnv, HermesAgentBaseEnv)
    assert plan.group_path is GroupPath.FAST
    assert plan.overridden == frozenset()
    assert all(plan.allows(name) for name in FAST_PATH_HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_overriding_a_hook_turns_off_each_fast_path_standing_in_for_it(hook: str) -> None:
    plan = ProcessPlan.of(_overriding(hook), HermesAgentBaseEnv)
    assert plan.overridden == {hook}
    assert plan.overrides(hook)
    for name, hooks in FAST_PATH_HOOKS.items():
        assert plan.allows(name) is (hook not in hooks), name
    assert (plan.group_path is GroupPath.FAST) is plan.allows("own_rollouts")


def test_an_unknown_fast_path_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        ProcessPlan.of(TerminalTestEnv, HermesAgentBaseEnv).allows("no_such_path")


class _HalvedScores(TerminalTestEnv):
    async def score_group(
        self, item: Any, outcomes: Any, *, tools: ToolSet | None = None
    ) -> tuple[Any, list[Any]]:
        group, backlog = await super().score_group(item, outcomes, tools=tools)
        if group is not None:
            group["scores"] = [score / 2 for score in group["scores"]]
        return group, backlog


class _LongerTokens(TerminalTestEnv):
    def tokenize_rollout(self, result: AgentResult, tools: ToolSet) -> TokenizedRollout:
        made = super().tokenize_rollout(result, tools)
        return dataclasses.replace(made, tokens=[*made.tokens, 7], masks=[*made.masks, 7])


class _OwnRollouts(TerminalTestEnv):
    async def run_rollouts(
        self, item: Any, count: int, *, tools: ToolSet | None = None
    ) -> list[RolloutOutcome]:
        outcomes = await super().run_rollouts(item, count, tools=tools)
        return [dataclasses.replace(o, score=(o.score or 0.0) / 4) for o in outcomes]


class _Tagged(TerminalTestEnv):
    async def write_group(self, group: Any, item: Any) -> bool:
        group["group_overrides"] = {"tagged": item["id"]}
        return await super().write_group(group, item)


async def _groups(tmp_path: Path, env_class: type[TerminalTestEnv]) -> list[dict[str, Any]]:
    out = tmp_path / f"{env_class.__name__}.jsonl"
    config = process_config(out, write_viewer_html=False)
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        env = env_class(config, [server(model.base_url)])
        env.n_groups_to_process = 2
        await env.process_manager()
    return [json.loads(line) for line in out.read_text().splitlines()]


async def test_an_overridden_hook_is_called_on_the_path_process_takes(tmp_path: Path) -> None:
    plain = await _groups(tmp_path, TerminalTestEnv)
    assert [group["scores"] for group in plain] == [[1.0, 1.0]] * 2
    halved = await _groups(tmp_path, _HalvedScores)
    assert [group["scores"] for group in halved] == [[0.5, 0.5]] * 2
    longer = await _groups(tmp_path, _LongerTokens)
    assert all(tokens[-1] == 7 for group in longer for tokens in group["tokens"])
    assert sorted(len(t) for g in longer for t in g["tokens"]) == sorted(
        len(t) + 1 for g in plain for t in g["tokens"]
    )
    own = await _groups(tmp_path, _OwnRollouts)
    assert [group["scores"] for group in own] == [[0.25, 0.25]] * 2
    tagged = await _groups(tmp_path, _Tagged)
    assert all(set(group["group_overrides"]) == {"tagged"} for group in tagged)


class _Ordered(TerminalTestEnv):
    """Notes when each group's opening messages are made and when its rollouts end."""

    events: list[tuple[str, str]]

    def build_messages(self, item: Any) -> list[dict[str, Any]]:
        self.events.append(("messages", item["id"]))
        return super().build_messages(item)

    async def compute_reward(self, item: Any, result: AgentResult, ctx: Any) -> float:
        self.events.append(("reward", item["id"]))
        return await super().compute_reward(item, result, ctx)


async def test_a_group_makes_its_messages_before_it_waits_for_a_slot(tmp_path: Path) -> None:
    # One group at a time: the second group's messages (and agent loop) are made while
    # the first one's rollouts run, not between the two groups; each group's once.
    out = tmp_path / "ordered.jsonl"
    config = process_config(out, write_viewer_html=False, max_num_workers_per_node=1, group_size=1)
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        env = _Ordered(config, [server(model.base_url)])
        env.events = []
        env.n_groups_to_process = 3
        await env.process_manager()
    kinds = [kind for kind, _ in env.events]
    assert kinds[:3] == ["messages", "messages", "reward"], env.events
    assert kinds.count("messages") == kinds.count("reward") == 3
    first, second = env.events[0][1], env.events[1][1]
    assert first != second
    assert ("reward", first) in env.events[:3]
    assert len(out.read_text().splitlines()) == 3
