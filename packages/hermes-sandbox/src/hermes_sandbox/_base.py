"""``Sandbox``: the one async interface every backend implements."""

from __future__ import annotations

import asyncio
import logging
import posixpath
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

from hermes_sandbox._errors import SandboxClosedError, SandboxError
from hermes_sandbox._exec_overrides import call_prefix, check_overrides
from hermes_sandbox._host_archive import tar_directory, untar_into, write_host_file
from hermes_sandbox._lifecycle import ImageSource, ImageUnavailableError, PreparedImage
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._result import ExecResult
from hermes_sandbox._shell import STATE_DIR_PREFIX, wrap_command, wrap_fresh
from hermes_sandbox._teardown import finish, run_detached

__all__ = ["Sandbox"]

_log = logging.getLogger(__name__)


class Sandbox(ABC):
    """A place where one task's commands run, files live, and reward code looks later.

    Lifecycle: ``await sandbox.start()`` (or ``async with``), then ``exec``, file and
    transfer methods, then ``await sandbox.close()``, which is idempotent and leaves no
    container, process or temporary directory behind.

    Commands behave like one shell session: ``cd`` and ``export`` carry over between
    ``exec`` calls (``exec(..., session=False)`` runs one outside the session). Output
    is stdout and stderr interleaved, bounded by ``options.max_output_chars``. At
    ``timeout`` the command's whole process tree is killed.

    When no event loop can run any more (interpreter exit, after a second Ctrl-C),
    ``close_now()`` tears the sandbox down synchronously; ``SandboxPool`` calls it at
    exit for every sandbox that was not closed.

    ``stop_processes()`` kills every process the sandbox's commands started and leaves the
    sandbox usable (what a verifier does before it runs its tests).

    Backends implement ``_start``, ``_close``, ``_run`` (run a bash script; ``exec`` hands
    it the user's command wrapped by ``_wrap``), ``_run_as`` if they can run commands as
    another user (``supports_user``), ``_stop_processes``, ``_write_bytes`` and
    ``_read_bytes``;
    directory transfers go through tar archives by default and a backend
    may override ``_put_archive``/``_get_archive`` with something faster, and
    ``_close_now`` with a teardown that needs no event loop.
    """

    backend: ClassVar[str] = ""
    #: Whether ``options.user`` and ``exec(..., user=...)`` can pick the user commands run
    #: as (a backend that sets it implements ``_run_as``).
    supports_user: ClassVar[bool] = False
    #: Seconds ``close_now()`` allows the default (event-loop based) teardown.
    CLOSE_NOW_TIMEOUT: ClassVar[float] = 60.0

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        """A sandbox of ``options`` (nothing starts before ``start()``).

        Raises:
            ValueError: if ``options.user`` is set and the backend cannot switch users.
        """
        if options.user is not None and not self.supports_user:
            raise ValueError(
                f"{self.backend or type(self).__name__}: option 'user' is not supported by "
                "this backend (commands run as its one user); leave it unset"
            )
        self.options = options
        self.task_id = task_id or uuid.uuid4().hex[:12]
        self.workdir = options.workdir or self.default_workdir()
        self._state_dir = f"{STATE_DIR_PREFIX}{self.task_id}-{uuid.uuid4().hex[:6]}"
        self._started_at: float | None = None
        self._closed = False
        self._torn_down = False
        self._start_lock = asyncio.Lock()

    # the backend's hooks around its sandboxes (class methods: no sandbox needed) -----
    @classmethod
    async def prepare_image(
        cls, source: ImageSource, options: Mapping[str, Any] | None = None
    ) -> PreparedImage:
        """Make the image ``source`` describes ready for this backend's sandboxes; the
        ``create_sandbox`` options that select it. ``options`` are the run's other
        ``create_sandbox`` options (each backend reads the ones it needs, e.g. docker's
        ``base_url``). The default takes a prebuilt reference as it stands (``image``)
        and cannot build; backends with images override it.

        Raises:
            ImageUnavailableError: kind ``unsupported`` for a build on a backend that
                cannot build; a backend's own pull and build failures otherwise.
            SandboxError: the backend failed otherwise.
        """
        if source.reference is not None:
            return PreparedImage(source.reference, {"image": source.reference})
        raise ImageUnavailableError(
            f"{cls.backend or cls.__name__}: this backend cannot build an image from a "
            f"Dockerfile ({source.name}); use a backend that builds (docker, modal, daytona) "
            "or a prebuilt image",
            reference=source.name,
            kind="unsupported",
        )

    @classmethod
    async def reap_run(cls, run_id: str, options: Mapping[str, Any] | None = None) -> int:
        """Remove what the sandboxes of run ``run_id`` (a ``lifecycle.RUN_ID`` of an
        earlier process, e.g. one killed with ``kill -9``) left behind on this backend;
        how many sandboxes were removed. ``options`` as for ``prepare_image``. The
        default has nothing to remove. A backend that cannot be reached removes nothing
        and raises nothing.
        """
        return 0

    # lifecycle ----------------------------------------------------------------------
    def default_workdir(self) -> str:
        """Where commands start when ``options.workdir`` is unset."""
        return "/workspace"

    async def start(self) -> Self:
        """Create the sandbox (idempotent).

        Raises:
            SandboxStartError: if the backend cannot create it (message says why).
            SandboxClosedError: if it was already closed.
        """
        async with self._start_lock:
            if self._closed:
                raise SandboxClosedError(f"sandbox {self.task_id} is closed")
            if self._started_at is None:
                await self._start()
                if self._closed:  # close() was called while this start was under way
                    await finish(self._close())
                    self._torn_down = True
                    raise SandboxClosedError(f"sandbox {self.task_id} was closed while starting")
                self._started_at = time.monotonic()
        return self

    async def close(self) -> None:
        """Destroy the sandbox and everything it holds (idempotent, never raises for a
        sandbox that is already gone)."""
        if self._closed:
            return
        self._closed = True
        if self._started_at is not None:
            await self._close()
        self._torn_down = True

    def close_now(self) -> None:
        """Tear the sandbox down without an event loop: blocking, best effort, never
        raises. For ``atexit`` hooks and other places where ``await close()`` cannot run;
        it also finishes a ``close()`` that was interrupted. Does nothing after a
        completed ``close()``.
        """
        if self._torn_down:
            return
        self._closed = True
        self._torn_down = True
        if self._started_at is None:
            return
        try:
            self._close_now()
        except Exception as exc:  # last resort: report, never raise
            _log.warning(
                "%s: emergency teardown of sandbox %s failed: %s", self.backend, self.task_id, exc
            )

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await finish(self.close())

    @property
    def started(self) -> bool:
        """Whether ``start()`` has completed."""
        return self._started_at is not None

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    @property
    def age(self) -> float:
        """Seconds since the sandbox started (0 before)."""
        return 0.0 if self._started_at is None else time.monotonic() - self._started_at

    @property
    def remaining_lifetime(self) -> float:
        """Seconds left before ``terminal_lifetime`` runs out."""
        return self.options.terminal_lifetime - self.age

    async def _ready(self) -> None:
        if self._closed:
            raise SandboxClosedError(f"sandbox {self.task_id} is closed")
        if self._started_at is None:
            await self.start()
        if self.remaining_lifetime <= 0:
            await self.close()
            raise SandboxClosedError(
                f"sandbox {self.task_id} reached its lifetime of "
                f"{self.options.terminal_lifetime:g}s and was closed"
            )

    # commands -----------------------------------------------------------------------
    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = None,
        session: bool = True,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        user: str | None = None,
    ) -> ExecResult:
        """Run a shell command (bash) in the session, or outside it.

        ``session=True`` (the default): the command sees the cwd and exported variables
        earlier commands left, and leaves its own for later ones. ``session=False``: it
        runs in a fresh ``bash --noprofile --norc`` that sees only the sandbox's
        configured ``env`` (and the backend's defaults, a default ``PATH`` among them)
        with cwd ``workdir``; none of the session's saved state, and it changes none of
        it. The timeout, the output bound and the kill of the whole process tree at the
        timeout are the same either way.

        Per-call overrides, for a command outside the session only (``session=False``;
        in the session, ``cd`` and ``export`` in the command itself do it): ``env`` adds
        or replaces variables for this command, ``workdir`` is where it starts (created
        if missing; relative paths are under the sandbox's ``workdir``), ``user`` the user
        it runs as, on backends that can switch users (``supports_user``).

        The command goes through ``_wrap`` (the shell-session wrapper) to the backend's
        ``_run`` (``_run_as`` with a ``user``); backends fill in those hooks and never
        re-implement this method.

        Raises:
            SandboxClosedError: if the sandbox is closed, expired or died.
            SandboxError: if the backend failed to run the command at all.
            ValueError: for a non-positive timeout, a per-call override with
                ``session=True``, a variable name that is not a shell name, or ``user``
                on a backend that cannot switch users.
        """
        check_overrides(
            env,
            workdir,
            user,
            session=session,
            supports_user=self.supports_user,
            backend=self.backend or type(self).__name__,
        )
        await self._ready()
        overrides = call_prefix(env, None if workdir is None else self.resolve(workdir))
        limit = self.options.terminal_timeout if timeout is None else timeout
        if limit <= 0:
            raise ValueError(f"timeout must be positive, got {limit!r}")
        script = self._wrap(overrides + command, session=session)
        started = time.monotonic()
        if user is None:
            result = await self._run(script, timeout=limit)
        else:
            result = await self._run_as(script, timeout=limit, user=user)
        return replace(result, duration=time.monotonic() - started)

    async def stop_processes(self) -> None:
        """Kill every process this sandbox's commands started that still runs.

        Background jobs, ``nohup``/``setsid`` daemons and double-forked children die,
        and so do commands running at this moment (their ``exec`` returns 137, or
        124 if it was timing out). The sandbox stays open: files and the session's saved
        state (cwd, exported variables) are kept and later commands run as before.
        Idempotent; quick when nothing runs; nothing to do before ``start()``. For a
        verifier: call it when the agent's turn ends, before the tests run, so nothing
        the agent left behind can touch their files.

        Raises:
            SandboxClosedError: if the sandbox is closed (or died meanwhile).
            SandboxError: if the backend could not make sure everything is gone.
        """
        if self._closed:
            raise SandboxClosedError(f"sandbox {self.task_id} is closed")
        if self._started_at is None:
            return
        await self._stop_processes()

    def _wrap(self, command: str, *, session: bool = True) -> str:
        """The script ``_run`` gets for a user command: ``shell.wrap_command`` with this
        sandbox's state directory and workdir (``session=False``: ``shell.wrap_fresh``).
        A backend overrides it to pass more (e.g. variables it sets afresh for every
        command)."""
        if not session:
            return wrap_fresh(command, workdir=self.workdir)
        return wrap_command(
            command,
            state_dir=self._state_dir,
            workdir=self.workdir,
            direct=not any(name.startswith("BASH_FUNC_") for name in self.options.env),
        )

    # files --------------------------------------------------------------------------
    def resolve(self, path: str) -> str:
        """An absolute path in the sandbox; relative paths are under ``workdir``."""
        return path if posixpath.isabs(path) else posixpath.join(self.workdir, path)

    async def read_file(self, path: str) -> bytes:
        """The bytes of a file in the sandbox.

        Raises:
            FileNotFoundError: if there is no such file.
            IsADirectoryError: if it is a directory.
        """
        await self._ready()
        return await self._read_bytes(self.resolve(path))

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Create or replace a file (parent directories are created)."""
        await self._ready()
        payload = data.encode() if isinstance(data, str) else bytes(data)
        await self._write_bytes(self.resolve(path), payload)

    async def upload_file(self, local: str | Path, remote: str) -> None:
        """Copy a host file into the sandbox.

        Raises:
            FileNotFoundError: if ``local`` does not exist.
        """
        data = await asyncio.to_thread(Path(local).read_bytes)
        await self.write_file(remote, data)

    async def download_file(self, remote: str, local: str | Path) -> None:
        """Copy a sandbox file to the host (parent directories are created)."""
        data = await self.read_file(remote)
        target = Path(local)
        await asyncio.to_thread(write_host_file, target, data)

    async def upload_dir(self, local: str | Path, remote: str) -> None:
        """Copy a host directory tree into ``remote`` in the sandbox.

        Raises:
            NotADirectoryError: if ``local`` is not a directory.
        """
        source = Path(local)
        if not await asyncio.to_thread(source.is_dir):
            raise NotADirectoryError(f"{source} is not a directory")
        await self._ready()
        archive = await asyncio.to_thread(tar_directory, source)
        await self._put_archive(self.resolve(remote), archive)

    async def download_dir(self, remote: str, local: str | Path) -> None:
        """Copy a sandbox directory tree into the host directory ``local``.

        Raises:
            FileNotFoundError: if ``remote`` does not exist in the sandbox.
        """
        await self._ready()
        archive = await self._get_archive(self.resolve(remote))
        await asyncio.to_thread(untar_into, archive, Path(local))

    # backend hooks ------------------------------------------------------------------
    @abstractmethod
    async def _start(self) -> None:
        """Create the sandbox; raise ``SandboxStartError`` with a helpful message."""

    @abstractmethod
    async def _close(self) -> None:
        """Destroy the sandbox; must not raise if it is already gone."""

    @abstractmethod
    async def _run(self, script: str, *, timeout: float) -> ExecResult:
        """Run ``bash -c script``; kill its process tree at ``timeout`` (then exit code
        124, ``timed_out=True``); bound the output with ``OutputCollector``."""

    @abstractmethod
    async def _read_bytes(self, path: str) -> bytes:
        """Read an absolute path; ``FileNotFoundError``/``IsADirectoryError`` as the OS would."""

    @abstractmethod
    async def _write_bytes(self, path: str, data: bytes) -> None:
        """Write an absolute path, creating parent directories."""

    async def _run_as(self, script: str, *, timeout: float, user: str) -> ExecResult:
        """``_run`` as ``user`` (``exec(..., user=...)``); the default refuses: a backend
        that sets ``supports_user`` overrides it.

        Raises:
            ValueError: always, here.
        """
        raise ValueError(
            f"{self.backend or type(self).__name__}: exec(user={user!r}) is not supported by "
            "this backend (commands run as its one user); leave user unset"
        )

    async def _stop_processes(self) -> None:
        """Kill every process the sandbox's commands started (see ``stop_processes``);
        the sandbox is started and not closed. The default raises: a backend must say
        how it finds its processes.

        Raises:
            SandboxError: always, here.
        """
        raise SandboxError(
            f"{self.backend or type(self).__name__}: this backend cannot stop its "
            "processes (it does not implement _stop_processes)"
        )

    def _close_now(self) -> None:
        """Blocking teardown (see ``close_now``). The default runs ``_close()`` on a
        fresh event loop; backends whose resources are bound to the original loop (or
        that can do it without one) override this."""
        run_detached(self._close(), timeout=self.CLOSE_NOW_TIMEOUT)

    async def _put_archive(self, remote_dir: str, archive: bytes) -> None:
        """Extract a tar archive into ``remote_dir`` (default: copy it in and untar)."""
        staging = f"{self._state_dir}.upload.tar"
        await self._write_bytes(staging, archive)
        quoted_dir, quoted_tar = _q(remote_dir), _q(staging)
        result = await self._run(
            f"mkdir -p {quoted_dir} && tar -xf {quoted_tar} -C {quoted_dir}; rc=$?; "
            f"rm -f {quoted_tar}; exit $rc",
            timeout=self.options.terminal_timeout,
        )
        if result.exit_code != 0:
            raise SandboxError(f"could not unpack the upload into {remote_dir}: {result.output}")

    async def _get_archive(self, remote_dir: str) -> bytes:
        """A tar archive of ``remote_dir``'s contents (default: tar it and read it back)."""
        staging = f"{self._state_dir}.download.tar"
        quoted_dir, quoted_tar = _q(remote_dir), _q(staging)
        result = await self._run(
            f"[ -d {quoted_dir} ] || exit 44; mkdir -p {_q(posixpath.dirname(staging))}; "
            f"tar -cf {quoted_tar} -C {quoted_dir} .",
            timeout=self.options.terminal_timeout,
        )
        if result.exit_code == 44:
            raise FileNotFoundError(f"no directory {remote_dir} in sandbox {self.task_id}")
        if result.exit_code != 0:
            raise SandboxError(f"could not archive {remote_dir}: {result.output}")
        try:
            return await self._read_bytes(staging)
        finally:
            await self._run(f"rm -f {quoted_tar}", timeout=self.options.terminal_timeout)


def _q(path: str) -> str:
    import shlex

    return shlex.quote(path)
