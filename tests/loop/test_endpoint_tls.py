"""An endpoint given ``ssl_context`` verifies the server with that context (many
endpoints share one instead of each reading the system's certificates)."""

from __future__ import annotations

import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from hermes_loop import OpenAIChatServer
from hermes_loop._errors import EndpointError
from hermes_loop.endpoints import SamplingParams

CHAT_ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
}


async def _chat(request: web.Request) -> web.Response:
    return web.json_response(CHAT_ANSWER)


@pytest.fixture
def certificate(tmp_path: Path) -> Path:
    """A self-signed certificate for 127.0.0.1 (its key beside it as ``key.pem``)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    argv = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    argv += ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    argv += ["-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        argv,
        check=True,
        capture_output=True,
    )
    return cert


@pytest.fixture
async def https_url(certificate: Path) -> AsyncIterator[str]:
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(certificate, certificate.with_name("key.pem"))
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=served)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"https://127.0.0.1:{port}/v1"
    finally:
        await runner.cleanup()


async def _ask(endpoint: OpenAIChatServer) -> str | None:
    try:
        turn = await endpoint.session("t").complete(
            [{"role": "user", "content": "hello"}], None, SamplingParams()
        )
    finally:
        await endpoint.aclose()
    content = turn.message.get("content")
    return content if isinstance(content, str) else None


async def test_the_given_context_is_the_one_that_verifies_the_server(
    https_url: str, certificate: Path
) -> None:
    trusting = ssl.create_default_context(cafile=str(certificate))
    shared = [
        OpenAIChatServer(base_url=https_url, model="m", ssl_context=trusting, max_retries=0)
        for _ in range(2)
    ]
    assert [await _ask(endpoint) for endpoint in shared] == ["hi", "hi"]
    # The SDK's own context (the system's certificates) does not know this server.
    with pytest.raises(EndpointError):
        await _ask(OpenAIChatServer(base_url=https_url, model="m", max_retries=0))
    # Nor does an empty context: the one given is used, not the SDK's.
    empty = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    with pytest.raises(EndpointError):
        await _ask(
            OpenAIChatServer(base_url=https_url, model="m", ssl_context=empty, max_retries=0)
        )
