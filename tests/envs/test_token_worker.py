"""The token worker process: its lines are the environment's own; every fault falls back."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer

from hermes_envs import TerminalTestEnv, terminal_test_oracle
from hermes_envs._group_file import LineEncoder
from hermes_envs._tokenizer import TemplateRenderer
from hermes_envs.scoring._encoding import TextEncoder
from hermes_envs.scoring._group import ScoredRollout, scored_group, skip_reason
from hermes_envs.scoring._record_tokens import PieceDecoder, record_tokens
from hermes_envs.scoring._token_worker import TokenWorker, TokenWorkerUnavailable
from hermes_envs.scoring._tokens import chat_template_tokens
from hermes_envs.scoring.worker import LineMaker, serve
from hermes_loop.server import ModelServer, Policy
from hermes_loop.templates._chat_template import CHATML_JINJA_TEMPLATE

from .conversations import TOOLS, conversations
from .support import TOKENIZER, WorkerFirst, process_config, server, until_ready

#: Without generation blocks (turns found by rendering apart), and a set picked by tools.
PLAIN = (
    "{% for m in messages %}<{{ m.role }}>{{ m.content if m.content is string else '' }}"
    "{% for c in m.tool_calls or [] %}[{{ c.function.name }} {{ c.function.arguments | tojson }}]"
    "{% endfor %}{{ eos_token }}\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"
)
TEMPLATES: dict[str, Any] = {
    "shipped": None,
    "plain": PLAIN,
    "set": {"default": "D:" + PLAIN, "tool_use": "T:" + CHATML_JINJA_TEMPLATE},
}
GROUP_SIZE = 2


def _tokenizer(name: str) -> Any:
    hf = AutoTokenizer.from_pretrained(TOKENIZER)
    if TEMPLATES[name] is not None:
        hf.chat_template = TEMPLATES[name]
    return hf


def _setup(hf: Any) -> dict[str, Any]:
    setup = TokenWorker.setup_for(
        hf, eos_token=hf.eos_token, group_size=GROUP_SIZE, ensure_scores_are_not_same=True
    )
    assert setup is not None
    return setup


def _own_answer(
    hf: Any, tools: Any, rollouts: list[dict[str, Any]]
) -> tuple[list[list[Any]], str | None, str]:
    """The drift, skip reason and line the environment makes in process."""
    renderer = TemplateRenderer(hf)
    encoder = TextEncoder(hf)
    scored = [
        ScoredRollout(
            r["task_id"],
            r["messages"],
            r["score"],
            chat_template_tokens(
                r["messages"],
                render=renderer,
                encode_many=encoder.encode_many,
                eos_token=hf.eos_token,
                tools=tools,
                marked=renderer.marked,
            ),
        )
        for r in rollouts
    ]
    group, drift = scored_group(scored, GROUP_SIZE)
    reason = skip_reason(group, GROUP_SIZE, True)
    line = "" if reason is not None else LineEncoder().encode(group)
    return [list(pair) for pair in drift], reason, line


def _own_record_tokens(hf: Any, line: str) -> list[str]:
    """The ``tokens`` entry of each row's record, as the environment's records writer
    makes it from the group line (the tokenizer's own ``batch_decode``)."""
    if not line:
        return []
    group = json.loads(line)
    decode = PieceDecoder(hf.batch_decode)
    return [
        json.dumps(record_tokens(ids, masks, score, decode), ensure_ascii=False)
        for ids, masks, score in zip(group["tokens"], group["masks"], group["scores"], strict=True)
    ]


async def _started(setup: dict[str, Any]) -> TokenWorker:
    worker = TokenWorker(setup)
    await worker.start()
    await until_ready(worker, 30.0)
    return worker


GROUPS = st.lists(
    st.tuples(
        st.lists(
            st.tuples(conversations(), st.sampled_from([0.0, 0.5, 1.0])), min_size=1, max_size=3
        ),
        st.sampled_from([None, TOOLS]),
    ),
    min_size=25,
    max_size=25,
)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@settings(max_examples=2, deadline=None)
@given(groups=GROUPS)
def test_the_workers_lines_are_the_environments_own(name: str, groups: list[Any]) -> None:
    hf = _tokenizer(name)

    async def run() -> None:
        worker = await _started(_setup(hf))
        assert worker.ready, worker.gone
        try:
            for number, (members, tools) in enumerate(groups):
                rollouts = [
                    {"task_id": f"t{number}-{i}", "messages": messages, "score": score}
                    for i, (messages, score) in enumerate(members)
                ]
                drift, reason, line = _own_answer(hf, tools, rollouts)
                header, made, texts = await worker.make_line(tools, rollouts, record_tokens=True)
                assert (header["drift"], header.get("skip"), made) == (drift, reason, line)
                assert texts == _own_record_tokens(hf, line)
        finally:
            await worker.aclose()

    asyncio.run(run())


async def test_a_request_it_fails_on_is_refused_and_it_goes_on() -> None:
    hf = _tokenizer("shipped")
    worker = await _started(_setup(hf))
    try:
        bad_role = [{"role": "narrator", "content": "x"}]
        with pytest.raises(TokenWorkerUnavailable, match="unknown role narrator"):
            await worker.make_line(None, [{"task_id": "a", "messages": bad_role, "score": 1.0}])
        with pytest.raises(TokenWorkerUnavailable, match="not JSON"):
            await worker.make_line(None, [{"task_id": "b", "messages": [object()], "score": 1.0}])
        good = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
        rollouts = [{"task_id": "c", "messages": good, "score": s} for s in (0.0, 1.0)]
        _, line, texts = await worker.make_line(None, rollouts)
        assert line == _own_answer(hf, None, rollouts)[2]
        assert texts == []  # not asked for
        assert worker.ready
    finally:
        await worker.aclose()
        await worker.aclose()  # idempotent
    assert not worker.ready
    with pytest.raises(TokenWorkerUnavailable, match="closed"):
        await worker.make_line(None, rollouts)


async def test_a_killed_worker_fails_what_waits_and_says_why() -> None:
    hf = _tokenizer("shipped")
    worker = await _started(_setup(hf))
    try:
        assert worker.pid is not None
        os.kill(worker.pid, signal.SIGKILL)
        for _ in range(200):  # until its end is noticed
            if worker.gone:
                break
            await asyncio.sleep(0.01)
        rollouts = [{"task_id": "a", "messages": [{"role": "user", "content": "x"}], "score": 1.0}]
        with pytest.raises(TokenWorkerUnavailable, match=r"exit status -9|ended"):
            await worker.make_line(None, rollouts)
        assert worker.gone is not None
        assert not worker.ready
    finally:
        await worker.aclose()


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="Linux scheduling policies")
async def test_the_worker_runs_batch_scheduled() -> None:
    # Its wake-ups must not preempt the event loop, the model server or the sandboxes.
    worker = await _started(_setup(_tokenizer("shipped")))
    try:
        assert worker.ready, worker.gone
        assert worker.pid is not None
        assert os.sched_getscheduler(worker.pid) == os.SCHED_BATCH
        good = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
        rollouts = [{"task_id": "c", "messages": good, "score": s} for s in (0.0, 1.0)]
        assert (await worker.make_line(None, rollouts))[1]  # and it answers as before
    finally:
        await worker.aclose()


async def test_a_bad_set_up_never_gets_ready() -> None:
    worker = await _started({"tokenizer": "not a tokenizer"})
    try:
        assert not worker.ready
        assert worker.gone is not None
        assert "did not start" in worker.gone or "ended" in worker.gone
        with pytest.raises(TokenWorkerUnavailable):
            await worker.make_line(None, [])
    finally:
        await worker.aclose()


def test_it_stands_in_only_for_a_fast_tokenizer_with_a_chat_template() -> None:
    hf = _tokenizer("shipped")

    def setup(tokenizer: Any) -> dict[str, Any] | None:
        return TokenWorker.setup_for(
            tokenizer, eos_token="x", group_size=1, ensure_scores_are_not_same=False
        )

    made = setup(hf)
    assert made is not None
    assert made["record_tokens"] is True
    # A tokenizer that cleans up tokenization spaces decodes otherwise: not in the worker.
    hf.clean_up_tokenization_spaces = True
    made = setup(hf)
    assert made is not None
    assert made["record_tokens"] is False
    hf.chat_template = None
    assert setup(hf) is None
    assert setup(object()) is None


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_worker_compiles_its_templates_before_it_is_ready(name: str) -> None:
    hf = _tokenizer(name)
    setup = _setup(hf)
    warmed = LineMaker(setup)
    assert warmed.warm_up()
    # Both templates (with tools and without) are compiled before any request.
    assert set(warmed._renderer._templates) == {True, False}
    good = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    rollouts = [{"task_id": "c", "messages": good, "score": s} for s in (0.0, 1.0)]
    for tools in (TOOLS, None):
        request = {"id": 1, "tools": tools, "rollouts": rollouts, "record_tokens": True}
        # What the sample leaves behind changes no answer.
        assert warmed.make(request) == LineMaker(setup).make(request)
    source = io.StringIO(json.dumps(setup) + "\n")
    sink = io.StringIO()
    assert serve(source, sink) == 0
    assert sink.getvalue() == "ready\n"


def test_a_template_that_refuses_the_sample_still_gets_ready() -> None:
    hf = _tokenizer("shipped")
    hf.chat_template = "{{ raise_exception('no samples here') }}"
    setup = _setup(hf)
    assert LineMaker(setup).warm_up() is False
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    request = {
        "id": 3,
        "tools": None,
        "rollouts": [{"task_id": "a", "messages": chat, "score": 1.0}],
    }
    source = io.StringIO(json.dumps(setup) + "\n" + json.dumps(request) + "\n")
    sink = io.StringIO()
    assert serve(source, sink) == 0
    ready, answer = sink.getvalue().splitlines()
    assert ready == "ready"
    assert "no samples here" in json.loads(answer.split("\t")[0])["error"]


def _worker_pids() -> list[int]:
    """This process's token worker children."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"hermes_envs.scoring.worker" in command:
            found.append(int(entry.name))
    return found


async def _process(
    tmp_path: Path, groups: int, kill_after: int | None = None, **overrides: Any
) -> list[dict[str, Any]]:
    out = tmp_path / "groups.jsonl"
    config = process_config(out, write_viewer_html=False, **overrides)

    class Killing(WorkerFirst):
        async def get_next_item(self) -> dict[str, str]:
            if kill_after is not None and self.next_index == kill_after:
                pids = _worker_pids()
                assert pids, "the token worker is not running"
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
            return await super().get_next_item()

    async with ModelServer(Policy(terminal_test_oracle)) as model:
        env = Killing(config, [server(model.base_url)])
        env.n_groups_to_process = groups
        await env.process_manager()
    assert not _worker_pids()  # closed with the run
    return [json.loads(line) for line in out.read_text().splitlines()]


def _same(groups: list[dict[str, Any]]) -> list[str]:
    keep = ("tokens", "masks", "scores")
    return sorted(json.dumps({k: group[k] for k in keep}) for group in groups)


async def test_process_lines_come_from_the_worker_and_equal_the_threads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="hermes_envs")
    with_worker = await _process(tmp_path / "worker", 24)
    assert any(
        "token worker" in r.getMessage() and "ready" in r.getMessage() for r in caplog.records
    )
    without = await _process(tmp_path / "thread", 24, token_worker=False)
    assert len(with_worker) == len(without) == 24
    assert _same(with_worker) == _same(without)


async def test_a_worker_killed_mid_run_loses_no_group(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="hermes_envs")
    groups = await _process(tmp_path, 30, kill_after=20)
    assert len(groups) == 30
    assert all(group["scores"] == [1.0, 1.0] for group in groups)
    assert any("from now on" in record.getMessage() for record in caplog.records)


async def test_the_worker_starts_before_setup(tmp_path: Path) -> None:
    # Its start-up overlaps the checks and setup, not the first rollouts.
    running_at_setup: list[bool] = []

    class Recording(TerminalTestEnv):
        async def setup(self) -> None:
            running_at_setup.append(self.token_worker is not None)
            await super().setup()

    out = tmp_path / "groups.jsonl"
    async with ModelServer(Policy(terminal_test_oracle)) as model:
        env = Recording(process_config(out, write_viewer_html=False), [server(model.base_url)])
        env.n_groups_to_process = 1
        await env.process_manager()
    assert running_at_setup == [True]
    assert len(out.read_text().splitlines()) == 1
