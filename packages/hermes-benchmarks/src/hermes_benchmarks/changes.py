"""What the agent changed in its sandbox's system, and whether a change can alter the tests.

In shared mode the tests run on the agent's file system, so a binary or Python file the
agent planted can decide them. After the agent's turn (before the tests) the harness asks
the docker daemon for the container's changes against its image (``docker diff``) and
keeps those outside the work directory in the trial's result. :func:`suspect_reasons`
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
import posixpath
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from hermes_sandbox import Sandbox, SandboxError
from hermes_sandbox.backends.docker import DockerDaemon

__all__ = ["MAX_RECORDED", "SystemChanges", "suspect_reasons", "system_changes"]

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
    base_url = sandbox.options.extra.get("base_url")
    daemon = await DockerDaemon.connect(base_url if isinstance(base_url, str) else None)
    try:
        diff, info = await daemon.call(_diff_and_inspect, daemon, container)
        config = info.get("Config") or {}
        workdir = str(config.get("WorkingDir") or "") or sandbox.workdir
        path_dirs = _path_dirs(config.get("Env") or [])
        entries = [
            (_KINDS.get(int(entry.get("Kind", 0)), "C"), str(entry.get("Path", "")))
            for entry in diff or []
        ]
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


def _diff_and_inspect(
    daemon: DockerDaemon, container: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The container's changes and its inspection (blocking; through the SDK client)."""
    return daemon.api.diff(container), daemon.api.inspect_container(container)


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
