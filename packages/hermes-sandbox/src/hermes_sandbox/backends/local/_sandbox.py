"""``LocalSandbox``: commands run on this host, in a per-task temporary directory.

See the package docstring (``hermes_sandbox.backends.local``) for the two modes and what
each isolates. What ``start`` makes is in ``_start.py``, how files are read and copied in
each mode in ``_files.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import SandboxClosedError, SandboxError, SandboxStartError
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._output import OutputCollector
from hermes_sandbox._processes import DEFAULT_PATH, MARKER_VARIABLE, environ_needle, sweep
from hermes_sandbox._result import ExecResult
from hermes_sandbox._shell import wrap_command
from hermes_sandbox._teardown import finish, in_thread
from hermes_sandbox.backends.local._cgroup import SandboxCgroups
from hermes_sandbox.backends.local._files import copy_in, copy_out, read_bytes, write_bytes
from hermes_sandbox.backends.local._host_files import copy_tree
from hermes_sandbox.backends.local._isolation import HELPER, Namespace
from hermes_sandbox.backends.local._layout import (
    IN_SANDBOX_BIN,
    Interpreter,
    Layout,
    host_interpreter,
    path_dirs,
    secrets_in_etc,
    unbindable_workdir,
)
from hermes_sandbox.backends.local._options import check_options
from hermes_sandbox.backends.local._process import (
    ChildCommand,
    Command,
    exit_status,
    inheritable_fds,
    spawn,
)
from hermes_sandbox.backends.local._start import (
    choose_bwrap,
    lock_workdir,
    make_cgroups,
    make_dirs,
    start_namespace,
)
from hermes_sandbox.backends.local._sweep import reap_orphans, remove_tree, state_parent

__all__ = ["LocalSandbox"]

_log = logging.getLogger("hermes_sandbox.backends.local")

# After the shell exits, how long to wait for the end of its output. Longer only when a
# background job still holds the output pipe; what it prints after that is discarded.
_EOF_GRACE = 0.1
# After SIGKILL, how long to wait for the shell to be reaped.
_KILL_WAIT = 5.0
# At close, how long to wait for the killed processes to be gone before removing things.
_GONE_WAIT = 5.0


class LocalSandbox(Sandbox):
    """Commands run on this host, as this user, in a per-task directory.

    Options: the common ``SandboxOptions`` fields, and:

    - ``isolation``: ``"auto"`` (the default: ``"bwrap"`` where bubblewrap is installed
      and works, else ``"none"``, said in one log line), ``"bwrap"`` (in their own
      namespaces through bubblewrap; an error at start where that cannot run) or
      ``"none"`` (commands run directly on the host);
    - ``tmp_size_mb``: the size of an isolated sandbox's private ``/tmp`` (default
      ``DEFAULT_TMP_SIZE_MB``);
    - ``host_dirs``: host directories an isolated sandbox may read and write, bound at
      their own paths (shared with the host and with other sandboxes that name them).

    ``workdir``: isolated, a path *inside* the sandbox (default: its home); one outside
    the sandbox's directories and ``host_dirs`` (``/workspace``) is a private, empty
    directory of this sandbox, removed by ``close``, whatever the host has at that path.
    Plain, it is a host directory, created if missing and left in place; one given in
    the options is this sandbox's alone while it is open (a second plain sandbox asking
    for it fails to start: concurrent sandboxes would overwrite each other's files).

    ``pids_limit`` holds in both modes through a cgroup; where none can be made,
    ``start`` raises ``SandboxStartError``. ``memory_mb`` holds through a memory cgroup
    where one can be made (the OOM killer ends the biggest command past it), else start
    says in a log warning that it is not enforced. ``network`` is honoured by the
    isolated mode only (plain commands use the host's network). ``image`` is ignored;
    ``cpus`` is rejected.

    Raises:
        ValueError: (from the constructor) for an unknown extra option, a bad
            ``isolation``, ``tmp_size_mb``, ``host_dirs`` or ``memory_mb``, ``cpus``, a
            ``pids_limit`` below 1, a relative ``workdir`` or an ``env`` that is not a
            mapping of names to strings.
    """

    backend = "local"

    @classmethod
    async def reap_run(cls, run_id: str, options: Mapping[str, Any] | None = None) -> int:
        """Local sandboxes are marked by their owner process, not by run: remove what
        every dead process's sandboxes left (``reap_orphans``, the run ``run_id``'s among
        them); how many sandbox directories were removed. Never raises."""
        return len(await asyncio.to_thread(reap_orphans))

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        self._isolation, self._tmp_size_mb, self._host_dirs = check_options(options)
        slug = re.sub(r"[^A-Za-z0-9_.-]", "_", task_id or "")[:40]
        self._mark = uuid.uuid4().hex
        # The owner's pid and the marker's head are in the name: ``reap_orphans`` reads them.
        pid, head, tail = os.getpid(), slug + "-" if slug else "", self._mark[:10]
        self._name = f"hermes-local-{pid}-{head}{tail}"
        self._root = os.path.join(tempfile.gettempdir(), self._name)
        # An isolated sandbox's private workdir (same pattern: reaped alike).
        self._private_source = os.path.join(
            tempfile.gettempdir(), f"hermes-local-{pid}-{head}workdir-{tail}"
        )
        super().__init__(options, task_id=task_id)
        if not os.path.isabs(self.workdir):
            raise ValueError(f"local backend: workdir must be absolute, got {self.workdir!r}")
        # The shell state is rewritten after every command: keep it on tmpfs when there is
        # one, and outside the workdir so that commands never see it.
        self._state_dir = os.path.join(state_parent(), f"{self._name}.shell")
        self._env = {"PATH": DEFAULT_PATH, "HOME": self._root, "LANG": "C.UTF-8", **options.env}
        self._bash = ""
        self._close_fds: tuple[int, ...] = ()
        self._runs = 0
        self._live: dict[str, Command] = {}
        self._cgroup: SandboxCgroups | None = None
        self._join = ""
        self._namespace: Namespace | None = None
        self._private = False
        self._workdir_lock = -1

    def default_workdir(self) -> str:
        """The sandbox's own temporary directory (created by ``start``)."""
        return self._root

    @property
    def root(self) -> str:
        """The per-task temporary directory (``HOME``; ``workdir`` unless one was given)."""
        return self._root

    @property
    def isolated(self) -> bool:
        """Whether commands run in the sandbox's own namespaces (known once started)."""
        return self._namespace is not None

    # lifecycle ----------------------------------------------------------------------
    async def _start(self) -> None:
        bash = shutil.which("bash")
        if bash is None:
            raise SandboxStartError("local: bash was not found on PATH; install bash")
        self._bash = bash
        bwrap = self._choose_bwrap()
        interpreter = host_interpreter()
        # Descriptors this process inherited (or made inheritable): commands must not.
        self._close_fds = inheritable_fds()
        if bwrap is not None:
            problem = self._isolation_problem()
            if problem is not None:
                raise SandboxStartError(f"local: {problem}")
        # Plain syscalls, no await: a cancelled start cannot leave half-made directories.
        try:
            self._private = make_dirs(
                self._root,
                self._state_dir,
                self._private_source,
                interpreter,
                private=self._isolation != "none" and self._needs_private_workdir(),
            )
            if bwrap is None:
                self._claim_workdir()
        except BaseException:
            self._teardown()
            raise
        try:
            self._make_cgroup(isolated=bwrap is not None)
            if bwrap is not None:
                try:
                    await self._start_namespace(bwrap, interpreter)
                except SandboxStartError as exc:
                    if self._isolation != "auto":
                        raise
                    _log.warning(
                        "local sandbox %s runs directly on this host (isolation='auto', but "
                        "bubblewrap cannot run here: %s); its commands can read this user's "
                        "files and processes; pass isolation='none' to choose this",
                        self.task_id,
                        exc,
                    )
                    self._become_plain()
        except BaseException:
            self._teardown()
            raise
        self._set_path(interpreter)

    def _needs_private_workdir(self) -> bool:
        """Whether the workdir lies outside the sandbox's home and ``host_dirs`` (so an
        isolated sandbox gets a private one)."""
        return not any(_inside(self.workdir, d) for d in (self._root, *self._host_dirs))

    def _isolation_problem(self) -> str | None:
        """Why the options cannot be honoured in isolation (a mistake, not a missing
        bubblewrap: ``auto`` does not fall back to plain for it), or None."""
        missing = [d for d in self._host_dirs if not os.path.isdir(d)]
        if missing:
            return f"host_dirs {', '.join(missing)}: no such directory on this host; create it"
        if not self._needs_private_workdir():
            return None
        return unbindable_workdir(self.workdir)

    def _claim_workdir(self) -> None:
        """Plain mode: make the workdir if missing, and hold it while the sandbox is open
        (a lock on the directory: another open sandbox's, in any process, refuses).

        Raises:
            SandboxStartError: if it cannot be made, or another sandbox holds it.
        """
        if _inside(self.workdir, self._root):
            return
        self._workdir_lock = lock_workdir(self.workdir)

    def _become_plain(self) -> None:
        """``auto`` could not isolate: what the plain mode needs instead.

        Raises:
            SandboxStartError: as ``_claim_workdir`` and ``_make_cgroup``.
        """
        if self._private:
            remove_tree(self._private_source)
            self._private = False
        if self._cgroup is not None:
            self._cgroup.remove(_GONE_WAIT)
            self._cgroup = None
        self._claim_workdir()
        self._make_cgroup(isolated=False)

    def _set_path(self, interpreter: Interpreter | None) -> None:
        """``python`` and ``python3`` first on the default ``PATH`` (not on one given in
        ``env``): this process's interpreter, wherever it is installed."""
        if "PATH" in self.options.env or interpreter is None:
            return
        bin_dir = IN_SANDBOX_BIN if self._namespace is not None else f"{self._state_dir}/bin"
        self._env["PATH"] = f"{bin_dir}:{DEFAULT_PATH}"

    def _choose_bwrap(self) -> str | None:
        """The ``bwrap`` program to use, or None for the plain mode (``choose_bwrap``).

        Raises:
            SandboxStartError: for ``isolation="bwrap"`` without bubblewrap.
        """
        return choose_bwrap(self._isolation, self.task_id)

    def _make_cgroup(self, *, isolated: bool) -> None:
        """The sandbox's cgroups (``make_cgroups``), if ``pids_limit`` or ``memory_mb``
        is set.

        Raises:
            SandboxStartError: if ``pids_limit`` is set and no cgroup can be made.
        """
        pids, memory = self.options.pids_limit, self.options.memory_mb
        if pids is None and memory is None:
            return
        self._cgroup, self._join = make_cgroups(
            self._name, pids, memory, isolated=isolated, task_id=self.task_id
        )

    async def _start_namespace(self, bwrap: str, interpreter: Interpreter | None) -> None:
        if interpreter is None:
            raise SandboxStartError(
                "local isolated: cannot find this process's Python interpreter "
                "(sys.executable) to run the sandbox's helper"
            )
        writable = [self._root, self._state_dir, *self._host_dirs]
        search = self.options.env.get("PATH")
        layout = Layout(
            writable=writable,
            private=[(self._private_source, self.workdir)] if self._private else [],
            readable=path_dirs(search) if search else [],
            interpreter=interpreter,
            helper=HELPER,
            network=self.options.network,
            tmp_size_mb=self._tmp_size_mb,
            # A thread of its own: the default executor may be full of callers waiting
            # for this very sandbox (synchronous ToolContext calls from threads).
            hidden=await in_thread(secrets_in_etc, name=f"hermes-local-etc-{self.task_id}"),
        )
        self._namespace = await start_namespace(
            bwrap,
            layout,
            home=self._root,
            log_path=os.path.join(self._state_dir, "bwrap.log"),
            cgroup_procs=() if self._cgroup is None else self._cgroup.procs_files,
            task_id=self.task_id,
        )

    async def _close(self) -> None:
        # Killing starts no thread (a fork bomb may have used up the process ids); the
        # rest runs in a thread where one can start. Shielded: it completes even if this
        # close is cancelled.
        await finish(self._close_async())

    async def _close_async(self) -> None:
        self._kill_all()
        if self._namespace is not None:
            await self._namespace.wait_gone(_GONE_WAIT)
        await in_thread(self._teardown, name=f"hermes-local-close-{self.task_id}")

    def _close_now(self) -> None:
        self._kill_all()
        if self._namespace is not None:
            self._namespace.wait_gone_now(_GONE_WAIT)
        self._teardown()

    def _kill_all(self) -> None:
        """Kill every process of the sandbox that can be killed without reading ``/proc``
        or starting a thread."""
        if self._namespace is not None:
            self._namespace.destroy()
        else:
            for command in list(self._live.values()):
                command.kill_group()
        if self._cgroup is not None:
            self._cgroup.kill()

    def _teardown(self) -> None:
        """Blocking: kill what is left, remove the cgroup and the directories."""
        if self._cgroup is None and self._namespace is None and self._runs:
            sweep(environ_needle(f"{self._mark}."))
        if self._cgroup is not None and not self._cgroup.remove(_GONE_WAIT):
            sweep(environ_needle(f"{self._mark}."))
            self._cgroup.remove(1.0)
        for path in (self._state_dir, self._root):
            remove_tree(path)
        if self._private:
            remove_tree(self._private_source)
        if self._workdir_lock >= 0:
            os.close(self._workdir_lock)  # the lock goes with it
            self._workdir_lock = -1
        for command in list(self._live.values()):
            with contextlib.suppress(Exception):  # its loop may be gone: the fds go at exit
                command.close()
        self._live.clear()

    # commands -----------------------------------------------------------------------
    def _wrap(self, command: str, *, session: bool = True) -> str:
        if not session:
            return super()._wrap(command, session=False)
        # The marker is set afresh for every command: keep it out of the saved state.
        return wrap_command(
            command,
            state_dir=self._state_dir,
            workdir=self.workdir,
            direct=not any(name.startswith("BASH_FUNC_") for name in self.options.env),
            unsaved=(MARKER_VARIABLE,),
        )

    async def _run(self, script: str, *, timeout: float) -> ExecResult:
        self._runs += 1
        mark = f"{self._mark}.{self._runs}"
        collector = OutputCollector(self.options.max_output_chars)
        env = {**self._env, MARKER_VARIABLE: mark}
        argv = [self._bash, "-c", self._join + script]
        command: Command
        if self._namespace is not None:
            try:
                command = await self._namespace.run(argv, env, collector)
            except SandboxClosedError:
                await self._died()
                raise
        else:
            try:
                pid, output = spawn(self._bash, argv, env, self._close_fds)
            except OSError as exc:
                raise SandboxError(f"local: cannot start {self._bash}: {exc}") from exc
            command = ChildCommand(asyncio.get_running_loop(), pid, output, collector)
        self._live[mark] = command
        command.on_finished = lambda: self._live.pop(mark, None)
        timed_out = False
        try:
            if self.closed:  # closed while this command was being started
                raise SandboxClosedError(f"sandbox {self.task_id} is closed")
            if not await command.wait(timeout, eof=False):
                timed_out = True
                await self._kill_tree(command, mark)
                await command.wait(_KILL_WAIT, eof=False)
            await command.wait(_EOF_GRACE, eof=True)
        except BaseException:
            command.collector = None
            await finish(self._kill_tree(command, mark))
            raise
        # A background job may still hold the output pipe: drain and discard from now on.
        command.collector = None
        if self._namespace is not None and self._namespace.dead and not self.closed:
            await self._died()
            raise SandboxClosedError(
                f"sandbox {self.task_id} died (its namespace ended; a command may have "
                "killed the sandbox's own processes); it was closed"
            )
        code = command.returncode
        exit_code = 124 if timed_out or code is None else exit_status(code)
        return ExecResult(collector.text(), exit_code, timed_out, collector.truncated)

    async def _stop_processes(self) -> None:
        # Isolated: the helper kills everything in the namespace but itself and pid 1.
        # Plain: the process groups of running commands, every process carrying one of
        # the sandbox's markers (daemons that left the group), and the cgroup if any
        # (commands join it first thing, so it holds nothing else).
        if self._namespace is not None:
            try:
                await self._namespace.stop_all()
            except SandboxClosedError:
                await self._died()
                raise
            return
        for command in list(self._live.values()):
            command.kill_group()
        cgroup = self._cgroup
        if cgroup is not None:
            cgroup.kill()
        if self._runs:
            await in_thread(
                lambda: sweep(environ_needle(f"{self._mark}.")),
                name=f"hermes-local-stop-{self.task_id}",
            )
        if cgroup is not None:
            cgroup.kill()

    async def _died(self) -> None:
        """The namespace ended by itself: close the sandbox (a pool then makes a new one)."""
        with contextlib.suppress(Exception):
            await finish(self.close())

    async def _kill_tree(self, command: Command, mark: str) -> None:
        if self._namespace is not None:
            self._namespace.kill(command, mark)  # the helper kills the group and the marked
            return
        command.kill_group()
        # Reads /proc: in a thread where one can start.
        await in_thread(lambda: sweep(environ_needle(mark, exact=True)), name="hermes-local-kill")

    # files --------------------------------------------------------------------------
    # Plain mode: plain copies on the host; isolated mode: descriptors the helper opens
    # inside the sandbox (``_files.py``); directories travel as tar archives there.
    async def upload_file(self, local: str | Path, remote: str) -> None:
        """Copy a host file into the sandbox (parent directories are created).

        Raises:
            FileNotFoundError: if ``local`` does not exist.
        """
        await self._ready()
        await copy_in(self._namespace, Path(local), self.resolve(remote))

    async def download_file(self, remote: str, local: str | Path) -> None:
        """Copy a sandbox file to the host (parent directories are created).

        Raises:
            FileNotFoundError: if ``remote`` does not exist.
        """
        await self._ready()
        await copy_out(self._namespace, self.resolve(remote), Path(local))

    async def upload_dir(self, local: str | Path, remote: str) -> None:
        """Copy a host directory tree into ``remote`` in the sandbox.

        Raises:
            NotADirectoryError: if ``local`` is not a directory.
        """
        await self._ready()
        if self._namespace is not None:
            await super().upload_dir(local, remote)
            return
        await asyncio.to_thread(copy_tree, Path(local), Path(self.resolve(remote)))

    async def download_dir(self, remote: str, local: str | Path) -> None:
        """Copy a sandbox directory tree into the host directory ``local``.

        Raises:
            FileNotFoundError: if ``remote`` does not exist in the sandbox.
        """
        await self._ready()
        if self._namespace is not None:
            await super().download_dir(remote, local)
            return
        source = Path(self.resolve(remote))
        if not await asyncio.to_thread(source.is_dir):
            raise FileNotFoundError(f"no directory {source} in sandbox {self.task_id}")
        await asyncio.to_thread(copy_tree, source, Path(local))

    async def _read_bytes(self, path: str) -> bytes:
        return await read_bytes(self._namespace, path)

    async def _write_bytes(self, path: str, data: bytes) -> None:
        await write_bytes(self._namespace, path, data)


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), root]) == root
