"""``hermes-envs view``: a ``process`` or ``evaluate`` output as one self-contained page,
checked in Chromium on real runs."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_envs import TerminalTestEnv, terminal_test_oracle
from hermes_envs._record_files import EVAL_RECORDS, records_path
from hermes_envs.envs.terminal_test import TASKS, task_prompt
from hermes_envs.view import (
    RunServer,
    fill_template,
    find_output,
    load_output,
    page_template,
    render_page,
)
from hermes_envs.view._load import TEXT_CAP
from hermes_loop.server import Call, ModelRequest, ModelServerThread, Policy, Turn
from hermes_sandbox.tools import CHROMIUM_FLAGS, browser_unavailable

from .support import child_env, env_config, process_config, server

BROWSER = browser_unavailable()
README = Path(__file__).parents[2] / "packages" / "hermes-envs" / "README.md"
#: Where the browser test leaves its screenshot (kept as a CI artifact).
SHOTS = Path(os.environ.get("HERMES_TEST_ARTIFACTS", Path(__file__).parents[2] / ".test-artifacts"))


def policy(request: ModelRequest) -> Turn:
    """The oracle, except: the greeting task gets the wrong text after saying so (score
    0), with a reasoning; the todo task's model call fails (an infrastructure failure)."""
    text = str([m for m in request.messages if m.get("role") == "user"][-1]["content"])
    answered = any(m.get("role") == "tool" for m in request.messages)
    if text == task_prompt(TASKS[0]):
        if answered:
            return Turn("Done.")
        command = "echo 'writing the wrong greeting'; printf goodbye > greeting.txt"
        return Turn(
            tool_calls=[Call("terminal", {"command": command})],
            reasoning="goodbye sounds friendlier",
        )
    if text == task_prompt(TASKS[2]):
        raise RuntimeError("the scripted model breaks here")
    return terminal_test_oracle(request)


def view(*args: str) -> subprocess.CompletedProcess[str]:
    """``hermes-envs view ARGS`` in a child process."""
    return subprocess.run(
        [sys.executable, "-m", "hermes_envs.launcher", "view", *args],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def embedded(page: str) -> Any:
    found = re.search(r'<script id="run-data" type="application/json">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_bad_input_is_answered_in_one_line(tmp_path: Path) -> None:
    done = view(str(tmp_path / "missing.jsonl"))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.strip().startswith("error: ")
    assert "is not a file: give the group file" in done.stderr
    done = view(str(tmp_path))
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert f"holds no {EVAL_RECORDS}" in done.stderr
    (tmp_path / "groups.jsonl").write_text("{}\n")
    done = view(str(tmp_path / "groups.jsonl"))
    assert "has no records beside it (groups.records.jsonl)" in done.stderr
    done = view(str(tmp_path), "--port", "http")
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "error: --port: 'http' is not a port number (0-65535)",
    )
    done = view(str(tmp_path), "--colour")
    assert done.returncode == 2
    assert "unknown option '--colour'" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "hermes_envs.launcher", "show"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "error: unknown command 'show'; choose run, view",
    )


def test_only_the_last_record_of_each_written_group_is_shown(tmp_path: Path) -> None:
    groups = tmp_path / "g.jsonl"
    groups.write_text('{"scores": [1.0]}\n{"scores": [0.0]}\n{"scores": [0.5]')  # torn third
    hostile = "</script><script>window.owned = 1</script><!-- "

    def record(group: int, score: float, error: str | None = None) -> str:
        rollout = {"status": "scored", "score": score, "error": error, "messages": []}
        return json.dumps({"group": group, "item": {"id": f"i{group}"}, "rollouts": [rollout]})

    records_path(groups).write_text(
        "\n".join([record(0, 1.0), record(1, 0.7), record(1, 0.0, hostile), record(2, 0.5)])
        + '\n{"group": 3, "ro'
    )
    output = find_output(records_path(groups))  # the records file names its output too
    assert output.groups == groups
    assert output.page == tmp_path / "g.view.html"
    data = load_output(output)
    assert [(r["group"], r["score"]) for r in data["rollouts"]] == [(0, 1.0), (1, 0.0)]
    assert data["summary"]["groups"] == 2
    assert data["summary"]["mean_score"] == 0.5
    page = render_page(data)
    assert page.count("</script>") == 2  # the data block's and the program's, nothing more
    assert embedded(page)["rollouts"][1]["error"] == hostile


def test_placeholders_are_filled_in_one_pass() -> None:
    template = (
        "<style>/*__COMMON_CSS__*/</style>__TITLE__<script>//__COMMON_JS__\n__DATA__</script>"
    )
    page = fill_template(template, {"text": "__TITLE__ //__COMMON_JS__"}, "__DATA__ <b>")
    assert "__DATA__ &lt;b&gt;" in page  # the title as text, not replaced by the data
    assert '{"text":"__TITLE__ //__COMMON_JS__"}' in page  # the data as they are
    assert "--mono" in page  # the shared style
    assert "function toolText(" in page  # the shared script


def test_a_page_fills_the_blocks_of_the_shared_page() -> None:
    page = "<!-- a comment -->\n<!--block:style-->\n.mine{}\n<!--block:summary-->\n<p>x</p>\n"
    template = page_template(page + "<!--block:script-->\nmine();\n", "tool-x")
    where = {
        "title": "<title>tool-x · __TITLE__</title>",
        "style": "/*__COMMON_CSS__*/\n.mine{}\n</style>",
        "summary": '<div id="summary-notes" class="muted"></div>\n<p>x</p>\n  </section>',
        "script": "mine();\n</script>",
    }
    assert [name for name, text in where.items() if text not in template] == []
    assert [text for text in ("block:", "a comment") if text in template] == []
    with pytest.raises(ValueError, match=r"page\.html takes"):
        page_template(page, "tool-x")  # no script block


def test_a_large_output_fits_the_page_budget(tmp_path: Path) -> None:
    groups = tmp_path / "g.jsonl"
    groups.write_text('{"scores": [0.0]}\n' * 10)
    long = "z" * (3 * TEXT_CAP) + "THE END"
    rollout = {"status": "scored", "score": 0.0, "messages": [{"role": "tool", "content": long}]}
    records_path(groups).write_text(
        "".join(json.dumps({"group": g, "rollouts": [rollout]}) + "\n" for g in range(10))
    )
    data = load_output(find_output(groups), budget=5 * TEXT_CAP)
    rows = data["rollouts"]
    assert len(rows) == 10
    kept = [r for r in rows if not r.get("detail_cut")]
    assert 1 <= len(kept) < 10
    text = kept[0]["messages"][0]["content"]
    assert len(text) < TEXT_CAP + 100
    assert text.endswith("THE END")
    assert all("messages" not in r and r["score"] == 0.0 for r in rows[len(kept) :])
    assert f"{10 - len(kept)} more are listed with their figures only" in " ".join(data["notes"])
    assert data["summary"]["rollouts"] == 10


def test_metrics_of_an_earlier_evaluation_are_not_shown(tmp_path: Path) -> None:
    metrics = {"results": {"all": {"eval/accuracy": 0.25}}}
    (tmp_path / "metrics.json").write_text(json.dumps(metrics))
    written = (tmp_path / "metrics.json").stat().st_mtime

    def records(at: float) -> None:
        rollout = {"status": "scored", "score": 1.0, "messages": []}
        line = {"group": 0, "recorded_at": at, "rollouts": [rollout]}
        (tmp_path / EVAL_RECORDS).write_text(json.dumps(line) + "\n")

    records(written - 60)  # recorded before the metrics were written: the same evaluation
    data = load_output(find_output(tmp_path))
    assert data["summary"]["metrics"] == {"eval/accuracy": 0.25}
    records(written + 60)  # a new evaluation going on beside an old metrics.json
    data = load_output(find_output(tmp_path))
    assert "metrics" not in data["summary"]
    assert "metrics.json is older than these records" in " ".join(data["notes"])
    assert data["summary"]["mean_score"] == 1.0


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A real process run (Phase 1, group size 2) and a real evaluate run of
    TerminalTestEnv on the scripted model server playing ``policy``."""
    folder = tmp_path_factory.mktemp("runs")
    groups = folder / "groups.jsonl"
    evals = folder / "eval"

    async def both(url: str) -> None:
        config = process_config(groups, write_viewer_html=False, infra_retries=0)
        env = TerminalTestEnv(config, [server(url)])
        env.n_groups_to_process = len(TASKS) - 1  # the broken item is given up on
        await env.process_manager()
        config = env_config(data_dir_to_save_evals=str(evals), infra_retries=1)
        await TerminalTestEnv(config, [server(url)]).run_evaluate()

    with ModelServerThread(Policy(policy)) as model:
        asyncio.run(both(model.base_url))
    for out in (groups, evals):
        done = view(str(out))
        assert done.returncode == 0, done.stderr
    return {"process": groups, "evaluate": evals}


def test_the_readme_command_line_writes_the_page_beside_the_group_file(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), re.DOTALL)
    command = shlex.split(next(b for b in blocks if b.startswith("hermes-envs view")))
    assert command == ["hermes-envs", "view", "out.jsonl"]
    shutil.copy(runs["process"], tmp_path / "out.jsonl")
    shutil.copy(records_path(runs["process"]), tmp_path / "out.records.jsonl")
    script = Path(sys.executable).with_name("hermes-envs")  # the installed console script
    done = subprocess.run(
        [str(script), *command[1:]],
        cwd=tmp_path,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    page = tmp_path / "out.view.html"
    assert done.stdout.strip() == f"page: {page.resolve().as_uri()}"
    data = embedded(page.read_text())
    assert data["kind"] == "process"
    assert len(data["rollouts"]) == 2 * len(runs["process"].read_text().splitlines())
    elsewhere = tmp_path / "elsewhere.html"
    done = view(str(tmp_path / "out.jsonl"), "--out", str(elsewhere))
    assert done.returncode == 0, done.stderr
    assert embedded(elsewhere.read_text()) == data


def test_view_imports_nothing_heavy() -> None:
    probe = (
        "import sys, hermes_envs.launcher, hermes_envs.view._command\n"
        "heavy = [m for m in ('atroposlib', 'transformers', 'hermes_envs._base_env', 'openai')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_serve_answers_until_interrupted(runs: dict[str, Path]) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "hermes_envs.launcher", "view", str(runs["evaluate"]), "--serve"],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().startswith("page: file://")
        serving = child.stdout.readline().split()
        assert serving[:3] == ["serving", str(runs["evaluate"].resolve()), "at"]
        url = serving[3]
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/view.html")
        with urllib.request.urlopen(url, timeout=30) as answer:
            assert b'<script id="run-data"' in answer.read()
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=30) == 0
        assert child.stderr is not None
        assert child.stderr.read().strip() == "stopped"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.fixture
def served(runs: dict[str, Path]) -> Iterator[str]:
    with RunServer(runs["evaluate"]) as running:
        thread = threading.Thread(target=running.serve_forever, daemon=True)
        thread.start()
        try:
            yield running.url + "view.html"
        finally:
            running.shutdown()
            thread.join(timeout=10)


async def _open(browser: Any, url: str) -> tuple[Any, list[str], list[str]]:
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(url)
    return page, requests, errors


@pytest.mark.skipif(BROWSER is not None, reason=f"browser tests: {BROWSER}")
async def test_the_page_of_a_real_process_run_in_chromium(runs: dict[str, Path]) -> None:
    from playwright.async_api import async_playwright

    groups = [json.loads(line) for line in runs["process"].read_text().splitlines()]
    scores = [s for group in groups for s in group["scores"]]
    url = runs["process"].with_name("groups.view.html").resolve().as_uri()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=list(CHROMIUM_FLAGS)
        )
        try:
            page, requests, errors = await _open(browser, url)
            assert await page.get_by_test_id("summary-groups").inner_text() == str(len(groups))
            assert await page.get_by_test_id("summary-mean").inner_text() == (
                f"{sum(scores) / len(scores):.3f}"
            )
            assert await page.get_by_test_id("summary-zero").inner_text() == str(scores.count(0))
            rows = page.locator("#rollouts tbody tr")
            await page.get_by_test_id("filter-status").select_option("zero")
            assert await rows.count() == scores.count(0.0) == 2
            await rows.first.click()
            assert "greeting" in await page.get_by_test_id("detail-title").inner_text()
            outputs = page.locator("[data-testid=transcript] .tool-output")
            assert "writing the wrong greeting" in await outputs.last.inner_text()
            # The tokens: the trained ones (mask != -100) marked, as many as in the file.
            greeting = next(g for g in groups if g["scores"] == [0.0, 0.0])
            trained = sum(1 for m in greeting["masks"][0] if m != -100)
            marked = page.locator("[data-testid=tokens] .tok.trained")
            assert await marked.count() == trained
            text = "".join(await marked.all_inner_texts())
            assert "printf goodbye" in text
            assert "Create the file" not in text
            assert "score 0.000" in await page.get_by_test_id("tokens-summary").inner_text()
            reasoning = page.get_by_test_id("reasoning").first
            assert await reasoning.get_attribute("open") is None  # folded
            await reasoning.locator("summary").click()
            assert "goodbye sounds friendlier" in await reasoning.inner_text()
            await asyncio.to_thread(SHOTS.mkdir, parents=True, exist_ok=True)
            await page.screenshot(path=str(SHOTS / "envs-view.png"), full_page=True)
            # Sorting by reward puts a zero first, and back.
            await page.get_by_test_id("filter-status").select_option("")
            await page.locator("#rollouts th[data-key=score]").click()
            assert (await rows.first.get_attribute("data-rollout") or "").endswith("/0")
            assert "0.00" in await rows.first.inner_text()
            assert errors == []
            assert all(r.startswith("file://") for r in requests), requests
        finally:
            await browser.close()


@pytest.mark.skipif(BROWSER is not None, reason=f"browser tests: {BROWSER}")
@pytest.mark.parametrize("how", ["file", "served"])
async def test_the_page_of_a_real_evaluate_run_in_chromium(
    runs: dict[str, Path], served: str, how: str
) -> None:
    from playwright.async_api import async_playwright

    metrics = json.loads((runs["evaluate"] / "metrics.json").read_text())["results"]["all"]
    url = (runs["evaluate"] / "view.html").resolve().as_uri() if how == "file" else served
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=list(CHROMIUM_FLAGS)
        )
        try:
            page, requests, errors = await _open(browser, url)
            assert await page.get_by_test_id("metric-eval-accuracy").inner_text() == (
                f"{metrics['eval/accuracy']:.3f}"
            )
            assert await page.get_by_test_id("summary-mean").inner_text() == (
                f"{metrics['eval/accuracy']:.3f}"
            )
            assert await page.get_by_test_id("summary-scored").inner_text() == str(
                int(metrics["eval/scored"])
            )
            assert metrics["eval/infra_failures"] == 1.0
            # The broken item's last try, and apart the one retried before it.
            assert await page.get_by_test_id("summary-infra").inner_text() == "1"
            assert await page.get_by_test_id("summary-retried").inner_text() == "1"
            rows = page.locator("#rollouts tbody tr")
            assert await rows.count() == len(TASKS) + 1
            await page.get_by_test_id("filter-status").select_option("infra_failure")
            assert await rows.count() == 2
            await rows.first.click()
            detail = await page.get_by_test_id("detail").inner_text()
            assert "the scripted model breaks here" in detail
            await page.get_by_test_id("filter-status").select_option("")
            await page.get_by_test_id("filter-text").fill("greeting")
            assert await rows.count() == 1
            await rows.first.click()
            outputs = page.locator("[data-testid=transcript] .tool-output")
            assert "writing the wrong greeting" in await outputs.last.inner_text()
            assert errors == []
            scheme = "file://" if how == "file" else served.rsplit("/", 1)[0]
            assert all(r.startswith(scheme) for r in requests), requests
        finally:
            await browser.close()
