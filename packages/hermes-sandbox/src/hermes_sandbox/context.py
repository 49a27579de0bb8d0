"""``ToolContext``: reward code's access to the sandbox, web and browser a rollout used.

Every method exists twice: a plain (synchronous) one, as reward functions are usually
written, and an awaitable twin prefixed with ``a`` (``aterminal``, ``aread_file``, ...)
for reward code that runs many rollouts concurrently on one event loop.

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
import inspect
import itertools
import threading
import weakref
from collections.abc import Coroutine, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar, cast

from hermes_sandbox.base import Sandbox
from hermes_sandbox.errors import (
    BrowserPageError,
    BrowserUnavailableError,
    SandboxClosedError,
    SandboxError,
    ToolContextError,
)
from hermes_sandbox.pool import SandboxPool
from hermes_sandbox.teardown import finish
from hermes_sandbox.tools import sandbox_tools
from hermes_sandbox.tools.browser import ChromiumBrowser
from hermes_sandbox.tools.files import read_lines, resolve_path, search_files
from hermes_sandbox.tools.loopthread import LoopThread, try_run_on_loop
from hermes_sandbox.tools.spec import Invocation
from hermes_sandbox.tools.web import DirectWebProvider, WebProvider, extract_web, search_web

__all__ = ["CallableTool", "ToolContext", "bind_sandbox_pool", "current_sandbox_pool"]

_POOL: ContextVar[SandboxPool | None] = ContextVar("hermes_sandbox_pool", default=None)


@contextmanager
def bind_sandbox_pool(pool: SandboxPool) -> Iterator[SandboxPool]:
    """Make ``pool`` the one ``ToolContext(task_id)`` (no pool given) looks up, in this
    context and the tasks started inside it, until the block ends. A running environment
    binds its pool so that reward and evaluate code written as the reference framework's
    (``ToolContext(task_id)``) reaches that rollout's sandbox."""
    token = _POOL.set(pool)
    try:
        yield pool
    finally:
        _POOL.reset(token)


def current_sandbox_pool() -> SandboxPool | None:
    """The pool bound with ``bind_sandbox_pool`` in this context, or ``None``."""
    return _POOL.get()


T = TypeVar("T")


class CallableTool(Protocol):
    """Any tool ``call_tool`` can run: a name and ``handler(arguments, invocation)``
    (sync or async), e.g. a ``SandboxTool`` or an agent loop's tool."""

    @property
    def name(self) -> str:
        """The tool's name."""
        ...

    @property
    def handler(self) -> Any:
        """``handler(arguments, invocation)``."""
        ...


class _OwnSandbox:
    """The ``SandboxSource`` ``call_tool`` gives the tools: the context's own sandbox."""

    def __init__(self, context: ToolContext) -> None:
        self._context = weakref.ref(context)

    async def get(self, task_id: str) -> Sandbox:
        context = self._context()
        if context is None:
            raise ToolContextError(
                "the ToolContext these tools belong to is gone", kind="cleaned_up"
            )
        return await context.get_sandbox()


def _error(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


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
            pool = _POOL.get()
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
        self._home = loop
        if self._home is None:
            try:
                self._home = asyncio.get_running_loop()
            except RuntimeError:
                self._home = None
        self._home_grace = 2.0
        self._runner: LoopThread | None = None
        self._runner_lock = threading.Lock()
        self._closed = False

    # plumbing ---------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise ToolContextError(
                f"the ToolContext of task {self.task_id!r} was cleaned up", kind="cleaned_up"
            )

    def _get_runner(self) -> LoopThread:
        with self._runner_lock:
            if self._runner is None:
                runner = LoopThread(f"hermes-toolcontext-{self.task_id}")
                weakref.finalize(self, runner.stop)
                self._runner = runner
            return self._runner

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            self._check_open()
        return self._run_blocking(coro)

    def _run_blocking(self, coro: Coroutine[Any, Any, T]) -> T:
        # On the home loop when it runs in another thread and takes the call (backends
        # whose connections belong to that loop keep working); otherwise, or if the home
        # loop does not pick the call up promptly, on the private loop.
        runner = self._runner
        if runner is not None and runner.in_loop_thread():
            coro.close()
            raise ToolContextError(
                "a blocking ToolContext method was called from code the context itself runs "
                "(e.g. a tool handler under call_tool); await the async twin instead",
                kind="reentrant",
            )
        home = self._home
        if home is not None and home.is_running() and not home.is_closed():
            try:
                current: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
            except RuntimeError:
                current = None
            if current is not home:
                ran, value = try_run_on_loop(home, coro, start_within=self._home_grace)
                if ran:
                    return cast(T, value)
            # The home loop runs but cannot take the call, so the operation runs away from
            # the loop the sandbox was made on. A RuntimeError that is not one of ours is
            # then the sandbox (or its SDK) refusing a foreign loop, whatever its wording
            # (asyncio's "attached to a different loop", an SDK's own check, ...).
            try:
                return self._get_runner().run(coro)
            except SandboxError:
                raise
            except RuntimeError as exc:
                raise ToolContextError(
                    f"task {self.task_id!r}: this sandbox belongs to the event loop the rollout "
                    "ran on, and a blocking ToolContext call cannot reach it while that loop is "
                    "blocked (the call was made on its thread, or it waits for the caller); "
                    "from async code use the awaitable twins (await ctx.aterminal(...), "
                    f"await ctx.acleanup(), ...). The sandbox said: {exc}",
                    kind="loop_blocked",
                ) from exc
        return self._get_runner().run(coro)

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

    def terminal(self, command: str, timeout: float | None = None) -> dict[str, Any]:
        """Synchronous ``aterminal``."""
        return self._sync(self.aterminal(command, timeout))

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
            return {"content": None, "path": target, "error": _error(exc)}
        return {
            "content": data.decode("utf-8", errors="replace"),
            "path": target,
            "size": len(data),
        }

    def read_file(self, path: str) -> dict[str, Any]:
        """Synchronous ``aread_file``."""
        return self._sync(self.aread_file(path))

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
            return {"content": None, "path": resolve_path(sandbox, path), "error": _error(exc)}

    def read_lines(self, path: str, offset: int = 1, limit: int = 500) -> dict[str, Any]:
        """Synchronous ``aread_lines``."""
        return self._sync(self.aread_lines(path, offset, limit))

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
            return {"path": target, "error": _error(exc)}
        return {"path": target, "bytes_written": len(data)}

    def write_file(self, path: str, content: str | bytes) -> dict[str, Any]:
        """Synchronous ``awrite_file``."""
        return self._sync(self.awrite_file(path, content))

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
            return {"matches": [], "count": 0, "error": _error(exc)}
        return {
            "matches": [m.to_dict() for m in found.matches],
            "count": len(found.matches),
            "truncated": found.truncated,
        }

    def search(self, query: str, path: str = ".", **options: Any) -> dict[str, Any]:
        """Synchronous ``asearch`` (same keyword options)."""
        return self._sync(self.asearch(query, path, **options))

    # transfers --------------------------------------------------------------------------
    async def _transfer(
        self, action: str, source: str | Path, target: str | Path
    ) -> dict[str, Any]:
        sandbox = await self.get_sandbox()
        try:
            await getattr(sandbox, action)(source, target)
        except OSError as exc:
            return {"ok": False, "error": _error(exc)}
        return {"ok": True}

    async def aupload_file(self, local: str | Path, remote: str) -> dict[str, Any]:
        """Copy a host file into the sandbox: ``{"ok": True}`` or ``{"ok": False, "error"}``.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        return await self._transfer("upload_file", local, remote)

    def upload_file(self, local: str | Path, remote: str) -> dict[str, Any]:
        """Synchronous ``aupload_file``."""
        return self._sync(self.aupload_file(local, remote))

    async def aupload_dir(self, local: str | Path, remote: str) -> dict[str, Any]:
        """Copy a host directory tree into ``remote``: ``{"ok": True}`` or ``{"ok": False,
        "error"}``.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        return await self._transfer("upload_dir", local, remote)

    def upload_dir(self, local: str | Path, remote: str) -> dict[str, Any]:
        """Synchronous ``aupload_dir``."""
        return self._sync(self.aupload_dir(local, remote))

    async def adownload_file(self, remote: str, local: str | Path) -> dict[str, Any]:
        """Copy a sandbox file to the host: ``{"ok": True}`` or ``{"ok": False, "error"}``.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        return await self._transfer("download_file", remote, local)

    def download_file(self, remote: str, local: str | Path) -> dict[str, Any]:
        """Synchronous ``adownload_file``."""
        return self._sync(self.adownload_file(remote, local))

    async def adownload_dir(self, remote: str, local: str | Path) -> dict[str, Any]:
        """Copy a sandbox directory tree into the host directory ``local``:
        ``{"ok": True}`` or ``{"ok": False, "error"}``.

        Raises:
            SandboxError: if the sandbox is closed or died.
        """
        return await self._transfer("download_dir", remote, local)

    def download_dir(self, remote: str, local: str | Path) -> dict[str, Any]:
        """Synchronous ``adownload_dir``."""
        return self._sync(self.adownload_dir(remote, local))

    # web --------------------------------------------------------------------------------
    async def aweb_search(self, query: str, max_results: int = 5) -> dict[str, Any]:
        """``{"results": [{"title", "url", "snippet"}, ...]}``.

        Raises:
            WebProviderError: without a search provider, or if it fails.
        """
        self._check_open()
        return await search_web(self.web, query, max_results)

    def web_search(self, query: str, max_results: int = 5) -> dict[str, Any]:
        """Synchronous ``aweb_search``."""
        return self._sync(self.aweb_search(query, max_results))

    async def aweb_extract(self, urls: Sequence[str] | str) -> dict[str, Any]:
        """``{"results": [{"url", "title", "content"} | {"url", "error"}, ...]}``.

        Raises:
            ValueError: for an empty or too long URL list.
            WebProviderError: if the provider fails as a whole.
        """
        self._check_open()
        return await extract_web(self.web, urls)

    def web_extract(self, urls: Sequence[str] | str) -> dict[str, Any]:
        """Synchronous ``aweb_extract``."""
        return self._sync(self.aweb_extract(urls))

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
            return {"url": url, "error": _error(exc)}

    def browser_navigate(self, url: str) -> dict[str, Any]:
        """Synchronous ``abrowser_navigate``."""
        return self._sync(self.abrowser_navigate(url))

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
            return {"error": _error(exc)}

    def browser_snapshot(self) -> dict[str, Any]:
        """Synchronous ``abrowser_snapshot``."""
        return self._sync(self.abrowser_snapshot())

    # any tool ---------------------------------------------------------------------------
    def _tool_table(self) -> dict[str, CallableTool]:
        if self._tools is None:
            table: dict[str, CallableTool] = {
                tool.name: tool
                for tool in sandbox_tools(_OwnSandbox(self), web=self.web, browser=self.browser)
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
        handler = tool.handler
        try:
            if inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
                getattr(handler, "__call__", None)  # noqa: B004 - async callable objects
            ):
                value = await handler(dict(args or {}), invocation)
            else:
                value = await asyncio.to_thread(handler, dict(args or {}), invocation)
                if inspect.isawaitable(value):
                    value = await value
        except BrowserPageError as exc:  # the page's problem, reported like any tool refusal
            return {"error": f"{type(exc).__name__}: {_error(exc)}"}
        except ToolContextError as exc:
            if exc.kind != "reentrant":
                raise
            # The tool called a blocking method of this context: a bug of that tool,
            # reported as its answer (as any other exception of a tool is).
            return {"error": f"{type(exc).__name__}: {_error(exc)}"}
        except SandboxError:  # infrastructure: a dead sandbox, no provider, no browser
            raise
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {_error(exc)}"}
        return value

    def call_tool(self, name: str, args: dict[str, Any] | None = None) -> Any:
        """Synchronous ``acall_tool``."""
        return self._sync(self.acall_tool(name, args))

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
            with self._runner_lock:
                runner, self._runner = self._runner, None
            if runner is not None:
                await asyncio.to_thread(runner.stop)

    def cleanup(self) -> None:
        """Synchronous ``acleanup``. From async code prefer ``await ctx.acleanup()``: a
        sandbox tied to its event loop cannot be closed by a blocking call made on that
        loop's own thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._run_blocking(self._release())
        finally:
            with self._runner_lock:
                runner, self._runner = self._runner, None
            if runner is not None:
                runner.stop()

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
