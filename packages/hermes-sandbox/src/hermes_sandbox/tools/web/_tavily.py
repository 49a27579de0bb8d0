"""``TavilyProvider``: search and extraction through Tavily (``tavily-python``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hermes_sandbox.tools.web._pages import (
    DEFAULT_MAX_PAGE_CHARS,
    WebPage,
    WebSearchResult,
    cap_text,
)
from hermes_sandbox.tools.web._sdk import call_client, field, import_sdk, key_unless_client

__all__ = ["TavilyProvider"]


class TavilyProvider:
    """Search and extraction through Tavily (``tavily-python``'s ``AsyncTavilyClient``).

    Args:
        api_key: the key; default the ``TAVILY_API_KEY`` variable of ``env``.
        client: an ``AsyncTavilyClient``-like object to use instead of making one per call
            (its owner closes it; it must belong to the event loop the tools run on).
        env: where to look for ``TAVILY_API_KEY`` (default ``os.environ``; read only).
        search_depth: Tavily's ``search_depth`` (``basic`` or ``advanced``).
        max_chars: most characters of text returned per page.

    Raises:
        WebProviderError: at construction, if there is neither a client nor a key.
    """

    name = "tavily"

    def __init__(
        self,
        api_key: str | None = None,
        *,
        client: Any = None,
        env: Mapping[str, str] | None = None,
        search_depth: str = "basic",
        max_chars: int = DEFAULT_MAX_PAGE_CHARS,
    ) -> None:
        self._client = client
        self._api_key = key_unless_client(client, api_key, env, "TAVILY_API_KEY", "Tavily")
        self.search_depth = search_depth
        self.max_chars = max_chars

    def _new_client(self) -> Any:
        sdk = import_sdk("tavily", "tavily-python")
        return sdk.AsyncTavilyClient(api_key=self._api_key)

    async def search(self, query: str, *, max_results: int = 5) -> list[WebSearchResult]:
        """Tavily search.

        Raises:
            WebProviderError: if the Tavily call fails.
        """
        answer = await call_client(
            self._client,
            self._new_client,
            "Tavily",
            "search",
            query,
            max_results=max_results,
            search_depth=self.search_depth,
        )
        hits = field(answer, "results") or []
        return [
            WebSearchResult(
                str(field(hit, "title") or ""),
                str(field(hit, "url") or ""),
                str(field(hit, "content", "snippet") or ""),
            )
            for hit in hits[:max_results]
        ]

    async def extract(self, urls: Sequence[str]) -> list[WebPage]:
        """Tavily extract; URLs Tavily could not read come back with ``error``.

        Raises:
            WebProviderError: if the Tavily call fails as a whole.
        """
        answer = await call_client(
            self._client, self._new_client, "Tavily", "extract", urls=list(urls)
        )
        found: dict[str, WebPage] = {}
        for item in field(answer, "results") or []:
            url = str(field(item, "url") or "")
            content = str(field(item, "raw_content", "content") or "")
            found[url] = WebPage(
                url, str(field(item, "title") or ""), cap_text(content, self.max_chars)
            )
        for item in field(answer, "failed_results") or []:
            url = str(field(item, "url") or "")
            found.setdefault(url, WebPage(url, error=str(field(item, "error") or "failed")))
        return [
            found.get(url) or WebPage(url, error="Tavily returned nothing for this URL")
            for url in urls
        ]
