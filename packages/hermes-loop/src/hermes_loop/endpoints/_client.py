"""What both endpoint adapters share: the ``openai.AsyncOpenAI`` client they drive."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl
from collections.abc import Callable, Mapping
from typing import Any, TypedDict, TypeVar

import openai

from hermes_loop._errors import EndpointError
from hermes_loop.endpoints._base import SamplingParams
from hermes_loop.endpoints._errors import endpoint_error

__all__ = ["ClientOptions", "HTTPEndpoint", "make_client"]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")

#: Seconds before the first retry of a wrong-shape answer; doubled per retry, at most 8.
_FIRST_BACKOFF = 0.5
_MAX_BACKOFF = 8.0


def make_client(
    base_url: str,
    *,
    api_key_env: str,
    timeout: float,
    max_retries: int,
    api_key: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> openai.AsyncOpenAI:
    """A client for ``base_url`` with the key ``api_key`` when one is given (non-empty),
    else the key read once from the variable ``api_key_env``.

    The key goes only into the client's ``Authorization`` header: it is never logged.
    No key at all sends a placeholder (local servers ignore it; the openai SDK refuses an
    empty key). The client retries 429, 5xx, timeouts and dropped connections with backoff.
    ``ssl_context``: the TLS context that verifies the endpoint (one made once and shared
    by many clients: making one reads the system's certificates, about 20 ms of CPU);
    None: the SDK makes its own.
    """
    http_client = None
    if ssl_context is not None:
        http_client = openai.DefaultAsyncHttpxClient(verify=ssl_context)
    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=api_key or os.environ.get(api_key_env) or "no-key-set",
        timeout=timeout,
        max_retries=max_retries,
        http_client=http_client,
    )


class ClientOptions(TypedDict, total=False):
    """The keyword arguments both endpoint classes take for their client (see
    ``HTTPEndpoint``, which holds their defaults)."""

    api_key: str | None
    api_key_env: str
    timeout: float
    max_retries: int
    extra_body: Mapping[str, Any] | None
    client: openai.AsyncOpenAI | None
    ssl_context: ssl.SSLContext | None


class HTTPEndpoint:
    """Holds the client, the model name and the extra request body; closes the client.

    Args:
        base_url: the URL the client is made for (``None`` only with ``client``).
        model: the model name sent with every request (``None``: none is sent).
        api_key: the key itself (e.g. from a config file); it wins over ``api_key_env``
            when non-empty, and is never logged.
        api_key_env: name of the environment variable holding the key when ``api_key``
            is not given; the key is read once here and never logged. Unset: a
            placeholder key is sent (local servers ignore it; remote ones answer 401,
            recorded as ``bad_request``).
        timeout: seconds per request; a hang past it counts as a failed attempt.
        max_retries: retries (with backoff, honouring ``Retry-After``) on 429, 5xx,
            timeouts and dropped connections, and on complete answers of the wrong
            shape (see ``post_checked``).
        extra_body: merged into every request (e.g. OpenRouter provider preferences).
        client: an ``openai.AsyncOpenAI`` to use instead of building one.
        ssl_context: the TLS context the built client verifies the endpoint with, for
            many endpoints to share one (making one costs about 20 ms of CPU); None: the
            SDK's own, made per client.

    Raises:
        ValueError: if neither ``base_url`` nor ``client`` is given.
    """

    def __init__(
        self,
        base_url: str | None,
        model: str | None,
        *,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 600.0,
        max_retries: int = 3,
        extra_body: Mapping[str, Any] | None = None,
        client: openai.AsyncOpenAI | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        if client is None:
            if base_url is None:
                raise ValueError(f"{type(self).__name__} needs base_url or client")
            client = make_client(
                base_url,
                api_key=api_key,
                api_key_env=api_key_env,
                timeout=timeout,
                max_retries=max_retries,
                ssl_context=ssl_context,
            )
        self.client = client
        self.model = model
        self.extra_body: dict[str, Any] = dict(extra_body or {})

    def sampled(self, body: dict[str, Any], params: SamplingParams) -> dict[str, Any]:
        """``body`` with ``params``' temperature and max_tokens when set, then the
        endpoint's ``extra_body`` and the request's own merged over it (the last wins)."""
        if params.temperature is not None:
            body["temperature"] = params.temperature
        if params.max_tokens is not None:
            body["max_tokens"] = params.max_tokens
        body.update(self.extra_body)
        body.update(params.extra_body or {})
        return body

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.close()

    async def post_checked(
        self, path: str, body: Mapping[str, Any], read: Callable[[Any], _T]
    ) -> _T:
        """POST ``body`` as JSON to ``path``; return ``read(answer)``, the answer decoded.

        The client retries HTTP failures (429, 5xx, timeouts, dropped connections). A
        complete answer of the wrong shape (a body that is not JSON, or one ``read``
        rejects with an ``EndpointError`` of kind ``bad_response``) is retried here as
        often, with backoff (0.5 s, doubled per retry, at most 8 s).

        Raises:
            EndpointError: when the endpoint fails or keeps answering the wrong shape.
        """
        retries = max(int(self.client.max_retries), 0)
        for attempt in range(retries + 1):
            try:
                data = await self.client.post(path, body=body, cast_to=object)
                return read(_decoded(path, data))
            except openai.OpenAIError as exc:
                failure = endpoint_error(exc)
                failure.__cause__ = exc
            except EndpointError as exc:
                failure = exc
            except ValueError:  # the SDK's JSON decoding of an application/json body
                failure = EndpointError("bad_response", f"{path} answered a body that is not JSON")
            if failure.kind != "bad_response":
                raise failure
            if attempt < retries:
                delay = min(_FIRST_BACKOFF * 2**attempt, _MAX_BACKOFF)
                _log.warning("%s (attempt %d); retrying in %gs", failure, attempt + 1, delay)
                await asyncio.sleep(delay)
        raise failure


def _decoded(path: str, data: Any) -> Any:
    """The SDK hands back a non-JSON content type's body as text: decode it here."""
    if not isinstance(data, str):
        return data
    try:
        return json.loads(data)
    except ValueError:
        snippet = " ".join(data.split())[:80]
        raise EndpointError(
            "bad_response", f"{path} answered a body that is not JSON: {snippet!r}"
        ) from None
