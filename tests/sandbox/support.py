"""Helpers several sandbox test modules share (test modules never import each other)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hermes_sandbox import ExecResult, Sandbox, SandboxOptions, SandboxStartError
from hermes_sandbox.backends.local import LocalSandbox

__all__ = [
    "KILLED_CHILD",
    "FakeSandbox",
    "Maker",
    "OwnLoopCheckSandbox",
    "fake",
    "http_server",
    "images_removed_after",
    "kill_9_child",
]


class FakeSandbox(Sandbox):
    """An in-memory sandbox that records its lifecycle; ``gate`` holds ``_start``."""

    backend = "fake"

    def __init__(
        self,
        options: SandboxOptions,
        *,
        task_id: str | None = None,
        gate: asyncio.Event | None = None,
        fail: bool = False,
    ) -> None:
        super().__init__(options, task_id=task_id)
        self.gate = gate
        self.fail = fail
        self.starts = 0
        self.closes = 0
        self.files: dict[str, bytes] = {}

    async def _start(self) -> None:
        self.starts += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise SandboxStartError("fake: refusing to start, as asked")

    async def _close(self) -> None:
        self.closes += 1

    async def _run(self, script: str, *, timeout: float) -> ExecResult:
        return ExecResult(script, 0)

    async def _read_bytes(self, path: str) -> bytes:
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    async def _write_bytes(self, path: str, data: bytes) -> None:
        self.files[path] = data


def fake(task_id: str = "t", **options: object) -> FakeSandbox:
    return FakeSandbox(SandboxOptions.from_kwargs(**options), task_id=task_id)


class Maker:
    """A pool factory that records what it made."""

    def __init__(self, *, gate: asyncio.Event | None = None, fail: bool = False) -> None:
        self.gate = gate
        self.fail = fail
        self.made: list[FakeSandbox] = []

    def __call__(self, task_id: str) -> Sandbox:
        sandbox = FakeSandbox(SandboxOptions(), task_id=task_id, gate=self.gate, fail=self.fail)
        self.made.append(sandbox)
        return sandbox


KILLED_CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from hermes_sandbox import create_sandbox

    async def main():
        isolation = sys.argv[2]
        sandbox = await create_sandbox("local", task_id="orphan", isolation=isolation).start()
        await sandbox.exec(f"(exec -a {sys.argv[1]} sleep 300) &")
        print(sandbox.root, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no close, no atexit: what kill -9 leaves

    asyncio.run(main())
    """
)


def kill_9_child(name: str, tmp_path: Path, isolation: str = "none") -> str:
    """Run a child that starts a local sandbox in ``tmp_path`` with a background process
    named ``name``, then SIGKILLs itself; the sandbox's root directory."""
    child = subprocess.run(
        [sys.executable, "-c", KILLED_CHILD, name, isolation],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    return child.stdout.strip()


class OwnLoopCheckSandbox(LocalSandbox):
    """A local sandbox that, like an SDK whose client belongs to one event loop, refuses
    commands on any loop but the one that started it, in its own words (``refusal``)."""

    refusal = "this client may only be used from the thread that opened it"

    async def _start(self) -> None:
        self.home = asyncio.get_running_loop()
        await super()._start()

    async def _run(self, script: str, **options: Any) -> ExecResult:
        if asyncio.get_running_loop() is not self.home:
            raise RuntimeError(self.refusal)
        return await super()._run(script, **options)


@contextlib.contextmanager
def http_server(body: bytes) -> Iterator[int]:
    """An HTTP server on 127.0.0.1 answering every GET with ``body``; its port (the
    docker image and network tests fetch from it, from a build or a sandbox)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextlib.contextmanager
def images_removed_after(api: Any) -> Iterator[list[str]]:
    """A list for the image tags a test makes; each is removed (by docker API client
    ``api``) afterwards, newest first, whatever the test did."""
    made: list[str] = []
    try:
        yield made
    finally:
        for tag in reversed(made):
            with contextlib.suppress(Exception):
                api.remove_image(tag, force=True)
