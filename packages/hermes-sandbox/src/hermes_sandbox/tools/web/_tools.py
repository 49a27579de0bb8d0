"""The ``web`` toolset: ``web_search`` and ``web_extract`` (schemas, argument checks,
and the calls into a ``WebProvider``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hermes_sandbox.tools._spec import InvocationLike, SandboxTool
from hermes_sandbox.tools.web._direct import DirectWebProvider
from hermes_sandbox.tools.web._pages import WebProvider

__all__ = [
    "MAX_EXTRACT_URLS",
    "MAX_SEARCH_RESULTS",
    "extract_web",
    "search_web",
    "web_tools",
]

#: Most URLs one ``web_extract`` call may ask for.
MAX_EXTRACT_URLS = 10
#: Most results one ``web_search`` call may ask for.
MAX_SEARCH_RESULTS = 20

_SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to search the web for."},
        "max_results": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_SEARCH_RESULTS,
            "description": "How many results (default 5).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

_EXTRACT_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "urls": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": MAX_EXTRACT_URLS,
            "description": "http(s) URLs of the pages to read.",
        },
    },
    "required": ["urls"],
    "additionalProperties": False,
}


async def search_web(provider: WebProvider, query: str, max_results: int = 5) -> dict[str, Any]:
    """``{"results": [{"title", "url", "snippet"}, ...]}`` for ``query``.

    Raises:
        ValueError: for an empty query or a bad ``max_results``.
        WebProviderError: if the provider cannot search.
    """
    if not isinstance(query, str) or not query.strip():
        raise ValueError("'query' must be a non-empty string")
    if (
        isinstance(max_results, bool)
        or not isinstance(max_results, int)
        or not (1 <= max_results <= MAX_SEARCH_RESULTS)
    ):
        raise ValueError(f"'max_results' must be 1-{MAX_SEARCH_RESULTS}, got {max_results!r}")
    hits = await provider.search(query.strip(), max_results=max_results)
    return {"results": [hit.to_dict() for hit in hits]}


async def extract_web(provider: WebProvider, urls: Sequence[str] | str) -> dict[str, Any]:
    """``{"results": [{"url", "title", "content"} | {"url", "error"}, ...]}``.

    Raises:
        ValueError: if ``urls`` is empty, too long, or holds a non-string.
        WebProviderError: if the provider failed as a whole.
    """
    wanted = [urls] if isinstance(urls, str) else list(urls)
    if not wanted:
        raise ValueError("'urls' must hold at least one URL")
    if len(wanted) > MAX_EXTRACT_URLS:
        raise ValueError(f"at most {MAX_EXTRACT_URLS} URLs per call, got {len(wanted)}")
    if not all(isinstance(u, str) and u.strip() for u in wanted):
        raise ValueError("every URL must be a non-empty string")
    pages = await provider.extract([u.strip() for u in wanted])
    return {"results": [page.to_dict() for page in pages]}


def web_tools(provider: WebProvider | None = None) -> list[SandboxTool]:
    """The ``web`` toolset: ``web_search`` and ``web_extract`` through ``provider``
    (default a ``DirectWebProvider``: extraction works, search explains what to set)."""
    web = provider if provider is not None else DirectWebProvider()

    async def web_search(arguments: dict[str, Any], invocation: InvocationLike) -> dict[str, Any]:
        return await search_web(web, arguments.get("query", ""), arguments.get("max_results", 5))

    async def web_extract(arguments: dict[str, Any], invocation: InvocationLike) -> dict[str, Any]:
        return await extract_web(web, arguments.get("urls") or [])

    return [
        SandboxTool(
            "web_search",
            "Search the web; returns titles, URLs and snippets of the top results.",
            _SEARCH_PARAMETERS,
            web_search,
            toolset="web",
        ),
        SandboxTool(
            "web_extract",
            "Read web pages: returns the title and the text of each URL (HTML turned into "
            "markdown-like text, long pages cut).",
            _EXTRACT_PARAMETERS,
            web_extract,
            toolset="web",
        ),
    ]
