"""What the local sandboxes of dead owners left, and removing it.

Every process a local sandbox starts carries its marker (``<sandbox id>.<command
number>``, see ``hermes_sandbox._processes``). ``reap_orphans`` removes what the local
sandboxes of dead processes left: their commands still running (swept by marker), their
directories, shell state and cgroups.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile

from hermes_sandbox._processes import environ_needle, sweep
from hermes_sandbox.backends.local._cgroup import remove_orphan_cgroups

__all__ = ["process_exists", "reap_orphans", "remove_tree", "state_parent"]


def remove_tree(path: str) -> None:
    """Remove a directory tree, also one the commands made read-only; never raises."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except OSError:
        for directory, _, _ in os.walk(path):
            with contextlib.suppress(OSError):
                os.chmod(directory, stat.S_IRWXU)
        shutil.rmtree(path, ignore_errors=True)


def state_parent() -> str:
    """Where the sandboxes' shell state lives: tmpfs when there is one."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return tempfile.gettempdir()


#: Names of a local sandbox's directory, cgroup and shell state: owner pid, marker head.
ORPHAN_NAME = re.compile(r"hermes-local-([0-9]+)-(?:.+-)?([0-9a-f]{10})")


def reap_orphans(directory: str | None = None) -> list[str]:
    """Remove what local sandboxes of processes that no longer exist left behind.

    A local sandbox's temporary directory is named after the process that made it. For
    every such directory in ``directory`` (default: the system temporary directory)
    whose process is gone (it was killed with SIGKILL, or died before closing), this
    kills the sandbox's commands that still run (found by their marker variable),
    removes the directory and its shell state, and reports the directory. Shell state
    left on tmpfs without its directory, and the cgroups of dead owners, are removed too.
    Sandboxes of live processes are never touched. Blocking; never raises.

    Returns:
        The directories in ``directory`` that were removed.
    """
    base = directory or tempfile.gettempdir()
    roots = set(_list(base))
    states = {n.removesuffix(".shell") for n in _list(state_parent()) if n.endswith(".shell")}
    removed = []
    for name in sorted(roots | states):
        found = ORPHAN_NAME.fullmatch(name)
        if found is None or process_exists(int(found[1])):
            continue
        sweep(environ_needle(found[2]))
        path = os.path.join(base, name)
        remove_tree(path)
        remove_tree(os.path.join(state_parent(), f"{name}.shell"))
        if name in roots:
            removed.append(path)
    remove_orphan_cgroups(lambda name: _dead_owner(name))
    return removed


def _dead_owner(name: str) -> bool:
    found = ORPHAN_NAME.fullmatch(name)
    return found is not None and not process_exists(int(found[1]))


def _list(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def process_exists(pid: int) -> bool:
    """Whether a process with this id exists (someone else's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process (or a pid beyond range: not ours to judge)
    return True
