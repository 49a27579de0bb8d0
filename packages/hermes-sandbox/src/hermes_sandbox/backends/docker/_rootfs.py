"""Root filesystems for the base images, made on the host from Debian's own packages
(blocking: run in threads or from the command line).

- ``debian_rootfs``: a ``debootstrap --variant=minbase`` tree, as a tar file (needs root
  and ``debootstrap``).
- ``busybox_rootfs``: ``busybox-static`` with its applets plus ``bash-static`` as
  ``/bin/bash``, as tar bytes (needs ``apt-get download`` and ``dpkg-deb``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from hermes_sandbox.backends.docker._errors import ImageBuildError

__all__ = [
    "DEBIAN_EXTRA_PACKAGES",
    "DEFAULT_SUITE",
    "busybox_rootfs",
    "debian_rootfs",
    "host_debian_mirror",
    "remove_tree",
]

log = logging.getLogger(__name__)

DEFAULT_SUITE: Final = "bookworm"
#: Packages added to debootstrap's minbase set.
DEBIAN_EXTRA_PACKAGES: Final = ("procps",)

#: Small tools Debian's busybox leaves out, as bash scripts.
_SHIMS: Final = {
    "nohup": b"#!/bin/bash\n# nohup: run a command immune to hangups\ntrap '' HUP\nexec \"$@\"\n",
}


# --------------------------------------------------------------------------------------
# debian
# --------------------------------------------------------------------------------------
def debian_rootfs(
    work: Path,
    *,
    suite: str = DEFAULT_SUITE,
    mirror: str | None = None,
    packages: Sequence[str] = DEBIAN_EXTRA_PACKAGES,
) -> Path:
    """debootstrap a minbase tree of ``suite`` under ``work`` and tar it; the tar's path.

    ``mirror`` defaults to the host's own apt source for Debian, else debootstrap's
    default. ``work`` must be a fresh directory; remove it with ``remove_tree``.

    Raises:
        ImageBuildError: without root or debootstrap, or when debootstrap or tar fails.
    """
    if os.geteuid() != 0:
        raise ImageBuildError(
            "building the debian image runs debootstrap, which needs root; run it as root "
            "or build the small image instead (--kind busybox)"
        )
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise ImageBuildError(
            "debootstrap is not installed: apt-get update && apt-get install -y debootstrap"
        )
    mirror = mirror or host_debian_mirror()
    rootfs = work / "rootfs"
    command = [debootstrap, "--variant=minbase"]
    if packages:
        command.append("--include=" + ",".join(packages))
    command += [suite, str(rootfs)] + ([mirror] if mirror else [])
    log.info("running %s", " ".join(command))
    started = time.monotonic()
    _run_logged(command, work / "debootstrap.log", what="debootstrap")
    log.info("debootstrap done in %.0fs", time.monotonic() - started)
    _slim_rootfs(rootfs)
    archive = work / "rootfs.tar"
    _run_logged(
        ["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(archive), "."],
        work / "tar.log",
        what="tar",
    )
    return archive


def host_debian_mirror() -> str | None:
    """The Debian mirror the host's apt uses (``None`` if there is none to read)."""
    candidates: list[str] = []
    sources = Path("/etc/apt/sources.list.d")
    for path in sorted(sources.glob("*.sources")) if sources.is_dir() else []:
        with contextlib.suppress(OSError):
            for stanza in path.read_text().split("\n\n"):
                match = re.search(r"(?m)^URIs:\s*(\S+)", stanza)
                if match and "-security" not in stanza:
                    candidates.append(match.group(1))
    with contextlib.suppress(OSError):
        for line in Path("/etc/apt/sources.list").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 3 and fields[0] == "deb" and "security" not in fields[2]:
                candidates.append(fields[1] if not fields[1].startswith("[") else fields[2])
    for uri in candidates:
        if uri.startswith(("http://", "https://")) and "/debian" in uri:
            return uri
    return None


def _run_logged(command: list[str], log_path: Path, *, what: str) -> None:
    with log_path.open("wb") as sink:
        done = subprocess.run(command, stdout=sink, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        tail = log_path.read_bytes()[-3000:].decode(errors="replace")
        raise ImageBuildError(f"{what} failed (exit {done.returncode}):\n{tail}")


def _slim_rootfs(rootfs: Path) -> None:
    """Drop downloaded packages and package lists (``apt-get update`` brings lists back)."""
    for pattern in ("var/cache/apt/archives/*.deb", "var/lib/apt/lists/*_*", "var/log/*.log"):
        for path in rootfs.glob(pattern):
            with contextlib.suppress(OSError):
                path.unlink()


def remove_tree(work: Path) -> None:
    """Remove a build directory, first unmounting anything a failed debootstrap left
    mounted inside it (never following a mount into the host's /proc or /sys)."""
    prefix = str(work.resolve()) + "/"
    with contextlib.suppress(OSError):
        mounts = [
            line.split()[1]
            for line in Path("/proc/self/mounts").read_text().splitlines()
            if len(line.split()) > 1 and line.split()[1].startswith(prefix)
        ]
        for mount in sorted(mounts, key=len, reverse=True):
            subprocess.run(["umount", "-l", mount], check=False, capture_output=True)
        if mounts:
            still = Path("/proc/self/mounts").read_text()
            if prefix in still:
                log.warning("leaving %s in place: something is still mounted in it", work)
                return
    shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------------------
# busybox
# --------------------------------------------------------------------------------------
def busybox_rootfs() -> bytes:
    """A tar of ``busybox-static`` (every applet linked) plus ``bash-static`` as
    ``/bin/bash`` and a ``nohup`` shim, from the host's apt sources.

    Raises:
        ImageBuildError: if the packages cannot be downloaded (run ``apt-get update``).
    """
    with tempfile.TemporaryDirectory(prefix="hermes-image-") as tmp:
        work = Path(tmp)
        busybox = _binary_from_package(work, "busybox-static", "./bin/busybox")
        bash = _binary_from_package(work, "bash-static", "./bin/bash-static")
        tool = work / "busybox"
        tool.write_bytes(busybox)
        tool.chmod(0o755)
        listed = subprocess.run(
            [str(tool), "--list-full"], capture_output=True, check=False, text=True
        )
        if listed.returncode != 0:
            raise ImageBuildError(f"busybox --list-full failed: {listed.stderr.strip()}")
        applets = [line.strip() for line in listed.stdout.splitlines() if line.strip()]
    return _busybox_tar(busybox, bash, applets)


def _binary_from_package(work: Path, package: str, member: str) -> bytes:
    downloaded = subprocess.run(
        ["apt-get", "download", package], cwd=work, capture_output=True, text=True, check=False
    )
    debs = sorted(work.glob(f"{package}_*.deb"))
    if downloaded.returncode != 0 or not debs:
        raise ImageBuildError(
            f"apt-get download {package} failed ({downloaded.stderr.strip()}); run "
            f"`apt-get update` first (the busybox image is made from Debian's {package})"
        )
    unpacked = subprocess.run(
        ["dpkg-deb", "--fsys-tarfile", str(debs[-1])], capture_output=True, check=False
    )
    if unpacked.returncode != 0:
        raise ImageBuildError(f"dpkg-deb could not read {debs[-1].name}")
    with tarfile.open(fileobj=io.BytesIO(unpacked.stdout)) as archive:
        found = archive.extractfile(member)
        if found is None:
            raise ImageBuildError(f"{package} has no {member}")
        return found.read()


def _busybox_tar(busybox: bytes, bash: bytes, applets: Sequence[str]) -> bytes:
    buffer = io.BytesIO()
    now = int(time.time())

    def add(name: str, kind: bytes, mode: int, data: bytes = b"", link: str = "") -> None:
        info = tarfile.TarInfo(name)
        info.type, info.mode, info.mtime, info.linkname = kind, mode, now, link
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        archive.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for directory, mode in [
            ("bin", 0o755), ("sbin", 0o755), ("usr", 0o755), ("usr/bin", 0o755),
            ("usr/sbin", 0o755), ("usr/local", 0o755), ("usr/local/bin", 0o755),
            ("etc", 0o755), ("root", 0o700), ("tmp", 0o1777), ("var", 0o755),
            ("var/tmp", 0o1777), ("dev", 0o755), ("proc", 0o755), ("sys", 0o755),
        ]:  # fmt: skip
            add(directory, tarfile.DIRTYPE, mode)
        add("bin/busybox", tarfile.REGTYPE, 0o755, busybox)
        add("bin/bash", tarfile.REGTYPE, 0o755, bash)
        add("bin/sh", tarfile.SYMTYPE, 0o777, link="bash")
        taken = {"bin/busybox", "bin/bash", "bin/sh"}
        for applet in applets:
            path = applet.lstrip("/")
            if path in taken or "/" not in path or path.count("/") > 2:
                continue
            taken.add(path)
            add(path, tarfile.SYMTYPE, 0o777, link="/bin/busybox")
        for name, script in _SHIMS.items():
            if f"usr/bin/{name}" not in taken and f"bin/{name}" not in taken:
                add(f"usr/bin/{name}", tarfile.REGTYPE, 0o755, script)
        add("etc/passwd", tarfile.REGTYPE, 0o644, b"root:x:0:0:root:/root:/bin/bash\n")
        add("etc/group", tarfile.REGTYPE, 0o644, b"root:x:0:\n")
    return buffer.getvalue()
