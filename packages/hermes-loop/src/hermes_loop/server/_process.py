"""Run the scripted model server outside the caller's event loop.

- ``ModelServerProcess``: ``python -m hermes_loop.server`` in a child process (for
  benchmarks, so the server does not share the client's CPU time or event loop). The
  calling process needs no ``aiohttp`` for it.
- ``ModelServerThread``: a ``ModelServer`` on its own event loop in a background thread
  (for synchronous code).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from hermes_loop._errors import HermesLoopError

if TYPE_CHECKING:
    from hermes_loop.server._app import ModelServer
    from hermes_loop.server._routing import ResponderSpec

__all__ = ["ModelServerProcess", "ModelServerThread", "ServerStartError"]

_LISTENING = re.compile(r"listening on (http://\S+)")


class ServerStartError(HermesLoopError, RuntimeError):
    """The server did not start (bad script, port in use, timeout); the message says why."""


class ModelServerProcess:
    """``hermes-model-server`` in a child process, as a (sync or async) context manager.

    Entering starts ``python -m hermes_loop.server SCRIPT... --port PORT`` and waits for
    its ``listening on http://127.0.0.1:PORT`` line; leaving closes its stdin (the child
    shuts down when stdin closes, so it also goes away if this process dies), then
    terminates and finally kills it if it lingers. No process is left behind, whether
    the ``with`` body succeeds or raises.

    Args:
        scripts: one or more script files (see ``load_script_file``).
        parser, tokenizer, port, max_requests, default_model: as ``ModelServer``.
        startup_timeout: seconds to wait for the listening line.
        python: the interpreter to run (default: this one).

    Raises (on entering):
        ServerStartError: if the child exits before listening (its output is in the
            message, e.g. a script error naming the file, turn and field) or does not
            listen within ``startup_timeout``.
    """

    def __init__(
        self,
        scripts: str | Path | Sequence[str | Path],
        *,
        parser: str = "hermes",
        tokenizer: str | Path | None = None,
        port: int = 0,
        max_requests: int | None = None,
        default_model: str | None = None,
        startup_timeout: float = 120.0,
        python: str | None = None,
    ) -> None:
        paths = [scripts] if isinstance(scripts, str | Path) else list(scripts)
        if not paths:
            raise ValueError("ModelServerProcess needs at least one script file")
        self.command = [python or sys.executable, "-m", "hermes_loop.server"]
        self.command += [str(path) for path in paths]
        self.command += ["--port", str(port), "--parser", parser, "--exit-on-stdin-eof"]
        if tokenizer is not None:
            self.command += ["--tokenizer", str(tokenizer)]
        if max_requests is not None:
            self.command += ["--max-requests", str(max_requests)]
        if default_model is not None:
            self.command += ["--default-model", default_model]
        self.startup_timeout = startup_timeout
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._output: collections.deque[str] = collections.deque(maxlen=200)
        self._url: str | None = None

    @property
    def url(self) -> str:
        """The server root, ``http://127.0.0.1:PORT``.

        Raises:
            RuntimeError: when the server is not running.
        """
        if self._url is None:
            raise RuntimeError("the ModelServerProcess is not started; use 'with'")
        return self._url

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return None if self._process is None else self._process.pid

    @property
    def output(self) -> str:
        """The child's last lines of output (stdout and stderr)."""
        return "".join(self._output)

    def _read(self, stream: Any) -> None:
        for line in stream:
            self._output.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def start(self) -> None:
        """Start the child and wait until it listens.

        Raises:
            ServerStartError: see the class docstring.
            RuntimeError: if already started.
        """
        if self._process is not None:
            raise RuntimeError("ModelServerProcess.start() was already called")
        process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        self._process = process
        self._reader = threading.Thread(
            target=self._read, args=(process.stdout,), name="model-server-output", daemon=True
        )
        self._reader.start()
        deadline = time.monotonic() + self.startup_timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ServerStartError(
                        f"the model server did not listen within {self.startup_timeout}s; "
                        f"output:\n{self.output}"
                    )
                try:
                    line = self._lines.get(timeout=remaining)
                except queue.Empty:
                    continue
                if line is None:
                    code = process.wait()
                    raise ServerStartError(
                        f"the model server exited with status {code} before listening:\n"
                        f"{self.output}"
                    )
                found = _LISTENING.search(line)
                if found:
                    self._url = found.group(1).rstrip("/")
                    return
        except BaseException:
            self.stop()
            raise

    def stop(self, timeout: float = 5.0) -> int | None:
        """Stop the child (stdin EOF, then SIGTERM, then SIGKILL); return its exit status."""
        process = self._process
        if process is None:
            return None
        try:
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.terminate()
                try:
                    process.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        finally:
            if self._reader is not None:
                self._reader.join(timeout=timeout)
            if process.stdout is not None:
                process.stdout.close()
            self._process = None
            self._url = None
        return process.returncode

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)


class ModelServerThread:
    """A ``ModelServer`` on its own event loop in a background thread (a sync context manager).

    Args:
        responder: as ``ModelServer``.
        startup_timeout: seconds to wait for the server to listen.
        **options: passed to ``ModelServer``.

    Raises (on entering):
        ServerStartError: if the server does not start; the cause is chained.
    """

    def __init__(
        self, responder: ResponderSpec, *, startup_timeout: float = 60.0, **options: Any
    ) -> None:
        self._responder = responder
        self._options = options
        self.startup_timeout = startup_timeout
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.server: ModelServer | None = None

    @property
    def url(self) -> str:
        """The server root, ``http://127.0.0.1:PORT``."""
        if self.server is None:
            raise RuntimeError("the ModelServerThread is not started; use 'with'")
        return self.server.url

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.url}/v1"

    async def _main(self) -> None:
        try:
            from hermes_loop.server._app import ModelServer

            server = ModelServer(self._responder, **self._options)
            await server.start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self.server = server
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await server.close()

    def __enter__(self) -> Self:
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._main(),), name="model-server", daemon=True
        )
        self._thread.start()
        if not self._ready.wait(self.startup_timeout):
            raise ServerStartError(f"the model server did not start in {self.startup_timeout}s")
        if self._error is not None:
            self._thread.join()
            raise ServerStartError(f"the model server did not start: {self._error}") from (
                self._error
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join()
        self._thread = None
        self.server = None
