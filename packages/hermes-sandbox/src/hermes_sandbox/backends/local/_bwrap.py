"""Starting bubblewrap for the isolated mode of the local backend: the ``bwrap`` program,
its command line, and the thread of its own that starts it and waits for its exit.

``--die-with-parent`` kills bubblewrap when the *thread* that started it ends: the
thread that starts it here lives as long as bubblewrap (or this process), reaps it and
tells the sandbox (``isolation.Namespace``) when it exits.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import shlex
import shutil
import threading
from collections.abc import Sequence

from hermes_sandbox._errors import SandboxStartError
from hermes_sandbox._processes import DEFAULT_PATH
from hermes_sandbox.backends.local._layout import Layout
from hermes_sandbox.backends.local._process import Command, inheritable_fds

__all__ = [
    "BwrapFailedError",
    "bwrap_argv",
    "find_bwrap",
    "info_complete",
    "log_tail",
    "spawn_kept",
]

#: The first descriptor bubblewrap reads a hidden file's (empty) contents from.
_FIRST_MASK_FD = 6


class BwrapFailedError(SandboxStartError):
    """bubblewrap exited before the sandbox was ready; the message has its own words."""


def find_bwrap() -> str | None:
    """The ``bwrap`` program, or None if bubblewrap is not installed."""
    return shutil.which("bwrap")


def bwrap_argv(
    bwrap: str, layout: Layout, home: str, cgroup_procs: Sequence[str]
) -> tuple[list[str], int]:
    """The command line that starts the sandbox of ``layout`` with the helper in it
    (working directory ``home``; joining ``cgroup_procs`` first), and how many hidden
    files it masks (``spawn_kept``'s ``masks``)."""
    argv = [
        bwrap,
        "--new-session",
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        *(() if layout.network else ("--unshare-net",)),
        "--cap-drop",
        "ALL",
    ]
    mounts, masks = layout.arguments(_FIRST_MASK_FD)
    argv += mounts
    argv += ["--chdir", home, "--info-fd", "4", "--"]
    argv += [*layout.helper_argv(), "3", "5", "4"]
    if cgroup_procs:
        join = " && ".join(f"echo $$ >{shlex.quote(procs)}" for procs in cgroup_procs)
        argv = ["/bin/sh", "-c", f'{join} && exec "$@"', "sh", *argv]
    return argv, masks


def spawn_kept(
    argv: list[str],
    fds: tuple[int, int, int, int],
    masks: int,
    watch: Command,
    exited: threading.Event,
) -> int:
    """Start bubblewrap from a thread of its own, which then waits for it to exit (and
    sets ``exited``, then tells ``watch``); returns its pid once it runs.

    ``--die-with-parent`` kills bubblewrap when the *thread* that started it ends: a
    thread that lives as long as bubblewrap (or this process) is the one that may.

    Raises:
        OSError: if bubblewrap cannot be started.
        RuntimeError: if no thread can be started.
    """
    started: concurrent.futures.Future[int] = concurrent.futures.Future()
    loop = watch.loop

    def report(code: int) -> None:
        with contextlib.suppress(RuntimeError):  # the start's loop is closed: nobody waits
            loop.call_soon_threadsafe(watch.set_exit, code)

    def keep() -> None:
        try:
            pid = _spawn_bwrap(argv, *fds, masks)
        except BaseException as exc:
            started.set_exception(exc)
            return
        started.set_result(pid)
        try:
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            code = 255
        exited.set()
        report(code)

    thread = threading.Thread(target=keep, name="hermes-bwrap", daemon=True)
    thread.start()
    return started.result()


def _spawn_bwrap(argv: list[str], sock: int, info: int, linker: int, log: int, masks: int) -> int:
    """Start bubblewrap: the helper's socket as fd 3, the info pipe as fd 4, the linker
    as fd 5, ``/dev/null`` as fds 6 to 6 + ``masks`` - 1 (read by ``--ro-bind-data``),
    stdin ``/dev/null``, stdout and stderr into ``log``. Returns its pid.

    Raises:
        OSError: if it cannot be started.
    """
    # Each source goes first to a spare number above every source (so that none is
    # overwritten before it is copied), then to its place.
    sources = (sock, info, linker)
    spare = max(*sources, 5) + 1
    spares = tuple(range(spare, spare + len(sources)))
    return os.posix_spawn(
        argv[0],
        argv,
        {"PATH": DEFAULT_PATH},
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, log, 1),
            (os.POSIX_SPAWN_DUP2, log, 2),
            *((os.POSIX_SPAWN_DUP2, fd, to) for fd, to in zip(sources, spares, strict=True)),
            *((os.POSIX_SPAWN_DUP2, fd, to) for fd, to in zip(spares, (3, 4, 5), strict=True)),
            *((os.POSIX_SPAWN_CLOSE, fd) for fd in spares),
            # What this process inherited must not reach the sandbox.
            *(
                (os.POSIX_SPAWN_CLOSE, fd)
                for fd in inheritable_fds()
                if fd not in (3, 4, 5, *spares)
            ),
            *(
                (os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDONLY, 0)
                for fd in range(_FIRST_MASK_FD, _FIRST_MASK_FD + masks)
            ),
        ],
        setsid=True,
    )


def info_complete(text: str) -> bool:
    """Whether bubblewrap's info (read so far from its info pipe) is whole JSON."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def log_tail(path: str) -> str:
    """The end of bubblewrap's log (its own error messages); "" if it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read()[-2000:].decode(errors="replace").strip()
    except OSError:
        return ""
