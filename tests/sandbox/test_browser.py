"""Browser tools: Debian's Chromium driven headless by Playwright, pages served on 127.0.0.1."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import SandboxPool
from hermes_sandbox._context import ToolContext
from hermes_sandbox.tools import (
    BrowserPageError,
    BrowserUnavailableError,
    ChromiumBrowser,
    Invocation,
    browser_tools,
    browser_unavailable,
)

REASON = browser_unavailable()
needs_chromium = pytest.mark.skipif(REASON is not None, reason=f"browser tests: {REASON}")

PAGES = {
    "/a.html": """<html><head><title>Page A</title></head><body>
<h1>Hello from A</h1>
<p>Static text.</p>
<a href="/b.html">to b</a>
<button>Press</button>
<p id="dyn">placeholder</p>
<script>document.getElementById('dyn').textContent = 'made by javascript';</script>
</body></html>""",
    "/b.html": "<html><head><title>Page B</title></head><body><h2>Bee</h2></body></html>",
    "/set-cookie.html": "<html><body><script>document.cookie = 'who=a; path=/';</script>"
    "<p>set</p></body></html>",
    "/show-cookie.html": "<html><body><p id='c'></p><script>"
    "document.getElementById('c').textContent = 'cookie=[' + document.cookie + ']';"
    "</script></body></html>",
    "/long.html": "<html><body>" + "<p>word</p>" * 5000 + "</body></html>",
}


@pytest.fixture(scope="module")
def routes() -> dict[str, dict[str, Any]]:
    """What the loopback ``server`` (tests/sandbox/conftest.py) answers."""
    answers: dict[str, dict[str, Any]] = {path: {"body": page} for path, page in PAGES.items()}
    answers["*"] = {"status": 404, "body": "<html><body>not here</body></html>"}
    return answers


@pytest.fixture(scope="module")
def browser() -> Iterator[ChromiumBrowser]:
    # The browser runs on its own loop thread, so one instance serves every test's loop.
    made = ChromiumBrowser(allow_private=True, timeout=15)
    try:
        yield made
    finally:
        asyncio.run(made.close())


def chromium_pids() -> set[int]:
    pids = set()
    for entry in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            cmdline = entry.read_bytes()
        except OSError:
            continue
        if b"chromium" in cmdline.split(b"\0")[0]:
            pids.add(int(entry.parent.name))
    return pids


def browser_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "hermes-browser")


# --- without Chromium --------------------------------------------------------------------


async def test_missing_chromium_is_a_clear_error() -> None:
    browser = ChromiumBrowser(executable_path="/nonexistent/chromium", allow_private=True)
    with pytest.raises(BrowserUnavailableError, match=r"apt-get install chromium") as caught:
        await browser.navigate("t", "http://127.0.0.1:9/")
    assert caught.value.kind == "not_installed"
    await browser.close()
    assert "Chromium is not at /nonexistent/chromium" in str(
        browser_unavailable("/nonexistent/chromium")
    )


async def test_host_addresses_are_refused_before_launching() -> None:
    browser = ChromiumBrowser()  # allow_private is off by default
    with pytest.raises(ValueError, match="refusing to open"):
        await browser.navigate("t", "http://127.0.0.1:1/")
    with pytest.raises(ValueError, match="only http and https"):
        await browser.navigate("t", "file:///etc/passwd")
    assert browser.task_ids == []
    await browser.close()
    with pytest.raises(BrowserUnavailableError, match="was closed") as caught:
        await browser.navigate("t", "http://example.com/")
    assert caught.value.kind == "closed"


# --- with Chromium --------------------------------------------------------------------------


@needs_chromium
async def test_navigate_and_snapshot(browser: ChromiumBrowser, server: str) -> None:
    opened = await browser.navigate("nav", f"{server}/a.html")
    assert opened == {"url": f"{server}/a.html", "title": "Page A", "status": 200}
    shot = await browser.snapshot("nav")
    assert shot["url"] == f"{server}/a.html"
    assert shot["title"] == "Page A"
    text = shot["snapshot"]
    assert 'heading "Hello from A"' in text
    assert 'link "to b"' in text
    assert "/b.html" in text
    assert 'button "Press"' in text
    assert "made by javascript" in text  # the page's script ran
    assert "placeholder" not in text
    missing = await browser.navigate("nav", f"{server}/nowhere")
    assert missing["status"] == 404
    await browser.close_task("nav")
    assert "nav" not in browser.task_ids


@needs_chromium
async def test_one_page_per_task_and_no_shared_cookies(
    browser: ChromiumBrowser, server: str
) -> None:
    await asyncio.gather(
        browser.navigate("iso-a", f"{server}/a.html"), browser.navigate("iso-b", f"{server}/b.html")
    )
    a, b = await asyncio.gather(browser.snapshot("iso-a"), browser.snapshot("iso-b"))
    assert "Hello from A" in a["snapshot"]
    assert "Bee" in b["snapshot"]
    await browser.navigate("iso-a", f"{server}/set-cookie.html")
    await browser.navigate("iso-a", f"{server}/show-cookie.html")
    assert "cookie=[who=a]" in (await browser.snapshot("iso-a"))["snapshot"]
    await browser.navigate("iso-b", f"{server}/show-cookie.html")
    assert "cookie=[]" in (await browser.snapshot("iso-b"))["snapshot"]
    await browser.close_task("iso-a")
    await browser.close_task("iso-b")


@needs_chromium
async def test_page_errors(browser: ChromiumBrowser, server: str) -> None:
    with pytest.raises(BrowserPageError, match="call browser_navigate first") as no_page:
        await browser.snapshot("never-opened")
    assert no_page.value.kind == "no_page"
    with pytest.raises(BrowserPageError, match=r"could not open http://127\.0\.0\.1:9/") as bad:
        await browser.navigate("err", "http://127.0.0.1:9/")
    assert bad.value.kind == "navigation"
    await browser.close_task("err")


@needs_chromium
async def test_long_snapshots_are_cut(server: str) -> None:
    async with ChromiumBrowser(allow_private=True, max_snapshot_chars=500) as small:
        await small.navigate("long", f"{server}/long.html")
        shot = await small.snapshot("long")
        assert len(shot["snapshot"]) < 600
        assert "more characters cut" in shot["snapshot"]


@needs_chromium
def test_usable_from_different_event_loops(browser: ChromiumBrowser, server: str) -> None:
    asyncio.run(browser.navigate("loops", f"{server}/b.html"))
    shot = asyncio.run(browser.snapshot("loops"))
    assert "Bee" in shot["snapshot"]
    asyncio.run(browser.close_task("loops"))


@needs_chromium
async def test_browser_tools(browser: ChromiumBrowser, server: str) -> None:
    tools = {t.name: t for t in browser_tools(browser)}
    assert {t.toolset for t in tools.values()} == {"browser"}
    opened = await tools["browser_navigate"].handler({"url": f"{server}/b.html"}, Invocation("tl"))
    assert opened["title"] == "Page B"
    shot = await tools["browser_snapshot"].handler({}, Invocation("tl"))
    assert 'heading "Bee"' in shot["snapshot"]
    with pytest.raises(ValueError, match="'url' must be a non-empty string"):
        await tools["browser_navigate"].handler({"url": ""}, Invocation("tl"))
    await browser.close_task("tl")


@needs_chromium
async def test_tool_context_browser_sync_and_async(browser: ChromiumBrowser, server: str) -> None:
    async with SandboxPool("local") as pool:
        ctx = ToolContext("ctx-task", pool, browser=browser)
        # Sync, from inside this running loop (the reference's reward style).
        assert ctx.browser_navigate(f"{server}/a.html")["title"] == "Page A"
        assert "Hello from A" in ctx.browser_snapshot()["snapshot"]
        # Sync, from a worker thread; and awaitable.
        await asyncio.to_thread(ctx.browser_navigate, f"{server}/b.html")
        assert "Bee" in (await ctx.abrowser_snapshot())["snapshot"]
        refused = await ctx.abrowser_navigate("http://127.0.0.1:9/")
        assert "could not open" in refused["error"]
        ctx.cleanup()
        assert "ctx-task" not in browser.task_ids
        other = ToolContext("ctx-other", pool, browser=browser)
        assert "call browser_navigate first" in (await other.abrowser_snapshot())["error"]
        await other.acleanup()


@needs_chromium
async def test_close_leaves_no_chromium_behind(server: str) -> None:
    before = chromium_pids()
    threads_before = browser_threads()
    browser = ChromiumBrowser(allow_private=True)
    await browser.navigate("x", f"{server}/a.html")
    started = chromium_pids() - before
    assert started, "Chromium processes should be running"
    await browser.close()
    await browser.close()  # idempotent
    for _ in range(100):
        if not chromium_pids() & started:
            break
        await asyncio.sleep(0.1)
    assert not (chromium_pids() & started)
    assert browser_threads() == threads_before
