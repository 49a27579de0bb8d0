"""What the agent changed in its sandbox's system, and whether a change can alter the tests.

In shared mode the tests run on the agent's file system, so a binary or Python file the
agent planted can decide them. After the agent's turn (before the tests) the harness reads
the container's changes against its image (what ``docker diff`` lists) and keeps those
outside the work directory in the trial's result.

How they are read: when the container's overlay2 upper directory (named by the daemon's
inspection) is on this machine and this process runs as root, by walking that directory
as docker's own native overlay diff does (:func:`overlay_changes`: whiteouts and opaque
folders are deletions, a path also in a lower layer is a change, else an addition; a
few milliseconds, as it holds only what the container wrote); otherwise (a remote or
rootless daemon, another storage driver, an upper directory with renamed folders or
metadata-only copies) by the daemon's ``docker diff``, which on some daemons compares
the whole image tree with the container's (0.3-0.6 s for a Debian image, measured on
docker 20.10 with overlay2). :func:`suspect_reasons`
applies the rule (the README's "Suspect trials" states it): a trial is *suspect* when a
change can alter what the tests run:

- a file in a ``PATH`` directory changed (an executable replaced);
- a file added to a ``PATH`` directory whose name exists in another ``PATH`` directory
  (it shadows that one, or is shadowed by it: either way the tests may run another
  program than the image's);
- ``/etc/ld.so.preload`` added or changed;
- a ``sitecustomize.py`` or ``usercustomize.py`` added or changed anywhere;
- a ``.pth`` file added or changed anywhere;
- an ``entry_points.txt`` added or changed that declares a pytest plugin (``[pytest11]``);
- a ``conftest.py`` or pytest configuration (``pytest.ini``, ``.pytest.ini``,
  ``pyproject.toml``, ``tox.ini``, ``setup.cfg``) added or changed in the tests' folder
  (``/tests``) or above it (``/``).

Only the docker backend can be asked; on others nothing is recorded.
"""

from __future__ import annotations

import asyncio
import io
import os
import posixpath
import stat as stat_mode
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from hermes_benchmarks.sandboxes import sandbox_daemon
from hermes_sandbox import Sandbox, SandboxError
from hermes_sandbox.backends.docker import DockerDaemon

__all__ = [
    "MAX_RECORDED",
    "SystemChanges",
    "overlay_changes",
    "suspect_reasons",
    "system_changes",
]

#: At most this many changes are kept in a result (the count of all is kept beside).
MAX_RECORDED: Final = 200
#: Folders the harness itself writes (logs, the oracle's solution, the tests, which are
#: removed and uploaded afresh before they run).
HARNESS_DIRS: Final = ("/logs", "/solution", "/tests")
#: Paths docker itself adds to every container (its init, mounted by ``--init``).
DOCKER_PATHS: Final = frozenset({"/sbin/docker-init", "/usr/sbin/docker-init"})
_KINDS: Final = {0: "C", 1: "A", 2: "D"}
_PYTEST_CONFIGS: Final = frozenset(
    {"conftest.py", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"}
)
_DIR_BIT: Final = 1 << 31
_DEFAULT_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class SystemChanges:
    """The agent's changes outside its work directory, and why they make it suspect.

    ``changes``: ``"A /path"`` (added), ``"C /path"`` (changed), ``"D /path"`` (deleted),
    by path, at most :data:`MAX_RECORDED`; ``total``: how many there were; ``reasons``: one line
    per change that makes the trial suspect (empty: clean).
    """

    changes: list[str] = field(default_factory=list)
    total: int = 0
    reasons: list[str] = field(default_factory=list)


def _below(path: str, folder: str) -> bool:
    return folder == "/" or path == folder or path.startswith(folder.rstrip("/") + "/")


async def system_changes(sandbox: Sandbox) -> SystemChanges | None:
    """The changes of ``sandbox``'s container against its image, outside its work
    directory and the harness's own folders; None for a sandbox that is not a started
    docker container.

    Raises:
        SandboxError: the daemon could not be asked (the container is gone, say).
    """
    container = getattr(sandbox, "container_id", None)
    if sandbox.backend != "docker" or not isinstance(container, str):
        return None
    daemon = await sandbox_daemon(sandbox)
    try:
        info = await daemon.call(daemon.api.inspect_container, container)
        local = await asyncio.to_thread(overlay_changes, info.get("GraphDriver") or {})
        if local is not None:
            entries = local
        else:
            diff = await daemon.call(daemon.api.diff, container)
            entries = [
                (_KINDS.get(int(entry.get("Kind", 0)), "C"), str(entry.get("Path", "")))
                for entry in diff or []
            ]
        config = info.get("Config") or {}
        workdir = str(config.get("WorkingDir") or "") or sandbox.workdir
        path_dirs = _path_dirs(config.get("Env") or [])
        kept = [
            (kind, path)
            for kind, path in sorted(entries, key=lambda entry: entry[1])
            if path
            and not _below(path, workdir)
            and not any(_below(path, d) for d in HARNESS_DIRS)
            and not path.startswith("/tmp/.hermes-")
            and path not in DOCKER_PATHS
        ]
        reasons = await suspect_reasons(kept, path_dirs, daemon, container)
    finally:
        daemon.close()
    return SystemChanges(
        changes=[f"{kind} {path}" for kind, path in kept[:MAX_RECORDED]],
        total=len(kept),
        reasons=reasons,
    )


def overlay_changes(graph_driver: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """The changes (``(kind, path)``, kind ``A``/``C``/``D``) of an overlay2 container
    read from its upper directory on this machine, by the rule of docker's native overlay
    diff, in its order; None when they cannot be read here so: another driver, the
    directories absent here (a remote daemon: the container's id is in their names, so a
    folder of that name is this container's), not root (overlay's ``trusted.`` marks are
    unreadable), or a folder renamed or a file copied up by metadata only (the lower
    layers then hold content the walk does not see). Blocking.

    ``graph_driver``: the ``GraphDriver`` of the container's inspection.
    """
    data = graph_driver.get("Data") or {}
    upper = data.get("UpperDir")
    lowers = [d for d in str(data.get("LowerDir") or "").split(":") if d]
    if (
        graph_driver.get("Name") != "overlay2"
        or not isinstance(upper, str)
        or not lowers
        or os.geteuid() != 0
        or not os.path.isdir(upper)
        or not all(os.path.isdir(d) for d in lowers)
    ):
        return None
    try:
        return _walk_upper(upper, lowers)
    except (OSError, _NotNative):
        return None


class _NotNative(Exception):
    """The upper directory uses an overlay feature the native diff cannot read."""


def _marked(path: str, name: str) -> bytes:
    try:
        return os.getxattr(path, f"trusted.overlay.{name}", follow_symlinks=False)
    except OSError:
        return b""


def _walk_upper(upper: str, lowers: Sequence[str]) -> list[tuple[str, str]]:
    """Docker's ``changes()`` over an overlay upper directory: each entry in lexical
    depth-first order; a whiteout (character device 0:0) or an opaque folder is a
    deletion, an entry also in a lower layer a change (a folder whose size, mode and
    time match is no change), else an addition; the parent of an addition or deletion
    is listed as changed once."""
    changes: list[tuple[str, str]] = []
    changed_dirs: set[str] = set()
    pending = [("/" + name) for name in sorted(os.listdir(upper), reverse=True)]
    while pending:
        path = pending.pop()
        host = upper + path
        info = os.lstat(host)
        is_dir = stat_mode.S_ISDIR(info.st_mode)
        if is_dir and _marked(host, "redirect"):
            raise _NotNative(path)
        if stat_mode.S_ISREG(info.st_mode) and _marked(host, "metacopy"):
            raise _NotNative(path)
        if is_dir:
            pending.extend(f"{path}/{name}" for name in sorted(os.listdir(host), reverse=True))
        whiteout = stat_mode.S_ISCHR(info.st_mode) and info.st_rdev == 0
        if whiteout or (is_dir and _marked(host, "opaque") == b"y"):
            kind = "D"
        else:
            kind = "A"
            lower = next((s for s in (_lstat(d + path) for d in lowers) if s is not None), None)
            if lower is not None:
                if is_dir and stat_mode.S_ISDIR(lower.st_mode) and _same_dir(info, lower):
                    continue
                kind = "C"
        if is_dir:
            changed_dirs.add(path)
        if kind != "C":
            parent = posixpath.dirname(path)
            if parent != "/" and parent not in changed_dirs:
                changes.append(("C", parent))
                changed_dirs.add(parent)
        changes.append((kind, path))
    return changes


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _same_dir(mine: os.stat_result, lower: os.stat_result) -> bool:
    """Docker's test that a folder in the upper layer is unchanged: size, mode and time
    alike (times without nanoseconds compare by their seconds)."""
    if mine.st_size != lower.st_size or mine.st_mode != lower.st_mode:
        return False
    a, b = mine.st_mtime_ns, lower.st_mtime_ns
    if a == b:
        return True
    seconds = a // 1_000_000_000 == b // 1_000_000_000
    return seconds and (a % 1_000_000_000 == 0 or b % 1_000_000_000 == 0)


def _path_dirs(env: Sequence[str]) -> list[str]:
    path = next((item[5:] for item in env if item.startswith("PATH=")), _DEFAULT_PATH)
    dirs: list[str] = []
    for part in path.split(":"):
        if posixpath.isabs(part):
            normal = posixpath.normpath(part)
            if normal not in dirs:
                dirs.append(normal)
    return dirs


async def suspect_reasons(
    changes: Sequence[tuple[str, str]],
    path_dirs: Sequence[str],
    daemon: DockerDaemon,
    container: str,
) -> list[str]:
    """One line per change (``(kind, path)``, kind ``A``/``C``/``D``) that can alter
    what the tests run, by the rule of this module's docstring. Files are looked at
    through the daemon (stat, and the content of ``entry_points.txt``).

    Raises:
        SandboxError: the daemon could not be asked.
    """
    reasons: list[str] = []
    known: dict[str, str] | None = None

    async def real_dirs() -> dict[str, str]:
        nonlocal known
        if known is None:
            known = await _real_dirs(daemon, container, path_dirs)
        return known

    for kind, path in changes:
        if kind == "D":
            continue
        folder, name = posixpath.split(path)
        if path == "/etc/ld.so.preload":
            reasons.append(f"{path}: preloads a library into every program")
        elif name in ("sitecustomize.py", "usercustomize.py"):
            reasons.append(f"{path}: runs in every Python start")
        elif name.endswith(".pth"):
            reasons.append(f"{path}: a .pth file runs in every Python start")
        elif name == "entry_points.txt":
            if b"[pytest11]" in await _read(daemon, container, path):
                reasons.append(f"{path}: declares a pytest plugin")
        elif name in _PYTEST_CONFIGS and folder in ("/", "/tests"):
            reasons.append(f"{path}: pytest reads it for the tests in /tests")
        elif folder in path_dirs or folder in (await real_dirs()).values():
            real = await real_dirs()
            stat = await daemon.stat(container, path)
            if stat is None or int(stat.get("mode", 0)) & _DIR_BIT:
                continue
            if kind == "C":
                reasons.append(f"{path}: an executable on PATH was replaced")
                continue
            here = real.get(folder, folder)
            others = [d for d in path_dirs if real.get(d, d) != here]
            found = await asyncio.gather(
                *(daemon.stat(container, posixpath.join(d, name)) for d in others)
            )
            twins = [posixpath.join(d, name) for d, s in zip(others, found, strict=True) if s]
            if twins:
                reasons.append(f"{path}: a new program of the same name as {twins[0]} on PATH")
    return reasons


async def _real_dirs(daemon: DockerDaemon, container: str, dirs: Sequence[str]) -> dict[str, str]:
    """Each of ``dirs`` with a symbolic link in its place followed (merged-usr images
    have ``/bin`` -> ``usr/bin``): folders that are one are not told apart. The daemon
    is asked about all of them at once."""
    real: dict[str, str] = {}
    stats = await asyncio.gather(*(daemon.stat(container, folder) for folder in dirs))
    for folder, stat in zip(dirs, stats, strict=True):
        target = str((stat or {}).get("linkTarget") or "")
        if target:
            real[folder] = posixpath.normpath(posixpath.join(posixpath.dirname(folder), target))
        else:
            real[folder] = folder
    return real


async def _read(daemon: DockerDaemon, container: str, path: str) -> bytes:
    """The bytes of a small file in the container (empty when it cannot be read)."""
    try:
        archive = await daemon.fetch(container, daemon.get_archive_bytes, container, path)
    except (FileNotFoundError, SandboxError):
        return b""
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        member = next((m for m in tar.getmembers() if m.isfile()), None)
        handle = tar.extractfile(member) if member is not None else None
        return handle.read(1 << 20) if handle is not None else b""
