"""`hermes-bench view`: a run's folder as one self-contained page, checked in Chromium."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_benchmarks.view import (
    PAGE_NAME,
    TEXT_CAP,
    RunServer,
    load_run,
    render_page,
    write_page,
)
from hermes_sandbox.tools import CHROMIUM_FLAGS, browser_unavailable
from tests.benchmarks.docker_support import SHIPPED, docker_skip_reason, run_bench

DOCKER = docker_skip_reason()
BROWSER = browser_unavailable()
#: Where the browser test leaves its screenshot (kept as a CI artifact).
SHOTS = Path(os.environ.get("HERMES_TEST_ARTIFACTS", Path(__file__).parents[2] / ".test-artifacts"))


def line(task: str, trial: int, status: str, **fields: Any) -> dict[str, Any]:
    made: dict[str, Any] = {
        "task": task,
        "trial": trial,
        "status": status,
        "reward": {"pass": 1.0, "fail": 0.0}.get(status),
        "error_kind": None,
        "error": None,
        "attempts": [],
        "difficulty": "easy",
        "agent": "oracle",
        "timings": {"agent": 1.0, "verifier": 0.5},
        "artifacts": None,
        "extra": {},
    }
    made.update(fields)
    return made


def write_run(folder: Path, lines: list[dict[str, Any]], tail: bytes = b"") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(item) + "\n" for item in lines).encode() + tail
    (folder / "results.jsonl").write_bytes(text)
    return folder


def embedded(page: str) -> Any:
    found = re.search(r'<script id="run-data" type="application/json">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_a_folder_without_results_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"holds no results.jsonl: give the --env"):
        load_run(tmp_path)


def test_a_torn_last_line_is_skipped_and_texts_are_capped(tmp_path: Path) -> None:
    record = tmp_path / "artifacts" / "t" / "0"
    (record / "verifier").mkdir(parents=True)
    (record / "verifier" / "test-stdout.txt").write_text("x" * (TEXT_CAP * 3) + "THE END")
    (record / "files" / "app").mkdir(parents=True)
    (record / "files" / "app" / "answer.txt").write_text("42")
    write_run(
        tmp_path,
        [line("t", 0, "fail", artifacts="artifacts/t/0"), line("u", 0, "pass")],
        tail=b'{"task": "v", "tri',
    )
    data = load_run(tmp_path)
    assert [t["task"] for t in data["trials"]] == ["t", "u"]
    stdout = data["trials"][0]["record"]["verifier_stdout"]
    assert len(stdout) < TEXT_CAP + 200
    assert stdout.endswith("THE END")
    assert "characters cut" in stdout
    assert data["trials"][0]["record"]["files"] == [{"path": "files/app/answer.txt", "size": 2}]
    assert data["summary"] is None


def test_no_text_of_a_trial_can_break_out_of_the_page(tmp_path: Path) -> None:
    hostile = "</script><script>window.owned = 1</script><!-- "
    write_run(tmp_path, [line(hostile, 0, "fail", error=hostile)])
    page = render_page(load_run(tmp_path))
    assert page.count("</script>") == 2  # the data block's and the program's, nothing more
    assert embedded(page)["trials"][0]["error"] == hostile


def test_a_record_outside_the_run_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "secret"
    (outside / "verifier").mkdir(parents=True)
    (outside / "verifier" / "test-stdout.txt").write_text("do not show")
    run = write_run(tmp_path / "run", [line("t", 0, "fail", artifacts="../secret")])
    assert load_run(run)["trials"][0]["record"] == {}


def test_the_command_answers_bad_input_in_one_line(tmp_path: Path) -> None:
    done = run_bench("view", str(tmp_path / "missing"), timeout=300)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.strip().endswith("is not a folder: give a run's --env.output_dir")
    done = run_bench("view", str(tmp_path), "--port", "http", timeout=300)
    assert (done.returncode, done.stderr.strip()) == (
        2,
        "error: --port: 'http' is not a port number (0-65535)",
    )
    done = run_bench("view", str(tmp_path), "--colour", timeout=300)
    assert done.returncode == 2
    assert "unknown option '--colour'" in done.stderr
    done = run_bench("view", str(tmp_path), timeout=300)
    assert done.returncode == 1
    assert len(done.stderr.strip().splitlines()) == 1
    assert "holds no results.jsonl" in done.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder anyway")
def test_a_read_only_run_folder_names_out(tmp_path: Path) -> None:  # pragma: no cover
    run = write_run(tmp_path / "run", [line("t", 0, "pass")])
    run.chmod(0o555)
    try:
        done = run_bench("view", str(run), timeout=300)
    finally:
        run.chmod(0o755)
    assert done.returncode == 1
    assert "pass --out FILE" in done.stderr


def test_a_full_disk_leaves_no_partial_page(tmp_path: Path) -> None:
    run = write_run(tmp_path, [line("t", 0, "pass")])
    target = run / "no-such-dir" / PAGE_NAME
    with pytest.raises(FileNotFoundError):
        write_page(load_run(run), target)
    assert not list(run.rglob("*.tmp"))


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real oracle run: three shipped tasks, one of them given a wrong solution."""
    if DOCKER:
        pytest.skip(DOCKER)
    tasks = tmp_path_factory.mktemp("tasks")
    for name in ("write-greeting", "count-errors", "make-executable"):
        shutil.copytree(SHIPPED / name, tasks / name)
    wrong = tasks / "write-greeting" / "solution" / "solve.sh"
    wrong.write_text(
        "#!/bin/bash\necho 'writing the wrong greeting'\necho 'goodbye' > /app/greeting.txt\n"
    )
    test = tasks / "write-greeting" / "tests" / "test.sh"
    test.write_text(
        test.read_text().replace(
            "# Pass when", 'echo "the greeting reads: $(cat /app/greeting.txt)"\n# Pass when'
        )
    )
    out = tmp_path_factory.mktemp("run")
    done = run_bench(
        "terminalbench2",
        "evaluate",
        "--env.tasks_dir",
        str(tasks),
        "--env.output_dir",
        str(out),
        "--env.agent",
        "oracle",
        "--env.unofficial",
        "true",
        timeout=300,
    )
    assert (out / "summary.json").is_file(), done.stderr
    return out


@pytest.fixture
def served(real_run: Path) -> Iterator[str]:
    done = run_bench("view", str(real_run), timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"page: {(real_run / PAGE_NAME).resolve().as_uri()}"
    with RunServer(real_run) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server.url + PAGE_NAME
        finally:
            server.shutdown()
            thread.join(timeout=10)


@pytest.mark.skipif(BROWSER is not None, reason=f"browser tests: {BROWSER}")
@pytest.mark.parametrize("how", ["file", "served"])
async def test_the_page_of_a_real_run_in_chromium(real_run: Path, served: str, how: str) -> None:
    from playwright.async_api import async_playwright

    summary = json.loads((real_run / "summary.json").read_text())
    overall = summary["overall"]
    url = (real_run / PAGE_NAME).resolve().as_uri() if how == "file" else served
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=list(CHROMIUM_FLAGS)
        )
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            requests: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(url)
            rate = overall["passed"] / overall["scored"]
            assert await page.get_by_test_id("summary-pass-rate").inner_text() == (
                f"{100 * rate:.1f}%"
            )
            assert await page.get_by_test_id("summary-failed").inner_text() == str(
                overall["failed"]
            )
            assert await page.get_by_test_id("summary-trials").inner_text() == str(
                overall["trials"]
            )
            assert await page.get_by_test_id("summary-pass-at-1").inner_text() == (
                f"{overall['pass_at_k']['1']:.3f}"
            )
            rows = page.locator("#trials tbody tr")
            assert await rows.count() == overall["trials"]
            await page.get_by_test_id("filter-status").select_option("fail")
            assert await rows.count() == overall["failed"] == 1
            await rows.first.click()
            title = await page.get_by_test_id("detail-title").inner_text()
            assert title.startswith("write-greeting #0")
            assert "fail" in title
            await page.get_by_test_id("timings-bar").wait_for()
            outputs = page.locator("[data-testid=transcript] .tool-output")
            assert "writing the wrong greeting" in await outputs.last.inner_text()
            assert (
                "the greeting reads: goodbye"
                in await page.get_by_test_id("verifier-stdout").inner_text()
            )
            assert (
                "writing the wrong greeting"
                in await page.get_by_test_id("agent-output").inner_text()
            )
            if how == "file":
                await asyncio.to_thread(SHOTS.mkdir, parents=True, exist_ok=True)
                await page.screenshot(path=str(SHOTS / "view.png"), full_page=True)
            await page.get_by_test_id("filter-status").select_option("pass")
            assert await rows.count() == overall["passed"]
            # Sorting by reward puts the failed trial first, then back.
            await page.get_by_test_id("filter-status").select_option("")
            await page.locator("#trials th[data-key=reward]").click()
            assert await rows.first.get_attribute("data-trial") == "write-greeting/0"
            assert errors == []
            scheme = "file://" if how == "file" else served.rsplit("/", 1)[0]
            assert all(r.startswith(scheme) for r in requests), requests
        finally:
            await browser.close()
