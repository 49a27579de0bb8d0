"""Web tools: direct extraction from a real HTTP server on 127.0.0.1, and the Tavily and
Firecrawl providers at their SDK boundary (fakes of the SDK clients), live with keys."""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Sequence
from typing import Any

import pytest

from hermes_sandbox.tools import (
    DirectWebProvider,
    FirecrawlProvider,
    Invocation,
    TavilyProvider,
    WebPage,
    WebProviderError,
    WebSearchResult,
    web_provider_from_env,
    web_tools,
)
from hermes_sandbox.tools.web import check_url, html_to_text

PAGE = """<!doctype html>
<html><head><title>  The   Page </title>
<style>body { color: red }</style>
<script>var secret = "do not show";</script>
</head>
<body>
<nav><a href="/home">Home</a></nav>
<h1>Main &amp; heading</h1>
<p>First   paragraph with <b>bold</b> and a <a href="/docs/intro.html">relative link</a>.</p>
<ul><li>one</li><li>two</li></ul>
<pre>  keep
    this</pre>
<noscript>enable js</noscript>
<img src="x.png" alt="a chart">
<table><tr><th>k</th><td>v</td></tr></table>
</body></html>"""


@pytest.fixture(scope="module")
def routes() -> dict[str, dict[str, Any]]:
    """What the loopback ``server`` (tests/sandbox/conftest.py) answers."""
    return {
        "/page.html": {"type": "text/html; charset=utf-8", "body": PAGE},
        "/plain.txt": {"type": "text/plain", "body": b"just text\nline two\n"},
        "/data.json": {"type": "application/json", "body": b'{"a": [1, 2]}'},
        "/latin1": {
            "type": "text/html; charset=iso-8859-1",
            "body": "<p>café</p>".encode("latin-1"),
        },
        "/meta-charset": {
            "type": "text/html",
            "body": '<html><head><meta charset="windows-1252"></head><p>na\xefve</p></html>'.encode(
                "cp1252"
            ),
        },
        "/image.png": {"type": "image/png", "body": b"\x89PNG\r\n\x1a\n" + bytes(100)},
        "/redirect": {"status": 302, "headers": {"Location": "/page.html"}},
        "/big": {"type": "text/plain", "body": b"z" * 50_000},
        "/slow": {"type": "text/plain", "body": b"late", "delay": 3},
        "*": {"status": 404, "type": "text/plain", "body": b"nope"},
    }


@pytest.fixture
def direct() -> DirectWebProvider:
    return DirectWebProvider(allow_private=True, timeout=5)


# --- direct extraction ---------------------------------------------------------------------


async def test_extract_html_page(direct: DirectWebProvider, server: str) -> None:
    [page] = await direct.extract([f"{server}/page.html"])
    assert page.error is None
    assert page.title == "The Page"
    text = page.content
    assert "# Main & heading" in text
    assert f"[relative link]({server}/docs/intro.html)" in text
    assert f"[Home]({server}/home)" in text
    assert "First paragraph with bold and a" in text
    assert "- one\n- two" in text
    assert "  keep\n    this" in text
    assert "[image: a chart]" in text
    assert "secret" not in text
    assert "color: red" not in text
    assert "enable js" not in text


async def test_extract_other_content(direct: DirectWebProvider, server: str) -> None:
    pages = await direct.extract(
        [
            f"{server}/plain.txt",
            f"{server}/data.json",
            f"{server}/latin1",
            f"{server}/meta-charset",
            f"{server}/redirect",
            f"{server}/image.png",
            f"{server}/missing",
        ]
    )
    plain, data, latin, meta, redirected, image, missing = pages
    assert plain.content == "just text\nline two\n"
    assert data.content == '{"a": [1, 2]}'
    assert latin.content == "café"
    assert meta.content == "naïve"
    assert redirected.url == f"{server}/page.html"
    assert redirected.title == "The Page"
    assert image.error == "unsupported content type image/png (not text or HTML)"
    assert missing.error == "HTTP 404 Not Found"


async def test_extract_limits(server: str) -> None:
    small = DirectWebProvider(allow_private=True, max_bytes=1000, max_chars=100)
    [big] = await small.extract([f"{server}/big"])
    assert big.content.startswith("z" * 100)
    assert "[... 900 more characters cut ...]" in big.content
    assert "page larger than 1000 bytes" in big.content
    hasty = DirectWebProvider(allow_private=True, timeout=0.5)
    started = time.monotonic()
    [slow] = await hasty.extract([f"{server}/slow"])
    assert time.monotonic() - started < 2.5
    assert slow.error is not None
    assert "could not fetch the page" in slow.error
    [closed] = await hasty.extract(["http://127.0.0.1:9/"])
    assert closed.error is not None
    assert "could not fetch the page" in closed.error


async def test_host_addresses_are_refused_by_default(server: str) -> None:
    default = DirectWebProvider()
    pages = await default.extract([f"{server}/page.html", "http://localhost:1/", "ftp://x/"])
    assert pages[0].error is not None
    assert "refusing to open" in pages[0].error
    assert "allow_private=True" in pages[0].error
    assert pages[1].error is not None
    assert "refusing to open" in pages[1].error
    assert pages[2].error == "only http and https URLs can be opened, not 'ftp://x/'"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://10.1.2.3/",
        "http://192.168.0.1:8080/x",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://0.0.0.0/",
        "http://100.100.100.200/",
        "http://[fd00::1]/",
    ],
)
def test_check_url_refuses_private_addresses(url: str) -> None:
    with pytest.raises(ValueError, match="refusing to open"):
        check_url(url)
    assert check_url(url, allow_private=True) == url


def test_check_url_other_rules() -> None:
    assert check_url(" http://93.184.216.34/x ") == "http://93.184.216.34/x"
    for bad, message in [
        ("file:///etc/passwd", "only http and https"),
        ("javascript:alert(1)", "only http and https"),
        ("http:///nohost", "has no host"),
        ("", "non-empty"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_url(bad)


def test_html_to_text_edge_cases() -> None:
    assert html_to_text("<p>a<br>b</p><p>c</p>") == ("", "a\nb\n\nc")
    assert html_to_text("<title>t</title><body>unclosed <a href='https://x.y/'>link")[1] == (
        "unclosed link"
    )
    assert html_to_text("<div>&lt;tag&gt; &#169;</div>")[1] == "<tag> ©"
    assert html_to_text("<svg><text>drawn</text></svg><p>seen</p>")[1] == "seen"


# --- the tools ---------------------------------------------------------------------------


async def test_web_tools_without_provider(server: str) -> None:
    tools = {t.name: t for t in web_tools(DirectWebProvider(allow_private=True))}
    answer = await tools["web_extract"].handler({"urls": [f"{server}/plain.txt"]}, Invocation("t"))
    assert answer == {
        "results": [{"url": f"{server}/plain.txt", "title": "", "content": "just text\nline two\n"}]
    }
    with pytest.raises(WebProviderError, match="web_search needs a search provider") as caught:
        await tools["web_search"].handler({"query": "x"}, Invocation("t"))
    assert caught.value.kind == "no_search"
    defaults = {t.name: t for t in web_tools()}
    refused = await defaults["web_extract"].handler({"urls": [f"{server}/x"]}, Invocation("t"))
    assert "refusing to open" in refused["results"][0]["error"]
    with pytest.raises(ValueError, match="at least one URL"):
        await tools["web_extract"].handler({"urls": []}, Invocation("t"))
    with pytest.raises(ValueError, match="at most 10 URLs"):
        await tools["web_extract"].handler({"urls": ["http://a/"] * 11}, Invocation("t"))
    with pytest.raises(ValueError, match="'query' must be a non-empty string"):
        await tools["web_search"].handler({"query": " "}, Invocation("t"))


def test_provider_from_env() -> None:
    assert isinstance(web_provider_from_env({}), DirectWebProvider)
    assert isinstance(web_provider_from_env({"TAVILY_API_KEY": "k"}), TavilyProvider)
    assert isinstance(web_provider_from_env({"FIRECRAWL_API_KEY": "k"}), FirecrawlProvider)
    both = {"TAVILY_API_KEY": "k", "FIRECRAWL_API_KEY": "k"}
    assert isinstance(web_provider_from_env(both), TavilyProvider)


def test_missing_keys_name_the_variable() -> None:
    with pytest.raises(WebProviderError, match="set the TAVILY_API_KEY environment variable") as no:
        TavilyProvider(env={})
    assert no.value.kind == "no_api_key"
    with pytest.raises(WebProviderError, match="set the FIRECRAWL_API_KEY environment variable"):
        FirecrawlProvider(env={})
    TavilyProvider(api_key="given", env={})  # an explicit key needs no variable


# --- Tavily at the SDK boundary ------------------------------------------------------------


class FakeAsyncTavilyClient:
    """Stands in for ``tavily.AsyncTavilyClient``; answers as the Tavily API does."""

    def __init__(self, *, fail: Exception | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail = fail

    async def search(self, query: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("search", {"query": query, **kwargs}))
        if self.fail:
            raise self.fail
        return {
            "query": query,
            "answer": None,
            "results": [
                {"title": "One", "url": "https://one.example/", "content": "first", "score": 0.9},
                {"title": "Two", "url": "https://two.example/", "content": "second", "score": 0.5},
            ],
            "response_time": 0.4,
        }

    async def extract(self, urls: Sequence[str], **kwargs: Any) -> dict[str, Any]:
        self.calls.append(("extract", {"urls": list(urls), **kwargs}))
        return {
            "results": [{"url": urls[0], "raw_content": "page text " * 5}],
            "failed_results": [{"url": u, "error": "blocked"} for u in urls[1:2]],
            "response_time": 0.1,
        }


def test_fake_matches_the_tavily_sdk() -> None:
    tavily = pytest.importorskip("tavily")
    search = inspect.signature(tavily.AsyncTavilyClient.search).parameters
    assert {"query", "max_results", "search_depth"} <= set(search)
    assert "urls" in inspect.signature(tavily.AsyncTavilyClient.extract).parameters
    assert inspect.iscoroutinefunction(tavily.AsyncTavilyClient.search)
    assert inspect.iscoroutinefunction(tavily.AsyncTavilyClient.close)


async def test_tavily_search_and_extract() -> None:
    fake = FakeAsyncTavilyClient()
    provider = TavilyProvider(client=fake, max_chars=20)
    hits = await provider.search("what is hermes", max_results=2)
    assert hits == [
        WebSearchResult("One", "https://one.example/", "first"),
        WebSearchResult("Two", "https://two.example/", "second"),
    ]
    assert fake.calls[0] == (
        "search",
        {"query": "what is hermes", "max_results": 2, "search_depth": "basic"},
    )
    pages = await provider.extract(["https://a/", "https://b/", "https://c/"])
    assert pages[0] == WebPage(
        "https://a/", "", "page text page text \n\n[... 30 more characters cut ...]"
    )
    assert pages[1] == WebPage("https://b/", error="blocked")
    assert pages[2].error == "Tavily returned nothing for this URL"


async def test_tavily_failure_is_a_provider_error() -> None:
    provider = TavilyProvider(client=FakeAsyncTavilyClient(fail=RuntimeError("401 bad key")))
    with pytest.raises(
        WebProviderError, match="Tavily search failed: RuntimeError: 401 bad key"
    ) as e:
        await provider.search("x")
    assert e.value.kind == "request_failed"


async def test_tavily_makes_and_closes_a_real_sdk_client_per_call() -> None:
    pytest.importorskip("tavily")
    provider = TavilyProvider(api_key="tvly-test-not-a-key")
    client = provider._new_client()
    assert type(client).__name__ == "AsyncTavilyClient"
    await client.close()


# --- Firecrawl at the SDK boundary ----------------------------------------------------------


class FakeAsyncFirecrawl:
    """Stands in for ``firecrawl.AsyncFirecrawl``; answers with the SDK's own v2 types."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    async def search(self, query: str, **kwargs: Any) -> Any:
        # firecrawl-py ships no type information (no py.typed).
        from firecrawl.v2.types import (  # type: ignore[import-untyped]
            SearchData,
            SearchResultWeb,
        )

        self.calls.append(("search", query, kwargs))
        return SearchData(
            web=[
                SearchResultWeb(url="https://fc.example/a", title="A", description="about a"),
                SearchResultWeb(url="https://fc.example/b", title="B", description="about b"),
            ]
        )

    async def scrape(self, url: str, **kwargs: Any) -> Any:
        from firecrawl.v2.types import Document, DocumentMetadata

        self.calls.append(("scrape", url, kwargs))
        if "broken" in url:
            raise RuntimeError("Website not supported")
        return Document(markdown=f"# {url}\n\nbody", metadata=DocumentMetadata(title="T"))


def test_fake_matches_the_firecrawl_sdk() -> None:
    firecrawl = pytest.importorskip("firecrawl")
    from firecrawl.v2.types import ScrapeOptions, SearchRequest

    client = firecrawl.AsyncFirecrawl(api_key="fc-test-not-a-key")
    assert inspect.iscoroutinefunction(client.search)
    assert inspect.iscoroutinefunction(client.scrape)
    assert "limit" in SearchRequest.model_fields
    assert "formats" in ScrapeOptions.model_fields


async def test_firecrawl_search_and_extract() -> None:
    pytest.importorskip("firecrawl")
    fake = FakeAsyncFirecrawl()
    provider = FirecrawlProvider(client=fake)
    hits = await provider.search("q", max_results=1)
    assert hits == [WebSearchResult("A", "https://fc.example/a", "about a")]
    assert fake.calls[0] == ("search", "q", {"limit": 1})
    pages = await provider.extract(["https://ok.example/", "https://broken.example/"])
    assert pages[0] == WebPage("https://ok.example/", "T", "# https://ok.example/\n\nbody")
    assert pages[1].error == "Firecrawl could not scrape it: RuntimeError: Website not supported"
    assert fake.calls[1] == ("scrape", "https://ok.example/", {"formats": ["markdown"]})


# --- live, with keys ---------------------------------------------------------------------


@pytest.mark.skipif(not os.environ.get("TAVILY_API_KEY"), reason="TAVILY_API_KEY is not set")
async def test_tavily_live() -> None:
    provider = TavilyProvider()
    hits = await provider.search("Python programming language", max_results=3)
    assert hits
    assert all(hit.url.startswith("http") for hit in hits)
    [page] = await provider.extract(["https://www.python.org/"])
    assert page.error is None
    assert "Python" in page.content


@pytest.mark.skipif(not os.environ.get("FIRECRAWL_API_KEY"), reason="FIRECRAWL_API_KEY is not set")
async def test_firecrawl_live() -> None:
    provider = FirecrawlProvider()
    hits = await provider.search("Python programming language", max_results=3)
    assert hits
    [page] = await provider.extract(["https://www.python.org/"])
    assert page.error is None
    assert "Python" in page.content
