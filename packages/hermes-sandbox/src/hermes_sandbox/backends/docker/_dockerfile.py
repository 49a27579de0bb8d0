"""Building an image from a Dockerfile and a context directory, with the network (the
daemon's default, the host's) or offline, within a time limit, cached by tag.

The build goes to the daemon's ``/build`` endpoint (the classic builder: no BuildKit
session, no registry) over a raw asyncio connection, so waiting for it holds no thread.
The daemon does not stop a classic build whose client went away, so at the time limit,
or when the caller is cancelled, the container running the current step is removed
(its id is in the build's output), which ends the build.

The image is labelled with a hash of what it was built from (the context's files, the
Dockerfile, the build arguments, and the ids of the images it reads: ``FROM``,
``COPY --from=``, ``RUN --mount=from=``, each pulled first when absent and the network
is on); a tag whose label matches is not built again, and a base rebuilt or pulled anew
under the same tag changes the hash. The classic builder does not run ``RUN --mount``
(a BuildKit feature): such a Dockerfile fails at that step.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import logging
import os
import tarfile
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

from hermes_sandbox._dockerfile import image_references
from hermes_sandbox._lifecycle import BuildNetwork
from hermes_sandbox.backends.docker._cache import (
    STAMP_LABEL,
    confirm_built,
    image_id,
    is_current,
)
from hermes_sandbox.backends.docker._daemon import DockerDaemon
from hermes_sandbox.backends.docker._errors import ImageBuildError
from hermes_sandbox.backends.docker._pull import PULL_ATTEMPTS, PULL_WAIT, ensure_reference
from hermes_sandbox.backends.docker._sdk import load_sdk
from hermes_sandbox.backends.docker._stream import CHUNK

__all__ = ["DEFAULT_BUILD_TIMEOUT", "STOP_GRACE", "build_dockerfile_image", "context_stamp"]

log = logging.getLogger(__name__)

#: Seconds a Dockerfile build may take unless told otherwise.
DEFAULT_BUILD_TIMEOUT: Final = 1800.0
#: Seconds given to a build being stopped to report its end.
STOP_GRACE: Final = 15.0
#: Lines of build output kept for an error message.
_LOG_TAIL: Final = 40


async def build_dockerfile_image(
    context: str | os.PathLike[str],
    tag: str,
    *,
    dockerfile: str = "Dockerfile",
    dockerfile_text: str | None = None,
    timeout: float = DEFAULT_BUILD_TIMEOUT,
    build_args: Mapping[str, str] | None = None,
    network: BuildNetwork = "default",
    force: bool = False,
    base_url: str | None = None,
    docker_config: str | os.PathLike[str] | None = None,
    on_progress: Callable[[str], None] | None = None,
    pull_attempts: int = PULL_ATTEMPTS,
    pull_wait: float = PULL_WAIT,
) -> str:
    """Build ``tag`` from ``context`` (a directory holding ``dockerfile``, a path relative
    to it; ``dockerfile_text`` replaces that file's text when given) unless ``tag``
    exists built from the same inputs; the tag.

    ``network``: what the ``RUN`` steps reach: ``default`` (the daemon's default network,
    as ``docker build``), ``host`` (the host's network: a mirror on 127.0.0.1), or
    ``none`` (offline, for air-gapped machines). Every image the Dockerfile reads
    (``FROM``, ``COPY --from=``, ``RUN --mount=from=``) must be on the daemon or is pulled
    first (with the docker credentials of ``docker_config``, default the docker
    client's); offline, an absent one is refused in one line naming it. The inputs the
    cache compares are the context's files, the Dockerfile, the build arguments and the
    ids of those images: a base rebuilt or pulled anew under the same tag rebuilds
    ``tag``. ``.dockerignore`` in the context is honoured. Cancelling the call stops the
    build. Build and pull progress lines go to ``on_progress`` (default: the log).

    Raises:
        ValueError: for a non-positive ``timeout``, an empty ``tag`` or an unknown
            ``network``.
        ImageUnavailableError: an image the Dockerfile reads is absent and offline, or
            its pull failed (see ``pull_image``).
        ImageBuildError: when the context or Dockerfile is missing, a reference holds a
            variable no ``ARG`` default sets, a step fails (the message holds the step
            and the end of the build's output), or the build takes longer than
            ``timeout`` seconds.
        DockerUnreachableError: if the daemon does not answer.
    """
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if not tag or not isinstance(tag, str) or any(c.isspace() for c in tag):
        raise ValueError(f"tag must be an image name such as 'task/x:1', got {tag!r}")
    if network not in ("default", "host", "none"):
        raise ValueError(f"network must be 'default', 'host' or 'none', got {network!r}")
    args = {str(k): str(v) for k, v in (build_args or {}).items()}
    archive, stamp, text = await asyncio.to_thread(
        _context_archive, Path(context), dockerfile, args, dockerfile_text
    )
    found = image_references(text)
    if found.unresolved:
        raise ImageBuildError(
            f"building {tag}: the image {found.unresolved[0]} in its Dockerfile uses a "
            "variable no ARG default sets; give the ARG a default in the Dockerfile"
        )
    daemon = await DockerDaemon.connect(base_url)
    try:
        bases = []
        for reference in found.images:
            base_id = await daemon.call(
                ensure_reference,
                daemon.api,
                reference,
                offline=network == "none",
                docker_config=docker_config,
                on_progress=on_progress,
                attempts=pull_attempts,
                wait=pull_wait,
            )
            bases.append(f"{reference}={base_id}")
        stamp = _with_bases(stamp, bases)
        if not force and await daemon.call(is_current, daemon.api, tag, stamp):
            return tag
        previous = await daemon.call(image_id, daemon.api, tag)
        query = {
            "t": tag,
            "dockerfile": dockerfile,
            "networkmode": network,
            "rm": "1",
            "forcerm": "1",
            "pull": "0",
            "version": "1",
            "labels": json.dumps({STAMP_LABEL: stamp}),
        }
        if args:
            query["buildargs"] = json.dumps(args)
        await _run_build(daemon, tag, urlencode(query), archive, timeout, on_progress)
        await daemon.call(confirm_built, daemon.api, tag, previous)
    finally:
        daemon.close()
    return tag


def _with_bases(stamp: str, bases: list[str]) -> str:
    """``stamp`` extended with the ids of the images a build reads (none: unchanged)."""
    if not bases:
        return stamp
    digest = hashlib.sha256("\n".join([stamp, *bases]).encode())
    return "dockerfile-" + digest.hexdigest()[:32]


def context_stamp(archive: bytes, dockerfile: str, build_args: Mapping[str, str]) -> str:
    """A hash of what a build reads: each file's path, type, mode and content in the
    context ``archive`` (not times), the Dockerfile's name and the build arguments."""
    digest = hashlib.sha256()
    digest.update(json.dumps([dockerfile, sorted(build_args.items())]).encode())
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r|") as tar:
        for member in tar:
            head = [member.name, member.type.decode(), member.mode, member.linkname]
            digest.update(json.dumps(head).encode() + b"\0")
            if member.isfile():
                extracted = tar.extractfile(member)
                if extracted is not None:
                    while piece := extracted.read(CHUNK):
                        digest.update(piece)
    return "dockerfile-" + digest.hexdigest()[:32]


def _context_archive(
    context: Path, dockerfile: str, args: Mapping[str, str], dockerfile_text: str | None = None
) -> tuple[bytes, str, str]:
    """The build context as a tar (``.dockerignore`` applied; the Dockerfile's text
    replaced by ``dockerfile_text`` when given), its stamp and the Dockerfile's text.

    Raises:
        ImageBuildError: if ``context`` is not a directory or ``dockerfile`` is not a file
            inside it.
    """
    if not context.is_dir():
        raise ImageBuildError(f"build context {context} is not a directory")
    target = (context / dockerfile).resolve()
    if not target.is_file() or not target.is_relative_to(context.resolve()):
        raise ImageBuildError(
            f"no Dockerfile {dockerfile!r} inside the build context {context} (dockerfile= "
            "is a path relative to the context)"
        )
    exclude = None
    ignore = context / ".dockerignore"
    if ignore.is_file():
        lines = (line.strip() for line in ignore.read_text().splitlines())
        exclude = [line for line in lines if line and not line.startswith("#")]
    with load_sdk().utils.tar(
        str(context), exclude=exclude, dockerfile=(dockerfile, None)
    ) as tar_file:
        archive = tar_file.read()
    if dockerfile_text is None:
        text = target.read_text(encoding="utf-8", errors="replace")
    else:
        text = dockerfile_text
        archive = _replace_member(archive, dockerfile, text.encode())
    return archive, context_stamp(archive, dockerfile, args), text


def _replace_member(archive: bytes, name: str, data: bytes) -> bytes:
    """``archive`` (a tar) with the file ``name`` holding ``data``."""
    wanted = name.lstrip("./")
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(archive)) as source,
        tarfile.open(fileobj=out, mode="w") as target,
    ):
        for member in source.getmembers():
            if member.name.lstrip("./") == wanted:
                continue
            target.addfile(member, source.extractfile(member) if member.isfile() else None)
        info = tarfile.TarInfo(wanted)
        info.size, info.mode = len(data), 0o644
        target.addfile(info, io.BytesIO(data))
    return out.getvalue()


async def _run_build(
    daemon: DockerDaemon,
    tag: str,
    query: str,
    archive: bytes,
    timeout: float,
    on_progress: Callable[[str], None] | None = None,
) -> None:
    """Send the build request and follow it to its end, or stop it at ``timeout`` or when
    the caller is cancelled.

    Raises:
        ImageBuildError: if the daemon refuses the build, a step fails, or time runs out.
    """
    reader, writer = await daemon.open_socket()
    progress = _Progress(tag, on_progress)
    try:
        head = (
            f"POST /v{daemon.version}/build?{query} HTTP/1.1\r\n"
            "Host: docker\r\nUser-Agent: hermes-sandbox\r\n"
            "Content-Type: application/x-tar\r\nConnection: close\r\n"
            f"Content-Length: {len(archive)}\r\n\r\n"
        ).encode()
        writer.write(head)
        writer.write(archive)
        reading = asyncio.ensure_future(_read_build(reader, writer, progress))
        try:
            done, _ = await asyncio.wait({reading}, timeout=timeout)
        except BaseException:
            await asyncio.shield(_stop(daemon, progress, reading))
            raise
        if not done:
            await asyncio.shield(_stop(daemon, progress, reading))
            raise ImageBuildError(
                f"building {tag} took longer than {timeout:g}s and was stopped (at "
                f"{progress.step or 'the start'}); pass a larger timeout= if it needs longer"
            )
        reading.result()
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), 1)


async def _stop(daemon: DockerDaemon, progress: _Progress, reading: asyncio.Future[None]) -> None:
    """Stop a build: remove the container running its current step (the daemon does not
    stop a classic build whose client went away), and each one a later step starts,
    until the build reports its end or ``STOP_GRACE`` runs out."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STOP_GRACE
    removed: set[str] = set()
    while not reading.done() and loop.time() < deadline:
        running = progress.running
        if running and running not in removed:
            removed.add(running)
            try:
                await daemon.remove_container(running)
            except Exception as exc:
                log.warning("docker: could not stop build container %s: %s", running, exc)
        await asyncio.wait({reading}, timeout=0.2)
    reading.cancel()
    with contextlib.suppress(BaseException):
        await reading


async def _read_build(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, progress: _Progress
) -> None:
    """Read the build's answer to its end, feeding its progress to ``progress``.

    Raises:
        ImageBuildError: if the daemon refuses the build or a step fails.
    """
    tag = progress.tag
    await writer.drain()
    try:
        response = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        raise ImageBuildError(f"building {tag}: the daemon closed the connection") from exc
    lines = response.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    headers = {
        name.strip().lower(): value.strip()
        for name, _, value in (line.partition(":") for line in lines[1:] if line)
    }
    body = _body(reader, "chunked" in headers.get("transfer-encoding", "").lower())
    if status != 200:
        text = b"".join([piece async for piece in body])[:4096].decode(errors="replace")
        with contextlib.suppress(ValueError, AttributeError):
            text = json.loads(text).get("message", text)
        raise ImageBuildError(f"building {tag}: the daemon refused ({status}): {text}")
    async for message in _messages(body):
        progress.feed(message)


async def _body(reader: asyncio.StreamReader, chunked: bool) -> AsyncIterator[bytes]:
    """The response body's pieces (HTTP/1.1 chunked, or up to the end of the stream)."""
    if not chunked:
        while piece := await reader.read(CHUNK):
            yield piece
        return
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            return
        yield await reader.readexactly(size)
        await reader.readexactly(2)


async def _messages(body: AsyncIterator[bytes]) -> AsyncIterator[dict[str, Any]]:
    """The JSON objects of a progress stream, however the pieces cut them."""
    decoder = json.JSONDecoder()
    buffer = ""
    async for piece in body:
        buffer += piece.decode(errors="replace")
        while True:
            buffer = buffer.lstrip()
            if not buffer:
                break
            try:
                message, end = decoder.raw_decode(buffer)
            except ValueError:
                break  # an object cut short: wait for the rest
            buffer = buffer[end:]
            if isinstance(message, dict):
                yield message


class _Progress:
    """What a build has reported so far: its current step, the container running that
    step, and the last lines of its output."""

    def __init__(self, tag: str, on_progress: Callable[[str], None] | None = None) -> None:
        self.tag = tag
        self.on_progress = on_progress
        self.step = ""
        self.running: str | None = None
        self.tail: deque[str] = deque(maxlen=_LOG_TAIL)

    def feed(self, message: Mapping[str, Any]) -> None:
        """Take one progress message.

        Raises:
            ImageBuildError: for an error message, with the failing step, the end of the
                output and what to do.
        """
        text = message.get("stream")
        if isinstance(text, str):
            for line in text.splitlines():
                if not line.strip():
                    continue
                self.tail.append(line)
                if line.startswith("Step "):
                    self.step, self.running = line, None
                    if self.on_progress is not None:
                        self.on_progress(f"build {self.tag}: {line}")
                elif line.startswith(" ---> Running in "):
                    self.running = line.rsplit(" ", 1)[-1]
            return
        error = message.get("error") or (message.get("errorDetail") or {}).get("message")
        if not error:
            return
        hint = ""
        if self.step.partition(" : ")[2].upper().startswith("FROM"):
            hint = "; the FROM image could not be had: build, load or pull it first"
        output = "\n".join(self.tail)
        raise ImageBuildError(
            f"building {self.tag} failed at {self.step or 'the start'}: {error}{hint}\n"
            f"--- last lines of the build output ---\n{output}"
        )
