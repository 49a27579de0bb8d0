"""What the web tools pass around: search hits, page texts, and the ``WebProvider``
protocol a search/extraction service implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = [
    "DEFAULT_MAX_PAGE_CHARS",
    "WebPage",
    "WebProvider",
    "WebSearchResult",
    "cap_text",
]

#: Most characters of text a provider returns per page by default.
DEFAULT_MAX_PAGE_CHARS = 30_000


@dataclass(frozen=True, slots=True)
class WebSearchResult:
    """One search hit."""

    title: str
    url: str
    snippet: str

    def to_dict(self) -> dict[str, str]:
        """``{"title", "url", "snippet"}``."""
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


@dataclass(frozen=True, slots=True)
class WebPage:
    """The text of one page, or why it could not be had (``error``)."""

    url: str
    title: str = ""
    content: str = ""
    error: str | None = None

    def to_dict(self) -> dict[str, str]:
        """``{"url", "title", "content"}``, or ``{"url", "error"}`` for a failed page."""
        if self.error is not None:
            return {"url": self.url, "error": self.error}
        return {"url": self.url, "title": self.title, "content": self.content}


@runtime_checkable
class WebProvider(Protocol):
    """What the web tools need from a search/extraction service."""

    name: str

    async def search(self, query: str, *, max_results: int = 5) -> list[WebSearchResult]:
        """Search the web.

        Raises:
            WebProviderError: if the provider cannot search (no key, no service, failure).
        """
        ...

    async def extract(self, urls: Sequence[str]) -> list[WebPage]:
        """The text of each URL, in order; a page that failed has ``error`` set.

        Raises:
            WebProviderError: if the provider as a whole failed.
        """
        ...


def cap_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a marker saying how many were cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n\n[... {len(text) - limit} more characters cut ...]"
