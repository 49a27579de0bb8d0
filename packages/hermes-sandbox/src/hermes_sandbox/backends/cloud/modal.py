"""The ``modal`` backend: one Modal Sandbox per task, driven through the Modal SDK.

Commands go through ``Sandbox.exec`` running the in-sandbox runner of
``RemoteShellSandbox`` (``backends/cloud/_runner.py``), which enforces the timeout on the whole
process tree, keeps the output bounded inside the sandbox and kills a cancelled command.
Files go through ``Sandbox.filesystem`` (``read_bytes`` / ``write_bytes``, and
``copy_to_local`` for files too big for one message).

:func:`build_modal_image` builds an image from a local Dockerfile and build context
(``Image.from_dockerfile`` then ``Image.build``), for the ``modal_image`` option.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import math
import os
import shutil
import tempfile
from collections.abc import AsyncIterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

__all__ = ["ModalSandbox", "build_modal_image"]

logger = logging.getLogger(__name__)

_MODAL_OPTIONS = ("sdk", "client", "app_name", "modal_image", "gpu", "region", "cloud")
_MODAL_MAX_LIFETIME = 24 * 3600


def _import_modal() -> Any:
    try:
        import modal
    except ImportError:
        raise BackendUnavailableError(
            "the modal backend needs the Modal SDK: pip install 'hermes-sandbox[modal]'"
        ) from None
    return modal


async def _drain(stream: AsyncIterable[bytes | str], cap: int) -> bytes:
    """Everything a stream yields, keeping the first ``cap`` bytes."""
    kept = bytearray()
    async for chunk in stream:
        data = chunk.encode() if isinstance(chunk, str) else chunk
        room = cap - len(kept)
        if room > 0:
            kept += data[:room]
    return bytes(kept)


async def build_modal_image(
    dockerfile: str | os.PathLike[str],
    context_dir: str | os.PathLike[str],
    *,
    timeout: float,
    sdk: Any = None,
    client: Any = None,
    app_name: str = "hermes-sandbox",
) -> Any:
    """A ``modal.Image`` built now from ``dockerfile`` with ``context_dir`` as its build
    context, to pass as the ``modal_image`` option of ``create_sandbox("modal", ...)``.

    ``Image.from_dockerfile(dockerfile, context_dir=...)`` then ``Image.build`` in the App
    ``app_name`` (created if missing), so a failed build is reported here rather than
    when a sandbox starts. Modal builds in its cloud (with its network: it cannot be
    turned off there) and caches by the Dockerfile and the context's content: an
    unchanged image is not built again. Modal reads the files during the build, so they
    must stay in place until this returns. ``sdk`` and ``client`` are as the backend's
    options of the same names.

    Raises:
        ValueError: ``timeout`` is not positive.
        BackendUnavailableError: the Modal SDK is not installed.
        SandboxStartError: Modal refused the credentials.
        SandboxError: the build failed (Modal's message on one line, naming the image id
            for ``modal image logs``) or took longer than ``timeout`` seconds.
    """
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    sdk = sdk if sdk is not None else _import_modal()
    errors = sdk.exception
    client_kwargs = {} if client is None else {"client": client}
    try:
        image = sdk.Image.from_dockerfile(str(dockerfile), context_dir=str(context_dir))
        app = await sdk.App.lookup.aio(app_name, create_if_missing=True, **client_kwargs)
        async with asyncio.timeout(timeout):
            await image.build.aio(app)
    except errors.AuthError as exc:
        raise SandboxStartError(
            f"modal: not authenticated ({exc}); set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET "
            "or run `modal token new`"
        ) from None
    except TimeoutError:
        raise SandboxError(
            f"modal: building the image of {dockerfile} took longer than {timeout:g}s"
        ) from None
    except Exception as exc:
        message = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        raise SandboxError(
            f"modal: could not build the image of {dockerfile}: {type(exc).__name__}: {message}"
        ) from exc
    return image


@dataclass(frozen=True)
class ModalImageOptions:
    """What ``ModalSandbox.prepare_image`` reads from the run's options: ``sdk`` and
    ``client`` (as the backend's options of those names), ``app_name`` (the App builds
    run in) and ``contexts_dir`` (where build contexts are kept; default
    ``lifecycle.default_contexts_dir()``)."""

    sdk: Any = None
    client: Any = None
    app_name: str = "hermes-sandbox"
    contexts_dir: Path | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> ModalImageOptions:
        """The options of those names in ``options`` (others are left to other readers)."""
        given = dict(options or {})
        folder = given.get("contexts_dir")
        return cls(
            sdk=given.get("sdk"),
            client=given.get("client"),
            app_name=str(given.get("app_name") or "hermes-sandbox"),
            contexts_dir=Path(folder) if folder is not None else None,
        )


class ModalSandbox(RemoteShellSandbox):
    """One Modal Sandbox per task (``create_sandbox("modal", ...)``).

    Credentials come from where the Modal SDK looks (``MODAL_TOKEN_ID`` and
    ``MODAL_TOKEN_SECRET``, or ``~/.modal.toml``); nothing of the host environment is
    passed into the sandbox except ``options.env``.

    Common options: ``image`` (a registry tag, e.g. ``"python:3.12-slim"``; Modal's
    default Debian image when unset), ``cpus``, ``memory_mb``, ``network`` (off by
    default: ``block_network``), ``terminal_lifetime`` (also the sandbox's own Modal
    timeout, so a leaked sandbox dies by itself). ``pids_limit`` is not supported.

    Backend options (``extra``):
        app_name: Modal App the sandboxes belong to (default ``"hermes-sandbox"``).
        modal_image: a ``modal.Image`` to use instead of ``image`` (e.g. built per task).
        gpu, region, cloud: passed to ``modal.Sandbox.create``.
        client: a ``modal.Client`` (e.g. ``Client.from_credentials``) for all calls.
        sdk: the object providing ``App``, ``Image``, ``Sandbox`` and ``exception``
            (default: the ``modal`` module; tests pass a stand-in here).

    Raises:
        BackendUnavailableError: (at construction) if the Modal SDK is not installed.
        ValueError: for unknown backend options or ``pids_limit``.
    """

    backend = "modal"

    @classmethod
    async def prepare_image(
        cls, source: ImageSource, options: Mapping[str, Any] | None = None
    ) -> PreparedImage:
        """A prebuilt reference as it stands (Modal pulls it: ``image``); a Dockerfile
        build's context kept in a folder named for ``source.name`` and built now by Modal
        (``build_modal_image`` under ``source.timeout``: ``modal_image``). Modal builds in
        its cloud, with its network, whatever ``source.offline`` says.

        Raises:
            SandboxError: as ``build_modal_image``, or (``OSError``'s text) the context
                folder cannot be written.
        """
        if source.reference is not None:
            return PreparedImage(source.reference, {"image": source.reference})
        chosen = ModalImageOptions.from_options(options)
        try:
            context = await asyncio.to_thread(kept_context, source, chosen.contexts_dir)
        except OSError as exc:
            raise SandboxError(
                f"modal: cannot keep the build context of {source.name}: {exc}"
            ) from None
        built = await build_modal_image(
            context / "Dockerfile",
            context,
            timeout=source.timeout,
            sdk=chosen.sdk,
            client=chosen.client,
            app_name=chosen.app_name,
        )
        return PreparedImage(source.name, {"modal_image": built})

    label = "modal"

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        check_extra("modal", options.extra, _MODAL_OPTIONS)
        super().__init__(options, task_id=task_id)
        extra = options.extra
        self._sdk: Any = extra["sdk"] if extra.get("sdk") is not None else _import_modal()
        self._client: Any = extra.get("client")
        self._app_name = str(extra.get("app_name") or "hermes-sandbox")
        self._sb: Any = None
        self._sb_id = "(none)"

    @property
    def remote_id(self) -> str:
        """The Modal sandbox id (``sb-...``)."""
        return self._sb_id

    def _client_kwargs(self) -> dict[str, Any]:
        return {} if self._client is None else {"client": self._client}

    async def _create_remote(self) -> None:
        sdk, options, extra = self._sdk, self.options, self.options.extra
        errors = sdk.exception
        image_name = "modal_image" if extra.get("modal_image") is not None else options.image
        try:
            app = await sdk.App.lookup.aio(
                self._app_name, create_if_missing=True, **self._client_kwargs()
            )
            kwargs: dict[str, Any] = {
                "app": app,
                "timeout": min(math.ceil(options.terminal_lifetime) + 60, _MODAL_MAX_LIFETIME),
                "block_network": not options.network,
                **self._client_kwargs(),
            }
            if extra.get("modal_image") is not None:
                kwargs["image"] = extra["modal_image"]
            elif options.image:
                kwargs["image"] = sdk.Image.from_registry(options.image)
            if options.env:
                kwargs["env"] = dict(options.env)
            if options.cpus is not None:
                kwargs["cpu"] = float(options.cpus)
            if options.memory_mb is not None:
                kwargs["memory"] = int(options.memory_mb)
            for key in ("gpu", "region", "cloud"):
                if extra.get(key) is not None:
                    kwargs[key] = extra[key]
            self._sb = await sdk.Sandbox.create.aio(**kwargs)
        except errors.AuthError as exc:
            raise SandboxStartError(
                f"modal: not authenticated ({exc}); set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET "
                "or run `modal token new`"
            ) from None
        except Exception as exc:
            raise SandboxStartError(
                f"modal: could not create a sandbox in app {self._app_name!r} "
                f"(image {image_name or 'default'}): {type(exc).__name__}: {exc}"
            ) from exc
        self._sb_id = str(getattr(self._sb, "object_id", None) or "(unknown)")

    async def _destroy_remote(self) -> None:
        sb, self._sb = self._sb, None
        if sb is None:
            return
        try:
            await sb.terminate.aio()
        except self._sdk.exception.Error as exc:  # already gone: terminated or timed out
            logger.debug("modal: terminate %s: %s", self._sb_id, exc)

    def _gone(self, exc: BaseException) -> SandboxError:
        errors = self._sdk.exception
        gone = (
            errors.NotFoundError,
            errors.ConflictError,
            errors.SandboxTerminatedError,
            errors.SandboxTimeoutError,
            errors.ClientClosed,
        )
        if isinstance(exc, gone):
            return SandboxClosedError(
                f"modal sandbox {self._sb_id} is gone ({exc}); it was terminated, reached its "
                "timeout or crashed: create a new sandbox"
            )
        return SandboxError(f"modal: sandbox {self._sb_id} failed: {type(exc).__name__}: {exc}")

    def _live(self) -> Any:
        if self._sb is None:
            raise SandboxClosedError(f"modal sandbox of task {self.task_id} is closed")
        return self._sb

    async def _exec_argv(self, argv: list[str], *, timeout: float, cap: int) -> tuple[int, bytes]:
        sb = self._live()
        env = {"env": dict(self.options.env)} if self.options.env else {}
        try:
            process = await sb.exec.aio(
                *argv, text=False, timeout=max(1, math.ceil(timeout)), **env
            )
            out, err = await asyncio.gather(
                _drain(process.stdout, cap), _drain(process.stderr, cap)
            )
            code = await process.wait.aio()
        except Exception as exc:
            raise self._gone(exc) from exc
        return int(code), out + err

    # files ----------------------------------------------------------------------------
    def _file_error(self, exc: BaseException, path: str) -> BaseException:
        errors = self._sdk.exception
        table: tuple[tuple[Any, type[OSError], int], ...] = (
            (errors.SandboxFilesystemNotFoundError, FileNotFoundError, errno.ENOENT),
            (errors.SandboxFilesystemIsADirectoryError, IsADirectoryError, errno.EISDIR),
            (errors.SandboxFilesystemNotADirectoryError, NotADirectoryError, errno.ENOTDIR),
            (errors.SandboxFilesystemPermissionError, PermissionError, errno.EACCES),
        )
        for modal_error, os_error, code in table:
            if isinstance(exc, modal_error):
                return os_error(code, f"{os.strerror(code)} in modal sandbox {self._sb_id}", path)
        if isinstance(exc, errors.SandboxFilesystemError):
            return SandboxError(f"modal: file operation on {path} failed: {exc}")
        return self._gone(exc)

    async def _read_bytes(self, path: str) -> bytes:
        sb = self._live()
        errors = self._sdk.exception
        try:
            return bytes(await sb.filesystem.read_bytes.aio(path))
        except errors.SandboxFilesystemFileTooLargeError:
            pass  # too big for one message: stream it through a local file instead
        except Exception as exc:
            raise self._file_error(exc, path) from exc
        folder = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="hermes-modal-"))
        try:
            local = folder / "download"
            await sb.filesystem.copy_to_local.aio(path, str(local))
            return await asyncio.to_thread(local.read_bytes)
        except Exception as exc:
            raise self._file_error(exc, path) from exc
        finally:
            await asyncio.to_thread(shutil.rmtree, folder, True)

    async def _write_bytes(self, path: str, data: bytes) -> None:
        sb = self._live()
        try:
            await sb.filesystem.write_bytes.aio(data, path)
        except Exception as exc:
            raise self._file_error(exc, path) from exc
