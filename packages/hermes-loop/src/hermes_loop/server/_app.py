"""``ModelServer``: the scripted model as a real HTTP server on the loopback interface.

Routes:

- ``POST /v1/chat/completions``: OpenAI chat completions (``dialects.openai_chat``).
- ``POST /v1/responses``: OpenAI's Responses API (``dialects.openai_responses``).
- ``POST /generate``: the token-level route of Atropos' managed vLLM server
  (``dialects.vllm_generate``), or SGLang's shape (``dialects.sglang_generate``), told
  apart by the body.
- ``GET /v1/models``, ``GET /health``.

Every model request goes the same way: its dialect reads the body, the steps every
request shares answer it (``_answering``: responder, turn, fault, completion), and the
route writes the completion in the dialect's payload. This module holds the server's
lifecycle (binding, admission, ``max_requests``, shutdown) and its routes.
"""

from __future__ import annotations

import asyncio
import ipaddress
import itertools
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

try:
    from aiohttp import web
except ImportError as _missing:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "hermes_loop.server needs aiohttp; install it with: pip install 'hermes-loop[server]'"
    ) from _missing

from hermes_loop.server._answering import Answerer
from hermes_loop.server._dialects.generate import generated
from hermes_loop.server._dialects.openai_chat import (
    ChatRequest,
    chat_events,
    chat_payload,
    read_chat,
)
from hermes_loop.server._dialects.openai_responses import (
    read_responses,
    responses_events,
    responses_output,
    responses_payload,
)
from hermes_loop.server._dialects.sglang_generate import is_sglang, read_sglang, sglang_payload
from hermes_loop.server._dialects.vllm_generate import read_vllm, vllm_payload
from hermes_loop.server._routing import ModelRouter, ResponderSpec
from hermes_loop.server._wire import Dropped, Rejected, read_json, send_events, send_json
from hermes_loop.templates._tokenizer import Tokenizer, load_tokenizer
from hermes_parsers import ToolCallParser, get_parser

__all__ = [
    "CHAT_PATH",
    "GENERATE_PATH",
    "HEALTH_PATH",
    "MODELS_PATH",
    "RESPONSES_PATH",
    "ModelServer",
]

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
GENERATE_PATH = "/generate"
MODELS_PATH = "/v1/models"
HEALTH_PATH = "/health"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ModelServer:
    """A scripted OpenAI-compatible model server, for tests, demos and benchmarks.

    Use it as ``async with ModelServer(responder) as server:`` and point a client at
    ``server.base_url``. Each request is answered by the responder its ``model`` field
    names. A model not served is a 404 naming the served models, unless
    ``default_model`` is given; a request with no ``model`` field goes to
    ``default_model`` or the only responder.

    Args:
        responder: a ``Responder`` (``Script``, ``Replay``, ``Policy``; served under its
            ``name``, else ``"scripted"``), a mapping of model name -> responder, or a
            list of turns (a ``Script`` served as ``"scripted"``).
        tokenizer: a ``Tokenizer``, a path to a ``tokenizer.json`` (or its directory), or
            ``None`` for the tiny ChatML tokenizer shipped with hermes-loop.
        parser: the ``hermes_parsers`` format raw completions are written in.
        host: a loopback address; the server never listens on other interfaces.
        port: 0 picks a free port.
        max_requests: after this many model requests (chat, responses and generate) the server
            answers 503 and shuts down.
        default_model: the responder for requests whose ``model`` is not served.
        shutdown_timeout: seconds ``close()`` waits for in-flight answers before
            cancelling them (hung and delayed answers are dropped at once).

    Raises:
        ValueError: for a non-loopback ``host``, a port outside 0-65535, an unknown
            ``default_model``, or (a ``ScriptError``) a script turn the tokenizer cannot
            encode.
        TypeError: for a ``responder`` of the wrong type.
        KeyError: for an unknown ``parser`` name.
        TokenizerUnavailableError: if the ``tokenizers`` library is missing.
    """

    def __init__(
        self,
        responder: ResponderSpec,
        *,
        tokenizer: Tokenizer | str | Path | None = None,
        parser: str | ToolCallParser = "hermes",
        host: str = "127.0.0.1",
        port: int = 0,
        max_requests: int | None = None,
        default_model: str | None = None,
        shutdown_timeout: float = 2.0,
    ) -> None:
        if not _is_loopback(host):
            raise ValueError(f"the scripted model server listens on loopback only, not {host!r}")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0-65535 (0 picks a free one), got {port}")
        if max_requests is not None and max_requests < 1:
            raise ValueError(f"max_requests must be >= 1, got {max_requests}")
        self._router = ModelRouter(responder, default_model)
        if tokenizer is None or isinstance(tokenizer, str | Path):
            tokenizer = load_tokenizer(tokenizer)
        self.tokenizer: Tokenizer = tokenizer
        self.parser: ToolCallParser = get_parser(parser) if isinstance(parser, str) else parser
        self.host = host
        self._requested_port = port
        self.max_requests = max_requests
        self.shutdown_timeout = shutdown_timeout
        self._closing = asyncio.Event()
        self._answerer = Answerer(self._router, self.tokenizer, self.parser, self._closing)
        self._counts: Counter[str] = Counter()
        self._served = 0
        self._ids = itertools.count(1)
        self._stopping = False
        self._closed = asyncio.Event()
        self._close_task: asyncio.Task[None] | None = None
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    @property
    def default_model(self) -> str | None:
        """The responder for requests naming a model not served (``None``: refuse them)."""
        return self._router.default_model

    # lifecycle ------------------------------------------------------------------
    async def start(self) -> None:
        """Bind the port and start answering.

        Raises:
            RuntimeError: if the server was already started.
            OSError: if the port cannot be bound; the message names the host and port
                (e.g. ``cannot listen on 127.0.0.1:8000: Address already in use``).
        """
        if self._runner is not None:
            raise RuntimeError("ModelServer.start() was already called")
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post(CHAT_PATH, self._guard(self._chat, "chat"))
        app.router.add_post(RESPONSES_PATH, self._guard(self._responses, "responses"))
        app.router.add_post(GENERATE_PATH, self._guard(self._generate, "generate"))
        app.router.add_get(MODELS_PATH, self._guard(self._models, "models"))
        app.router.add_get(HEALTH_PATH, self._guard(self._health, "health"))
        runner = web.AppRunner(
            app,
            access_log=None,
            handle_signals=False,
            handler_cancellation=True,
            shutdown_timeout=self.shutdown_timeout,
        )
        await runner.setup()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((self.host, self._requested_port))
            except OSError as exc:
                reason = exc.strerror or str(exc)
                where = f"{self.host}:{self._requested_port}"
                raise OSError(exc.errno, f"cannot listen on {where}: {reason}") from exc
            sock.setblocking(False)
            site = web.SockSite(runner, sock)
            await site.start()
        except BaseException:
            sock.close()
            await runner.cleanup()
            raise
        self._port = int(sock.getsockname()[1])
        self._runner = runner

    async def close(self) -> None:
        """Stop listening, drop hung and delayed answers, and wait for the rest.

        Safe to call more than once, and from several tasks.
        """
        self._stopping = True
        self._closing.set()
        if self._close_task is None:
            self._close_task = asyncio.ensure_future(self._shutdown())
        await asyncio.shield(self._close_task)

    async def _shutdown(self) -> None:
        try:
            if self._runner is not None:
                await self._runner.cleanup()
        finally:
            self._closed.set()

    async def wait_closed(self) -> None:
        """Return once the server has shut down (e.g. after ``max_requests``)."""
        await self._closed.wait()

    @property
    def closed(self) -> bool:
        """Whether the server has shut down."""
        return self._closed.is_set()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # facts ----------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound port.

        Raises:
            RuntimeError: before ``start()``.
        """
        if self._port is None:
            raise RuntimeError("the ModelServer is not started; use 'async with' or start()")
        return self._port

    @property
    def url(self) -> str:
        """The server root, e.g. ``http://127.0.0.1:PORT`` (``/generate`` lives here)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    @property
    def requests(self) -> dict[str, int]:
        """Requests received so far, by endpoint: ``"chat"`` (``/v1/chat/completions``),
        ``"responses"`` (``/v1/responses``), ``"generate"``, ``"models"``, ``"health"``
        (endpoints not yet called are absent)."""
        return dict(self._counts)

    @property
    def models(self) -> list[str]:
        """The model names served."""
        return self._router.models

    def __repr__(self) -> str:
        where = self.url if self._port is not None else "not started"
        return f"ModelServer({where}, models={self.models}, parser={self.parser.name!r})"

    # plumbing -------------------------------------------------------------------
    def _guard(self, handler: Handler, endpoint: str) -> Handler:
        counted = endpoint in ("chat", "responses", "generate")

        async def guarded(request: web.Request) -> web.StreamResponse:
            self._counts[endpoint] += 1
            last = False
            try:
                if counted:
                    last = self._admit()
                response = await handler(request)
            except Rejected as reject:
                response = reject.response()
            except Dropped as drop:
                if request.transport is not None:
                    request.transport.close()
                return drop.response or web.Response(status=499)
            if last:
                if not response.prepared:
                    await response.prepare(request)
                await response.write_eof()
                self._begin_shutdown()
            return response

        return guarded

    def _admit(self) -> bool:
        """Refuse when stopping; return whether this request is the last one allowed."""
        if self._stopping:
            raise Rejected(503, "the scripted model server is shutting down", "server_shutdown")
        if self.max_requests is None:
            return False
        self._served += 1
        if self._served > self.max_requests:
            self._begin_shutdown()
            raise Rejected(
                503,
                f"the scripted model server served its max_requests={self.max_requests}",
                "max_requests_reached",
            )
        return self._served == self.max_requests

    def _begin_shutdown(self) -> None:
        self._stopping = True
        if self._close_task is None:
            self._close_task = asyncio.ensure_future(self._shutdown_soon())

    async def _shutdown_soon(self) -> None:
        self._closing.set()
        await self._shutdown()

    def _new_id(self, prefix: str, sep: str = "-") -> str:
        return f"{prefix}{sep}{next(self._ids):012x}"

    def _item_id(self, prefix: str) -> str:
        """An id in the Responses API's form (``resp_...``, ``msg_...``, ``fc_...``)."""
        return self._new_id(prefix, "_")

    # routes ---------------------------------------------------------------------
    async def _health(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"status": "ok"})

    async def _models(self, request: web.Request) -> web.StreamResponse:
        data = [
            {"id": name, "object": "model", "created": 0, "owned_by": "hermes-loop"}
            for name in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        parsed: ChatRequest = read_chat(await read_json(request))
        answer, reply = await self._answerer.chat_answer(parsed)
        ident, created = self._new_id("chatcmpl"), int(time.time())
        if parsed.stream:
            events = chat_events(parsed, reply, ident=ident, created=created, model=answer.model)
            return await send_events(request, events, truncate=answer.truncate)
        payload = chat_payload(parsed, reply, ident=ident, created=created, model=answer.model)
        return await send_json(request, payload, truncate=answer.truncate)

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        parsed = read_responses(await read_json(request))
        answer, reply = await self._answerer.chat_answer(parsed)
        output = responses_output(parsed, reply, new_id=self._item_id)
        payload = responses_payload(
            parsed, reply, output, ident=self._item_id("resp"), created=int(time.time()),
            model=answer.model,
        )  # fmt: skip
        if parsed.stream:
            events = responses_events(payload)
            return await send_events(request, events, truncate=answer.truncate, named=True)
        return await send_json(request, payload, truncate=answer.truncate)

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        body = await read_json(request)
        payload: Any
        if is_sglang(body):
            sglang = read_sglang(body, self.tokenizer)
            answer = await self._answerer.answer(sglang)
            reply = generated(sglang, answer.completion, self.tokenizer)
            payload = sglang_payload(
                sglang,
                reply,
                eos_token_id=self.tokenizer.eos_token_id,
                new_id=lambda: self._new_id("gen"),
            )
        else:
            vllm = read_vllm(body, self.tokenizer)
            answer = await self._answerer.answer(vllm)
            payload = vllm_payload(vllm, generated(vllm, answer.completion, self.tokenizer))
        return await send_json(request, payload, truncate=answer.truncate)
