"""Cgroups per local sandbox: its process and memory limits, and killing all its
processes at once.

The pids controller counts every process (and thread) of the cgroup and refuses a fork
past ``pids.max``: that is how ``pids_limit`` holds on the local backend. The memory
controller bounds the memory the cgroup's processes use (tmpfs pages they write
included): past ``memory_mb`` the kernel's OOM killer ends the biggest process in it.
A sandbox's cgroup is made below this process's own cgroup, in the cgroup v2 hierarchy
when the controller can be enabled there, else in the cgroup v1 hierarchy of that
controller (so one sandbox may have two: ``pids`` and ``memory``; ``SandboxCgroups``
holds them). A command joins them as its first action (``echo $$ > cgroup.procs``, a
shell builtin, before it can fork), so everything it starts is counted. ``kill`` ends
every process in them, without reading ``/proc`` and without starting a thread
(``cgroup.kill`` on cgroup v2, else SIGKILL to the listed processes until none is left;
the limit keeps them few).

Where no hierarchy with a controller is writable by this process (an unprivileged user
without a delegated cgroup, a container that mounts cgroups read-only),
``find_parent`` raises ``CgroupUnavailableError`` with the reason.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from hermes_sandbox._errors import SandboxStartError

__all__ = [
    "CgroupUnavailableError",
    "PidsCgroup",
    "SandboxCgroups",
    "find_parent",
    "find_pids_parent",
    "remove_orphan_cgroups",
]

# Rounds of SIGKILL to the listed processes (cgroup v1) before giving up.
_KILL_ROUNDS = 200


class CgroupUnavailableError(SandboxStartError):
    """No cgroup with the pids controller can be made here; the message says why."""


@dataclass(frozen=True)
class _Parent:
    path: str
    version: int


def find_pids_parent() -> _Parent:
    """The cgroup directory below which this process may make cgroups with the pids
    controller.

    Raises:
        CgroupUnavailableError: if there is none (the message says why).
    """
    return find_parent("pids")


def find_parent(controller: str) -> _Parent:
    """The cgroup directory below which this process may make cgroups with
    ``controller`` (``"pids"`` or ``"memory"``).

    Raises:
        CgroupUnavailableError: if there is none (the message says why).
    """
    mounts = _cgroup_mounts()
    memberships = _memberships()
    reasons = []
    v2 = mounts.get("cgroup2")
    if v2 is not None and "" in memberships:
        mount, root = v2
        path = _join(mount, root, memberships[""])
        try:
            available = _read(os.path.join(path, "cgroup.controllers")).split()
            if controller not in available:
                raise OSError(f"the {controller} controller is not available in {path}")
            enabled = _read(os.path.join(path, "cgroup.subtree_control")).split()
            if controller not in enabled:
                _write(os.path.join(path, "cgroup.subtree_control"), f"+{controller}")
            return _Parent(path, 2)
        except OSError as exc:
            reasons.append(f"cgroup v2: {_describe(exc)}")
    v1 = mounts.get(controller)
    if v1 is not None and controller in memberships:
        mount, root = v1
        path = _join(mount, root, memberships[controller])
        if os.access(path, os.W_OK | os.X_OK):
            return _Parent(path, 1)
        reasons.append(f"cgroup v1: {path} is not writable by this user")
    if not reasons:
        reasons.append(f"no cgroup hierarchy with the {controller} controller is mounted")
    raise CgroupUnavailableError(
        f"cannot make a cgroup with the {controller} controller ("
        + "; ".join(reasons)
        + "); run as root, under a delegated cgroup (systemd-run --user --scope "
        "-p Delegate=yes), or use the docker backend"
    )


class PidsCgroup:
    """One sandbox's cgroup. Make it with ``create``; ``remove`` it at the end."""

    def __init__(self, path: str, version: int) -> None:
        self.path = path
        self.version = version

    @classmethod
    def create(cls, name: str, limit: int | None) -> PidsCgroup:
        """Make the cgroup ``name`` below this process's own, with ``pids.max = limit``
        (no limit for ``None``).

        Raises:
            CgroupUnavailableError: if no such cgroup can be made here.
        """
        parent = find_pids_parent()
        path = os.path.join(parent.path, name)
        try:
            os.mkdir(path)
        except OSError as exc:
            raise CgroupUnavailableError(
                f"cannot make the cgroup {path}: {_describe(exc)}; run as root or under a "
                "delegated cgroup, or use the docker backend"
            ) from exc
        made = cls(path, parent.version)
        if limit is not None:
            try:
                _write(os.path.join(path, "pids.max"), str(limit))
            except OSError as exc:
                made.remove(0.0)
                raise CgroupUnavailableError(
                    f"cannot set pids.max in {path}: {_describe(exc)}"
                ) from exc
        return made

    def limit_memory(self, limit: int) -> str | None:
        """Bound the memory of the cgroup's processes to ``limit`` bytes, swap included
        where the kernel counts it; why it could not, or None.

        Never raises.
        """
        if self.version == 2:
            files = ("memory.max", "memory.swap.max")
            values = (str(limit), "0")
        else:
            files = ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes")
            values = (str(limit), str(limit))
        try:
            _write(os.path.join(self.path, files[0]), values[0])
        except OSError as exc:
            return f"cannot set {files[0]} in {self.path}: {_describe(exc)}"
        with contextlib.suppress(OSError):  # no swap accounting here: nothing to bound
            _write(os.path.join(self.path, files[1]), values[1])
        return None

    @property
    def procs_file(self) -> str:
        """The file a process writes its pid to in order to join."""
        return os.path.join(self.path, "cgroup.procs")

    def join_line(self) -> str:
        """A bash line that moves the running shell into this cgroup (or fails it)."""
        procs = shlex.quote(self.procs_file)
        return (
            f"{{ echo $$ >{procs}; }} 2>/dev/null"
            f" || {{ echo 'sandbox: cannot join the cgroup '{procs} >&2; exit 125; }}\n"
        )

    def pids(self) -> list[int]:
        """The processes in the cgroup (empty once it is gone)."""
        try:
            return [int(line) for line in _read(self.procs_file).split()]
        except (OSError, ValueError):
            return []

    def kill(self) -> None:
        """SIGKILL every process in the cgroup; never raises, starts no thread."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                _write(os.path.join(self.path, "cgroup.kill"), "1")
                return
        for _ in range(_KILL_ROUNDS):
            found = self.pids()
            if not found:
                return
            for pid in found:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self, timeout: float) -> bool:
        """Kill what is left, wait up to ``timeout`` seconds for the processes to be gone
        and remove the cgroup; whether it is gone. Blocking; never raises."""
        deadline = time.monotonic() + timeout
        while True:
            self.kill()
            try:
                os.rmdir(self.path)
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.01)


def remove_orphan_cgroups(dead: Callable[[str], bool]) -> None:
    """Kill and remove the sandbox cgroups below this process's own (pids and memory)
    whose names ``dead`` accepts (their owner is gone). Never raises."""
    parents: dict[str, _Parent] = {}
    for controller in ("pids", "memory"):
        with contextlib.suppress(CgroupUnavailableError, OSError):
            parent = find_parent(controller)
            parents[parent.path] = parent
    for parent in parents.values():
        try:
            names = os.listdir(parent.path)
        except OSError:
            continue
        for name in names:
            path = os.path.join(parent.path, name)
            if name.startswith("hermes-local-") and dead(name) and os.path.isdir(path):
                PidsCgroup(path, parent.version).remove(1.0)


class SandboxCgroups:
    """The cgroups of one sandbox: one per hierarchy that holds a controller its limits
    need (one on cgroup v2; on v1 one for ``pids`` and one for ``memory``)."""

    def __init__(self, groups: list[PidsCgroup], memory_problem: str | None) -> None:
        self.groups = groups
        #: Why ``memory_mb`` is not enforced (None when it is, or was not asked for).
        self.memory_problem = memory_problem

    @classmethod
    def create(
        cls, name: str, *, pids_limit: int | None, memory_bytes: int | None
    ) -> SandboxCgroups:
        """Make the cgroups named ``name`` for the limits asked for (None: not asked).
        A memory limit that cannot be set is reported in ``memory_problem``, not raised.

        Raises:
            CgroupUnavailableError: if ``pids_limit`` cannot be enforced.
        """
        parents: dict[str, tuple[_Parent, list[str]]] = {}
        memory_problem = None
        wanted = [c for c, v in (("pids", pids_limit), ("memory", memory_bytes)) if v is not None]
        for controller in wanted:
            try:
                parent = find_parent(controller)
            except CgroupUnavailableError as exc:
                if controller == "pids":
                    raise
                memory_problem = str(exc)
                continue
            parents.setdefault(parent.path, (parent, []))[1].append(controller)
        made = cls([], memory_problem)
        try:
            for parent, controllers in parents.values():
                path = os.path.join(parent.path, name)
                try:
                    os.mkdir(path)
                except OSError as exc:
                    problem = (
                        f"cannot make the cgroup {path}: {_describe(exc)}; run as root or "
                        "under a delegated cgroup, or use the docker backend"
                    )
                    if "pids" in controllers:
                        raise CgroupUnavailableError(problem) from exc
                    made.memory_problem = problem
                    continue
                group = PidsCgroup(path, parent.version)
                made.groups.append(group)
                if "pids" in controllers and pids_limit is not None:
                    try:
                        _write(os.path.join(path, "pids.max"), str(pids_limit))
                    except OSError as exc:
                        raise CgroupUnavailableError(
                            f"cannot set pids.max in {path}: {_describe(exc)}"
                        ) from exc
                if "memory" in controllers and memory_bytes is not None:
                    made.memory_problem = group.limit_memory(memory_bytes)
        except BaseException:
            made.remove(0.0)
            raise
        return made

    @property
    def procs_files(self) -> list[str]:
        """The files a process writes its pid to in order to join them all."""
        return [group.procs_file for group in self.groups]

    @property
    def paths(self) -> list[str]:
        """The cgroup directories."""
        return [group.path for group in self.groups]

    def join_line(self) -> str:
        """A bash line that moves the running shell into every cgroup (or fails it)."""
        return "".join(group.join_line() for group in self.groups)

    def pids(self) -> list[int]:
        """The processes in the cgroups (empty once they are gone)."""
        return sorted({pid for group in self.groups for pid in group.pids()})

    def kill(self) -> None:
        """SIGKILL every process in the cgroups; never raises, starts no thread."""
        for group in self.groups:
            group.kill()

    def remove(self, timeout: float) -> bool:
        """``PidsCgroup.remove`` for each; whether all are gone. Never raises."""
        gone = True
        for group in self.groups:
            gone = group.remove(timeout) and gone
        return gone


def _cgroup_mounts() -> dict[str, tuple[str, str]]:
    """``{"cgroup2": (mount point, root), "pids": ..., "memory": ...}`` as mounted here."""
    found: dict[str, tuple[str, str]] = {}
    try:
        lines = _read("/proc/self/mountinfo").splitlines()
    except OSError:
        return found
    for line in lines:
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) < 5 or len(rest) < 3:
            continue
        root, mount = _unescape(fields[3]), _unescape(fields[4])
        if rest[0] == "cgroup2":
            found.setdefault("cgroup2", (mount, root))
        elif rest[0] == "cgroup":
            for controller in ("pids", "memory"):
                if controller in rest[2].split(","):
                    found.setdefault(controller, (mount, root))
    return found


def _memberships() -> dict[str, str]:
    """This process's cgroup path per hierarchy: ``""`` for v2, ``"pids"`` and
    ``"memory"`` for v1's."""
    found: dict[str, str] = {}
    try:
        lines = _read("/proc/self/cgroup").splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            found[""] = path
        else:
            for controller in ("pids", "memory"):
                if controller in controllers.split(","):
                    found[controller] = path
    return found


def _join(mount: str, root: str, path: str) -> str:
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root) :]
    return os.path.join(mount, path.lstrip("/"))


def _unescape(text: str) -> str:
    return text.replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")


def _read(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _describe(exc: OSError) -> str:
    return f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
