"""The HTTP exchange every route of the model server shares.

Reading a JSON body, refusing a request with an OpenAI-shaped error (``Rejected``),
closing a connection without an answer (``Dropped``), and sending a JSON body or an SSE
event stream, whole or (for a ``truncate`` fault) cut in half.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web

__all__ = ["Dropped", "Rejected", "int_field", "read_json", "send_events", "send_json"]


class Rejected(Exception):
    """Answer the current request with an OpenAI-shaped error body.

    The body is ``{"error": {"message", "type", "param", "code"}}``, as OpenAI's API
    sends it, so the ``openai`` client raises its matching ``APIStatusError``.
    """

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request_error",
        *,
        code: str | int | None = None,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.code = code
        self.param = param
        self.headers = dict(headers or {})

    def response(self) -> web.Response:
        """The error as an HTTP response."""
        body = {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}
        return web.Response(
            status=self.status,
            body=json.dumps({"error": body}).encode(),
            content_type="application/json",
            headers=self.headers,
        )


class Dropped(Exception):
    """Close the connection without (finishing) an answer."""

    def __init__(self, response: web.StreamResponse | None = None) -> None:
        super().__init__("connection dropped")
        self.response = response


async def read_json(request: web.Request) -> dict[str, Any]:
    """The request's body, a JSON object.

    Raises:
        Rejected: 400 when the body is not JSON (or nests too deeply to decode) or not an
            object.
    """
    raw = await request.read()
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise Rejected(400, f"the request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise Rejected(400, "the request body nests too deeply to decode") from None
    if not isinstance(body, dict):
        raise Rejected(400, f"the request body must be a JSON object, not {type(body).__name__}")
    return body


def int_field(body: Mapping[str, Any], *keys: str) -> int | None:
    """The first of ``keys`` present (and not null) in ``body``, an integer; else ``None``.

    Raises:
        Rejected: 400 when that field is not an integer.
    """
    for key in keys:
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise Rejected(400, f"{key} must be an integer, got {value!r}", code="invalid_value")
        return value
    return None


def _encode(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


async def send_json(request: web.Request, payload: Any, *, truncate: bool) -> web.StreamResponse:
    """``payload`` as a JSON response; with ``truncate``, half of it, then the connection drops.

    A truncated answer declares a ``Content-Length`` larger than the body, so a client
    sees a body cut short rather than a shorter valid one.

    Raises:
        Dropped: after writing a truncated answer.
    """
    data = _encode(payload)
    if not truncate:
        return web.Response(body=data, content_type="application/json")
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.content_length = len(data) + max(16, len(data))
    await response.prepare(request)
    await response.write(data[: len(data) // 2])
    raise Dropped(response)


def _event(event: Any, named: bool) -> bytes:
    head = b"event: " + str(event["type"]).encode("utf-8") + b"\n" if named else b""
    return head + b"data: " + _encode(event) + b"\n\n"


async def send_events(
    request: web.Request, events: Sequence[Any], *, truncate: bool, named: bool = False
) -> web.StreamResponse:
    """``events`` as a server-sent event stream.

    A chat stream (``named=False``) is ``data:`` lines ended by ``data: [DONE]``; a
    Responses stream (``named=True``) gives each event an ``event:`` line naming its
    ``type`` and ends without ``[DONE]``, as OpenAI's Responses API streams. With
    ``truncate``, only the first half of the events is sent and the connection drops.

    Raises:
        Dropped: after writing a truncated stream.
    """
    response = web.StreamResponse(
        status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    if truncate:
        events = events[: max(1, len(events) // 2)]
    await response.write(b"".join(_event(event, named) for event in events))
    if truncate:
        raise Dropped(response)
    if not named:
        await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response
