"""``DockerSandbox``: a task's container, its commands and its files."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
from collections.abc import Mapping
from typing import Any, Final

from hermes_sandbox.backends.docker._archive import read_single_file, single_file_tar
from hermes_sandbox.backends.docker._daemon import DockerDaemon, resolve_docker_host
from hermes_sandbox.backends.docker._labels import LABEL, LABEL_RUN, LABEL_TASK, RUN_ID
from hermes_sandbox.backends.docker._launch import LIFETIME_GRACE, start_container
from hermes_sandbox.backends.docker._prepare import prepare_docker_image, reap_docker_run
from hermes_sandbox.backends.docker._scripts import (
    EXEC_WRAPPER,
    KILL_SCRIPT,
    STOP_SCRIPT,
    SessionId,
)
from hermes_sandbox.backends.docker._spec import ContainerSpec
from hermes_sandbox.backends.docker.pool import DockerWarmPool
from hermes_sandbox.base import Sandbox
from hermes_sandbox.errors import SandboxClosedError, SandboxError
from hermes_sandbox.lifecycle import ImageSource, PreparedImage
from hermes_sandbox.options import SandboxOptions
from hermes_sandbox.output import OutputCollector
from hermes_sandbox.result import ExecResult

__all__ = ["KILL_DRAIN", "KILL_TIMEOUT", "STOP_ATTEMPTS", "DockerSandbox"]

log = logging.getLogger(__name__)

#: Seconds to read what a killed command still prints before giving up on its stream.
KILL_DRAIN: Final = 3.0
#: Seconds a kill exec may take before the keeper is asked to kill everything instead.
KILL_TIMEOUT: Final = 10.0

#: Stop execs tried (with the keeper's kill-all between them) before ``stop_processes``
#: gives up.
STOP_ATTEMPTS: Final = 3

_DIR_BIT: Final = 1 << 31  # Go's os.ModeDir, as in the daemon's path stat
_SYMLINK_BIT: Final = 1 << 27  # Go's os.ModeSymlink
_MAX_LINKS: Final = 16


class DockerSandbox(Sandbox):
    """A task's container (see the ``hermes_sandbox.backends.docker`` docstring).

    Options beyond ``SandboxOptions`` (``extra``): ``base_url`` (daemon address; default
    ``$DOCKER_HOST`` or ``unix:///var/run/docker.sock``), ``pool`` (a ``DockerWarmPool`` to
    take a pre-started container from), ``runtime`` (an OCI runtime such as ``runsc``),
    ``network_mode`` (with ``network=True``; default ``bridge``), ``labels``.
    Defaults: image ``hermes-sandbox/debian:bookworm``, ``cpus`` 1, ``pids_limit`` 256,
    network off.

    Raises:
        ValueError: (at construction) for unknown or ill-typed options, naming the option.
    """

    backend = "docker"

    @classmethod
    async def prepare_image(
        cls, source: ImageSource, options: Mapping[str, Any] | None = None
    ) -> PreparedImage:
        """Pull or build ``source`` on the daemon (see ``_prepare.prepare_docker_image``).

        Raises:
            ImageUnavailableError, ImageBuildError, DockerUnreachableError, ValueError:
                as ``prepare_docker_image``.
        """
        return await prepare_docker_image(source, options)

    @classmethod
    async def reap_run(cls, run_id: str, options: Mapping[str, Any] | None = None) -> int:
        """Remove the containers of run ``run_id`` (see ``_prepare.reap_docker_run``).

        Raises:
            ValueError: an empty ``run_id``.
        """
        return await reap_docker_run(run_id, options)

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        super().__init__(options, task_id=task_id)
        self.spec = ContainerSpec.from_options(options, self.workdir)
        pool = options.extra.get("pool")
        if pool is not None and not isinstance(pool, DockerWarmPool):
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
            self._container = await start_container(
                self._daemon,
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
        session = SessionId(collector.feed)
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

    async def _stop_processes(self) -> None:
        # An exec of its own (outside the session) kills all but init, the keeper and
        # itself. If none can start (the process limit is full) or processes keep
        # coming, the keeper kills everything but itself and init, and it is tried again.
        daemon, container = self._require()
        problem = ""
        for _ in range(STOP_ATTEMPTS):
            try:
                async with asyncio.timeout(KILL_TIMEOUT):
                    code, output = await daemon.exec_run(
                        container, ["bash", "-c", STOP_SCRIPT, "hermes-stop"]
                    )
                if code == 0:
                    return
                problem = f"exit {code}: {output.decode(errors='replace').strip()}"
            except (SandboxError, TimeoutError) as exc:
                if isinstance(exc, SandboxClosedError):
                    raise
                problem = str(exc) or type(exc).__name__
            log.info("docker: stop exec failed (%s); the keeper kills every process", problem)
            await daemon.signal(container, "SIGUSR1")
            await asyncio.sleep(0.05)
        raise SandboxError(
            f"docker: could not stop the processes of sandbox {self.task_id} "
            f"({STOP_ATTEMPTS} attempts; last: {problem}); close it instead"
        )

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

        def read() -> bytes:
            return read_single_file(daemon.iter_archive(container, real), real)

        return await daemon.fetch(container, read)

    async def _write_bytes(self, path: str, data: bytes) -> None:
        real, stat = await self._resolve_file(path)
        mode = 0o644
        if stat is not None:
            file_mode = int(stat.get("mode", 0))
            if file_mode & _DIR_BIT:
                raise IsADirectoryError(f"{path} is a directory in sandbox {self.task_id}")
            mode = file_mode & 0o7777
        parent, name = posixpath.split(real)
        archive = await asyncio.to_thread(single_file_tar, name, data, mode)
        await self._put(parent or "/", archive)

    async def _put(self, directory: str, archive: bytes) -> None:
        daemon, container = self._require()
        try:
            await daemon.put_archive(container, directory, archive)
            return
        except FileNotFoundError:
            await self._mkdir(directory)
        except NotADirectoryError as exc:
            raise NotADirectoryError(
                f"{directory} is not a directory in sandbox {self.task_id}"
            ) from exc
        try:
            await daemon.put_archive(container, directory, archive)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"cannot create {directory} in sandbox {self.task_id}") from exc

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
