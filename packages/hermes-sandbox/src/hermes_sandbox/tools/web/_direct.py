"""``DirectWebProvider``: reads plain ``http(s)`` URLs itself, with no key; cannot search."""

from __future__ import annotations

import asyncio
import codecs
import http.client
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from hermes_sandbox._errors import WebProviderError
from hermes_sandbox.tools.web._html_text import html_to_text
from hermes_sandbox.tools.web._pages import (
    DEFAULT_MAX_PAGE_CHARS,
    WebPage,
    WebSearchResult,
    cap_text,
)
from hermes_sandbox.tools.web._urls import check_url

__all__ = ["DirectWebProvider"]

_TEXT_TYPES = ("application/json", "application/xml", "application/javascript")


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    def __init__(self, allow_private: bool) -> None:
        self.allow_private = allow_private

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        check_url(newurl, allow_private=self.allow_private)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class DirectWebProvider:
    """Fetches pages itself (standard library, one worker thread per URL); cannot search.

    Args:
        allow_private: allow loopback/private/link-local hosts (off by default: the tools
            run on the host, and a model should not reach the host's own services).
        timeout: seconds per request.
        max_bytes: most bytes read of one response.
        max_chars: most characters of text returned per page (the rest is cut, marked).
        user_agent: the ``User-Agent`` header sent.
    """

    name = "direct"

    def __init__(
        self,
        *,
        allow_private: bool = False,
        timeout: float = 20.0,
        max_bytes: int = 5_000_000,
        max_chars: int = DEFAULT_MAX_PAGE_CHARS,
        user_agent: str = "hermes-sandbox/0.1 (+web_extract)",
    ) -> None:
        self.allow_private = allow_private
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.max_chars = max_chars
        self.user_agent = user_agent

    async def search(self, query: str, *, max_results: int = 5) -> list[WebSearchResult]:
        """Always fails: searching needs a search service.

        Raises:
            WebProviderError: always, saying how to configure one.
        """
        raise WebProviderError(
            "web_search needs a search provider: set TAVILY_API_KEY or FIRECRAWL_API_KEY and "
            "pass web=TavilyProvider() or web=FirecrawlProvider() (or web_provider_from_env())",
            kind="no_search",
        )

    async def extract(self, urls: Sequence[str]) -> list[WebPage]:
        """Fetch each URL concurrently; failures become pages with ``error``."""
        return list(await asyncio.gather(*(asyncio.to_thread(self.fetch, u) for u in urls)))

    def fetch(self, url: str) -> WebPage:
        """Fetch one URL (blocking) and return its text or the reason it failed."""
        try:
            checked = check_url(url, allow_private=self.allow_private)
        except ValueError as exc:
            return WebPage(str(url), error=str(exc))
        opener = urllib.request.build_opener(_CheckedRedirects(self.allow_private))
        request = urllib.request.Request(
            checked,
            headers={
                "User-Agent": self.user_agent,
                "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
            },
        )
        try:
            with opener.open(request, timeout=self.timeout) as response:
                final_url = response.geturl()
                content_type = response.headers.get_content_type()
                charset = response.headers.get_content_charset()
                body = response.read(self.max_bytes + 1)
        except urllib.error.HTTPError as exc:
            return WebPage(checked, error=f"HTTP {exc.code} {exc.reason}")
        except urllib.error.URLError as exc:
            return WebPage(checked, error=f"could not fetch the page: {exc.reason}")
        except ValueError as exc:  # a redirect to a refused address
            return WebPage(checked, error=str(exc))
        except (OSError, http.client.HTTPException) as exc:
            return WebPage(checked, error=f"could not fetch the page: {exc}")
        cut_note = ""
        if len(body) > self.max_bytes:
            body = body[: self.max_bytes]
            cut_note = f"\n\n[... page larger than {self.max_bytes} bytes; the rest was not read]"
        is_html = content_type in ("text/html", "application/xhtml+xml")
        if not (
            is_html
            or content_type.startswith("text/")
            or content_type in _TEXT_TYPES
            or content_type.endswith(("+json", "+xml"))
        ):
            return WebPage(
                final_url, error=f"unsupported content type {content_type} (not text or HTML)"
            )
        text = body.decode(_charset(charset, body if is_html else b""), errors="replace")
        title = ""
        if is_html:
            title, text = html_to_text(text, final_url)
        return WebPage(final_url, title, cap_text(text, self.max_chars) + cut_note)


_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def _charset(declared: str | None, html: bytes) -> str:
    candidates = [declared]
    if html:
        found = _META_CHARSET.search(html[:4096])
        if found:
            candidates.append(found[1].decode("ascii", "replace"))
    for name in candidates:
        if name:
            try:
                return codecs.lookup(name).name
            except LookupError:
                continue
    return "utf-8"
