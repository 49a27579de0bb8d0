"""The ``daytona`` backend: one Daytona sandbox per task, driven through ``AsyncDaytona``.

Commands go through ``sandbox.process.exec`` (one request each) running the in-sandbox
runner of ``RemoteShellSandbox`` (``backends/cloud/_runner.py``, shared with the modal
backend): it enforces the timeout on the whole process tree and keeps the output bounded
inside the sandbox, which matters here because the Daytona daemon buffers a command's
whole output in memory. Files go through ``sandbox.fs.upload_file`` / ``download_file``.

:func:`daytona_dockerfile_image` makes a dynamic image from a local Dockerfile and its
folder (``Image.from_dockerfile``), for the ``daytona_image`` option.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import math
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from hermes_sandbox._errors import (
    BackendUnavailableError,
    SandboxClosedError,
    SandboxError,
    SandboxStartError,
)
from hermes_sandbox._lifecycle import ImageSource, PreparedImage, kept_context
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox.backends.cloud._runner import RemoteShellSandbox
from hermes_sandbox.backends.option_check import check_extra

__all__ = ["DaytonaSandbox", "daytona_dockerfile_image"]

logger = logging.getLogger(__name__)

_DAYTONA_OPTIONS = ("client", "snapshot", "target", "create_timeout", "daytona_image")
_DEFAULT_CREATE_TIMEOUT = 300.0


def _import_daytona() -> Any:
    try:
        import daytona
    except ImportError:
        raise BackendUnavailableError(
            "the daytona backend needs the Daytona SDK: pip install 'hermes-sandbox[daytona]'"
        ) from None
    return daytona


#: Seconds a Daytona sandbox may take to start on top of its image's build timeout.
DAYTONA_START_MARGIN: Final = 300.0


def daytona_dockerfile_image(dockerfile: str | os.PathLike[str]) -> Any:
    """A Daytona dynamic image from ``dockerfile``, whose folder is the build context, to
    pass as the ``daytona_image`` option of ``create_sandbox("daytona", ...)``.

    ``Image.from_dockerfile(dockerfile, strict_context=True)``: nothing outside the
    folder can be copied in. Daytona builds the image when the sandbox is created (under
    the backend's ``create_timeout``) and caches it by the Dockerfile and the context's
    content; the files the Dockerfile copies are read and uploaded at that moment, so
    they must stay in place until the sandbox has started.

    Raises:
        BackendUnavailableError: the Daytona SDK is not installed.
        SandboxError: the Dockerfile is missing, or copies from outside its folder.
    """
    d = _import_daytona()
    try:
        return d.Image.from_dockerfile(Path(dockerfile), strict_context=True)
    except d.DaytonaError as exc:
        raise SandboxError(f"daytona: cannot use the Dockerfile {dockerfile}: {exc}") from None


class DaytonaSandbox(RemoteShellSandbox):
    """One Daytona sandbox per task (``create_sandbox("daytona", ...)``).

    Credentials come from where the Daytona SDK looks (``DAYTONA_API_KEY``, and
    ``DAYTONA_API_URL`` / ``DAYTONA_TARGET`` when needed); nothing of the host
    environment is passed into the sandbox except ``options.env``.

    Common options: ``image`` (a registry image built into a Daytona snapshot on first
    use; Daytona's default snapshot when unset), ``cpus`` and ``memory_mb`` (rounded up
    to whole cores and GiB; they need ``image`` or ``daytona_image``), ``network`` (off by default:
    ``network_block_all``), ``terminal_lifetime`` (also the sandbox's ``ttl_minutes`` and
    auto-stop, and the sandbox is ephemeral, so a leaked one deletes itself).
    ``pids_limit`` is not supported.

    Backend options (``extra``):
        client: an ``AsyncDaytona`` to use (not closed by the sandbox); by default each
            sandbox makes its own from the environment and closes it.
        snapshot: the snapshot to start from when ``image`` is unset.
        target: the region to create the sandbox in.
        create_timeout: seconds to wait for creation (default 300; image builds are slow).
        daytona_image: a Daytona ``Image`` to use instead of ``image`` (e.g. from
            :func:`daytona_dockerfile_image`, built per task).

    Raises:
        BackendUnavailableError: (at construction) if the Daytona SDK is not installed.
        ValueError: for unknown backend options, ``pids_limit``, or limits without an image.
    """

    backend = "daytona"

    @classmethod
    async def prepare_image(
        cls, source: ImageSource, options: Mapping[str, Any] | None = None
    ) -> PreparedImage:
        """A prebuilt reference as it stands (``image``); a Dockerfile build's context
        kept in a folder named for ``source.name`` (option ``contexts_dir``, default
        ``lifecycle.default_contexts_dir()``) as a dynamic image Daytona builds when the
        sandbox is created (``daytona_image``, with ``create_timeout`` of
        ``source.timeout`` plus ``DAYTONA_START_MARGIN``). Daytona builds with its
        network, whatever ``source.offline`` says.

        Raises:
            SandboxError: as ``daytona_dockerfile_image``, or (``OSError``'s text) the
                context folder cannot be written.
        """
        if source.reference is not None:
            return PreparedImage(source.reference, {"image": source.reference})
        folder = (options or {}).get("contexts_dir")
        try:
            context = await asyncio.to_thread(
                kept_context, source, Path(folder) if folder is not None else None
            )
        except OSError as exc:
            raise SandboxError(
                f"daytona: cannot keep the build context of {source.name}: {exc}"
            ) from None
        dynamic = await asyncio.to_thread(daytona_dockerfile_image, context / "Dockerfile")
        return PreparedImage(
            source.name,
            {"daytona_image": dynamic, "create_timeout": source.timeout + DAYTONA_START_MARGIN},
        )

    label = "daytona"

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        check_extra("daytona", options.extra, _DAYTONA_OPTIONS)
        super().__init__(options, task_id=task_id)
        extra = options.extra
        given = extra.get("daytona_image")
        #: What the sandbox is made from: the daytona_image, a registry image, or None.
        self._image: Any = given if given is not None else (options.image or None)
        if self._image is None and (options.cpus is not None or options.memory_mb is not None):
            raise ValueError(
                "daytona backend: cpus and memory_mb can only be set together with an image "
                "(a snapshot brings its own resources); pass image=... or drop the limits"
            )
        self._create_timeout = float(extra.get("create_timeout", _DEFAULT_CREATE_TIMEOUT))
        if self._create_timeout <= 0:
            raise ValueError(
                f"daytona backend: create_timeout must be positive, got {self._create_timeout!r}"
            )
        self._sdk: Any = _import_daytona()
        self._given_client: Any = extra.get("client")
        self._client: Any = None
        self._sb: Any = None
        self._sb_id = "(none)"

    @property
    def remote_id(self) -> str:
        """The Daytona sandbox id."""
        return self._sb_id

    # lifecycle ----------------------------------------------------------------------
    def _params(self) -> Any:
        d, options, extra = self._sdk, self.options, self.options.extra
        minutes = max(1, math.ceil(options.terminal_lifetime / 60))
        common: dict[str, Any] = {
            "env_vars": dict(options.env),
            "labels": {"hermes-sandbox": "1", "hermes-task": self.task_id},
            "network_block_all": not options.network,
            "auto_stop_interval": minutes,
            "ttl_minutes": minutes + 1,
            "ephemeral": True,
        }
        if extra.get("target"):
            common["target"] = str(extra["target"])
        if self._image is not None:
            resources = None
            if options.cpus is not None or options.memory_mb is not None:
                resources = d.Resources(
                    cpu=None if options.cpus is None else max(1, math.ceil(options.cpus)),
                    memory=None
                    if options.memory_mb is None
                    else max(1, math.ceil(options.memory_mb / 1024)),
                )
            return d.CreateSandboxFromImageParams(image=self._image, resources=resources, **common)
        return d.CreateSandboxFromSnapshotParams(snapshot=extra.get("snapshot"), **common)

    async def _create_remote(self) -> None:
        d = self._sdk
        client = self._given_client
        if client is None:
            try:
                client = d.AsyncDaytona()
            except d.DaytonaAuthenticationError:
                raise SandboxStartError(
                    "daytona: no credentials: set DAYTONA_API_KEY (and DAYTONA_API_URL for a "
                    "self-hosted Daytona), or pass client=AsyncDaytona(DaytonaConfig(...))"
                ) from None
            except d.DaytonaError as exc:
                raise SandboxStartError(f"daytona: cannot make a client: {exc}") from None
        self._client = client
        if self.options.extra.get("daytona_image") is not None:
            source = "the daytona_image"
        else:
            source = self.options.image or self.options.extra.get("snapshot") or "default snapshot"
        try:
            self._sb = await client.create(self._params(), timeout=self._create_timeout)
        except d.DaytonaAuthenticationError as exc:
            raise SandboxStartError(
                f"daytona: the API refused the credentials ({exc}); check DAYTONA_API_KEY"
            ) from None
        except Exception as exc:
            await self._delete_orphan(getattr(exc, "sandbox_id", None))
            raise SandboxStartError(
                f"daytona: could not create a sandbox from {source}: {type(exc).__name__}: {exc}"
            ) from exc
        self._sb_id = str(getattr(self._sb, "id", None) or "(unknown)")

    async def _delete_orphan(self, sandbox_id: str | None) -> None:
        """Delete a sandbox that was created although ``create`` failed (timeout)."""
        if not sandbox_id or self._client is None:
            return
        try:
            orphan = await self._client.get(sandbox_id)
            await orphan.delete()
        except Exception as exc:
            logger.warning("daytona: could not delete half-created sandbox %s: %s", sandbox_id, exc)

    async def _destroy_remote(self) -> None:
        sb, self._sb = self._sb, None
        client, self._client = self._client, None
        try:
            if sb is not None:
                with contextlib.suppress(self._sdk.DaytonaNotFoundError):  # already gone
                    await sb.delete()
        finally:
            if client is not None and client is not self._given_client:
                await client.close()

    # commands -----------------------------------------------------------------------
    def _live(self) -> Any:
        if self._sb is None:
            raise SandboxClosedError(f"daytona sandbox of task {self.task_id} is closed")
        return self._sb

    def _failure(self, exc: BaseException) -> SandboxError:
        d = self._sdk
        if isinstance(exc, d.DaytonaNotFoundError | d.DaytonaGoneError):
            return SandboxClosedError(
                f"daytona sandbox {self._sb_id} is gone ({exc}); it was deleted, stopped or "
                "expired: create a new sandbox"
            )
        return SandboxError(f"daytona: sandbox {self._sb_id} failed: {type(exc).__name__}: {exc}")

    async def _exec_argv(self, argv: list[str], *, timeout: float, cap: int) -> tuple[int, bytes]:
        sb = self._live()
        d = self._sdk
        env = dict(self.options.env) or None
        try:
            response = await sb.process.exec(
                shlex.join(argv), env=env, timeout=max(1, math.ceil(timeout))
            )
        except d.DaytonaTimeoutError as exc:
            raise SandboxError(
                f"daytona: sandbox {self._sb_id} did not finish a command within "
                f"{timeout:g}s ({exc}); it may be overloaded"
            ) from exc
        except Exception as exc:
            raise self._failure(exc) from exc
        code = response.exit_code
        output = (response.result or "").encode("utf-8", errors="replace")
        return (-1 if code is None else int(code)), output[:cap]

    # files ----------------------------------------------------------------------------
    def _file_error(self, exc: BaseException, path: str) -> BaseException:
        d = self._sdk
        text = str(exc).lower()
        if isinstance(exc, d.DaytonaFileNotFoundError) or "file not found" in text:
            return self._os_error(FileNotFoundError, errno.ENOENT, path)
        if "is a directory" in text or "points to a directory" in text:
            return self._os_error(IsADirectoryError, errno.EISDIR, path)
        if "not a directory" in text:
            return self._os_error(NotADirectoryError, errno.ENOTDIR, path)
        if isinstance(exc, d.DaytonaFileAccessDeniedError) or "permission denied" in text:
            return self._os_error(PermissionError, errno.EACCES, path)
        return self._failure(exc)

    def _os_error(self, kind: type[OSError], code: int, path: str) -> OSError:
        return kind(code, f"{os.strerror(code)} in daytona sandbox {self._sb_id}", path)

    async def _read_bytes(self, path: str) -> bytes:
        sb = self._live()
        try:
            data = await sb.fs.download_file(path)
        except Exception as exc:
            raise self._file_error(exc, path) from exc
        return bytes(data or b"")

    async def _write_bytes(self, path: str, data: bytes) -> None:
        sb = self._live()
        try:
            await sb.fs.upload_file(data, path)
        except Exception as exc:
            raise self._file_error(exc, path) from exc
