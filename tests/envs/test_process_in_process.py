"""``process_manager()`` in this process: what it writes and what it skips."""

from __future__ import annotations

import json
from pathlib import Path

from hermes_envs import TerminalTestEnv, terminal_test_oracle
from hermes_envs.envs.terminal_test import TASKS
from hermes_loop.server import ModelServer, Policy

from .support import env_config, server


async def _process(tmp_path: Path, **overrides: object) -> tuple[TerminalTestEnv, Path]:
    out = tmp_path / "groups.jsonl"
    config = env_config(
        data_path_to_save_groups=str(out),
        include_messages=True,
        ensure_scores_are_not_same=False,
        max_num_workers_per_node=2,
        **overrides,
    )
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        env = TerminalTestEnv(config, [server(model.base_url)])
        env.n_groups_to_process = len(TASKS)
        await env.process_manager()
    return env, out


async def test_groups_are_written_while_scoring_runs_beside_rollouts(tmp_path: Path) -> None:
    env, out = await _process(tmp_path)
    groups = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(groups) == len(TASKS)
    assert all(group["scores"] == [1.0, 1.0] for group in groups)
    assert out.with_suffix(".html").exists()
    assert env.rollouts_for_wandb == []  # nothing decoded for wandb when it is off
    assert env.max_token_len == env.config.max_token_length


async def test_the_viewer_page_can_be_left_out(tmp_path: Path) -> None:
    _, out = await _process(tmp_path, write_viewer_html=False)
    assert len(out.read_text().splitlines()) == len(TASKS)
    assert not out.with_suffix(".html").exists()
