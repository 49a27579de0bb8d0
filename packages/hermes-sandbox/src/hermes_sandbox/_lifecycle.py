"""What a harness asks of a backend around its sandboxes, without knowing which backend
it has: prepare an image (``Sandbox.prepare_image``), and remove what a run left
(``Sandbox.reap_run``). This module holds the types those class methods take and give,
the run id every sandbox of this process is marked with, and a helper for backends that
build from a context folder kept on disk.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from hermes_sandbox._errors import SandboxError

__all__ = [
    "RUN_ID",
    "BuildNetwork",
    "ImageSource",
    "ImageUnavailableError",
    "ImageUnavailableKind",
    "PreparedImage",
    "default_contexts_dir",
    "kept_context",
]

#: One id per Python process, put on every sandbox it starts where the backend can label
#: them (docker's ``hermes-sandbox.run`` label); ``Sandbox.reap_run`` takes it back.
RUN_ID: Final = uuid.uuid4().hex[:12]

#: The network a Dockerfile build's ``RUN`` steps get: ``default`` (the daemon's default
#: network, as ``docker build`` does), ``host`` (the host's own, e.g. to reach a package
#: mirror on 127.0.0.1), ``none`` (offline).
BuildNetwork = Literal["default", "host", "none"]

#: Why an image could not be had: no such image in its registry (``not_found``), the
#: registry refused the credentials (``unauthorized``), it is absent and the network may
#: not be used (``missing_offline``), the pull failed after its retries (``pull_failed``),
#: the backend cannot build from a Dockerfile (``unsupported``).
ImageUnavailableKind = Literal[
    "not_found", "unauthorized", "missing_offline", "pull_failed", "unsupported"
]


class ImageUnavailableError(SandboxError):
    """An image a sandbox or a build needs could not be had; ``reference`` names it and
    ``kind`` says why (the message is one line saying what to do)."""

    def __init__(self, message: str, *, reference: str, kind: ImageUnavailableKind) -> None:
        super().__init__(message)
        self.reference = reference
        self.kind: ImageUnavailableKind = kind


@dataclass(frozen=True)
class ImageSource:
    """What an image is made from: a prebuilt ``reference``, or a ``context`` folder with
    a Dockerfile (``dockerfile_text`` replaces the context's own ``Dockerfile`` when
    given).

    Attributes:
        name: the cache key: the tag a build gets (e.g. ``hermes-bench/task:<hash>``); for
            a reference, the reference itself.
        reference: a prebuilt image (``repo/name:tag``).
        context, dockerfile_text: a build's context folder and Dockerfile.
        timeout: seconds a build (or a pull) may take.
        offline: use no network: nothing is pulled, and builds run without a network.
        build_network: the network of a build's ``RUN`` steps when not ``offline``.
        on_progress: called with a line of progress (pull and build), when given.

    Raises:
        ValueError: (on creation) neither or both of ``reference`` and ``context``, an
            empty ``name`` or a non-positive ``timeout``.
    """

    name: str
    reference: str | None = None
    context: Path | None = None
    dockerfile_text: str | None = None
    timeout: float = 1800.0
    offline: bool = False
    build_network: BuildNetwork = "default"
    on_progress: Callable[[str], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if (self.reference is None) == (self.context is None):
            raise ValueError("ImageSource needs exactly one of reference= and context=")
        if not self.name:
            raise ValueError("ImageSource needs a name (the image's tag or cache key)")
        if not self.timeout > 0:
            raise ValueError(f"ImageSource timeout must be positive, got {self.timeout!r}")
        if self.build_network not in ("default", "host", "none"):
            raise ValueError(
                f"build_network must be 'default', 'host' or 'none', got {self.build_network!r}"
            )

    @property
    def network(self) -> BuildNetwork:
        """The network a build gets: ``none`` when ``offline``, else ``build_network``."""
        return "none" if self.offline else self.build_network

    def progress(self, line: str) -> None:
        """Pass ``line`` to ``on_progress`` (nothing when it is unset)."""
        if self.on_progress is not None:
            self.on_progress(line)


@dataclass(frozen=True)
class PreparedImage:
    """An image ready for sandboxes: ``name`` (its tag or reference) and ``options``, the
    ``create_sandbox`` options that select it on the backend that prepared it (docker's
    ``image``; Modal's ``modal_image``; Daytona's ``daytona_image`` and
    ``create_timeout``)."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)


def default_contexts_dir() -> Path:
    """Where build contexts are kept for backends that build from a folder later or in a
    cloud: ``$XDG_CACHE_HOME/hermes-sandbox/build-contexts`` (``~/.cache`` by default)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "hermes-sandbox" / "build-contexts"


def kept_context(source: ImageSource, contexts_dir: Path | None = None) -> Path:
    """A folder holding ``source``'s build context (its Dockerfile replaced by
    ``dockerfile_text`` when given), named for ``source.name`` under ``contexts_dir``
    (default :func:`default_contexts_dir`), made once and atomically: a folder that
    exists is complete, whoever made it. Blocking.

    Raises:
        ValueError: ``source`` is a reference.
        OSError: the folder cannot be written or the context read.
    """
    if source.context is None:
        raise ValueError(f"{source.name} is a prebuilt reference, not a build context")
    kept_as = source.name.replace("/", "-").replace(":", "-").replace("@", "-")
    target = (contexts_dir or default_contexts_dir()) / kept_as
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        shutil.copytree(source.context, staging / "context", symlinks=True)
        if source.dockerfile_text is not None:
            (staging / "context" / "Dockerfile").write_text(
                source.dockerfile_text, encoding="utf-8"
            )
        try:
            os.rename(staging / "context", target)
        except OSError:
            if not target.is_dir():  # not another caller that made it first
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
