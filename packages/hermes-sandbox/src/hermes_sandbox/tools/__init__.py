"""Sandbox tools: OpenAI-style tools whose handlers act on a task's sandbox, the web or a
browser, grouped in the toolsets ``terminal``, ``file``, ``web`` and ``browser``.

``sandbox_tools(pool, ...)`` returns ``SandboxTool`` objects, each with its ``toolset``:
hermes-loop's ``AgentLoop``, ``ToolSet`` and ``ToolRegistry`` take them as they are (they
accept any object of the ``hermes_loop.ToolLike`` shape; this package imports nothing of
hermes-loop).
"""

from __future__ import annotations

from collections.abc import Iterable

from hermes_sandbox.tools._browser import (
    CHROMIUM_FLAGS,
    DEFAULT_CHROMIUM,
    BrowserPageError,
    BrowserUnavailableError,
    ChromiumBrowser,
    browser_tools,
    browser_unavailable,
)
from hermes_sandbox.tools._file_tools import file_tools
from hermes_sandbox.tools._files import patch_file, read_lines, write_text
from hermes_sandbox.tools._search import SearchMatch, SearchResult, search_files
from hermes_sandbox.tools._spec import (
    Invocation,
    InvocationLike,
    SandboxSource,
    SandboxTool,
    ToolHandler,
)
from hermes_sandbox.tools._terminal import terminal_tools
from hermes_sandbox.tools.web import (
    DirectWebProvider,
    FirecrawlProvider,
    TavilyProvider,
    WebPage,
    WebProvider,
    WebProviderError,
    WebSearchResult,
    web_provider_from_env,
    web_tools,
)

__all__ = [
    "CHROMIUM_FLAGS",
    "DEFAULT_CHROMIUM",
    "TOOLSETS",
    "BrowserPageError",
    "BrowserUnavailableError",
    "ChromiumBrowser",
    "DirectWebProvider",
    "FirecrawlProvider",
    "Invocation",
    "InvocationLike",
    "SandboxSource",
    "SandboxTool",
    "SearchMatch",
    "SearchResult",
    "TavilyProvider",
    "ToolHandler",
    "WebPage",
    "WebProvider",
    "WebProviderError",
    "WebSearchResult",
    "browser_tools",
    "browser_unavailable",
    "file_tools",
    "patch_file",
    "read_lines",
    "sandbox_tools",
    "search_files",
    "terminal_tools",
    "web_provider_from_env",
    "web_tools",
    "write_text",
]

#: Every toolset name, in the order tools are listed.
TOOLSETS: tuple[str, ...] = ("terminal", "file", "web", "browser")


def sandbox_tools(
    pool: SandboxSource,
    *,
    web: WebProvider | None = None,
    browser: ChromiumBrowser | None = None,
    toolsets: Iterable[str] | None = None,
) -> list[SandboxTool]:
    """The tools of ``toolsets`` bound to ``pool`` (sandbox per ``invocation.task_id``).

    Args:
        pool: where ``terminal`` and ``file`` tools find each task's sandbox.
        web: the provider for ``web_search``/``web_extract``; default a
            ``DirectWebProvider`` (pages can be read, searching says what to configure).
        browser: the browser for the ``browser`` toolset (its owner closes it).
        toolsets: names among ``terminal``, ``file``, ``web``, ``browser``; default all
            of them (``browser`` only when a browser is given).

    Raises:
        ValueError: for an unknown toolset name, or ``browser`` asked for without a browser.
    """
    if toolsets is None:
        chosen = {"terminal", "file", "web"} | ({"browser"} if browser is not None else set())
    else:
        chosen = set(toolsets) if not isinstance(toolsets, str) else {toolsets}
        unknown = sorted(chosen - set(TOOLSETS))
        if unknown:
            raise ValueError(
                f"unknown toolset(s) {', '.join(map(repr, unknown))}; "
                f"known toolsets: {', '.join(TOOLSETS)}"
            )
        if "browser" in chosen and browser is None:
            raise ValueError(
                "the browser toolset needs a browser: pass browser=ChromiumBrowser() "
                "(Chromium from `apt-get install chromium`)"
            )
    tools: list[SandboxTool] = []
    if "terminal" in chosen:
        tools += terminal_tools(pool)
    if "file" in chosen:
        tools += file_tools(pool)
    if "web" in chosen:
        tools += web_tools(web)
    if "browser" in chosen and browser is not None:
        tools += browser_tools(browser)
    return tools
