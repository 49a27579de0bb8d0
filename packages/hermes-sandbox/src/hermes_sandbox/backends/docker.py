"""The ``docker`` backend: one container per task, reached only through the docker API.

Each sandbox is a container started from a locally built image (see ``docker_image``):
network off (``network_mode="none"``) unless ``network=True``, never privileged,
``no-new-privileges``, CPU/memory/process limits from the options (256 processes by
default, so a fork bomb stays inside), and a tiny init (docker's ``--init``) whose child,
the *keeper*, holds the container open, removes it after ``terminal_lifetime`` should the
host process die without closing it (``AutoRemove``), and kills every process in the
container on ``SIGUSR1``.

Commands run as ``docker exec`` instances. Their output is read straight from the
daemon's socket with asyncio (the upgraded ``/exec/{id}/start`` stream), so a running
command holds no thread, and it goes into an ``OutputCollector`` as it arrives. The command
runs in its own session (``setsid``); at its timeout, or when the awaiting task is
cancelled, a second exec kills that session's every process; when even that exec cannot
start (a fork bomb filled the process limit) the keeper is told to kill everything.
Files move as tar streams through the archive endpoints.

Every container carries the labels ``hermes-sandbox=1`` and ``hermes-sandbox.run=RUN_ID``
(one id per Python process), so leftovers are easy to find and ``remove_containers``
removes them.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import io
import json
import logging
import os
import posixpath
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar
from urllib.parse import quote, urlparse

from hermes_sandbox.backends.docker_image import DEFAULT_IMAGE, missing_image_hint
from hermes_sandbox.base import Sandbox
from hermes_sandbox.errors import (
    BackendUnavailableError,
    SandboxClosedError,
    SandboxError,
    SandboxStartError,
)
from hermes_sandbox.options import SandboxOptions
from hermes_sandbox.output import OutputCollector
from hermes_sandbox.result import ExecResult

if TYPE_CHECKING:
    from hermes_sandbox.backends.docker_pool import DockerWarmPool

__all__ = [
    "DEFAULT_PIDS_LIMIT",
    "LABEL",
    "LABEL_POOL",
    "LABEL_RUN",
    "LABEL_TASK",
    "RUN_ID",
    "ContainerSpec",
    "DockerDaemon",
    "DockerSandbox",
    "DockerUnreachableError",
    "list_containers",
    "remove_containers",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: One id per Python process, put on every container it starts (label ``LABEL_RUN``).
RUN_ID: Final = uuid.uuid4().hex[:12]
LABEL: Final = "hermes-sandbox"
LABEL_RUN: Final = "hermes-sandbox.run"
LABEL_TASK: Final = "hermes-sandbox.task"
LABEL_POOL: Final = "hermes-sandbox.pool"

DEFAULT_PIDS_LIMIT: Final = 256
DEFAULT_DOCKER_HOST: Final = "unix:///var/run/docker.sock"
#: The keeper outlives ``terminal_lifetime`` by this much before removing the container.
LIFETIME_GRACE: Final = 60.0
#: Seconds to read what a killed command still prints before giving up on its stream.
KILL_DRAIN: Final = 3.0
#: Seconds a kill exec may take before the keeper is asked to kill everything instead.
KILL_TIMEOUT: Final = 10.0
#: Seconds a request to the daemon may take (container creation under load is slow).
API_TIMEOUT: Final = 120

#: The environment every container starts from; ``options.env`` is added per command.
BASE_ENV: Final = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
}

EXTRA_KEYS: Final = frozenset({"base_url", "pool", "runtime", "network_mode", "labels"})

_DIR_BIT: Final = 1 << 31  # Go's os.ModeDir, as in the daemon's path stat
_SYMLINK_BIT: Final = 1 << 27  # Go's os.ModeSymlink
_MAX_LINKS: Final = 16
_READ_LIMIT: Final = 1 << 16
_CHUNK: Final = 1 << 16

# The keeper, init's only child. $1: seconds until it exits (the container then stops and
# the daemon removes it); $2: seconds to set on SIGUSR2 (a warm-pool container re-armed by
# its new owner). SIGUSR1 kills every process but init and itself. It waits on a fifo
# nobody writes, so its loop needs no process, and works when the process limit is full.
KEEPER: Final = r"""
trap 'kill -9 -1 2>/dev/null' USR1
trap 'end=$((SECONDS + $2))' USR2
trap 'exit 0' TERM
f=/tmp/.hermes-keeper-$$
if mkfifo "$f" && exec 3<>"$f"; then
  rm -f "$f"
  nap() { read -r -t "$1" -u 3 _; }
else
  nap() { sleep "$1" & wait "$!"; }
fi
end=$((SECONDS + $1))
while [ "$SECONDS" -lt "$end" ]; do nap "$((end - SECONDS))"; done
"""

# What each command's exec runs: the wrapped script in a new session, whose id (= its pid)
# goes out on stderr, which the command itself never uses (its stderr joins stdout).
EXEC_WRAPPER: Final = 'setsid bash -c "$1" 2>&1 & echo "$!" >&2; exec 2>/dev/null; wait "$!"'

# Kills a command's session ($1: its id = the leader's pid): every process of the session
# and every descendant of one (setsid children too), frozen first so none forks meanwhile,
# then the group and the leader (in case setsid has not run yet). Three passes catch forks
# in flight. Builtins only, so it runs even when the process limit is nearly full.
KILL_SCRIPT: Final = r"""
s=$1
declare -A parent session doomed
for pass in 1 2 3; do
  parent=() session=() doomed=([$s]=1)
  for p in /proc/[0-9]*; do
    read -r l < "$p/stat" 2>/dev/null || continue
    set -- ${l##*") "}
    parent[${p#/proc/}]=$2 session[${p#/proc/}]=$4
  done
  for p in "${!session[@]}"; do [ "${session[$p]}" = "$s" ] && doomed[$p]=1; done
  grew=1
  while [ "$grew" = 1 ]; do
    grew=0
    for p in "${!parent[@]}"; do
      if [ -z "${doomed[$p]}" ] && [ -n "${doomed[${parent[$p]}]}" ]; then
        doomed[$p]=1 grew=1
      fi
    done
  done
  kill -STOP "${!doomed[@]}" 2>/dev/null
  kill -9 -- "-$s" "${!doomed[@]}" 2>/dev/null
done
exit 0
"""


# --------------------------------------------------------------------------------------
# the SDK and the daemon
# --------------------------------------------------------------------------------------
def _sdk() -> Any:
    """The ``docker`` package.

    Raises:
        BackendUnavailableError: if it is not installed.
    """
    try:
        import docker  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - the extra is installed in this repo
        raise BackendUnavailableError(
            "the docker backend needs the docker SDK: pip install 'hermes-sandbox[docker]'"
        ) from exc
    return docker


class DockerUnreachableError(SandboxStartError):
    """The docker daemon did not answer; the message says where it was looked for."""


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
    def open(cls, base_url: str | None = None, *, version: str = "auto") -> DockerDaemon:
        """A client for ``base_url`` without any request when ``version`` is given.

        Raises:
            DockerUnreachableError: if ``version="auto"`` and the daemon does not answer.
            SandboxStartError: for an address the backend cannot stream from.
        """
        url = resolve_docker_host(base_url)
        docker = _sdk()
        if os.environ.get("DOCKER_TLS_VERIFY") and base_url is None:
            raise SandboxStartError(
                "docker: DOCKER_TLS_VERIFY is set but the backend talks plain unix:// or "
                "tcp:// only; unset it or pass base_url='unix:///path/to/docker.sock'"
            )
        try:
            api = docker.APIClient(base_url=url, version=version, timeout=API_TIMEOUT)
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
    async def start_container(
        self, spec: ContainerSpec, *, labels: Mapping[str, str], deadlines: tuple[float, float]
    ) -> str:
        """Create and start a container for ``spec``; its id.

        Cancellation-safe: if the caller is cancelled while the daemon works, the container
        is removed before the cancellation goes on.

        Raises:
            SandboxStartError: with what went wrong and what to do (image missing, ...).
        """
        name = f"hermes-{RUN_ID}-{uuid.uuid4().hex[:10]}"
        work = asyncio.ensure_future(
            self.call(self._create_and_start, spec, name, dict(labels), deadlines)
        )
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            await asyncio.shield(self._remove_after(work, name))
            raise

    async def _remove_after(self, work: asyncio.Future[str], name: str) -> None:
        with contextlib.suppress(BaseException):
            await work
        await self.remove_container(name)

    def _create_and_start(
        self, spec: ContainerSpec, name: str, labels: dict[str, str], deadlines: tuple[float, float]
    ) -> str:
        docker = _sdk()
        api = self.api
        host_config = api.create_host_config(
            network_mode=spec.network_mode,
            privileged=False,
            security_opt=["no-new-privileges"],
            init=True,
            auto_remove=True,
            pids_limit=spec.pids_limit,
            mem_limit=spec.memory_mb * 1024 * 1024 if spec.memory_mb else None,
            memswap_limit=spec.memory_mb * 1024 * 1024 if spec.memory_mb else None,
            nano_cpus=int(spec.cpus * 1e9) if spec.cpus else None,
            runtime=spec.runtime,
        )
        keeper_args = [str(min(max(int(d), 1), 10**8)) for d in deadlines]
        try:
            created = api.create_container(
                image=spec.image,
                command=["bash", "-c", KEEPER, "hermes-keeper", *keeper_args],
                name=name,
                labels={**dict(spec.labels), **labels},
                environment=dict(BASE_ENV),
                working_dir=spec.workdir,
                hostname="sandbox",
                host_config=host_config,
                detach=True,
            )
        except docker.errors.ImageNotFound as exc:
            raise SandboxStartError(missing_image_hint(spec.image)) from exc
        except docker.errors.APIError as exc:
            raise SandboxStartError(
                f"docker: could not create a container from {spec.image!r}: {_explain(exc)}"
            ) from exc
        container_id = str(created["Id"])
        try:
            api.start(container_id)
        except docker.errors.APIError as exc:
            with contextlib.suppress(Exception):
                api.remove_container(container_id, force=True)
            hint = ""
            if "bash" in _explain(exc):
                hint = "; the docker backend needs bash in the image"
            elif "init" in _explain(exc):
                hint = "; the daemon needs its init binary (docker-init, from tini)"
            raise SandboxStartError(
                f"docker: could not start a container from {spec.image!r}: {_explain(exc)}{hint}"
            ) from exc
        return container_id

    async def remove_container(self, container: str) -> None:
        """Force-remove a container; no error if it is already gone."""
        docker = _sdk()
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
        docker = _sdk()
        try:
            self.api.remove_container(container, force=True)
        except docker.errors.NotFound:
            return
        except Exception as exc:
            if not _removal_under_way(exc):
                log.warning("docker: could not remove container %s: %s", container[:12], exc)

    async def _wait_gone(self, container: str) -> None:
        docker = _sdk()
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
        docker = _sdk()
        try:
            await self.call(self.api.kill, container, signal)
        except docker.errors.APIError as exc:
            if exc.status_code in (404, 409):
                raise SandboxClosedError(
                    f"docker: container {container[:12]} is gone or stopped: {_explain(exc)}"
                ) from exc
            raise

    # exec -------------------------------------------------------------------------
    async def exec_create(
        self, container: str, cmd: list[str], env: Mapping[str, str] | None = None
    ) -> str:
        """Create an exec instance; its id.

        Raises:
            SandboxClosedError: if the container is gone or not running.
        """
        docker = _sdk()
        try:
            made = await self.call(
                self.api.exec_create,
                container,
                cmd,
                stdout=True,
                stderr=True,
                stdin=False,
                tty=False,
                environment=dict(env) if env else None,
            )
        except docker.errors.APIError as exc:
            if exc.status_code in (404, 409):
                raise SandboxClosedError(
                    f"docker: container {container[:12]} is gone or not running "
                    f"(it died, reached its lifetime, or was removed): {_explain(exc)}"
                ) from exc
            raise SandboxError(f"docker: could not create an exec: {_explain(exc)}") from exc
        return str(made["Id"])

    async def exec_run(self, container: str, cmd: list[str]) -> tuple[int, bytes]:
        """Run a short command to its end (no streaming); exit code and output.

        Raises:
            SandboxClosedError: if the container is gone or not running.
            SandboxError: if the exec could not start.
        """
        docker = _sdk()
        exec_id = await self.exec_create(container, cmd)
        try:
            output = await self.call(self.api.exec_start, exec_id)
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker: exec {cmd[:2]} failed: {_explain(exc)}") from exc
        return await self.exec_exit_code(exec_id), bytes(output or b"")

    async def exec_exit_code(self, exec_id: str) -> int:
        """The exit code of a finished exec (waits briefly if the daemon lags)."""
        docker = _sdk()
        info: dict[str, Any] = {}
        for _ in range(50):
            try:
                info = await self.call(self.api.exec_inspect, exec_id)
            except docker.errors.NotFound as exc:
                raise SandboxClosedError(
                    f"docker: the command's container went away while it ran: {_explain(exc)}"
                ) from exc
            if not info.get("Running"):
                break
            await asyncio.sleep(0.02)
        code = info.get("ExitCode")
        return -1 if code is None else int(code)

    async def exec_stream(self, exec_id: str) -> ExecStream:
        """Start an exec and return its output stream (read with asyncio).

        Raises:
            DockerUnreachableError: if the daemon cannot be reached.
            SandboxClosedError: if the exec's container is gone.
            SandboxError: for another refusal by the daemon.
        """
        try:
            if self._unix_path is not None:
                reader, writer = await asyncio.open_unix_connection(
                    self._unix_path, limit=_READ_LIMIT
                )
            else:
                assert self._tcp is not None
                reader, writer = await asyncio.open_connection(*self._tcp, limit=_READ_LIMIT)
        except OSError as exc:
            raise DockerUnreachableError(_unreachable_message(self.base_url, exc)) from exc
        stream = ExecStream(reader, writer)
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
        docker = _sdk()
        try:
            return await self.call(fn, *args)
        except docker.errors.NotFound as exc:
            if "No such container" in _explain(exc):
                raise SandboxClosedError(f"docker: container {container[:12]} is gone") from exc
            raise FileNotFoundError(_explain(exc)) from exc
        except docker.errors.APIError as exc:
            raise SandboxError(f"docker: download failed: {_explain(exc)}") from exc

    def get_archive_bytes(self, container: str, path: str) -> bytes:
        """A tar of ``path`` (blocking; run it with ``call``)."""
        bits, _ = self.api.get_archive(container, path, chunk_size=None)
        return b"".join(bits)

    def iter_archive(self, container: str, path: str) -> Iterator[bytes]:
        """The tar of ``path`` as chunks (blocking iteration)."""
        bits, _ = self.api.get_archive(container, path, chunk_size=_CHUNK)
        return iter(bits)


def _removal_under_way(exc: BaseException) -> bool:
    """Whether the daemon refused a removal because one is already in progress."""
    return getattr(exc, "status_code", None) == 409 and "in progress" in _explain(exc)


def _explain(exc: Any) -> str:
    explanation = getattr(exc, "explanation", None)
    return str(explanation or exc)


def _unreachable_message(url: str, exc: BaseException) -> str:
    return (
        f"docker: cannot reach the daemon at {url} ({type(exc).__name__}: {exc}); start "
        f"dockerd (as root: `dockerd --bridge=none --iptables=false &`, or run "
        f".ci/services/docker.sh) or point DOCKER_HOST / base_url at a running one"
    )


# --------------------------------------------------------------------------------------
# the exec output stream
# --------------------------------------------------------------------------------------
class ExecStream:
    """The multiplexed output of one started exec, read from the daemon's socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def start(self, version: str, exec_id: str) -> None:
        """Send ``POST /exec/{id}/start`` and read the response head.

        Raises:
            SandboxClosedError: if the exec or its container is gone.
            SandboxError: for any other refusal.
        """
        body = b'{"Detach":false,"Tty":false}'
        head = (
            f"POST /v{version}/exec/{quote(exec_id)}/start HTTP/1.1\r\n"
            "Host: docker\r\nUser-Agent: hermes-sandbox\r\n"
            "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        self._writer.write(head + body)
        await self._writer.drain()
        try:
            response = await self._reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise SandboxError("docker: the daemon closed the exec stream at once") from exc
        status_line = response.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        if status in (101, 200):
            return
        detail = b""
        with contextlib.suppress(Exception):
            detail = await asyncio.wait_for(self._reader.read(4096), 2)
        message = f"docker: exec start failed: {status_line} {detail.decode(errors='replace')}"
        if status in (404, 409):
            raise SandboxClosedError(message)
        raise SandboxError(message)

    async def pump(
        self, on_stdout: Callable[[bytes], None], on_stderr: Callable[[bytes], None]
    ) -> None:
        """Read frames until the stream ends, passing each piece to its stream's callback.
        Memory stays bounded: at most one chunk is held at a time."""
        reader = self._reader
        while True:
            try:
                header = await reader.readexactly(8)
            except asyncio.IncompleteReadError:
                return
            sink = on_stderr if header[0] == 2 else on_stdout
            remaining = int.from_bytes(header[4:8], "big")
            while remaining:
                chunk = await reader.read(min(remaining, _CHUNK))
                if not chunk:
                    return
                remaining -= len(chunk)
                sink(chunk)

    async def aclose(self) -> None:
        """Close the socket (idempotent)."""
        self._writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), 1)


class _SessionId:
    """Parses the first line of the exec's stderr: the command's session id."""

    __slots__ = ("_buffer", "_stray", "known", "value")

    def __init__(self, stray: Callable[[bytes], None]) -> None:
        self._buffer = b""
        self._stray = stray
        self.value: int | None = None
        self.known = asyncio.Event()

    def feed(self, data: bytes) -> None:
        if self.value is not None:
            self._stray(data)
            return
        self._buffer += data
        line, newline, rest = self._buffer.partition(b"\n")
        if newline:
            self._buffer = b""
            if line.strip().isdigit():
                self._set(int(line))
                if rest:
                    self._stray(rest)
            else:
                self._set(0)
                self._stray(line + newline + rest)
        elif len(self._buffer) > 64:
            self._set(0)
            self._stray(self._buffer)
            self._buffer = b""

    def _set(self, value: int) -> None:
        self.value = value
        self.known.set()


# --------------------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """What a container is made from; a warm-pool container serves a sandbox whose spec
    is equal."""

    image: str = DEFAULT_IMAGE
    workdir: str = "/workspace"
    cpus: float | None = None
    memory_mb: int | None = None
    pids_limit: int = DEFAULT_PIDS_LIMIT
    network_mode: str = "none"
    runtime: str | None = None
    lifetime: float = 3600.0
    labels: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_options(cls, options: SandboxOptions, workdir: str) -> ContainerSpec:
        """The spec of ``options`` (common fields plus docker's ``extra`` keys).

        Raises:
            ValueError: for unknown ``extra`` keys or values of the wrong kind.
        """
        extra = dict(options.extra)
        unknown = sorted(set(extra) - EXTRA_KEYS)
        if unknown:
            raise ValueError(
                f"docker: unknown option(s) {', '.join(map(repr, unknown))}; the docker "
                f"backend accepts {', '.join(sorted(EXTRA_KEYS))} besides SandboxOptions fields"
            )
        for key in ("base_url", "runtime", "network_mode"):
            if extra.get(key) is not None and not isinstance(extra[key], str):
                raise ValueError(f"docker: option {key!r} must be a string, got {extra[key]!r}")
        labels = extra.get("labels") or {}
        if not isinstance(labels, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            raise ValueError(f"docker: option 'labels' must map str to str, got {labels!r}")
        network_mode = extra.get("network_mode")
        if not options.network:
            if network_mode not in (None, "none"):
                raise ValueError(
                    f"docker: network_mode={network_mode!r} needs network=True "
                    "(the network is off by default)"
                )
            network_mode = "none"
        elif network_mode in (None, "none"):
            network_mode = "bridge"
        if options.cpus is not None and options.cpus <= 0:
            raise ValueError(f"docker: cpus must be positive, got {options.cpus!r}")
        if options.memory_mb is not None and options.memory_mb < 6:
            raise ValueError(f"docker: memory_mb must be at least 6, got {options.memory_mb!r}")
        pids = DEFAULT_PIDS_LIMIT if options.pids_limit is None else options.pids_limit
        if pids < 8:
            raise ValueError(f"docker: pids_limit must be at least 8, got {pids!r}")
        if not posixpath.isabs(workdir):
            raise ValueError(f"docker: workdir must be an absolute path, got {workdir!r}")
        return cls(
            image=options.image or DEFAULT_IMAGE,
            workdir=workdir,
            cpus=options.cpus,
            memory_mb=options.memory_mb,
            pids_limit=pids,
            network_mode=str(network_mode),
            runtime=extra.get("runtime"),
            lifetime=options.terminal_lifetime,
            labels=tuple(sorted(labels.items())),
        )


# --------------------------------------------------------------------------------------
# the sandbox
# --------------------------------------------------------------------------------------
class DockerSandbox(Sandbox):
    """A task's container (see the module docstring).

    Options beyond ``SandboxOptions`` (``extra``): ``base_url`` (daemon address; default
    ``$DOCKER_HOST`` or ``unix:///var/run/docker.sock``), ``pool`` (a ``DockerWarmPool`` to
    take a pre-started container from), ``runtime`` (an OCI runtime such as ``runsc``),
    ``network_mode`` (with ``network=True``; default ``bridge``), ``labels``.
    Defaults: image ``hermes-sandbox/debian:bookworm``, ``pids_limit`` 256, network off.

    Raises:
        ValueError: (at construction) for unknown or ill-typed options.
    """

    backend = "docker"

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        super().__init__(options, task_id=task_id)
        self.spec = ContainerSpec.from_options(options, self.workdir)
        pool = options.extra.get("pool")
        if pool is not None:
            from hermes_sandbox.backends.docker_pool import DockerWarmPool

            if not isinstance(pool, DockerWarmPool):
                raise ValueError(f"docker: option 'pool' must be a DockerWarmPool, got {pool!r}")
        self._pool: DockerWarmPool | None = pool
        self._base_url: str | None = options.extra.get("base_url")
        self._daemon: DockerDaemon | None = None
        self._container: str | None = None
        self._env = {str(k): str(v) for k, v in options.env.items()}
        self._background: set[asyncio.Task[None]] = set()

    @property
    def container_id(self) -> str | None:
        """The container's id while the sandbox is open."""
        return self._container

    # lifecycle ----------------------------------------------------------------------
    async def _start(self) -> None:
        if await self._take_from_pool():
            return
        self._daemon = await DockerDaemon.connect(self._base_url)
        try:
            self._container = await self._daemon.start_container(
                self.spec,
                labels={LABEL: "1", LABEL_RUN: RUN_ID, LABEL_TASK: self.task_id},
                deadlines=(self.spec.lifetime + LIFETIME_GRACE,) * 2,
            )
        except BaseException:
            self._daemon.close()
            self._daemon = None
            raise

    async def _take_from_pool(self) -> bool:
        """Take a ready container from the warm pool if one fits; whether one was taken."""
        pool = self._pool
        if pool is None or pool.closed or not pool.started:
            return False
        if pool.base_url != resolve_docker_host(self._base_url):
            return False
        taken = await pool.take(self.spec)
        if taken is None:
            return False
        self._daemon = DockerDaemon.open(pool.base_url, version=pool.version)
        self._container = taken
        try:
            await self._daemon.signal(taken, "SIGUSR2")  # its lifetime counts from now
        except SandboxClosedError:  # it died while waiting: start a fresh one instead
            await asyncio.shield(self._discard())
            return False
        except BaseException:
            await asyncio.shield(self._discard())
            raise
        return True

    async def _discard(self) -> None:
        container, self._container = self._container, None
        daemon, self._daemon = self._daemon, None
        if daemon is None:
            return
        try:
            if container is not None:
                await daemon.remove_container(container)
        except Exception as exc:  # the daemon died: nothing more can be done from here
            log.warning("docker: could not remove container %s: %s", container, exc)
        finally:
            daemon.close()

    async def _close(self) -> None:
        work = asyncio.ensure_future(self._discard())
        self._background.add(work)
        work.add_done_callback(self._background.discard)
        await asyncio.shield(work)

    def _close_now(self) -> None:
        container, self._container = self._container, None
        daemon, self._daemon = self._daemon, None
        if daemon is not None:
            if container is not None:
                daemon.remove_container_now(container)
            daemon.close()

    def _require(self) -> tuple[DockerDaemon, str]:
        if self._daemon is None or self._container is None:
            raise SandboxClosedError(f"sandbox {self.task_id} is closed")
        return self._daemon, self._container

    # commands -----------------------------------------------------------------------
    async def _run(self, script: str, *, timeout: float) -> ExecResult:
        daemon, container = self._require()
        collector = OutputCollector(self.options.max_output_chars)
        session = _SessionId(collector.feed)
        exec_id = await daemon.exec_create(
            container, ["bash", "-c", EXEC_WRAPPER, "hermes-exec", script], self._env
        )
        stream = await daemon.exec_stream(exec_id)
        pump = asyncio.ensure_future(stream.pump(collector.feed, session.feed))
        try:
            done, _ = await asyncio.wait({pump}, timeout=timeout)
            if not done:
                # Timed out: learn the session id if it is still on its way, kill the
                # session, then keep what the dying command still prints.
                if session.value is None:
                    known = asyncio.ensure_future(session.known.wait())
                    await asyncio.wait(
                        {pump, known}, timeout=KILL_DRAIN, return_when=asyncio.FIRST_COMPLETED
                    )
                    known.cancel()
                await self._kill_session(daemon, container, session.value)
                await asyncio.wait({pump}, timeout=KILL_DRAIN)
                return ExecResult(collector.text(), 124, True, collector.truncated)
            pump.result()  # the stream's own errors
        except BaseException:
            # Cancelled (or the stream broke): the command must not outlive us.
            await asyncio.shield(self._kill_session(daemon, container, session.value))
            raise
        finally:
            pump.cancel()
            await asyncio.shield(stream.aclose())
        code = await daemon.exec_exit_code(exec_id)
        return ExecResult(collector.text(), code, False, collector.truncated)

    async def _kill_session(self, daemon: DockerDaemon, container: str, sid: int | None) -> None:
        """Kill a command's session; if no exec can start, have the keeper kill all."""
        if sid:
            try:
                async with asyncio.timeout(KILL_TIMEOUT):
                    code, _ = await daemon.exec_run(
                        container, ["bash", "-c", KILL_SCRIPT, "hermes-kill", str(sid)]
                    )
                if code == 0:
                    return
            except SandboxClosedError:
                return
            except (SandboxError, TimeoutError) as exc:
                log.info("docker: kill exec failed (%s); killing every process", exc)
        with contextlib.suppress(SandboxError):
            await daemon.signal(container, "SIGUSR1")

    # files --------------------------------------------------------------------------
    async def _stat(self, path: str) -> dict[str, Any] | None:
        daemon, container = self._require()
        return await daemon.stat(container, path)

    async def _resolve_file(self, path: str) -> tuple[str, dict[str, Any] | None]:
        """Follow symlinks to the final path and its stat (``None`` if missing)."""
        for _ in range(_MAX_LINKS):
            stat = await self._stat(path)
            if stat is None or not int(stat.get("mode", 0)) & _SYMLINK_BIT:
                return path, stat
            target = str(stat.get("linkTarget") or "")
            if not target or target == path:
                return path, stat
            path = target
        raise OSError(f"too many levels of symbolic links at {path} in sandbox {self.task_id}")

    async def _read_bytes(self, path: str) -> bytes:
        daemon, container = self._require()
        real, stat = await self._resolve_file(path)
        if stat is None:
            raise FileNotFoundError(f"no such file in sandbox {self.task_id}: {path}")
        if int(stat.get("mode", 0)) & _DIR_BIT:
            raise IsADirectoryError(f"{path} is a directory in sandbox {self.task_id}")
        return await daemon.fetch(container, _read_single_file, daemon, container, real)

    async def _write_bytes(self, path: str, data: bytes) -> None:
        real, stat = await self._resolve_file(path)
        mode = 0o644
        if stat is not None:
            file_mode = int(stat.get("mode", 0))
            if file_mode & _DIR_BIT:
                raise IsADirectoryError(f"{path} is a directory in sandbox {self.task_id}")
            mode = file_mode & 0o7777
        parent, name = posixpath.split(real)
        archive = await asyncio.to_thread(_single_file_tar, name, data, mode)
        await self._put(parent or "/", archive)

    async def _put(self, directory: str, archive: bytes) -> None:
        docker = _sdk()
        daemon, container = self._require()
        for attempt in range(2):
            try:
                await daemon.call(daemon.api.put_archive, container, directory, archive)
                return
            except docker.errors.NotFound as exc:
                if "No such container" in _explain(exc):
                    raise SandboxClosedError(f"sandbox {self.task_id}: container is gone") from exc
                if attempt:
                    raise FileNotFoundError(f"cannot create {directory} in sandbox") from exc
                await self._mkdir(directory)
            except docker.errors.APIError as exc:
                text = _explain(exc)
                if "not a directory" in text.lower():
                    raise NotADirectoryError(
                        f"{directory} is not a directory in sandbox {self.task_id}"
                    ) from exc
                raise SandboxError(f"docker: could not write into {directory}: {text}") from exc

    async def _mkdir(self, directory: str) -> None:
        daemon, container = self._require()
        code, output = await daemon.exec_run(container, ["mkdir", "-p", "--", directory])
        if code != 0:
            text = output.decode(errors="replace").strip()
            if "Not a directory" in text or "File exists" in text:
                raise NotADirectoryError(f"cannot create directory {directory}: {text}")
            raise SandboxError(f"could not create {directory} in sandbox {self.task_id}: {text}")

    async def _put_archive(self, remote_dir: str, archive: bytes) -> None:
        await self._put(remote_dir, archive)

    async def _get_archive(self, remote_dir: str) -> bytes:
        daemon, container = self._require()
        stat = await self._stat(remote_dir)
        if stat is None:
            raise FileNotFoundError(f"no directory {remote_dir} in sandbox {self.task_id}")
        if not int(stat.get("mode", 0)) & _DIR_BIT:
            raise NotADirectoryError(f"{remote_dir} is not a directory in sandbox {self.task_id}")
        source = remote_dir.rstrip("/") + "/." if remote_dir != "/" else "/."
        return await daemon.fetch(container, daemon.get_archive_bytes, container, source)


# --------------------------------------------------------------------------------------
# tar helpers (blocking; run in threads)
# --------------------------------------------------------------------------------------
def _single_file_tar(name: str, data: bytes, mode: int) -> bytes:
    buffer = io.BytesIO()
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = int(time.time())
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class _ChunkReader(io.RawIOBase):
    """A file object over an iterator of byte chunks (for streaming tar reads)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _read_single_file(daemon: DockerDaemon, container: str, path: str) -> bytes:
    reader = io.BufferedReader(_ChunkReader(daemon.iter_archive(container, path)), _CHUNK)
    with tarfile.open(fileobj=reader, mode="r|") as archive:
        for member in archive:
            if member.isfile():
                extracted = archive.extractfile(member)
                return extracted.read() if extracted is not None else b""
    raise FileNotFoundError(f"{path} is not a regular file")


# --------------------------------------------------------------------------------------
# finding and removing containers
# --------------------------------------------------------------------------------------
def list_containers(*, run_id: str | None = None, base_url: str | None = None) -> list[str]:
    """Ids of this package's containers (all runs, or one ``run_id``), running or not.
    Blocking.

    Raises:
        DockerUnreachableError: if the daemon does not answer.
    """
    daemon = DockerDaemon.open(base_url)
    try:
        wanted = [f"{LABEL}=1"] + ([f"{LABEL_RUN}={run_id}"] if run_id else [])
        found = daemon.api.containers(all=True, filters={"label": wanted})
        return [str(c["Id"]) for c in found]
    finally:
        daemon.close()


def remove_containers(*, run_id: str | None = None, base_url: str | None = None) -> int:
    """Force-remove this package's containers (all runs, or one ``run_id``: pass
    ``RUN_ID`` for this process's); how many were removed. Blocking: meant for atexit
    handlers and cleanup scripts.

    Raises:
        DockerUnreachableError: if the daemon does not answer.
    """
    docker = _sdk()
    daemon = DockerDaemon.open(base_url)
    removed = 0
    try:
        wanted = [f"{LABEL}=1"] + ([f"{LABEL_RUN}={run_id}"] if run_id else [])
        for found in daemon.api.containers(all=True, filters={"label": wanted}):
            with contextlib.suppress(docker.errors.NotFound):
                daemon.api.remove_container(found["Id"], force=True)
                removed += 1
    finally:
        daemon.close()
    return removed
