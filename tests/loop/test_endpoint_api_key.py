"""A literal ``api_key`` reaches the wire through ``make_client``, for both endpoints."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from hermes_loop import GenerateChatServer, OpenAIChatServer
from hermes_loop._errors import EndpointError
from hermes_loop.endpoints import SamplingParams
from hermes_loop.templates._tokenizer import load_tokenizer

CHAT_ANSWER = {
    "id": "c1",
    "object": "chat.completion",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
    ],
}


class Recorder:
    """A loopback HTTP server that keeps each request's Authorization header."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []
        self.url = ""

    async def chat(self, request: web.Request) -> web.Response:
        self.seen.append(request.headers.get("Authorization"))
        return web.json_response(CHAT_ANSWER)

    async def generate(self, request: web.Request) -> web.Response:
        self.seen.append(request.headers.get("Authorization"))
        return web.json_response({"error": "recorded"}, status=400)


@pytest.fixture
async def recorder() -> AsyncIterator[Recorder]:
    rec = Recorder()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", rec.chat)
    app.router.add_post("/generate", rec.generate)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    rec.url = f"http://127.0.0.1:{port}"
    try:
        yield rec
    finally:
        await runner.cleanup()


async def test_chat_server_sends_the_literal_key(recorder: Recorder) -> None:
    server = OpenAIChatServer(
        base_url=f"{recorder.url}/v1", model="m", api_key="sk-literal-123", api_key_env="HOME"
    )
    try:
        turn = await server.session("t").complete(
            [{"role": "user", "content": "hello"}], None, SamplingParams()
        )
    finally:
        await server.aclose()
    assert turn.message["content"] == "hi"
    assert recorder.seen == ["Bearer sk-literal-123"]


async def test_chat_server_without_a_key_reads_the_variable(recorder: Recorder) -> None:
    server = OpenAIChatServer(
        base_url=f"{recorder.url}/v1",
        model="m",
        api_key=None,
        api_key_env="HERMES_TEST_NO_SUCH_VARIABLE",
    )
    try:
        await server.session("t").complete(
            [{"role": "user", "content": "x"}], None, SamplingParams()
        )
    finally:
        await server.aclose()
    assert recorder.seen == ["Bearer no-key-set"]


async def test_generate_server_sends_the_literal_key(recorder: Recorder) -> None:
    server = GenerateChatServer(
        base_url=f"{recorder.url}/v1",
        tokenizer=load_tokenizer(),
        api_key="sk-generate-456",
        max_retries=0,
    )
    try:
        with pytest.raises(EndpointError):
            await server.session("t").complete(
                [{"role": "user", "content": "hello"}], None, SamplingParams()
            )
    finally:
        await server.aclose()
    assert recorder.seen == ["Bearer sk-generate-456"]
