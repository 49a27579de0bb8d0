"""``web_provider_from_env``: the provider the environment's API keys allow."""

from __future__ import annotations

import os
from collections.abc import Mapping

from hermes_sandbox.tools.web._direct import DirectWebProvider
from hermes_sandbox.tools.web._firecrawl import FirecrawlProvider
from hermes_sandbox.tools.web._pages import WebProvider
from hermes_sandbox.tools.web._tavily import TavilyProvider

__all__ = ["web_provider_from_env"]


def web_provider_from_env(env: Mapping[str, str] | None = None) -> WebProvider:
    """``TavilyProvider`` if ``TAVILY_API_KEY`` is set, else ``FirecrawlProvider`` if
    ``FIRECRAWL_API_KEY`` is, else a ``DirectWebProvider`` (extraction only)."""
    source = os.environ if env is None else env
    if source.get("TAVILY_API_KEY"):
        return TavilyProvider(env=source)
    if source.get("FIRECRAWL_API_KEY"):
        return FirecrawlProvider(env=source)
    return DirectWebProvider()
