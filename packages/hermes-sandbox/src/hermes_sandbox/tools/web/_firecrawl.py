"""``FirecrawlProvider``: search and extraction through Firecrawl (``firecrawl-py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_sandbox.tools.web._pages import (
    DEFAULT_MAX_PAGE_CHARS,
    WebPage,
    WebSearchResult,
    cap_text,
)
from hermes_sandbox.tools.web._sdk import (
    call_client,
    client_for_call,
    field,
    import_sdk,
    key_unless_client,
)

__all__ = ["FirecrawlProvider"]


class FirecrawlProvider:
    """Search and extraction through Firecrawl (``firecrawl-py``'s ``AsyncFirecrawl``).

    Args:
        api_key: the key; default the ``FIRECRAWL_API_KEY`` variable of ``env``.
        client: an ``AsyncFirecrawl``-like object to use instead of making one per call.
        env: where to look for ``FIRECRAWL_API_KEY`` (default ``os.environ``; read only).
        api_url: a self-hosted Firecrawl's URL (default the hosted service).
        max_chars: most characters of text returned per page.

    Raises:
        WebProviderError: at construction, if there is neither a client nor a key.
    """

    name = "firecrawl"

    def __init__(
        self,
        api_key: str | None = None,
        *,
        client: Any = None,
        env: Mapping[str, str] | None = None,
        api_url: str | None = None,
        max_chars: int = DEFAULT_MAX_PAGE_CHARS,
    ) -> None:
        self._client = client
        self._api_key = key_unless_client(client, api_key, env, "FIRECRAWL_API_KEY", "Firecrawl")
        self.api_url = api_url
        self.max_chars = max_chars

    def _new_client(self) -> Any:
        sdk = import_sdk("firecrawl", "firecrawl-py")
        kwargs: dict[str, Any] = {"api_key": self._api_key}
        if self.api_url:
            kwargs["api_url"] = self.api_url
        return sdk.AsyncFirecrawl(**kwargs)

    async def search(self, query: str, *, max_results: int = 5) -> list[WebSearchResult]:
        """Firecrawl search (web results).

        Raises:
            WebProviderError: if the Firecrawl call fails.
        """
        answer = await call_client(
            self._client, self._new_client, "Firecrawl", "search", query, limit=max_results
        )
        hits = field(answer, "web", "data") or []
        results = []
        for hit in hits[:max_results]:
            metadata = field(hit, "metadata")
            results.append(
                WebSearchResult(
                    str(field(hit, "title") or field(metadata, "title") or ""),
                    str(field(hit, "url") or field(metadata, "url", "source_url") or ""),
                    str(field(hit, "description", "snippet", "markdown") or "")[:1000],
                )
            )
        return results

    async def extract(self, urls: Sequence[str]) -> list[WebPage]:
        """Firecrawl scrape of each URL (markdown), concurrently."""
        async with client_for_call(self._client, self._new_client) as client:
            return list(await asyncio.gather(*(self._scrape(client, url) for url in urls)))

    async def _scrape(self, client: Any, url: str) -> WebPage:
        try:
            document = await client.scrape(url, formats=["markdown"])
        except Exception as exc:
            return WebPage(url, error=f"Firecrawl could not scrape it: {type(exc).__name__}: {exc}")
        title = str(field(field(document, "metadata"), "title") or "")
        content = str(field(document, "markdown", "content") or "")
        return WebPage(url, title, cap_text(content, self.max_chars))
