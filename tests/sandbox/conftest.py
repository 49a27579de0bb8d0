"""Fixtures the sandbox tests share.

- ``server``: a real HTTP server on 127.0.0.1 (one per test module) serving the
  module's ``routes`` fixture, for the web and browser tests.
- ``wait_dead``, ``entries`` and ``cancel_running``: how the ssh and singularity tests
  watch a command's processes die and cancel a running command.
- ``setup``, ``api`` and ``no_container_leaks``: the docker tests' daemon and images
  (skipped without them), a docker API client, and the check that a test left no
  container of this process behind.
"""

from __future__ import annotations

import asyncio
import http.server
import os
import pathlib
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import pytest

from hermes_sandbox import Sandbox
from tests.sandbox.providers.docker import DockerSetup, docker_or_skip

#: One page of ``routes``: ``status`` (200), ``type`` (``text/html; charset=utf-8``),
#: ``body`` (bytes or str), ``headers`` (extra headers) and ``delay`` (seconds to wait
#: before answering). The route ``"*"`` answers every path not listed.
Route = Mapping[str, Any]


def _handler(routes: Mapping[str, Route]) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            route = routes.get(self.path.split("?")[0]) or routes.get("*") or {"status": 404}
            time.sleep(float(route.get("delay", 0)))
            body = route.get("body", b"")
            data = body.encode() if isinstance(body, str) else bytes(body)
            self.send_response(int(route.get("status", 200)))
            self.send_header("Content-Type", str(route.get("type", "text/html; charset=utf-8")))
            for name, value in dict(route.get("headers", {})).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            try:
                self.wfile.write(data)
            except BrokenPipeError:  # the client gave up (timeout tests)
                return

    return Handler


@pytest.fixture(scope="module")
def server(routes: Mapping[str, Route]) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of a threaded server answering the module's ``routes``."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(routes))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


# --- processes ----------------------------------------------------------------------------


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


async def _wait_dead(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def _entries(directory: pathlib.Path) -> list[str] | None:
    try:
        return sorted(p.name for p in directory.iterdir())
    except FileNotFoundError:
        return None


async def _cancel_running(sandbox: Sandbox) -> int:
    task = asyncio.create_task(sandbox.exec("echo $$ > shell.pid; sleep 300", timeout=600))
    pid_file = pathlib.Path(sandbox.workdir) / "shell.pid"
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.05)
    pid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return pid


@pytest.fixture
def alive() -> Callable[[int], bool]:
    """``alive(pid)``: whether the process exists and is not a zombie."""
    return pid_alive


@pytest.fixture
def wait_dead() -> Callable[..., Awaitable[bool]]:
    """``await wait_dead(pid, seconds=5.0)``: True once the process is gone (or a
    zombie), False if it still lives after ``seconds``."""
    return _wait_dead


@pytest.fixture
def entries() -> Callable[[pathlib.Path], list[str] | None]:
    """``entries(directory)``: the sorted names in it, None if it does not exist."""
    return _entries


@pytest.fixture
def cancel_running() -> Callable[[Sandbox], Awaitable[int]]:
    """``await cancel_running(sandbox)``: start a long command in ``sandbox`` (whose
    workdir is a host path), cancel it once it runs, check the cancellation reached the
    caller, and return the pid of the command's shell."""
    return _cancel_running


# --- docker -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def setup() -> DockerSetup:
    """The docker daemon and the test images; the test is skipped without them."""
    return docker_or_skip()


@pytest.fixture(scope="module")
def api(setup: DockerSetup) -> Iterator[Any]:
    """A docker API client of the daemon (one per test module)."""
    from hermes_sandbox.backends.docker import DockerDaemon

    daemon = DockerDaemon.open()
    yield daemon.api
    daemon.close()


@pytest.fixture
def no_container_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a docker test (one using ``setup``): no container of this process is left
    (any left is removed and fails the test)."""
    yield
    if "setup" not in request.fixturenames:
        return
    from hermes_sandbox.backends.docker import RUN_ID, list_containers, remove_containers

    left = list_containers(run_id=RUN_ID)
    if left:
        remove_containers(run_id=RUN_ID)
        pytest.fail(f"containers left behind: {left}")
