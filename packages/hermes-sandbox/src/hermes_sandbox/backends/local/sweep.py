"""Finding a local sandbox's processes by their marker variable, and what dead owners left.

Every process a local sandbox starts carries ``HERMES_SANDBOX_MARKER=<sandbox id>.<command
number>`` in its environment, and so do its descendants, also those that left the
command's session or process group (``setsid``, ``nohup ... &``, double-forking daemons).
``sweep`` stops, then kills every process whose environment carries a marker, by reading
``/proc``. ``reap_orphans`` removes what the local sandboxes of dead processes left.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import tempfile

from hermes_sandbox.backends.local.cgroup import remove_orphan_cgroups

__all__ = [
    "MARKER_VARIABLE",
    "needle",
    "process_exists",
    "reap_orphans",
    "remove_tree",
    "state_parent",
    "sweep",
]

#: The environment variable that tags every process a sandbox starts.
MARKER_VARIABLE = "HERMES_SANDBOX_MARKER"

# Sweeps of /proc before giving up on a process that keeps reappearing.
_SWEEP_ROUNDS = 50


def needle(mark: str, *, exact: bool = False) -> bytes:
    """What a process's ``/proc/<pid>/environ`` (with a leading NUL) contains if it carries
    ``mark`` (``exact``: that mark and no longer one)."""
    return f"\0{MARKER_VARIABLE}={mark}{chr(0) if exact else ''}".encode()


def _marked(pattern: bytes) -> list[int]:
    """Processes (not this one) whose environment holds ``pattern``."""
    me = os.getpid()
    head = pattern[1:]
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    found = []
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if environ.startswith(head) or pattern in environ:
            found.append(pid)
    return found


def sweep(pattern: bytes) -> int:
    """Kill every process whose environment holds ``pattern``; returns how many kills were
    sent (0 on a system without ``/proc``).

    Processes are first stopped (SIGSTOP), round after round until a round finds no new
    one, so that a process that keeps forking (a fork bomb) cannot replace the ones being
    killed; then all are killed (SIGKILL, repeated until none is left). Blocking.
    """
    stopped: set[int] = set()
    for _ in range(_SWEEP_ROUNDS):
        fresh = [pid for pid in _marked(pattern) if pid not in stopped]
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        stopped.update(fresh)
    sent = 0
    for _ in range(_SWEEP_ROUNDS):
        found = _marked(pattern)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                sent += 1
    return sent


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
        sweep(needle(found[2]))
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
