"""The ``web`` toolset: ``web_search`` and ``web_extract`` through a ``WebProvider``.

Three providers:

- ``DirectWebProvider`` (the default): no key, no search. ``extract`` fetches plain
  ``http(s)`` URLs with the standard library in a worker thread and turns HTML into text.
  It refuses hosts that resolve to loopback, private or link-local addresses (the tools
  run on the host, next to services such as a training API) unless
  ``allow_private=True``.
- ``TavilyProvider`` over ``tavily-python`` (``TAVILY_API_KEY``).
- ``FirecrawlProvider`` over ``firecrawl-py`` (``FIRECRAWL_API_KEY``).

The SDKs are optional (``pip install 'hermes-sandbox[web]'``) and imported on first use.
A provider made without a key fails at construction with a message naming the variable.

One module per concept: ``urls`` (which URLs may be opened), ``html_text`` (HTML to
text), ``pages`` (results and the ``WebProvider`` protocol), ``direct``, ``tavily``,
``firecrawl`` (the providers; ``sdk`` holds what the SDK ones share), ``from_env``
(choosing a provider from API keys) and ``tools`` (the tool schemas and handlers). Every
public name is importable from ``hermes_sandbox.tools.web``.
"""

from __future__ import annotations

from hermes_sandbox._errors import WebProviderError, WebProviderErrorKind
from hermes_sandbox.tools.web._direct import DirectWebProvider
from hermes_sandbox.tools.web._firecrawl import FirecrawlProvider
from hermes_sandbox.tools.web._from_env import web_provider_from_env
from hermes_sandbox.tools.web._html_text import html_to_text
from hermes_sandbox.tools.web._pages import (
    DEFAULT_MAX_PAGE_CHARS,
    WebPage,
    WebProvider,
    WebSearchResult,
)
from hermes_sandbox.tools.web._tavily import TavilyProvider
from hermes_sandbox.tools.web._tools import (
    MAX_EXTRACT_URLS,
    MAX_SEARCH_RESULTS,
    extract_web,
    search_web,
    web_tools,
)
from hermes_sandbox.tools.web._urls import check_url

__all__ = [
    "DEFAULT_MAX_PAGE_CHARS",
    "MAX_EXTRACT_URLS",
    "MAX_SEARCH_RESULTS",
    "DirectWebProvider",
    "FirecrawlProvider",
    "TavilyProvider",
    "WebPage",
    "WebProvider",
    "WebProviderError",
    "WebProviderErrorKind",
    "WebSearchResult",
    "check_url",
    "extract_web",
    "html_to_text",
    "search_web",
    "web_provider_from_env",
    "web_tools",
]
