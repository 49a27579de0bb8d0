"""What an isolated local sandbox sees of the host: the mounts given to bubblewrap.

The sandbox's root is an empty, read-only file system in which only this is shown:

- system directories, read-only: ``/usr``, ``/bin``, ``/sbin``, ``/lib*``, ``/opt``,
  ``/nix`` (those that exist; symbolic links such as ``/bin -> usr/bin`` are kept as
  links), ``/etc`` without its secrets, and ``/sys`` (without the host's network
  devices when the network is off);
- ``/proc`` of the sandbox's own pid namespace, a private ``/dev``;
- private tmpfs mounts of bounded size: ``/tmp`` (``tmp_size_mb``), ``/dev/shm``,
  ``/run``; ``/var/tmp`` is a link to ``/tmp``;
- the Python installation this process runs on, read-only, reachable as ``python`` and
  ``python3`` through ``/run/hermes-sandbox/bin`` (first on the default ``PATH``);
- directories named on the sandbox's own ``PATH`` (``env={"PATH": ...}``), read-only,
  with the Python installation a virtual environment there was made from;
- the sandbox's own directories, read-write: its home, its shell state, its working
  directory, and the host directories the ``host_dirs`` option names.

Hidden: every other path, among them ``/home``, ``/root``, ``/work``-style checkouts,
``/mnt``, ``/srv``, ``/var`` and the host's ``/tmp``. In ``/etc``, every file that is not
readable by all users (``shadow``, ``gshadow``, ssh host keys, ``sudoers``...) and
every directory that not all users may enter (``ssl/private``...) is replaced by an
empty one of mode 000, as are ``/etc/shadow``, ``/etc/gshadow`` (and their backups) and
``/etc/environment`` whatever their mode; the sandbox cannot read them even as root.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "IN_SANDBOX_BIN",
    "IN_SANDBOX_HELPER",
    "SYSTEM_DIRS",
    "Interpreter",
    "Layout",
    "host_interpreter",
    "path_dirs",
    "secrets_in_etc",
    "unbindable_workdir",
]

#: Host directories shown read-only (where they exist).
SYSTEM_DIRS = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix",
)
#: Hidden whatever their mode.
_ALWAYS_HIDDEN = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/environment",
)
#: Where the interpreter's names live inside the sandbox.
IN_SANDBOX_BIN = "/run/hermes-sandbox/bin"
#: Where the helper program is shown inside the sandbox.
IN_SANDBOX_HELPER = "/run/hermes-sandbox/helper.py"
_MB = 1 << 20
_SHM_MB = 64
_RUN_MB = 16


@dataclass(frozen=True)
class Interpreter:
    """A Python interpreter of this host: its real executable and the installation
    directories it needs."""

    executable: str
    roots: tuple[str, ...]


def host_interpreter() -> Interpreter | None:
    """The Python this process runs on, outside any virtual environment (a venv's
    ``python`` is a link to it), with its installation directories; None if it cannot
    be found (an embedded interpreter)."""
    base = getattr(sys, "_base_executable", "") or sys.executable
    if not base:
        return None
    real = os.path.realpath(base)
    if not os.access(real, os.X_OK):
        return None
    roots = {
        os.path.realpath(sys.base_prefix),
        os.path.realpath(sys.base_exec_prefix),
        os.path.dirname(os.path.dirname(real)),
    }
    return Interpreter(real, tuple(sorted(root for root in roots if root != "/")))


def secrets_in_etc(etc: str = "/etc") -> list[tuple[str, bool]]:
    """What of ``etc`` a sandbox must not read, as ``(path, is_directory)``: files not
    readable by all users, directories not searchable and readable by all users (their
    contents are not looked into), and the always hidden files. Never raises."""
    found: dict[str, bool] = {}

    def scan(directory: str) -> None:
        try:
            entries = os.scandir(directory)
        except OSError:
            return
        with entries:
            for entry in entries:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                if stat.S_ISDIR(mode):
                    if mode & 0o005 != 0o005:
                        found[entry.path] = True
                    else:
                        scan(entry.path)
                elif stat.S_ISREG(mode) and not mode & 0o004:
                    found[entry.path] = False

    scan(etc)
    if etc == "/etc":
        for path in _ALWAYS_HIDDEN:
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.lstat(path).st_mode):
                    found[path] = False
    return sorted(found.items())


def path_dirs(search_path: str) -> list[str]:
    """Host directories to show read-only for a sandbox whose ``PATH`` is
    ``search_path``: each existing directory on it, as the root of the virtual
    environment it belongs to (with the installation that environment was made from)."""
    shown: list[str] = []
    for entry in search_path.split(":"):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        venv = os.path.dirname(real)
        config = Path(venv, "pyvenv.cfg")
        if not config.is_file():
            shown.append(real)
            continue
        shown.append(venv)
        with contextlib.suppress(OSError):
            for line in config.read_text(errors="replace").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    shown.append(os.path.dirname(os.path.realpath(value.strip())))
        for name in ("python", "python3"):
            target = os.path.join(real, name)
            if os.path.exists(target):
                shown.append(os.path.dirname(os.path.dirname(os.path.realpath(target))))
                break
    return shown


def _covered(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


@dataclass
class Layout:
    """The mounts of one isolated sandbox; ``arguments`` turns them into bubblewrap's.

    Attributes:
        writable: host directories bound read-write at the same path.
        private: ``(host source, sandbox path)`` pairs bound read-write (a private
            working directory such as ``/workspace``).
        readable: host directories bound read-only at the same path (beyond the system
            directories).
        interpreter: the Python shown as ``python``/``python3`` (and running the helper).
        helper: the helper program's host path.
        network: whether the sandbox keeps the host's network.
        tmp_size_mb: the size of ``/tmp``.
        hidden: what of ``/etc`` to hide (``secrets_in_etc``).
    """

    writable: Sequence[str]
    private: Sequence[tuple[str, str]]
    readable: Sequence[str]
    interpreter: Interpreter
    helper: str
    network: bool
    tmp_size_mb: int
    hidden: Sequence[tuple[str, bool]] = field(default_factory=list)
    #: Whether tmpfs mounts get a size (bubblewrap 0.7 or newer, not setuid).
    sized: bool = True

    def _size(self, megabytes: int) -> list[str]:
        return ["--size", str(megabytes * _MB)] if self.sized else []

    def visible_system_dirs(self) -> list[str]:
        """The system directories shown (real directories, not links)."""
        return [d for d in SYSTEM_DIRS if os.path.isdir(d) and not os.path.islink(d)]

    def arguments(self, first_fd: int) -> tuple[list[str], int]:
        """bubblewrap's arguments for the mounts, and how many descriptors of
        ``/dev/null`` (numbered from ``first_fd``) they read, one per hidden file."""
        argv: list[str] = []
        system = self.visible_system_dirs()
        for directory in SYSTEM_DIRS:
            if os.path.islink(directory):
                argv += ["--symlink", os.readlink(directory), directory]
            elif directory in system:
                argv += ["--ro-bind", directory, directory]
        fd = first_fd
        for path, is_dir in self.hidden:
            if is_dir:
                argv += ["--perms", "0000", "--tmpfs", path, "--remount-ro", path]
            else:
                argv += ["--perms", "0000", "--ro-bind-data", str(fd), path]
                fd += 1
        argv += ["--ro-bind", "/sys", "/sys"]
        if not self.network:
            # sysfs shows the host's network devices whatever the namespace: mask them.
            argv += ["--tmpfs", "/sys/class/net", "--dir", "/sys/class/net/lo"]
            argv += ["--remount-ro", "/sys/class/net"]
        argv += ["--proc", "/proc", "--dev", "/dev"]
        argv += [*self._size(_SHM_MB), "--tmpfs", "/dev/shm"]
        argv += [*self._size(self.tmp_size_mb), "--tmpfs", "/tmp"]
        argv += ["--symlink", "../tmp", "/var/tmp"]
        argv += [*self._size(_RUN_MB), "--tmpfs", "/run"]
        shown = list(system)
        if self.network:
            resolv = os.path.realpath("/etc/resolv.conf")
            if not _covered(resolv, shown) and os.path.isfile(resolv):
                argv += ["--ro-bind", resolv, resolv]  # e.g. systemd-resolved's, under /run
        for root in [*self.interpreter.roots, *self.readable]:
            if not _covered(root, shown) and os.path.isdir(root):
                argv += ["--ro-bind", root, root]
                shown.append(root)
        argv += ["--ro-bind", self.helper, IN_SANDBOX_HELPER]
        for name in ("python", "python3"):
            argv += ["--symlink", self.interpreter.executable, f"{IN_SANDBOX_BIN}/{name}"]
        for path in self.writable:
            argv += ["--bind", path, path]
        for source, target in self.private:
            argv += ["--bind", source, target]
        argv += ["--remount-ro", "/"]
        return argv, fd - first_fd

    def helper_argv(self) -> list[str]:
        """How the helper is started inside the sandbox (its descriptors follow)."""
        return [self.interpreter.executable, "-I", "-S", IN_SANDBOX_HELPER]


def unbindable_workdir(workdir: str) -> str | None:
    """Why ``workdir`` cannot be a private directory of an isolated sandbox (a path
    inside a read-only system directory, where no mount point can be made, or one that
    would hide a system directory), or None."""
    hidden = [
        d for d in (*SYSTEM_DIRS, "/proc", "/dev", "/sys", "/tmp", "/run") if _covered(d, [workdir])
    ]
    if hidden:
        return (
            f"workdir {workdir} would hide {', '.join(hidden)} in an isolated sandbox; "
            "choose a directory of its own (e.g. /workspace)"
        )
    for directory in SYSTEM_DIRS:
        if _covered(workdir, [directory]) and not os.path.isdir(workdir):
            return (
                f"workdir {workdir} lies in the read-only {directory} of an isolated sandbox "
                "and does not exist there; choose a workdir outside the system directories "
                "(e.g. /workspace)"
            )
    return None
