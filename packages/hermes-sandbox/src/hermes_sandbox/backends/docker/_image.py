"""Building the docker backend's base images locally, cached by tag.

No image registry is needed: images are made from Debian's own packages and loaded with
the daemon's import endpoint (what ``docker import`` does).

- ``debian`` (``hermes-sandbox/debian:bookworm``, the default image, ~200 MB): a
  ``debootstrap --variant=minbase`` root filesystem plus ``procps``. Needs root and the
  ``debootstrap`` package; takes about a minute.
- ``busybox`` (``hermes-sandbox/busybox:bookworm``, ~4 MB): Debian's ``busybox-static``
  (all the usual tools as applets) plus ``bash-static`` as ``/bin/bash`` (the backend runs
  every command with bash) and a ``nohup`` shim. Needs only ``apt-get download`` (after
  ``apt-get update``) and ``dpkg-deb``; takes seconds, no root. Good for fast tests, with
  limits: busybox's tools accept fewer options than GNU's, and a tool started under another
  name (``exec -a NAME sleep``) fails, since busybox picks the tool by its name.

Images of a task are built from its Dockerfile and context directory with
``await build_dockerfile_image(context, tag, timeout=..., network=...)``: with the
daemon's default network, the host's, or none; the images it reads are pulled first when
absent (offline: refused); see ``_dockerfile`` and ``_pull``.

Building is skipped when the tag exists and carries the builder's current stamp (label
``hermes-sandbox.image``: the recipe, or a hash of a Dockerfile build's inputs);
``force=True`` rebuilds. From a shell::

    python -m hermes_sandbox.backends.docker build              # debian
    python -m hermes_sandbox.backends.docker build --kind busybox
    python -m hermes_sandbox.backends.docker exists --kind debian   # exit 0 or 1
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from hermes_sandbox._processes import DEFAULT_PATH
from hermes_sandbox.backends.docker._cache import (
    STAMP_LABEL,
    confirm_built,
    image_id,
    is_current,
)
from hermes_sandbox.backends.docker._daemon import DockerDaemon
from hermes_sandbox.backends.docker._dockerfile import (
    DEFAULT_BUILD_TIMEOUT,
    build_dockerfile_image,
)
from hermes_sandbox.backends.docker._errors import ImageBuildError
from hermes_sandbox.backends.docker._rootfs import (
    DEBIAN_EXTRA_PACKAGES,
    DEFAULT_SUITE,
    busybox_rootfs,
    debian_rootfs,
    remove_tree,
)

__all__ = [
    "BUSYBOX_IMAGE",
    "DEFAULT_BUILD_TIMEOUT",
    "DEFAULT_IMAGE",
    "IMAGES",
    "STAMP_LABEL",
    "ImageBuildError",
    "build_busybox_image",
    "build_debian_image",
    "build_dockerfile_image",
    "build_image",
    "ensure_image",
    "image_exists",
    "missing_image_hint",
]

log = logging.getLogger(__name__)

DEFAULT_IMAGE: Final = "hermes-sandbox/debian:bookworm"
BUSYBOX_IMAGE: Final = "hermes-sandbox/busybox:bookworm"
#: Image kinds and their default tags.
IMAGES: Final = {"debian": DEFAULT_IMAGE, "busybox": BUSYBOX_IMAGE}

#: The current recipe of each kind (label ``STAMP_LABEL``); an image of an older one is
#: rebuilt.
STAMPS: Final = {"debian": "debian-1", "busybox": "busybox-2"}

_CHANGES: Final = (f"ENV PATH={DEFAULT_PATH}", "ENV LANG=C.UTF-8", 'CMD ["bash"]')


def missing_image_hint(image: str) -> str:
    """The error text for an image the daemon does not have."""
    kind = next((k for k, tag in IMAGES.items() if tag == image), None)
    if kind is not None:
        how = (
            f"build it with `python -m hermes_sandbox.backends.docker build --kind {kind}`"
            " (or run .ci/services/docker.sh)"
        )
    else:
        how = (
            "pull, build or load it (docker pull / docker build / docker load), or make "
            f"a Debian one under that tag: `python -m hermes_sandbox.backends.docker "
            f"build --kind debian --tag {image}`"
        )
    return f"docker: image {image!r} is not on the daemon; {how}"


# --------------------------------------------------------------------------------------
# the daemon side
# --------------------------------------------------------------------------------------
def image_exists(tag: str, *, base_url: str | None = None) -> bool:
    """Whether the daemon has an image ``tag``. Blocking.

    Raises:
        DockerUnreachableError: if the daemon does not answer.
    """
    daemon = DockerDaemon.open(base_url)
    try:
        return image_id(daemon.api, tag) is not None
    finally:
        daemon.close()


def _import(api: Any, source: str | bytes, tag: str, stamp: str) -> None:
    repository, _, version = tag.rpartition(":")
    if not repository or "/" in version:
        repository, version = tag, "latest"
    changes = [*_CHANGES, f"LABEL {STAMP_LABEL}={stamp}"]
    previous = image_id(api, tag)
    if isinstance(source, bytes):
        api.import_image_from_data(source, repository=repository, tag=version, changes=changes)
    else:
        api.import_image_from_file(source, repository=repository, tag=version, changes=changes)
    confirm_built(api, tag, previous)


# --------------------------------------------------------------------------------------
# the base images
# --------------------------------------------------------------------------------------
def build_image(
    kind: str = "debian",
    *,
    tag: str | None = None,
    force: bool = False,
    suite: str = DEFAULT_SUITE,
    mirror: str | None = None,
    base_url: str | None = None,
) -> str:
    """Build image ``kind`` (``debian`` or ``busybox``) unless ``tag`` exists; the tag.

    Blocking (a debian build takes about a minute); use ``ensure_image`` from async code.

    Raises:
        ValueError: for an unknown kind.
        ImageBuildError: when a tool, root, or the package mirror is missing.
        DockerUnreachableError: if the daemon does not answer.
    """
    if kind == "debian":
        return build_debian_image(
            tag or DEFAULT_IMAGE, suite=suite, mirror=mirror, force=force, base_url=base_url
        )
    if kind == "busybox":
        return build_busybox_image(tag or BUSYBOX_IMAGE, force=force, base_url=base_url)
    raise ValueError(f"unknown image kind {kind!r}; known: {', '.join(IMAGES)}")


async def ensure_image(kind: str = "debian", **options: Any) -> str:
    """``build_image`` in a thread (nothing is built when the tag exists).

    Raises:
        ValueError, ImageBuildError, DockerUnreachableError: as ``build_image``.
    """
    return await asyncio.to_thread(build_image, kind, **options)


def build_debian_image(
    tag: str = DEFAULT_IMAGE,
    *,
    suite: str = DEFAULT_SUITE,
    mirror: str | None = None,
    packages: Sequence[str] = DEBIAN_EXTRA_PACKAGES,
    force: bool = False,
    base_url: str | None = None,
) -> str:
    """debootstrap a minbase root filesystem of ``suite`` and import it as ``tag``.

    ``mirror`` defaults to the host's own apt source for Debian, else debootstrap's
    default. Blocking.

    Raises:
        ImageBuildError: without root or debootstrap, or when debootstrap fails.
        DockerUnreachableError: if the daemon does not answer.
    """
    daemon = DockerDaemon.open(base_url)
    try:
        if not force and is_current(daemon.api, tag, STAMPS["debian"]):
            return tag
        work = Path(tempfile.mkdtemp(prefix="hermes-image-", dir="/var/tmp"))
        try:
            archive = debian_rootfs(work, suite=suite, mirror=mirror, packages=packages)
            log.info("importing %s (%d MB)", tag, archive.stat().st_size >> 20)
            _import(daemon.api, str(archive), tag, STAMPS["debian"])
        finally:
            remove_tree(work)
    finally:
        daemon.close()
    return tag


def build_busybox_image(
    tag: str = BUSYBOX_IMAGE, *, force: bool = False, base_url: str | None = None
) -> str:
    """Import ``busybox-static`` + ``bash-static`` (from the host's apt sources) as ``tag``.

    Blocking; takes seconds.

    Raises:
        ImageBuildError: if the packages cannot be downloaded (run ``apt-get update``).
        DockerUnreachableError: if the daemon does not answer.
    """
    daemon = DockerDaemon.open(base_url)
    try:
        if not force and is_current(daemon.api, tag, STAMPS["busybox"]):
            return tag
        archive = busybox_rootfs()
        log.info("importing %s (%d KB)", tag, len(archive) >> 10)
        _import(daemon.api, archive, tag, STAMPS["busybox"])
    finally:
        daemon.close()
    return tag
