"""``DockerDaemon``: one connection to a dockerd, the wrapper every other module of the
backend goes through.

Requests go through the SDK's low-level client, run in threads; an exec's output is read
from a raw asyncio socket (``ExecStream``). The daemon's refusals come back as this
package's errors (``SandboxClosedError`` when the container is gone, ...).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import http.client
import json
import logging
import os
import socket
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeVar
from urllib.parse import quote, urlparse

from hermes_sandbox._errors import SandboxClosedError, SandboxError, SandboxStartError
from hermes_sandbox.backends.docker._errors import DockerUnreachableError
from hermes_sandbox.backends.docker._sdk import explain, load_sdk
from hermes_sandbox.backends.docker._stream import CHUNK, READ_LIMIT, ExecStream

__all__ = [
    "API_TIMEOUT",
    "DEFAULT_DOCKER_HOST",
    "DockerDaemon",
    "resolve_docker_host",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_DOCKER_HOST: Final = "unix:///var/run/docker.sock"
#: Seconds a request to the daemon may take (container creation under load is slow).
API_TIMEOUT: Final = 120


def resolve_docker_host(base_url: str | None = None) -> str:
    """The daemon address: ``base_url``, else ``$DOCKER_HOST``, else the default socket."""
    return base_url or os.environ.get("DOCKER_HOST") or DEFAULT_DOCKER_HOST


class DockerDaemon:
    """One connection to a dockerd: the SDK's low-level client for requests (run in
    threads) and raw asyncio sockets for exec output streams.

    Make it with ``await DockerDaemon.connect(...)`` (checks the daemon answers) or
    ``DockerDaemon.open(base_url, version)`` (no I/O); ``close()`` when done.
    """

    def __init__(self, api: Any, base_url: str) -> None:
        self.api = api
        self.base_url = base_url
        parsed = urlparse(base_url)
        self._unix_path: str | None = None
        self._tcp: tuple[str, int] | None = None
        if parsed.scheme == "unix":
            self._unix_path = parsed.path
        elif parsed.scheme in ("tcp", "http") and parsed.hostname:
            self._tcp = (parsed.hostname, parsed.port or 2375)
        else:
            raise SandboxStartError(
                f"docker: the backend streams command output over a unix:// or plain tcp:// "
                f"daemon socket, not {base_url!r}; forward a remote daemon to a local socket "
                f"(e.g. ssh -L /tmp/docker.sock:/var/run/docker.sock host) and use that"
            )

    @classmethod
    def open(
        cls, base_url: str | None = None, *, version: str = "auto", timeout: float = API_TIMEOUT
    ) -> DockerDaemon:
        """A client for ``base_url`` without any request when ``version`` is given.
        ``timeout``: seconds a request may wait for the daemon's next bytes.

        Raises:
            DockerUnreachableError: if ``version="auto"`` and the daemon does not answer.
            SandboxStartError: for an address the backend cannot stream from.
        """
        url = resolve_docker_host(base_url)
        docker = load_sdk()
        if os.environ.get("DOCKER_TLS_VERIFY") and base_url is None:
            raise SandboxStartError(
                "docker: DOCKER_TLS_VERIFY is set but the backend talks plain unix:// or "
                "tcp:// only; unset it or pass base_url='unix:///path/to/docker.sock'"
            )
        try:
            api = docker.APIClient(base_url=url, version=version, timeout=timeout)
        except docker.errors.DockerException as exc:
            raise DockerUnreachableError(_unreachable_message(url, exc)) from exc
        return cls(api, url)

    @classmethod
    async def connect(cls, base_url: str | None = None) -> DockerDaemon:
        """A client for ``base_url`` (default ``$DOCKER_HOST`` or the local socket),
        after checking the daemon answers.

        Raises:
            DockerUnreachableError: if it does not (message says how to start one).
        """
        return await asyncio.to_thread(cls.open, base_url)

    @property
    def version(self) -> str:
        """The API version in use, e.g. ``"1.41"``."""
        return str(self.api.api_version)

    def close(self) -> None:
        """Close the client's connections (idempotent)."""
        with contextlib.suppress(Exception):
            self.api.close()

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking SDK call in a thread.

        Raises:
            DockerUnreachableError: if the daemon cannot be reached.
            docker.errors.APIError: what the daemon answered otherwise.
        """
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except OSError as exc:  # requests' errors are OSErrors
            if type(exc).__module__.split(".")[0] in ("requests", "urllib3"):
                raise DockerUnreachableError(_unreachable_message(self.base_url, exc)) from exc
            raise

    # containers -------------------------------------------------------------------
    async def remove_container(self, container: str) -> None:
        """Force-remove a container; no error if it is already gone."""
        docker = load_sdk()
        try:
            await self.call(self.api.remove_container, container, force=True)
        except docker.errors.APIError as exc:
            if _removal_under_way(exc):
                await self._wait_gone(container)
            elif not isinstance(exc, docker.errors.NotFound):
                raise

    def remove_container_now(self, container: str) -> None:
        """Force-remove a container, blocking (for teardown without an event loop); logs
        instead of raising. A removal the daemon already has under way is left to it."""
        docker = load_sdk()
        try:
            self.api.remove_container(container, force=True)
        except docker.errors.NotFound:
            return
        except Exception as exc:
            if not _removal_under_way(exc):
                log.warning("docker: could not remove container %s: %s", container[:12], exc)

    async def _wait_gone(self, container: str) -> None:
        docker = load_sdk()
        for _ in range(100):
            try:
                await self.call(self.api.inspect_container, container)
            except docker.errors.NotFound:
                return
            await asyncio.sleep(0.05)

    async def signal(self, container: str, signal: str) -> None:
        """Send ``signal`` to the container's init (which passes it to the keeper).

        Raises:
            SandboxClosedError: if the container is gone or stopped.
        """
        docker = load_sdk()
        try:
            await self.call(self.api.kill, container, signal)
        except docker.errors.APIError as exc:
            if exc.status_code in (404, 409):
                raise SandboxClosedError(
                    f"docker: container {container[:12]} is gone or stopped: {explain(exc)}"
                ) from exc
            raise

    # exec -------------------------------------------------------------------------
    async def exec_create(
        self,
        container: str,
        cmd: list[str],
        env: Mapping[str, str] | None = None,
        *,
        user: str = "",
        stdin: bool = False,
    ) -> str:
        """Create an exec instance; its id. ``user``: who it runs as (``""``: the
        container's user); ``stdin``: whether it reads what is written to its stream.

        Raises:
            SandboxClosedError: if the container is gone or not running.
        """
        docker = load_sdk()
        try:
            made = await self.call(
                self.api.exec_create,
                container,
                cmd,
                stdout=True,
                stderr=True,
                stdin=stdin,
                tty=False,
                environment=dict(env) if env else None,
                user=user,
            )
        except docker.errors.APIError as exc:
            if exc.status_code in (404, 409):
                raise SandboxClosedError(
                    f"docker: container {container[:12]} is gone or not running "
                    f"(it died, reached its lifetime, or was removed): {explain(exc)}"
                ) from exc
            raise SandboxError(f"docker: could not create an exec: {explain(exc)}") from exc
        return str(made["Id"])

    async def exec_run(
        self, container: str, cmd: list[str], env: Mapping[str, str] | None = None
    ) -> tuple[int, bytes]:
        """Run a short command to its end (no streaming); exit code and output.

        Raises:
            SandboxClosedError: if the container is gone or not running.
            SandboxError: if the exec could not start.
        """
        docker = load_sdk()
        exec_id = await self.exec_create(container, cmd, env)
        try:
            output = await self.call(self.api.exec_start, exec_id)
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker: exec {cmd[:2]} failed: {explain(exc)}") from exc
        return await self.exec_exit_code(exec_id), bytes(output or b"")

    async def exec_exit_code(self, exec_id: str) -> int:
        """The exit code of a finished exec (waits briefly if the daemon lags).

        Raises:
            SandboxClosedError: if the exec's container went away.
        """
        docker = load_sdk()
        info: dict[str, Any] = {}
        for _ in range(50):
            try:
                info = await self.call(self.api.exec_inspect, exec_id)
            except docker.errors.NotFound as exc:
                raise SandboxClosedError(
                    f"docker: the command's container went away while it ran: {explain(exc)}"
                ) from exc
            if not info.get("Running"):
                break
            await asyncio.sleep(0.02)
        code = info.get("ExitCode")
        return -1 if code is None else int(code)

    async def open_socket(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A raw connection to the daemon, for endpoints whose answer is read as it
        streams (exec output, build progress); the caller closes the writer.

        Raises:
            DockerUnreachableError: if the daemon cannot be reached.
        """
        try:
            if self._unix_path is not None:
                return await asyncio.open_unix_connection(self._unix_path, limit=READ_LIMIT)
            assert self._tcp is not None
            return await asyncio.open_connection(*self._tcp, limit=READ_LIMIT)
        except OSError as exc:
            raise DockerUnreachableError(_unreachable_message(self.base_url, exc)) from exc

    def http_connection(self, timeout: float = API_TIMEOUT) -> http.client.HTTPConnection:
        """A plain blocking HTTP connection to the daemon (for bulk transfers that the
        SDK's client would copy in small pieces); the caller closes it.

        Raises:
            DockerUnreachableError: if the daemon cannot be reached.
        """
        try:
            if self._unix_path is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(timeout)
                try:
                    sock.connect(self._unix_path)
                except BaseException:
                    sock.close()
                    raise
                connection = http.client.HTTPConnection("docker", timeout=timeout)
                connection.sock = sock
                return connection
            assert self._tcp is not None
            connection = http.client.HTTPConnection(*self._tcp, timeout=timeout)
            connection.connect()
            return connection
        except OSError as exc:
            raise DockerUnreachableError(_unreachable_message(self.base_url, exc)) from exc

    def archive_path(self, container: str, path: str) -> str:
        """The request path of the archive endpoint for ``path`` in ``container``."""
        return f"/v{self.version}/containers/{quote(container)}/archive?path={quote(path, safe='')}"

    async def exec_stream(self, exec_id: str) -> ExecStream:
        """Start an exec and return its output stream (read with asyncio).

        Raises:
            DockerUnreachableError: if the daemon cannot be reached.
            SandboxClosedError: if the exec's container is gone.
            SandboxError: for another refusal by the daemon.
        """
        stream = ExecStream(*await self.open_socket())
        try:
            await stream.start(self.version, exec_id)
        except BaseException:
            await stream.aclose()
            raise
        return stream

    # files ------------------------------------------------------------------------
    def _archive_url(self, container: str) -> str:
        return f"{self.api.base_url}/v{self.version}/containers/{quote(container)}/archive"

    async def stat(self, container: str, path: str) -> dict[str, Any] | None:
        """The daemon's stat of ``path`` (``name, size, mode, linkTarget``), ``None`` if
        there is no such path.

        Raises:
            SandboxClosedError: if the container is gone.
            NotADirectoryError: if a parent of ``path`` is a file.
            SandboxError: for another refusal.
        """

        def head() -> tuple[int, str, str]:
            url, params = self._archive_url(container), {"path": path}
            response = self.api.head(url, params=params)
            status = response.status_code
            encoded = response.headers.get("X-Docker-Container-Path-Stat", "")
            text = ""
            if status >= 400:  # a HEAD answer has no body: ask again for the message
                with contextlib.closing(self.api.get(url, params=params, stream=True)) as got:
                    text = got.raw.read(4096).decode(errors="replace")
            return status, encoded, text

        status, encoded, text = await self.call(head)
        if status == 404:
            if "No such container" in text:
                raise SandboxClosedError(f"docker: container {container[:12]} is gone")
            return None
        if status == 409:
            # Conflict: a path whose parent is a regular file, or a container stopping.
            return None
        if "not a directory" in text.lower():
            raise NotADirectoryError(f"a parent of {path} is not a directory")
        if status >= 400:
            raise SandboxError(f"docker: stat of {path} failed ({status}): {text.strip()}")
        try:
            stat: dict[str, Any] = json.loads(base64.b64decode(encoded))
        except (binascii.Error, ValueError) as exc:
            raise SandboxError(f"docker: unreadable stat header for {path}") from exc
        return stat

    async def fetch(self, container: str, fn: Callable[..., T], *args: Any) -> T:
        """Run an archive download ``fn(*args)`` in a thread, translating the daemon's
        refusals.

        Raises:
            SandboxClosedError: if the container is gone.
            FileNotFoundError: if the path is.
            SandboxError: for another refusal.
        """
        docker = load_sdk()
        try:
            return await self.call(fn, *args)
        except docker.errors.NotFound as exc:
            if "No such container" in explain(exc):
                raise SandboxClosedError(f"docker: container {container[:12]} is gone") from exc
            raise FileNotFoundError(explain(exc)) from exc
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker: download failed: {explain(exc)}") from exc

    async def put_archive(
        self, container: str, directory: str, archive: bytes | Iterator[bytes]
    ) -> None:
        """Unpack a tar (bytes, or chunks sent as they come) into ``directory`` of the
        container.

        Raises:
            SandboxClosedError: if the container is gone.
            FileNotFoundError: if ``directory`` does not exist.
            NotADirectoryError: if it (or a parent) is a file.
            SandboxError: for another refusal.
        """
        docker = load_sdk()
        try:
            await self.call(self.api.put_archive, container, directory, archive)
        except docker.errors.NotFound as exc:
            if "No such container" in explain(exc):
                raise SandboxClosedError(f"docker: container {container[:12]} is gone") from exc
            raise FileNotFoundError(f"no directory {directory}: {explain(exc)}") from exc
        except docker.errors.APIError as exc:
            text = explain(exc)
            if "not a directory" in text.lower():
                raise NotADirectoryError(f"{directory} is not a directory: {text}") from exc
            raise SandboxError(f"docker: could not write into {directory}: {text}") from exc

    def get_archive_bytes(self, container: str, path: str) -> bytes:
        """A tar of ``path`` (blocking; run it with ``fetch``)."""
        bits, _ = self.api.get_archive(container, path, chunk_size=None)
        return b"".join(bits)

    def iter_archive(self, container: str, path: str) -> Iterator[bytes]:
        """The tar of ``path`` as chunks (blocking iteration)."""
        bits, _ = self.api.get_archive(container, path, chunk_size=CHUNK)
        return iter(bits)


def _removal_under_way(exc: BaseException) -> bool:
    """Whether the daemon refused a removal because one is already in progress."""
    return getattr(exc, "status_code", None) == 409 and "in progress" in explain(exc)


def _unreachable_message(url: str, exc: BaseException) -> str:
    return (
        f"docker: cannot reach the daemon at {url} ({type(exc).__name__}: {exc}); start "
        f"dockerd (as root: `dockerd &`, or run "
        f".ci/services/docker.sh) or point DOCKER_HOST / base_url at a running one"
    )
