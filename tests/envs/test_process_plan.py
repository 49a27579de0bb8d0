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
    tagged = await _groups(tmp_path, _Tagged)
    assert all(set(group["group_overrides"]) == {"tagged"} for group in tagged)
