"""The trusted helper: static ``bash`` and ``busybox`` mounted read-only in every container.

What the backend itself runs in a container (the keeper, the command sessions, the kill
and stop scripts, ``mkdir`` for uploads) runs as ``/.hermes/bash`` or ``/.hermes/busybox``:
absolute paths on a read-only docker volume, never a name looked up on the container's
``PATH``. A command (root in its container, but without ``CAP_SYS_ADMIN``) can neither
write to that mount, nor remount, unmount or shadow it, so a ``bash`` it plants in
``/usr/local/bin`` or earlier on ``PATH`` does not change what the harness runs, and
images without bash of their own work too. Both binaries are statically linked (Debian's
``bash-static`` and ``busybox-static``), so they run on any image's libc or none, and
``/etc/ld.so.preload`` does not reach them.

The volume is filled once per daemon from the busybox base image (``BUSYBOX_IMAGE``,
built from those two Debian packages by ``image.build_image``; built here when missing):
a created, never started container of it copies its ``/bin/bash`` and ``/bin/busybox``
into a fresh volume through the archive API. Only then is a second, empty volume made
whose label names the filled one: sandboxes look for that marker, so none ever mounts a
half-filled helper, and processes that fill it at the same time each make a complete one.
Both volumes stay on the daemon (like the base images) for later runs.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any, Final

from hermes_sandbox.backends.docker._errors import ImageBuildError
from hermes_sandbox.backends.docker._image import BUSYBOX_IMAGE, build_image
from hermes_sandbox.backends.docker._sdk import explain, load_sdk

__all__ = [
    "HELPER_BASH",
    "HELPER_BUSYBOX",
    "HELPER_DIR",
    "HELPER_LABEL",
    "HELPER_VERSION",
    "helper_mount",
    "helper_volume",
]

#: Where the helper is mounted in every container.
HELPER_DIR: Final = "/.hermes"
HELPER_BASH: Final = f"{HELPER_DIR}/bash"
HELPER_BUSYBOX: Final = f"{HELPER_DIR}/busybox"
#: The label on the marker volume of a complete helper (value: ``HELPER_VERSION``); the
#: marker's ``HELPER_LABEL + ".volume"`` label names the helper volume.
HELPER_LABEL: Final = "hermes-sandbox.helper"
#: Bumped when the helper's content changes, so an old volume is not used.
HELPER_VERSION: Final = "1"

_FILES: Final = ("bash", "busybox")
_FILL_TARGET: Final = "/.hermes-fill"


def helper_volume(api: Any, *, base_url: str | None = None) -> str:
    """The name of a complete helper volume on the daemon, filling one if there is none.
    Blocking (one request when it exists; about a second the first time).

    Raises:
        ImageBuildError: if the busybox image cannot be built or the volume filled.
        DockerUnreachableError: if the daemon does not answer (while building).
    """
    found = _ready_volume(api)
    if found is not None:
        return found
    docker = load_sdk()
    try:
        api.inspect_image(BUSYBOX_IMAGE)
    except docker.errors.ImageNotFound:
        build_image("busybox", base_url=base_url)
    name = f"hermes-sandbox-helper-{HELPER_VERSION}-{uuid.uuid4().hex[:10]}"
    try:
        _fill(api, name)
        api.create_volume(
            name=f"{name}-ready",
            labels={HELPER_LABEL: HELPER_VERSION, f"{HELPER_LABEL}.volume": name},
        )
    except docker.errors.APIError as exc:
        with contextlib.suppress(Exception):
            api.remove_volume(name, force=True)
        raise ImageBuildError(
            f"docker: could not fill the helper volume {name} from {BUSYBOX_IMAGE}: {explain(exc)}"
        ) from exc
    return name


def helper_mount(volume: str) -> Any:
    """The read-only mount of the helper ``volume`` at ``HELPER_DIR``."""
    docker = load_sdk()
    return docker.types.Mount(
        target=HELPER_DIR, source=volume, type="volume", read_only=True, no_copy=True
    )


def _ready_volume(api: Any) -> str | None:
    listed = api.volumes(filters={"label": f"{HELPER_LABEL}={HELPER_VERSION}"})
    names = sorted(
        str((volume.get("Labels") or {}).get(f"{HELPER_LABEL}.volume") or "")
        for volume in (listed or {}).get("Volumes") or []
    )
    names = [name for name in names if name]
    return names[0] if names else None


def _fill(api: Any, name: str) -> None:
    """Copy the busybox image's static ``bash`` and ``busybox`` into a new volume."""
    docker = load_sdk()
    api.create_volume(name=name, labels={f"{HELPER_LABEL}.content": HELPER_VERSION})
    mount = docker.types.Mount(target=_FILL_TARGET, source=name, type="volume", no_copy=True)
    created = api.create_container(
        image=BUSYBOX_IMAGE,
        command=["/bin/true"],
        host_config=api.create_host_config(mounts=[mount], network_mode="none"),
        labels={f"{HELPER_LABEL}.fill": name},
    )
    container = str(created["Id"])
    try:
        for file in _FILES:
            bits, _ = api.get_archive(container, f"/bin/{file}")
            api.put_archive(container, _FILL_TARGET, b"".join(bits))
    finally:
        with contextlib.suppress(Exception):
            api.remove_container(container, force=True)
