"""``process_manager()`` in this process: what it writes and what it skips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonlines
import pytest
from atroposlib.frontend.jsonl2html import generate_html

from hermes_envs import TerminalTestEnv, terminal_test_oracle
from hermes_envs._group_file import GroupFile
from hermes_envs.envs.terminal_test import TASKS
from hermes_loop.server import ModelServer, Policy

from .support import env_config, process_config, server


async def _process(
    tmp_path: Path, env_class: type[TerminalTestEnv] = TerminalTestEnv, **overrides: object
) -> tuple[TerminalTestEnv, Path]:
    out = tmp_path / "groups.jsonl"
    config = process_config(out, **overrides)
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        env = env_class(config, [server(model.base_url)])
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


async def test_the_viewer_page_is_atropos_own_and_written_without_a_print(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = await _process(tmp_path)
    ours = out.with_suffix(".html").read_text(encoding="utf-8")
    printed = capsys.readouterr()
    assert "Successfully generated HTML file" not in printed.out + printed.err
    # The page is the one Atropos' generate_html writes from the same group file.
    theirs = tmp_path / "atropos" / out.with_suffix(".html").name
    generate_html(str(out), str(theirs))
    assert "Successfully generated HTML file" in capsys.readouterr().out  # what we avoid
    assert ours == theirs.read_text(encoding="utf-8")
    assert ours.count("<summary>Group ") == len(TASKS)


async def test_the_viewer_page_can_be_left_out(tmp_path: Path) -> None:
    _, out = await _process(tmp_path, write_viewer_html=False)
    assert len(out.read_text().splitlines()) == len(TASKS)
    assert not out.with_suffix(".html").exists()


async def test_a_group_line_is_the_one_atropos_writes(tmp_path: Path) -> None:
    _, out = await _process(tmp_path, write_viewer_html=False)
    first = json.loads(out.read_text().splitlines()[0])
    # A fresh environment (the one that ran is closed); it makes no model call here.
    config = env_config(data_path_to_save_groups=str(tmp_path / "unused.jsonl"))
    env = TerminalTestEnv(config, [server("http://127.0.0.1:9")])
    env.max_token_len = config.max_token_length
    lines: dict[str, list[str]] = {}
    for name in ("ours", "atropos"):
        path = tmp_path / f"{name}.jsonl"
        # Ours: the env's own group file; Atropos': its jsonlines writer.
        env.jsonl_writer = GroupFile(path) if name == "ours" else jsonlines.open(path, mode="w")
        bare = {k: v for k, v in first.items() if k in ("tokens", "masks", "scores", "messages")}
        good = {**bare, "scores": [1.0, 0.0], "group_overrides": {}}
        short = {**bare, "tokens": first["tokens"][:1], "group_overrides": {}}
        tied = {**bare, "scores": [0.5, 0.5], "group_overrides": {}}
        for must_differ in (False, True):
            env.config = env.config.model_copy(update={"ensure_scores_are_not_same": must_differ})
            for group in (good, short, tied):
                copy = json.loads(json.dumps(group))
                if name == "ours":
                    await env.write_group(copy, None)
                else:
                    await env.handle_send_to_api(
                        copy, None, do_send_to_api=False, abort_on_any_max_length_exceeded=False
                    )
        env.jsonl_writer.close()
        lines[name] = path.read_text().splitlines()
    # good and tied, then (scores must differ) good only: the same lines, byte for byte.
    assert len(lines["ours"]) == 3
    assert lines["ours"] == lines["atropos"]
    assert json.loads(lines["ours"][0])["distill_logprobs"] is None
    await env.close()


class _Postprocessed(TerminalTestEnv):
    """Overrides Atropos' postprocess_histories hook (as is, counting its calls)."""

    async def postprocess_histories(self, trajectories: Any) -> Any:
        self.postprocessed = getattr(self, "postprocessed", 0) + 1
        return trajectories


async def test_lines_made_beside_the_tokens_equal_the_hooked_path(tmp_path: Path) -> None:
    # Without overrides, a group's line is made with its tokens on the tokenizer thread;
    # an overridden postprocess_histories is called and its group written by write_group.
    # Both write what Atropos' writer writes for the group, and the same groups.
    _, fast = await _process(tmp_path / "fast", write_viewer_html=False)
    env, hooked = await _process(tmp_path / "hooked", _Postprocessed, write_viewer_html=False)
    assert getattr(env, "postprocessed", 0) == len(TASKS)

    def groups(path: Path) -> list[dict[str, Any]]:
        lines = path.read_text().splitlines()
        parsed = [json.loads(line) for line in lines]
        assert lines == [json.dumps(group, ensure_ascii=False) for group in parsed]
        # Call ids differ between runs; tokens, masks and scores do not.
        return sorted(
            ({k: group[k] for k in ("tokens", "masks", "scores")} for group in parsed),
            key=json.dumps,
        )

    assert groups(fast) == groups(hooked)
    assert len(groups(fast)) == len(TASKS)
