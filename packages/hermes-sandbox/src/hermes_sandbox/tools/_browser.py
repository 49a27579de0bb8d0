"""The ``browser`` toolset: ``browser_navigate`` and ``browser_snapshot``.

``ChromiumBrowser`` drives Debian's Chromium (``apt-get install chromium``) headless
through Playwright's async API; Playwright's own browser downloads are not used. One
browser process serves every task; each task gets its own browser context with one
page, so cookies and history never cross between rollouts.

Playwright objects belong to the event loop that created them, so the browser lives on a
private loop in a helper thread and every public method hops onto it: the same browser
can be used from the agent loop, from reward code on another loop, and from
``ToolContext``'s synchronous methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

from hermes_sandbox._blocking import LoopThread
from hermes_sandbox._errors import BrowserPageError, BrowserUnavailableError
from hermes_sandbox._teardown import finish
from hermes_sandbox.tools._spec import InvocationLike, SandboxTool
from hermes_sandbox.tools.web import check_url, html_to_text

__all__ = [
    "CHROMIUM_FLAGS",
    "DEFAULT_CHROMIUM",
    "BrowserPageError",
    "BrowserUnavailableError",
    "ChromiumBrowser",
    "browser_tools",
    "browser_unavailable",
]

DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
_INSTALL_HINT = "install it with `apt-get install chromium` (Debian) or pass executable_path=..."


def browser_unavailable(executable_path: str = DEFAULT_CHROMIUM) -> str | None:
    """``None`` if Playwright is importable and Chromium is at ``executable_path``, else
    the reason the browser cannot run (with what to install)."""
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: pip install 'hermes-sandbox[browser]'"
    if not (os.path.isfile(executable_path) and os.access(executable_path, os.X_OK)):
        return f"Chromium is not at {executable_path}: {_INSTALL_HINT}"
    return None


class ChromiumBrowser:
    """A headless Chromium shared by many tasks, one page per task.

    Started on first use; ``await close()`` (or ``async with``) stops it. ``close_task``
    drops one task's page and context.

    Args:
        executable_path: the Chromium binary (Debian: ``/usr/bin/chromium``).
        args: command-line flags for Chromium.
        allow_private: allow navigating to loopback/private/link-local hosts (off by
            default: the browser runs on the host, next to services a model should not
            reach).
        timeout: seconds for a navigation or a snapshot.
        max_snapshot_chars: most characters of a snapshot (the rest is cut, marked).
    """

    def __init__(
        self,
        *,
        executable_path: str = DEFAULT_CHROMIUM,
        args: Sequence[str] = CHROMIUM_FLAGS,
        allow_private: bool = False,
        timeout: float = 30.0,
        max_snapshot_chars: int = 20_000,
    ) -> None:
        self.executable_path = executable_path
        self.args = tuple(args)
        self.allow_private = allow_private
        self.timeout = timeout
        self.max_snapshot_chars = max_snapshot_chars
        self._thread: LoopThread | None = None
        self._thread_lock = threading.Lock()
        self._closed = False
        # Touched only on the private loop:
        self._playwright: Any = None
        self._browser: Any = None
        self._pages: dict[str, tuple[Any, Any]] = {}
        self._launch_lock = asyncio.Lock()
        self._page_lock = asyncio.Lock()

    # plumbing ---------------------------------------------------------------------------
    def _runner(self) -> LoopThread:
        with self._thread_lock:
            if self._closed:
                raise BrowserUnavailableError(
                    "this ChromiumBrowser was closed; make a new one", kind="closed"
                )
            if self._thread is None:
                self._thread = LoopThread("hermes-browser")
            return self._thread

    @property
    def task_ids(self) -> list[str]:
        """Tasks that have a page open."""
        return list(self._pages)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await finish(self.close())

    # public API -------------------------------------------------------------------------
    async def navigate(self, task_id: str, url: str) -> dict[str, Any]:
        """Open ``url`` in the task's page; ``{"url", "title", "status"}``.

        Raises:
            ValueError: for a URL that is not http(s) or points at a refused host.
            BrowserPageError: if the page could not be loaded.
            BrowserUnavailableError: if Chromium or Playwright is missing.
        """
        return await self._runner().submit(self._navigate(task_id, url))

    async def snapshot(self, task_id: str) -> dict[str, Any]:
        """The task's page as text: ``{"url", "title", "snapshot"}``, where ``snapshot`` is
        the page's accessibility tree (roles, names, text, link targets) in YAML-like lines.

        Raises:
            BrowserPageError: if the task has no page yet or it cannot be read.
            BrowserUnavailableError: if the browser is closed or missing.
        """
        return await self._runner().submit(self._snapshot(task_id))

    async def close_task(self, task_id: str) -> None:
        """Close the task's page and browser context (no error if it has none)."""
        with self._thread_lock:
            thread = self._thread
        if thread is None or thread.stopped or task_id not in self._pages:
            return
        await thread.submit(self._close_task(task_id))

    async def close(self) -> None:
        """Close every page, the browser and Playwright, and stop the helper thread
        (idempotent)."""
        with self._thread_lock:
            if self._closed:
                return
            self._closed = True
            thread, self._thread = self._thread, None
        if thread is None:
            return
        try:
            await thread.submit(self._shutdown())
        finally:
            await asyncio.to_thread(thread.stop)

    # on the private loop ----------------------------------------------------------------
    async def _ensure_browser(self) -> Any:
        async with self._launch_lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            if self._browser is not None:  # it crashed: start over
                self._pages.clear()
                await self._stop_playwright()
            reason = browser_unavailable(self.executable_path)
            if reason is not None:
                raise BrowserUnavailableError(reason, kind="not_installed")
            from playwright.async_api import async_playwright

            playwright = await async_playwright().start()
            try:
                self._browser = await playwright.chromium.launch(
                    executable_path=self.executable_path,
                    args=list(self.args),
                    headless=True,
                    timeout=self.timeout * 1000,
                )
            except Exception as exc:
                await playwright.stop()
                raise BrowserUnavailableError(
                    f"could not start Chromium at {self.executable_path}: {_first_line(exc)}",
                    kind="launch_failed",
                ) from exc
            self._playwright = playwright
            return self._browser

    async def _page(self, task_id: str, *, create: bool) -> Any:
        existing = self._pages.get(task_id)
        if existing is not None and not existing[1].is_closed():
            return existing[1]
        if not create:
            return None
        async with self._page_lock:
            existing = self._pages.get(task_id)
            if existing is not None and not existing[1].is_closed():
                return existing[1]
            if existing is not None:
                await self._close_task(task_id)
            browser = await self._ensure_browser()
            context = await browser.new_context()
            page = await context.new_page()
            page.set_default_timeout(self.timeout * 1000)
            self._pages[task_id] = (context, page)
            return page

    async def _navigate(self, task_id: str, url: str) -> dict[str, Any]:
        checked = await asyncio.to_thread(check_url, url, allow_private=self.allow_private)
        page = await self._page(task_id, create=True)
        try:
            response = await page.goto(checked, wait_until="load", timeout=self.timeout * 1000)
        except Exception as exc:
            if type(exc).__module__.startswith("playwright"):
                raise BrowserPageError(
                    f"could not open {checked}: {_first_line(exc)}", kind="navigation"
                ) from exc
            raise
        return {
            "url": page.url,
            "title": await page.title(),
            "status": response.status if response is not None else None,
        }

    async def _snapshot(self, task_id: str) -> dict[str, Any]:
        page = await self._page(task_id, create=False)
        if page is None or page.url == "about:blank":
            raise BrowserPageError(
                "no page is open for this task; call browser_navigate first", kind="no_page"
            )
        try:
            text = await page.locator("body").aria_snapshot(timeout=self.timeout * 1000)
        except Exception as exc:
            if not type(exc).__module__.startswith("playwright"):
                raise
            try:  # e.g. a page without <body>: fall back to its HTML as text
                text = html_to_text(await page.content(), page.url)[1]
            except Exception as inner:
                raise BrowserPageError(
                    f"could not read the page {page.url}: {_first_line(inner)}",
                    kind="snapshot",
                ) from inner
        if len(text) > self.max_snapshot_chars:
            cut = len(text) - self.max_snapshot_chars
            text = text[: self.max_snapshot_chars] + f"\n[... {cut} more characters cut ...]"
        return {"url": page.url, "title": await page.title(), "snapshot": text}

    async def _close_task(self, task_id: str) -> None:
        entry = self._pages.pop(task_id, None)
        if entry is not None:
            try:
                await entry[0].close()
            except Exception:  # the browser may already be gone
                return

    async def _shutdown(self) -> None:
        for task_id in list(self._pages):
            await self._close_task(task_id)
        await self._stop_playwright()

    async def _stop_playwright(self) -> None:
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        if browser is not None:
            with contextlib.suppress(Exception):  # already dead
                await browser.close()
        if playwright is not None:
            with contextlib.suppress(Exception):  # already dead
                await playwright.stop()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- tools -----------------------------------------------------------------------------

_NAVIGATE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"url": {"type": "string", "description": "The http(s) URL to open."}},
    "required": ["url"],
    "additionalProperties": False,
}

_SNAPSHOT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}


def browser_tools(browser: ChromiumBrowser) -> list[SandboxTool]:
    """The ``browser`` toolset over ``browser``: one page per task id."""

    async def browser_navigate(
        arguments: dict[str, Any], invocation: InvocationLike
    ) -> dict[str, Any]:
        url = arguments.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ValueError("'url' must be a non-empty string")
        return await browser.navigate(invocation.task_id, url)

    async def browser_snapshot(
        arguments: dict[str, Any], invocation: InvocationLike
    ) -> dict[str, Any]:
        return await browser.snapshot(invocation.task_id)

    return [
        SandboxTool(
            "browser_navigate",
            "Open a URL in your browser tab (a real headless Chromium that runs JavaScript); "
            "returns the final URL, the title and the HTTP status.",
            _NAVIGATE_PARAMETERS,
            browser_navigate,
            toolset="browser",
        ),
        SandboxTool(
            "browser_snapshot",
            "Read the page open in your browser tab: its accessibility tree as text "
            "(headings, text, links with their URLs, buttons, form fields).",
            _SNAPSHOT_PARAMETERS,
            browser_snapshot,
            toolset="browser",
        ),
    ]
