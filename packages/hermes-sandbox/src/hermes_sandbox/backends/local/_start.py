"""What a local sandbox makes when it starts: its directories, the lock on a plain
sandbox's workdir, its cgroups, the choice of bubblewrap and the isolated sandbox's
start (tried again when bubblewrap fails once). ``LocalSandbox._start`` calls these in
order; each raises ``SandboxStartError`` saying what to do.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Sequence

from hermes_sandbox._errors import SandboxStartError
from hermes_sandbox.backends.local._bwrap import BwrapFailedError, find_bwrap
from hermes_sandbox.backends.local._cgroup import CgroupUnavailableError, SandboxCgroups
from hermes_sandbox.backends.local._isolation import HELPER_PROCESSES, Namespace
from hermes_sandbox.backends.local._layout import Interpreter, Layout
from hermes_sandbox.backends.local._options import Isolation
from hermes_sandbox.backends.local._sweep import remove_tree

__all__ = ["choose_bwrap", "lock_workdir", "make_cgroups", "make_dirs", "start_namespace"]

_log = logging.getLogger("hermes_sandbox.backends.local")

# Starts of bubblewrap before its failure is reported.
_BWRAP_ATTEMPTS = 3
# Commands are the OOM killer's first choice in a memory-limited sandbox (not the helper).
_OOM_FIRST = "{ echo 500 >/proc/self/oom_score_adj; } 2>/dev/null\n"


def make_dirs(
    root: str,
    state_dir: str,
    private_source: str,
    interpreter: Interpreter | None,
    *,
    private: bool,
) -> bool:
    """The sandbox's home ``root``, its shell state ``state_dir`` (with ``python``/
    ``python3`` links for the plain mode) and, if ``private``, its private workdir
    ``private_source``; whether that one was made. What was made is removed when a
    later one fails.

    Raises:
        SandboxStartError: if one cannot be made.
    """
    made: list[str] = []
    try:
        for path in (root, state_dir):
            os.mkdir(path, 0o700)
            made.append(path)
        state = os.path.join(state_dir, "state")
        os.close(os.open(state, os.O_CREAT | os.O_WRONLY, 0o600))
        if interpreter is not None:
            os.mkdir(os.path.join(state_dir, "bin"), 0o700)
            for name in ("python", "python3"):
                os.symlink(interpreter.executable, os.path.join(state_dir, "bin", name))
        if private:
            os.mkdir(private_source, 0o700)
            made.append(private_source)
            return True
    except OSError as exc:
        for path in made:
            remove_tree(path)
        raise SandboxStartError(
            f"local: cannot create {exc.filename or root}: {exc.strerror or exc}; "
            "set TMPDIR to a writable directory"
        ) from exc
    return False


def lock_workdir(workdir: str) -> int:
    """Plain mode: make ``workdir`` if missing, and hold it while the sandbox is open (a
    lock on the directory: another open sandbox's, in any process, refuses); the
    descriptor that holds the lock (closing it releases it).

    Raises:
        SandboxStartError: if it cannot be made, or another sandbox holds it.
    """
    try:
        os.makedirs(workdir, exist_ok=True)
        fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SandboxStartError(
            f"local: cannot create {exc.filename or workdir}: {exc.strerror or exc}; "
            "set workdir to a writable directory"
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise SandboxStartError(
            f"local: workdir {workdir} is in use by another open plain local "
            "sandbox, and plain sandboxes share host paths (one's files would overwrite "
            "the other's); give each sandbox its own workdir or none, or use "
            "isolation='bwrap', where each sandbox gets its own private "
            f"{workdir}"
        ) from exc
    return fd


def choose_bwrap(isolation: Isolation, task_id: str) -> str | None:
    """The ``bwrap`` program to use, or None for the plain mode (said in a log warning
    when ``auto`` finds no bubblewrap).

    Raises:
        SandboxStartError: for ``isolation="bwrap"`` without bubblewrap.
    """
    if isolation == "none":
        return None
    bwrap = find_bwrap()
    if bwrap is None:
        if isolation == "bwrap":
            raise SandboxStartError(
                "local: isolation='bwrap' needs bubblewrap, which is not installed "
                "(apt-get install bubblewrap); or use isolation='none' or 'auto'"
            )
        _log.warning(
            "local sandbox %s runs directly on this host (isolation='auto', but "
            "bubblewrap is not installed); its commands can read this user's files and "
            "processes; apt-get install bubblewrap to isolate them, or pass "
            "isolation='none' to choose this",
            task_id,
        )
    return bwrap


def make_cgroups(
    name: str,
    pids_limit: int | None,
    memory_mb: int | None,
    *,
    isolated: bool,
    task_id: str,
) -> tuple[SandboxCgroups | None, str]:
    """The sandbox's cgroups for ``pids_limit`` and ``memory_mb`` (at least one set),
    and the line a plain command runs first (joining them; the OOM killer's preference
    with a memory limit). The isolated mode joins them once, at start; a plain command
    joins them as its first action, which costs a cgroup migration per command (about
    10 ms on a heavily loaded machine), so none is made without a limit. A memory limit
    that cannot be enforced is said in one log warning.

    Raises:
        SandboxStartError: if ``pids_limit`` is set and no cgroup can be made.
    """
    pids, memory = pids_limit, memory_mb
    if isolated and pids is not None:
        pids += HELPER_PROCESSES
    try:
        made = SandboxCgroups.create(
            name,
            pids_limit=pids,
            memory_bytes=None if memory is None else memory << 20,
        )
    except CgroupUnavailableError as exc:
        raise SandboxStartError(
            f"local: cannot enforce pids_limit={pids_limit}: {exc}; "
            "leave pids_limit unset or use the docker backend"
        ) from exc
    if made.memory_problem is not None:
        _log.warning(
            "local sandbox %s: memory_mb=%s is NOT enforced: %s",
            task_id,
            memory,
            made.memory_problem,
        )
    cgroup = made if made.groups else None
    join = ""
    if cgroup is not None and not isolated:
        join = cgroup.join_line()
    if memory is not None and made.memory_problem is None:
        join += _OOM_FIRST
    return cgroup, join


async def start_namespace(
    bwrap: str,
    layout: Layout,
    *,
    home: str,
    log_path: str,
    cgroup_procs: Sequence[str],
    task_id: str,
) -> Namespace | None:
    """The isolated sandbox of ``layout``, started (``Namespace.start``); a bubblewrap
    that cannot size tmpfs mounts starts it without sizes (said in a log warning), and a
    failed start is tried again up to three times in all.

    Raises:
        BwrapFailedError: if bubblewrap fails every time.
        SandboxStartError: as ``Namespace.start``.
    """
    for attempt in range(_BWRAP_ATTEMPTS):
        try:
            return await Namespace.start(
                bwrap=bwrap,
                layout=layout,
                home=home,
                log_path=log_path,
                cgroup_procs=cgroup_procs,
            )
        except BwrapFailedError as exc:
            if layout.sized and "--size" in str(exc):
                # bubblewrap before 0.7, or a setuid one: no size on a tmpfs.
                _log.warning(
                    "local sandbox %s: this bubblewrap cannot size tmpfs mounts (0.7 or "
                    "newer, not setuid, can): /tmp, /dev/shm and /run are bounded only "
                    "by memory_mb",
                    task_id,
                )
                layout.sized = False
                continue
            # A mount that comes or goes while the sandbox's view is made (a
            # container starting) fails that once.
            if attempt + 1 == _BWRAP_ATTEMPTS:
                raise
            _log.info("local sandbox %s: bubblewrap failed, trying again: %s", task_id, exc)
    return None
