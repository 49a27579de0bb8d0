"""``ToolContext``: reward code's access to the sandbox, web and browser a rollout used.

Every method exists twice: a plain (synchronous) one, as reward functions are usually
written, and an awaitable twin prefixed with ``a`` (``aterminal``, ``aread_file``, ...)
for reward code that runs many rollouts concurrently on one event loop. Only the twins
are written here; each synchronous method is made from its twin by
``hermes_sandbox._blocking.blocking`` and runs it through the context's
``BlockingBridge``.

The synchronous methods work from a thread without an event loop and from inside a
running loop (an ``async def compute_reward`` calling ``ctx.terminal(...)``), and never
deadlock:

- called from another thread while the *home loop* (the loop the context was made on,
  normally the one the rollout's sandboxes live on) runs, they run the operation on that
  loop, so backends whose connections belong to it (e.g. an SSH connection) keep
  working; if that loop does not take the call within two seconds (it is blocked,
  perhaps waiting for this very thread), they fall back to:
- a private event loop in a helper thread owned by this context. That is always the
  case for a call made on the home loop's own thread, which the call blocks: there,
  only backends that do not tie their state to one loop work. The built-in ones do
  (an isolated local sandbox opens a connection to its helper per event loop, an ssh
  sandbox an SSH connection per event loop), except an ssh sandbox on a caller-owned
  ``connection``, which cannot be copied: there such a call raises
  ``ToolContextError(kind="loop_blocked")`` naming the awaitable twins. The
  conformance suite (``hermes_sandbox.testing``) checks this for every backend.

The helper thread starts on the first call that needs it and stops at ``cleanup()``.
A synchronous call blocks its caller for the duration of the command; reward code that
runs at high concurrency should use the awaitable twins, which run on the caller's loop
(the home loop, for a sandbox that is tied to one).

What comes back follows one rule: what the model did is reported, what broke is raised.
A failing command, a missing file, a bad pattern or a page that will not load come back
as data (``exit_code``, ``{"content": None, "error": ...}``, ``{"error": ...}``) so a
reward can score them. A sandbox that died or could not start, a missing web provider
or browser, or a context already cleaned up raise, so the rollout is recorded as an
infrastructure failure rather than scored 0.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Coroutine, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from hermes_sandbox._base import Sandbox
from hermes_sandbox._blocking import BlockingBridge, blocking
from hermes_sandbox._errors import (
    BrowserPageError,
    BrowserUnavailableError,
    SandboxClosedError,
    ToolContextError,
)
from hermes_sandbox._pool import SandboxPool, current_sandbox_pool
from hermes_sandbox._teardown import finish
from hermes_sandbox._tool_call import CallableTool, OwnSandbox, call_handler, error_text
from hermes_sandbox.tools import sandbox_tools
from hermes_sandbox.tools._browser import ChromiumBrowser
from hermes_sandbox.tools._files import read_lines, resolve_path
from hermes_sandbox.tools._search import search_files
from hermes_sandbox.tools._spec import Invocation
from hermes_sandbox.tools.web import DirectWebProvider, WebProvider, extract_web, search_web

__all__ = ["CallableTool", "ToolContext"]

T = TypeVar("T")


class ToolContext:
    """Tools over one task's sandbox (and web provider and browser) for reward code.

    Args:
        task_id: the rollout's task id; the sandbox is ``await pool.get(task_id)``.
        pool: the ``SandboxPool`` the rollout's tools used; ``None`` (the reference's
            ``ToolContext(task_id)``): the pool bound with ``bind_sandbox_pool`` where the
            context is made (a running environment binds its own).
        web: the web provider (default: a ``DirectWebProvider``, which reads pages but
            cannot search).
        browser: the browser the rollout used (its page for ``task_id`` is this task's).
        tools: extra tools for ``call_tool`` (objects with ``name`` and ``handler``); they
            take precedence over the built-in sandbox tools of the same name.
        loop: the event loop the rollout's sandboxes live on (default: the loop running
            where the context is made, if any). Synchronous calls from other threads run
            there while it runs; see the module docstring.

    Raises:
        TypeError: if ``pool`` is ``None`` and no pool is bound (``bind_sandbox_pool``).
    """

    def __init__(
        self,
        task_id: str,
        pool: SandboxPool | None = None,
        web: WebProvider | None = None,
        browser: ChromiumBrowser | None = None,
        *,
        tools: Iterable[CallableTool] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        if pool is None:
            pool = current_sandbox_pool()
            if pool is None:
                raise TypeError(
                    f"ToolContext({task_id!r}) has no pool: pass pool=, or make it inside a "
                    "running environment (which binds its pool with bind_sandbox_pool)"
                )
        self.task_id = task_id
        self.pool = pool
        self.web: WebProvider = web if web is not None else DirectWebProvider()
        self.browser = browser
        self._extra_tools = list(tools or ())
        self._tools: dict[str, CallableTool] | None = None
        self._sandbox: Sandbox | None = None
        self._calls = itertools.count(1)
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        self._bridge = BlockingBridge(f"toolcontext-{task_id}", loop, owner=f"task {task_id!r}")
        self._closed = False

    # plumbing ---------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ToolContextError(
                f"the ToolContext of task {self.task_id!r} was cleaned up", kind="cleaned_up"
            )

    def _blocking(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` for a blocking method (the bridge: ``hermes_sandbox._blocking``).

        Raises:
            ToolContextError: after ``cleanup()``; what ``BlockingBridge.run`` raises.
        """
        if self._closed:
            coro.close()
            self._check_open()
        return self._bridge.run(coro)

    async def get_sandbox(self) -> Sandbox:
        """The task's sandbox (started; created if the rollout never made one).

        The context keeps the sandbox it got first: if that one dies or is closed, later
        calls raise ``SandboxClosedError`` instead of quietly working on a fresh, empty
        sandbox (which would make the model's work look missing). The same holds when the
        rollout's sandbox was already closed before the first call here.

        Raises:
            ToolContextError: after ``cleanup()`` (a ``RuntimeError`` too).
            SandboxStartError: if it cannot be started.
            SandboxClosedError: if the sandbox was closed, expired or died.
        """
        self._check_open()
        sandbox = self._sandbox
        if sandbox is None:
            sandbox = self._sandbox = await self.pool.get(self.task_id, recreate=False)
        if sandbox.closed:
            raise SandboxClosedError(
                f"the sandbox of task {self.task_id!r} was closed (it expired, died or was "
                "released); what the rollout left in it is gone"
            )
        return sandbox

    def _need_browser(self) -> ChromiumBrowser:
        if self.browser is None:
            raise BrowserUnavailableError(
                "this ToolContext has no browser; pass browser=ChromiumBrowser() "
                "(the same one the rollout used)",
                kind="not_configured",
            )
        return self.browser

    # terminal ---------------------------------------------------------------------------
    async def aterminal(self, command: str, timeout: float | None = None) -> dict[str, Any]:
        """Run a shell command in the task's sandbox: ``{"output": str, "exit_code": int}``
        (exit code 124 when it was killed at ``timeout``; default the sandbox's
        ``terminal_timeout``).

        Raises:
            SandboxError: if the sandbox is closed, died or could not run it.
            ValueError: for a non-positive timeout.
        """
        sandbox = await self.get_sandbox()
        return (await sandbox.exec(command, timeout=timeout)).to_dict()

    terminal = blocking(aterminal)

    # files ------------------------------------------------------------------------------
    async def aread_file(self, path: str) -> dict[str, Any]:
        """The whole file as text: ``{"content": str, "path", "size"}``; for a file that
        cannot be read ``{"content": None, "path", "error"}``. Bytes that are not UTF-8
        are replaced (use ``download_file`` for binary files).

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        sandbox = await self.get_sandbox()
        target = resolve_path(sandbox, path)
        try:
            data = await sandbox.read_file(target)
        except OSError as exc:
            return {"content": None, "path": target, "error": error_text(exc)}
        return {
            "content": data.decode("utf-8", errors="replace"),
            "path": target,
            "size": len(data),
        }

    read_file = blocking(aread_file)

    async def aread_lines(self, path: str, offset: int = 1, limit: int = 500) -> dict[str, Any]:
        """What the ``read_file`` tool shows the model: numbered lines ``offset`` ..
        ``offset + limit - 1`` (``{"content", "total_lines", ...}``), or ``{"error"}``.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        sandbox = await self.get_sandbox()
        try:
            return await read_lines(sandbox, path, offset=offset, limit=limit)
        except (OSError, ValueError) as exc:
            return {"content": None, "path": resolve_path(sandbox, path), "error": error_text(exc)}

    read_lines = blocking(aread_lines)

    async def awrite_file(self, path: str, content: str | bytes) -> dict[str, Any]:
        """Create or replace a file: ``{"path", "bytes_written"}``, or ``{"path", "error"}``.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        sandbox = await self.get_sandbox()
        target = resolve_path(sandbox, path)
        data = content.encode() if isinstance(content, str) else bytes(content)
        try:
            await sandbox.write_file(target, data)
        except OSError as exc:
            return {"path": target, "error": error_text(exc)}
        return {"path": target, "bytes_written": len(data)}

    write_file = blocking(awrite_file)

    async def asearch(
        self,
        query: str,
        path: str = ".",
        *,
        fixed_strings: bool = False,
        ignore_case: bool = False,
        file_glob: str | None = None,
        max_results: int = 100,
    ) -> dict[str, Any]:
        """Lines matching ``query`` (a regex unless ``fixed_strings``) under ``path``:
        ``{"matches": [{"path", "line", "text"}], "count", "truncated"}``, or
        ``{"matches": [], "error"}`` for a missing path or a bad pattern.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        sandbox = await self.get_sandbox()
        try:
            found = await search_files(
                sandbox,
                query,
                path,
                fixed_strings=fixed_strings,
                ignore_case=ignore_case,
                file_glob=file_glob,
                max_results=max_results,
            )
        except (OSError, ValueError) as exc:
            return {"matches": [], "count": 0, "error": error_text(exc)}
        return {
            "matches": [m.to_dict() for m in found.matches],
            "count": len(found.matches),
            "truncated": found.truncated,
        }

    search = blocking(asearch)

    # transfers --------------------------------------------------------------------------
    async def _transfer(
        self, action: str, source: str | Path, target: str | Path
    ) -> dict[str, Any]:
        sandbox = await self.get_sandbox()
        try:
            await getattr(sandbox, action)(source, target)
        except OSError as exc:
            return {"ok": False, "error": error_text(exc)}
        return {"ok": True}

    async def aupload_file(self, local: str | Path, remote: str) -> dict[str, Any]:
        """Copy a host file into the sandbox: ``{"ok": True}`` or ``{"ok": False, "error"}``.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        return await self._transfer("upload_file", local, remote)

    upload_file = blocking(aupload_file)

    async def aupload_dir(self, local: str | Path, remote: str) -> dict[str, Any]:
        """Copy a host directory tree into ``remote``: ``{"ok": True}`` or ``{"ok": False,
        "error"}``.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        return await self._transfer("upload_dir", local, remote)

    upload_dir = blocking(aupload_dir)

    async def adownload_file(self, remote: str, local: str | Path) -> dict[str, Any]:
        """Copy a sandbox file to the host: ``{"ok": True}`` or ``{"ok": False, "error"}``.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        return await self._transfer("download_file", remote, local)

    download_file = blocking(adownload_file)

    async def adownload_dir(self, remote: str, local: str | Path) -> dict[str, Any]:
        """Copy a sandbox directory tree into the host directory ``local``:
        ``{"ok": True}`` or ``{"ok": False, "error"}``.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        return await self._transfer("download_dir", remote, local)

    download_dir = blocking(adownload_dir)

    # web --------------------------------------------------------------------------------
    async def aweb_search(self, query: str, max_results: int = 5) -> dict[str, Any]:
        """``{"results": [{"title", "url", "snippet"}, ...]}``.

        Raises:
            WebProviderError: without a search provider, or if it fails.
        """
        self._check_open()
        return await search_web(self.web, query, max_results)

    web_search = blocking(aweb_search)

    async def aweb_extract(self, urls: Sequence[str] | str) -> dict[str, Any]:
        """``{"results": [{"url", "title", "content"} | {"url", "error"}, ...]}``.

        Raises:
            ValueError: for an empty or too long URL list.
            WebProviderError: if the provider fails as a whole.
        """
        self._check_open()
        return await extract_web(self.web, urls)

    web_extract = blocking(aweb_extract)

    # browser ----------------------------------------------------------------------------
    async def abrowser_navigate(self, url: str) -> dict[str, Any]:
        """Open ``url`` in the task's browser page: ``{"url", "title", "status"}``, or
        ``{"url", "error"}`` if it cannot be opened.

        Raises:
            BrowserUnavailableError: if the context has no browser, or Chromium or
                Playwright is missing.
        """
        self._check_open()
        browser = self._need_browser()
        try:
            return await browser.navigate(self.task_id, url)
        except (ValueError, BrowserPageError) as exc:
            return {"url": url, "error": error_text(exc)}

    browser_navigate = blocking(abrowser_navigate)

    async def abrowser_snapshot(self) -> dict[str, Any]:
        """The task's page as text: ``{"url", "title", "snapshot"}``, or ``{"error"}``.

        Raises:
            BrowserUnavailableError: if the context has no browser, or it is closed or
                missing.
        """
        self._check_open()
        browser = self._need_browser()
        try:
            return await browser.snapshot(self.task_id)
        except BrowserPageError as exc:
            return {"error": error_text(exc)}

    browser_snapshot = blocking(abrowser_snapshot)

    # any tool ---------------------------------------------------------------------------
    def _tool_table(self) -> dict[str, CallableTool]:
        if self._tools is None:
            table: dict[str, CallableTool] = {
                tool.name: tool
                for tool in sandbox_tools(OwnSandbox(self), web=self.web, browser=self.browser)
            }
            table.update({tool.name: tool for tool in self._extra_tools})
            self._tools = table
        return self._tools

    async def acall_tool(self, name: str, args: dict[str, Any] | None = None) -> Any:
        """Call any tool by name as the model would, for this task; returns the tool's
        answer (a ``dict`` for the built-in tools), or ``{"error": ...}`` if the tool
        refused the call (bad arguments, missing file, ...).

        Raises:
            KeyError: for an unknown tool (the message lists the known ones).
            SandboxError: infrastructure failures, as for the other methods (a dead
                sandbox, ``WebProviderError``, ``BrowserUnavailableError``).
        """
        self._check_open()
        table = self._tool_table()
        tool = table.get(name)
        if tool is None:
            raise KeyError(f"unknown tool {name!r}; known tools: {', '.join(sorted(table))}")
        invocation = Invocation(self.task_id, call_id=f"tool-context-{next(self._calls)}")
        return await call_handler(tool.handler, args, invocation)

    call_tool = blocking(acall_tool)

    # cleanup ----------------------------------------------------------------------------
    async def _release(self) -> None:
        if self.browser is not None:
            await self.browser.close_task(self.task_id)
        await self.pool.release(self.task_id)

    async def acleanup(self) -> None:
        """Release the task's sandbox and browser page and stop the helper thread
        (idempotent; the context is unusable afterwards)."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._release()
        finally:
            await self._bridge.astop()

    def cleanup(self) -> None:
        """Synchronous ``acleanup``. From async code prefer ``await ctx.acleanup()``: a
        sandbox tied to its event loop cannot be closed by a blocking call made on that
        loop's own thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._bridge.run(self._release())
        finally:
            self._bridge.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await finish(self.acleanup())
