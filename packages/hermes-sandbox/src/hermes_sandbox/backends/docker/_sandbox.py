"""``DockerSandbox``: a task's container, its commands and its files."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import posixpath
import shlex
import tarfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import FileChangedError, SandboxClosedError, SandboxError
from hermes_sandbox._lifecycle import ImageSource, PreparedImage
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._output import OutputCollector
from hermes_sandbox._result import ExecResult
from hermes_sandbox.backends.docker._archive import (
    prefixed_tar,
    read_single_file,
    single_file_tar,
)
from hermes_sandbox.backends.docker._daemon import DockerDaemon, resolve_docker_host
from hermes_sandbox.backends.docker._helper import HELPER_BUSYBOX
from hermes_sandbox.backends.docker._labels import LABEL, LABEL_RUN, LABEL_TASK, RUN_ID
from hermes_sandbox.backends.docker._launch import LIFETIME_GRACE, Launched, launch_container
from hermes_sandbox.backends.docker._pool import DockerWarmPool
from hermes_sandbox.backends.docker._prepare import prepare_docker_image, reap_docker_run
from hermes_sandbox.backends.docker._scripts import (
    HARNESS_ENV,
    KILL_SCRIPT,
    STOP_SCRIPT,
    harness_argv,
)
from hermes_sandbox.backends.docker._session import Running, Session, SessionPool
from hermes_sandbox.backends.docker._spec import DEFAULT_WORKDIR, ContainerSpec, check_user
from hermes_sandbox.backends.docker._transfer import download_file, upload_file

__all__ = [
    "KILL_DRAIN",
    "KILL_TIMEOUT",
    "SMALL_PUT",
    "SMALL_READ",
    "SMALL_READ_TIMEOUT",
    "STOP_ATTEMPTS",
    "DockerSandbox",
]

log = logging.getLogger(__name__)

#: Seconds to read what a killed command still prints before giving up on its stream.
KILL_DRAIN: Final = 3.0
#: Seconds a kill exec may take before the keeper is asked to kill everything instead.
KILL_TIMEOUT: Final = 10.0

#: Stop execs tried (with the keeper's kill-all between them) before ``stop_processes``
#: gives up.
STOP_ATTEMPTS: Final = 3

#: Files of at most this many bytes are read through a root command session (the helper's
#: ``cat``), larger ones through the daemon's archive endpoint.
SMALL_READ: Final = 1 << 20
#: Seconds a session read (or unpacking) of a small file may take before the daemon is
#: asked instead.
SMALL_READ_TIMEOUT: Final = 30.0
#: Archives (uploads, written files) of at most this many bytes are unpacked by the
#: helper's ``tar`` in a root command session, larger ones by the daemon.
SMALL_PUT: Final = 1 << 16
#: Characters kept of what a failed session unpacking printed (for the log).
_PUT_OUTPUT: Final = 2000

_DIR_BIT: Final = 1 << 31  # Go's os.ModeDir, as in the daemon's path stat
_SYMLINK_BIT: Final = 1 << 27  # Go's os.ModeSymlink
#: Go's os.ModeType: the bits of every kind of file but a regular one.
_TYPE_BITS: Final = sum(1 << bit for bit in (31, 27, 26, 25, 24, 21, 19))
_MAX_LINKS: Final = 16


class DockerSandbox(Sandbox):
    """A task's container (see the ``hermes_sandbox.backends.docker`` docstring).

    Options beyond ``SandboxOptions`` (``extra``): ``base_url`` (daemon address; default
    ``$DOCKER_HOST`` or ``unix:///var/run/docker.sock``), ``pool`` (a ``DockerWarmPool`` to
    take a pre-started container from), ``runtime`` (an OCI runtime such as ``runsc``),
    ``network_mode`` (with ``network=True``; default ``bridge``), ``labels``.
    Defaults: image ``hermes-sandbox/debian:bookworm``, ``cpus`` 1, ``pids_limit`` 256,
    network off.

    Commands see the image's own environment (its ``ENV``) with ``options.env`` on top,
    start in ``options.workdir`` or else the image's ``WORKDIR`` (else ``/workspace``;
    ``workdir`` holds the one in use once started), and run as ``options.user`` or else
    the image's ``USER`` (else root); ``exec(..., user=...)`` picks another user for one
    command outside the session.

    Raises:
        ValueError: (at construction) for unknown or ill-typed options, naming the option.
    """

    backend = "docker"
    supports_user = True

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
        self.spec = ContainerSpec.from_options(options)
        #: Who commands run as (``""``: root); the image's ``USER`` unless ``options.user``
        #: says, known once started.
        self.user = options.user or ""
        #: The image's own ``USER`` (``""``: root), known once started: who a command runs
        #: as when neither ``options.user`` nor ``exec(user=...)`` says.
        self.image_user = ""
        pool = options.extra.get("pool")
        if pool is not None and not isinstance(pool, DockerWarmPool):
            raise ValueError(f"docker: option 'pool' must be a DockerWarmPool, got {pool!r}")
        self._pool: DockerWarmPool | None = pool
        self._base_url: str | None = options.extra.get("base_url")
        self._daemon: DockerDaemon | None = None
        self._container: str | None = None
        self._env = {str(k): str(v) for k, v in options.env.items()}
        self._sessions: SessionPool | None = None
        self._background: set[asyncio.Task[None]] = set()

    @property
    def container_id(self) -> str | None:
        """The container's id while the sandbox is open."""
        return self._container

    # lifecycle ----------------------------------------------------------------------
    def default_workdir(self) -> str:
        """Where commands start until the image's ``WORKDIR`` is known (at start)."""
        return DEFAULT_WORKDIR

    async def _start(self) -> None:
        if await self._take_from_pool():
            return
        self._daemon = await DockerDaemon.connect(self._base_url)
        try:
            launched = await launch_container(
                self._daemon,
                self.spec,
                labels={LABEL: "1", LABEL_RUN: RUN_ID, LABEL_TASK: self.task_id},
                deadlines=(self.spec.lifetime + LIFETIME_GRACE,) * 2,
            )
        except BaseException:
            self._daemon.close()
            self._daemon = None
            raise
        self._container = launched.id
        self._adopt(launched)

    def _adopt(self, launched: Launched) -> None:
        """Take the image's workdir and user where the options leave them unset, and
        make the container's command sessions (the first one opening at once)."""
        self.workdir = launched.workdir
        self.image_user = launched.user
        self.user = self.options.user or launched.user
        assert self._daemon is not None
        self._sessions = SessionPool(self._daemon, launched.id, self._env)
        # The commands' first shell opens while the caller gets on (its docker exec
        # takes tens of milliseconds): the first command finds it ready or under way.
        self._sessions.prime(self.user)

    def open_daemon(self) -> DockerDaemon:
        """A new client of this sandbox's daemon, speaking the API version the sandbox
        settled on (no request made); the caller closes it.

        Raises:
            SandboxClosedError: the sandbox is not started or is closed.
        """
        daemon, _ = self._require()
        return DockerDaemon.open(daemon.base_url, version=daemon.version)

    def open_session(self, user: str) -> None:
        """Start opening a command shell of ``user`` in the background, unless one is
        open or being opened (the next command of ``user`` then finds it ready: opening
        one is a ``docker exec`` of tens of milliseconds); nothing when the sandbox is
        not started or closed. Every name of root is one user here (``""``, ``0``,
        ``0:0``).

        Raises:
            ValueError: ``user`` is not a user name or id (``user[:group]``).
        """
        if user:
            check_user(user, "open_session(user)")
        if self._sessions is not None:
            self._sessions.prime(user, unless_open=True)

    async def _take_from_pool(self) -> bool:
        """Take a ready container from the warm pool if one fits; whether one was taken."""
        pool = self._pool
        if pool is None or pool.closed or not pool.started:
            return False
        if pool.base_url != resolve_docker_host(self._base_url):
            return False
        launched = await pool.take_launched(self.spec)
        if launched is None:
            return False
        taken = launched.id
        self._daemon = DockerDaemon.open(pool.base_url, version=pool.version)
        self._container = taken
        self._adopt(launched)
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
        sessions, self._sessions = self._sessions, None
        if sessions is not None:
            await sessions.aclose()
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
        self._sessions = None  # their connections end with the container
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
        return await self._run_as(script, timeout=timeout, user=self.user)

    async def _run_as(self, script: str, *, timeout: float, user: str) -> ExecResult:
        collector = OutputCollector(self.options.max_output_chars)
        code, timed_out = await self._command(
            script, timeout=timeout, user=user, feed=collector.feed
        )
        return ExecResult(collector.text(), code, timed_out, collector.truncated)

    async def _command(
        self, script: str, *, timeout: float, user: str, feed: Callable[[bytes], None]
    ) -> tuple[int, bool]:
        """Run ``script`` in a session of ``user``, its output given to ``feed``; its exit
        status and whether it timed out (then killed, with status 124)."""
        daemon, container = self._require()
        if user:
            check_user(user)
        sessions = self._sessions
        if sessions is None:
            raise SandboxClosedError(f"sandbox {self.task_id} is closed")
        running = Running(feed)
        session = await sessions.take(user)
        try:
            try:
                await session.start(script, running)
            except SandboxClosedError:  # it died idle: the command goes to a fresh one
                session = await sessions.take(user)
                running = Running(feed)
                await session.start(script, running)
        except BaseException:
            # Cancelled (or failed) while sending: the command may have gone out anyway.
            await asyncio.shield(self._kill_running(daemon, container, session, running))
            raise
        end = asyncio.ensure_future(_end_of(session, running))
        try:
            done, _ = await asyncio.wait({end}, timeout=timeout)
            if not done:
                # Timed out: kill the command's session (the shell session goes on),
                # then keep what the dying command still prints.
                await self._kill_running(daemon, container, session, running)
                await asyncio.wait({end}, timeout=KILL_DRAIN)
                return 124, True
            code = end.result()
        except BaseException:
            # Cancelled: the command must not outlive us.
            await asyncio.shield(self._kill_running(daemon, container, session, running))
            raise
        finally:
            end.cancel()
        return code, False

    async def _kill_running(
        self, daemon: DockerDaemon, container: str, session: Session, running: Running
    ) -> None:
        """Kill a command started in ``session`` (once its id is known, if it comes); a
        command that never reached the shell, or whose shell died before it started,
        leaves nothing to kill."""
        if running.done.is_set():
            return
        if running.sid is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(running.sid_known.wait(), KILL_DRAIN)
        if running.done.is_set():
            return
        if running.sid is None and (session.broken or session.ended.is_set()):
            return
        await self._kill_session(daemon, container, running.sid)

    async def _kill_session(self, daemon: DockerDaemon, container: str, sid: int | None) -> None:
        """Kill a command's session; if no exec can start, have the keeper kill all."""
        if sid:
            try:
                async with asyncio.timeout(KILL_TIMEOUT):
                    code, _ = await daemon.exec_run(
                        container, harness_argv(KILL_SCRIPT, "hermes-kill", str(sid)), HARNESS_ENV
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
                        container, harness_argv(STOP_SCRIPT, "hermes-stop"), HARNESS_ENV
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
        size = int(stat.get("size", -1))
        if 0 <= size <= SMALL_READ and not int(stat.get("mode", 0)) & _TYPE_BITS:
            data = await self._read_small(real, size)
            if data is not None:
                return data

        def read() -> bytes:
            return read_single_file(daemon.iter_archive(container, real), real)

        # A file rewritten while the daemon archives it comes as a cut tar (the header
        # has the size it had at the start): read it once more, then say so.
        for attempt in range(2):
            try:
                return await daemon.fetch(container, read)
            except tarfile.TarError as exc:
                if attempt:
                    raise FileChangedError(
                        f"{path} changed while it was read from sandbox {self.task_id} "
                        f"(twice; {exc}): read it again once nothing writes it"
                    ) from exc
        raise AssertionError("unreachable")

    async def _read_small(self, path: str, size: int) -> bytes | None:
        """The bytes of the small regular file ``path``, read by the helper's ``cat`` in
        a root command session (a few milliseconds, where the daemon's archive endpoint
        starts a process of its own); None when that read fails or does not give the
        ``size`` bytes the daemon's stat saw (the caller then reads through the daemon)."""
        data = bytearray()

        def feed(piece: bytes) -> None:
            if len(data) <= size:
                data.extend(piece[: size + 1 - len(data)])

        script = f"exec {HELPER_BUSYBOX} cat -- {shlex.quote(path)} 2>/dev/null"
        try:
            code, timed_out = await self._command(
                script, timeout=SMALL_READ_TIMEOUT, user="0", feed=feed
            )
        except SandboxClosedError:
            raise
        except SandboxError as exc:
            log.info(
                "docker: session read of %s failed (%s); reading through the daemon", path, exc
            )
            return None
        if code != 0 or timed_out or len(data) != size:
            return None
        return bytes(data)

    async def upload_file(self, local: str | Path, remote: str) -> None:
        """Copy a host file into the sandbox, streamed (never held whole in memory).

        Raises:
            FileNotFoundError: if ``local`` does not exist.
            IsADirectoryError: if ``remote`` is a directory in the sandbox.
        """
        source = Path(local)
        if not await asyncio.to_thread(source.is_file):
            raise FileNotFoundError(f"no file {source} to upload")
        await self._ready()
        daemon, container = self._require()
        real, mode, exists = await self._target(self.resolve(remote))
        parent, name = posixpath.split(real)
        wanted = parent or "/"
        directory, folders = wanted, list[str]()
        if not exists and await self._stat(wanted) is None:
            directory, folders = await self._missing_folders(wanted)
        for attempt in range(2):
            try:
                await daemon.call(
                    upload_file, daemon, container, directory, source, name, mode, folders
                )
                return
            except FileNotFoundError:
                # The folder went away meanwhile (or the file did: then say so).
                if attempt or not await asyncio.to_thread(source.is_file):
                    raise
                directory, folders = await self._missing_folders(wanted)
            except NotADirectoryError as exc:
                raise NotADirectoryError(
                    f"{wanted} is not a directory in sandbox {self.task_id}"
                ) from exc

    async def download_file(self, remote: str, local: str | Path) -> None:
        """Copy a sandbox file to the host (parent directories are created), streamed.

        Raises:
            FileNotFoundError: if there is no such file in the sandbox.
            IsADirectoryError: if it is a directory.
        """
        await self._ready()
        daemon, container = self._require()
        path = real = self.resolve(remote)
        target = Path(local)
        for _ in range(_MAX_LINKS):
            try:
                link = await daemon.call(download_file, daemon, container, real, target)
            except FileNotFoundError as exc:
                raise FileNotFoundError(f"no such file in sandbox {self.task_id}: {path}") from exc
            except IsADirectoryError as exc:
                raise IsADirectoryError(f"{path} is a directory in sandbox {self.task_id}") from exc
            if link is None:
                return
            real = link
        raise OSError(f"too many levels of symbolic links at {path} in sandbox {self.task_id}")

    async def _target(self, path: str) -> tuple[str, int, bool]:
        """Where a write to ``path`` lands (symlinks followed), the mode to give it, and
        whether a file is there already.

        Raises:
            IsADirectoryError: if it is a directory.
        """
        real, stat = await self._resolve_file(path)
        mode = 0o644
        if stat is not None:
            file_mode = int(stat.get("mode", 0))
            if file_mode & _DIR_BIT:
                raise IsADirectoryError(f"{path} is a directory in sandbox {self.task_id}")
            mode = file_mode & 0o7777
        return real, mode, stat is not None

    async def _write_bytes(self, path: str, data: bytes) -> None:
        real, mode, _ = await self._target(path)
        parent, name = posixpath.split(real)
        archive = await asyncio.to_thread(single_file_tar, name, data, mode)
        await self._put(parent or "/", archive)

    async def _put(self, directory: str, archive: bytes) -> None:
        daemon, container = self._require()
        missing = False
        if len(archive) <= SMALL_PUT and _plain_tar(archive):
            placed = await self._put_small(directory, archive)
            if placed == "placed":
                return
            missing = placed == "missing"
        if not missing:
            try:
                await daemon.put_archive(container, directory, archive)
                return
            except FileNotFoundError:
                pass
            except NotADirectoryError as exc:
                raise NotADirectoryError(
                    f"{directory} is not a directory in sandbox {self.task_id}"
                ) from exc
        # The folder is missing: the archive goes into the nearest folder that exists,
        # with the missing ones made by entries of its own (no command to run).
        base, folders = await self._missing_folders(directory)
        moved = await asyncio.to_thread(prefixed_tar, archive, folders)
        small = len(moved) <= SMALL_PUT and _plain_tar(moved)
        if small and await self._put_small(base, moved) == "placed":
            return
        try:
            await daemon.put_archive(container, base, moved)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"cannot create {directory} in sandbox {self.task_id}") from exc
        except NotADirectoryError as exc:
            raise NotADirectoryError(
                f"cannot create directory {directory} in sandbox {self.task_id}: {exc}"
            ) from exc

    async def _put_small(self, directory: str, archive: bytes) -> str:
        """Unpack the small tar ``archive`` into the folder ``directory`` with the
        helper's ``tar`` in a root command session (owners and modes as the archive
        says, as the daemon's archive endpoint does, a few milliseconds where that
        endpoint starts a process of its own): ``placed``. A missing folder is made
        first, with its missing parents, as ``mkdir -p`` by root with umask 022 makes them
        (what the daemon path's folder entries make, in the same command). ``missing``
        when it cannot be made so (nothing written); ``daemon`` when it is not a folder
        or the unpacking failed (the caller asks the daemon, whose answer says why)."""
        encoded = base64.b64encode(archive).decode()
        script = (
            f"set -o pipefail; d={shlex.quote(directory)}\n"
            'if [ ! -d "$d" ]; then if [ -e "$d" ] || [ -L "$d" ]; then exit 3; fi\n'
            f'umask 022; {HELPER_BUSYBOX} mkdir -p "$d" 2>/dev/null || exit 4; fi\n'
            f"printf %s '{encoded}' | {HELPER_BUSYBOX} base64 -d | "
            f'{HELPER_BUSYBOX} tar -x -f - -C "$d" --numeric-owner 2>&1'
        )
        said = OutputCollector(_PUT_OUTPUT)
        try:
            code, timed_out = await self._command(
                script, timeout=SMALL_READ_TIMEOUT, user="0", feed=said.feed
            )
        except SandboxClosedError:
            raise
        except SandboxError as exc:
            log.info(
                "docker: session upload into %s failed (%s); asking the daemon", directory, exc
            )
            return "daemon"
        if code == 0 and not timed_out:
            return "placed"
        if code == 4:
            return "missing"
        if code != 3:
            log.info("docker: session upload into %s failed (%s)", directory, said.text().strip())
        return "daemon"

    async def _missing_folders(self, directory: str) -> tuple[str, list[str]]:
        """The nearest existing folder at or above ``directory``, and the names of the
        folders below it down to ``directory`` (none when it exists).

        Raises:
            NotADirectoryError: if the nearest existing path is not a folder (nor a
                symbolic link, which the daemon follows).
        """
        path, folders = posixpath.normpath(directory), list[str]()
        while path not in ("/", "//"):
            try:
                stat = await self._stat(path)
            except NotADirectoryError:  # a file above it: found further up
                stat = None
            if stat is not None:
                if not int(stat.get("mode", 0)) & (_DIR_BIT | _SYMLINK_BIT):
                    raise NotADirectoryError(
                        f"cannot create directory {directory} in sandbox {self.task_id}: "
                        f"{path} is a file"
                    )
                return path, folders
            path, name = posixpath.split(path)
            folders.insert(0, name)
        return "/", folders

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


def _plain_tar(archive: bytes) -> bool:
    """Whether the helper's ``tar`` reads ``archive`` as the daemon does: ustar entries,
    with pax headers of their own (names, times), but no global pax header, GNU long
    names or base-256 numbers (those go to the daemon). Times are kept to the second."""
    at = 0
    while at + tarfile.BLOCKSIZE <= len(archive):
        header = archive[at : at + tarfile.BLOCKSIZE]
        if not any(header):
            return True
        if header[156:157] in (b"g", b"L", b"K") or header[124] & 0x80:
            return False
        try:
            size = int(header[124:136].strip(b"\0 ") or b"0", 8)
        except ValueError:
            return False
        at += tarfile.BLOCKSIZE * (1 + -(-size // tarfile.BLOCKSIZE))
    return True


async def _end_of(session: Session, running: Running) -> int:
    """The command's status: as its session reports it, or the session's own if it died
    first (137 for a ``kill -9``)."""
    ended = asyncio.ensure_future(session.ended.wait())
    done = asyncio.ensure_future(running.done.wait())
    try:
        await asyncio.wait({ended, done}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        ended.cancel()
        done.cancel()
    if running.status is None:
        running.finish(await session.status_of_death())
    assert running.status is not None
    return running.status
