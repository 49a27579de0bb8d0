"""``local``: commands run on this host, in a per-task temporary directory.

Each command is ``bash -c <script>`` started with ``posix_spawn`` in a new session (its own
process group), stdin ``/dev/null``, stdout and stderr into one pipe, and a minimal
environment: ``PATH``, ``HOME``, ``LANG``, ``options.env`` and one marker variable,
``HERMES_SANDBOX_MARKER``. Nothing else of the host's environment (API keys) reaches a
command. The event loop reads the pipe into a bounded ``OutputCollector`` and learns of
the exit through a pidfd: no thread and no asyncio transport per command. cwd and exports
carry over through ``wrap_command_lean``, which keeps the state in one file on tmpfs and
lets bash exec a command that cannot change it (one program with plain arguments) in
place of itself, as a bare ``bash -c`` would.

Killing a command's whole process tree (at its timeout, when the awaiting task is
cancelled, and at ``close``) works in two steps:

1. ``SIGKILL`` to the command's process group, which holds the shell, its children and
   every background job that did not leave the group;
2. a sweep of ``/proc``: every process of this user whose environment carries the
   command's marker (``<sandbox id>.<command number>``; at ``close``, any command of the
   sandbox) is killed, repeatedly until a sweep finds none. This reaches grandchildren
   that escaped into a new session or process group (``setsid``, ``nohup ... &``,
   double-forking daemons), because the environment is inherited.

A process that drops the marker from its environment (``env -i``, ``unset``) *and* leaves
the process group escapes both; so does anything on a system without ``/proc`` (there only
step 1 applies). A cgroup would close that gap but needs privileges most hosts do not
grant; use the docker backend when commands are untrusted. The local backend enforces no
resource limits and cannot turn the network off (``network`` is ignored); asking for
``cpus``, ``memory_mb`` or ``pids_limit`` is an error rather than a silent no-op.

A command returns when its shell exits. If a background job still holds the output pipe
then, the command returns after a short grace and the job's later output is drained and
discarded (so the job is not killed by SIGPIPE) until it ends or the sandbox closes.

Paths in the sandbox are host paths. ``workdir`` defaults to a fresh temporary directory
(also ``HOME``), removed by ``close``; a ``workdir`` given in the options is created if
missing and left in place.

A process killed with SIGKILL closes nothing: ``reap_orphans()`` removes what the local
sandboxes of dead processes left (their directories, named after the owning process id,
and any of their commands still running).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import select
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from hermes_sandbox.base import Sandbox
from hermes_sandbox.errors import SandboxClosedError, SandboxError, SandboxStartError
from hermes_sandbox.options import SandboxOptions
from hermes_sandbox.output import OutputCollector
from hermes_sandbox.result import ExecResult

__all__ = [
    "DEFAULT_PATH",
    "MARKER_VARIABLE",
    "LocalSandbox",
    "is_stateless",
    "reap_orphans",
    "wrap_command_lean",
]

#: The environment variable that tags every process a sandbox starts.
MARKER_VARIABLE = "HERMES_SANDBOX_MARKER"

#: ``PATH`` commands see unless ``options.env`` sets one.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# After the shell exits, how long to wait for the end of its output. Longer only when a
# background job still holds the output pipe; what it prints after that is discarded.
_EOF_GRACE = 0.1
# After SIGKILL, how long to wait for the shell to be reaped.
_KILL_WAIT = 5.0
# Sweeps of /proc before giving up on a process that keeps reappearing.
_SWEEP_ROUNDS = 50
# Bytes read from the output pipe per wakeup.
_READ_SIZE = 1 << 18
# After the end of output, how long (ms) to block for the exit before going back to the loop.
_EXIT_AFTER_EOF_MS = 2
# Signals Python ignores that a command must get back (as Popen's restore_signals does).
_DEFAULT_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name)
)
_LIMITS = ("cpus", "memory_mb", "pids_limit")


def wrap_command_lean(
    command: str, *, state_dir: str, workdir: str, prelude: str = "", direct: bool = True
) -> str:
    """The bash script that runs ``command`` inside the persisted shell state.

    Same contract as ``hermes_sandbox.shell.wrap_command`` (cwd and exported variables
    carry over, also when the command calls ``exit``), built for speed: bash builtins
    only (no ``mkdir`` or ``$(cat ...)`` child process per command), and one state file
    read and written per command (``export -p`` plus the cwd, quoted with ``printf %q``
    so that any directory name survives).

    A command that cannot change the state (``is_stateless``: one program with plain
    arguments, e.g. ``ls -la src`` or ``python3 test.py``) runs as the script's last line
    without the saving trap, so that bash replaces itself with the program instead of
    forking it, exactly as a bare ``bash -c`` of that command does.

    Args:
        command: the user's shell command (any bash, multi-line allowed).
        state_dir: a directory private to this sandbox where the state is kept.
        workdir: where the first command starts (and the fallback if the saved cwd is gone;
            re-created if it was deleted).
        prelude: bash lines run right after the state is restored (e.g. assignments that
            must win over the saved environment).
        direct: whether a stateless command may run directly (False when a program name
            could be a function from the environment, ``BASH_FUNC_*``).
    """
    state = shlex.quote(state_dir)
    home = shlex.quote(workdir)
    restore = (
        f"__hs={state}\n"
        '[ -d "$__hs" ] || mkdir -p "$__hs" 2>/dev/null\n'
        '[ -f "$__hs/state" ] && . "$__hs/state" 2>/dev/null\n'
        f"{prelude}"
        f'[ -d "$__hc" ] && [ -x "$__hc" ] && cd -- "$__hc" || cd -- {home} 2>/dev/null'
        f" || {{ mkdir -p -- {home} && cd -- {home}; }}"
        f" || {{ echo 'sandbox: cannot enter the working directory '{home} >&2; exit 1; }}\n"
        "unset __hc __hs\n"
    )
    if direct and is_stateless(command):
        return f"{restore}{command.strip()}\n"
    return (
        f"{restore}__hs={state}\n"
        '__hermes_save() { __rc=$?; [ -d "$__hs" ] &&'
        ' { export -p; printf \'__hc=%q\\n\' "$PWD"; } >"$__hs/state"; exit $__rc; }\n'
        "trap __hermes_save EXIT\n"
        f"eval {shlex.quote(command)}\n"
    )


# One word of a "stateless" command: bare characters without shell meaning, or quoted
# text without expansions, or a concatenation of these.
_PLAIN_WORD = r"""(?:[A-Za-z0-9_./:=,+@%^~*?\[\]-]|'[^']*'|"[^"$`\\!]*")+"""
_STATELESS = re.compile(rf"[ \t]*[A-Za-z0-9_./+-][A-Za-z0-9_./+,@%:-]*(?:[ \t]+{_PLAIN_WORD})*\s*")
# Builtins and keywords that may change the cwd or the exported environment, or that are
# not what they seem as a first word; a stateless command starts with none of them.
_SHELL_WORDS = frozenset({
    ".", ":", "[", "[[", "]]", "alias", "bg", "bind", "break", "builtin", "caller", "case",
    "cd", "command", "compgen", "complete", "compopt", "continue", "coproc", "declare",
    "dirs", "disown", "do", "done", "elif", "else", "enable", "esac", "eval", "exec", "exit",
    "export", "fc", "fg", "fi", "for", "function", "getopts", "hash", "help", "history", "if",
    "in", "jobs", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "read",
    "readarray", "readonly", "return", "select", "set", "shift", "shopt", "source", "suspend",
    "then", "time", "times", "trap", "typeset", "ulimit", "umask", "unalias", "unset",
    "until", "wait", "while"
})  # fmt: skip


def is_stateless(command: str) -> bool:
    """Whether ``command`` is one program with plain arguments, which cannot change the
    shell's cwd or exported variables (no expansions, operators, redirections or
    assignments, and not a builtin or keyword that could)."""
    if len(command) > 4096 or not _STATELESS.fullmatch(command):
        return False
    first = command.split(None, 1)[0]
    return first not in _SHELL_WORDS


class LocalSandbox(Sandbox):
    """Commands run directly on this host, as this user, in a per-task directory.

    Options: the common ``SandboxOptions`` fields. ``image`` and ``network`` are ignored
    (there is no image, and the host's network is not isolated); ``cpus``, ``memory_mb``
    and ``pids_limit`` are rejected; no backend-specific ``extra`` options exist.

    Raises:
        ValueError: (from the constructor) for an unknown extra option, a resource limit,
            a relative ``workdir`` or an ``env`` that is not a mapping of names to strings.
    """

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        _check_options(options)
        slug = re.sub(r"[^A-Za-z0-9_.-]", "_", task_id or "")[:40]
        self._mark = uuid.uuid4().hex
        # The owner's pid and the marker's head are in the name: ``reap_orphans`` reads them.
        name = f"hermes-local-{os.getpid()}-{slug + '-' if slug else ''}{self._mark[:10]}"
        self._root = os.path.join(tempfile.gettempdir(), name)
        super().__init__(options, task_id=task_id)
        if not os.path.isabs(self.workdir):
            raise ValueError(f"local backend: workdir must be absolute, got {self.workdir!r}")
        # The shell state is rewritten after every command: keep it on tmpfs when there is
        # one, and outside the workdir so that commands never see it.
        self._state_dir = os.path.join(_state_parent(), f"{name}.shell")
        self._env = {"PATH": DEFAULT_PATH, "HOME": self._root, "LANG": "C.UTF-8", **options.env}
        self._bash = ""
        self._close_fds: tuple[int, ...] = ()
        self._direct = not any(name.startswith("BASH_FUNC_") for name in options.env)
        self._runs = 0
        self._live: dict[str, _Command] = {}

    def default_workdir(self) -> str:
        """The sandbox's own temporary directory (created by ``start``)."""
        return self._root

    @property
    def root(self) -> str:
        """The per-task temporary directory (``HOME``; ``workdir`` unless one was given)."""
        return self._root

    # lifecycle ----------------------------------------------------------------------
    async def _start(self) -> None:
        bash = shutil.which("bash")
        if bash is None:
            raise SandboxStartError("local: bash was not found on PATH; install bash")
        self._bash = bash
        # Descriptors this process inherited (or made inheritable): commands must not.
        self._close_fds = _inheritable_fds()
        # Plain syscalls, no await: a cancelled start cannot leave half-made directories.
        made: list[str] = []
        try:
            for path in (self._root, self._state_dir):
                os.mkdir(path, 0o700)
                made.append(path)
            state = os.path.join(self._state_dir, "state")
            os.close(os.open(state, os.O_CREAT | os.O_WRONLY, 0o600))
            os.makedirs(self.workdir, exist_ok=True)
        except OSError as exc:
            for path in made:
                _remove_tree(path)
            raise SandboxStartError(
                f"local: cannot create {exc.filename or self.workdir}: {exc.strerror or exc}; "
                "set TMPDIR or workdir to a writable directory"
            ) from exc

    async def _close(self) -> None:
        # In a thread (the sweep reads /proc), shielded: if this close is cancelled, the
        # kills and the removal still complete.
        await asyncio.shield(asyncio.to_thread(self._close_now))

    def _close_now(self) -> None:
        live = list(self._live.values())
        for command in live:
            command.kill_group()
        needle = None if self._runs == 0 else _needle(f"{self._mark}.")
        _sweep_and_remove(needle, [self._state_dir, self._root])
        for command in live:
            with contextlib.suppress(Exception):  # its loop may be gone: the fds go at exit
                command.close()
        self._live.clear()

    # commands -----------------------------------------------------------------------
    async def exec(self, command: str, *, timeout: float | None = None) -> ExecResult:
        """Run a shell command (bash) in the session.

        Same contract as ``Sandbox.exec``; the local backend wraps the command with
        ``wrap_command_lean`` (no helper processes per command) so that its overhead over
        a bare ``bash -c`` stays small.

        Raises:
            SandboxClosedError: if the sandbox is closed or expired.
            SandboxError: if bash could not be started at all.
            ValueError: for a non-positive timeout.
        """
        await self._ready()
        limit = self.options.terminal_timeout if timeout is None else timeout
        if limit <= 0:
            raise ValueError(f"timeout must be positive, got {limit!r}")
        started = time.monotonic()
        result = await self._run(command, timeout=limit, wrap=True)
        return replace(result, duration=time.monotonic() - started)

    async def _run(self, script: str, *, timeout: float, wrap: bool = False) -> ExecResult:
        """Run ``bash -c script`` (with ``wrap``: the shell-session wrapper around it)."""
        self._runs += 1
        mark = f"{self._mark}.{self._runs}"
        if wrap:
            # The marker is set again after the saved environment is restored, which
            # carries the previous command's value.
            script = wrap_command_lean(
                script,
                state_dir=self._state_dir,
                workdir=self.workdir,
                prelude=f"{MARKER_VARIABLE}={mark}\n",
                direct=self._direct,
            )
        collector = OutputCollector(self.options.max_output_chars)
        env = {**self._env, MARKER_VARIABLE: mark}
        try:
            pid, output = _spawn(self._bash, [self._bash, "-c", script], env, self._close_fds)
        except OSError as exc:
            raise SandboxError(f"local: cannot start {self._bash}: {exc}") from exc
        command = _Command(asyncio.get_running_loop(), pid, output, collector)
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
            await self._kill_tree(command, mark)
            raise
        # A background job may still hold the output pipe: drain and discard from now on.
        command.collector = None
        code = command.returncode
        exit_code = 124 if timed_out or code is None else _exit_status(code)
        return ExecResult(collector.text(), exit_code, timed_out, collector.truncated)

    async def _kill_tree(self, command: _Command, mark: str) -> None:
        command.kill_group()
        # In a thread (it reads /proc); it completes even if this task is cancelled again.
        await asyncio.to_thread(_sweep, _needle(mark, exact=True))

    # files --------------------------------------------------------------------------
    # Sandbox paths are host paths: transfers are plain copies (in a thread), no archives.
    async def upload_file(self, local: str | Path, remote: str) -> None:
        """Copy a host file into the sandbox (parent directories are created).

        Raises:
            FileNotFoundError: if ``local`` does not exist.
        """
        await self._ready()
        await asyncio.to_thread(_copy_file, Path(local), Path(self.resolve(remote)))

    async def download_file(self, remote: str, local: str | Path) -> None:
        """Copy a sandbox file to the host (parent directories are created).

        Raises:
            FileNotFoundError: if ``remote`` does not exist.
        """
        await self._ready()
        await asyncio.to_thread(_copy_file, Path(self.resolve(remote)), Path(local))

    async def upload_dir(self, local: str | Path, remote: str) -> None:
        """Copy a host directory tree into ``remote`` in the sandbox.

        Raises:
            NotADirectoryError: if ``local`` is not a directory.
        """
        await self._ready()
        await asyncio.to_thread(_copy_tree, Path(local), Path(self.resolve(remote)))

    async def download_dir(self, remote: str, local: str | Path) -> None:
        """Copy a sandbox directory tree into the host directory ``local``.

        Raises:
            FileNotFoundError: if ``remote`` does not exist in the sandbox.
        """
        await self._ready()
        source = Path(self.resolve(remote))
        if not await asyncio.to_thread(source.is_dir):
            raise FileNotFoundError(f"no directory {source} in sandbox {self.task_id}")
        await asyncio.to_thread(_copy_tree, source, Path(local))

    async def _read_bytes(self, path: str) -> bytes:
        return await asyncio.to_thread(Path(path).read_bytes)

    async def _write_bytes(self, path: str, data: bytes) -> None:
        await asyncio.to_thread(_write_file, Path(path), data)


class _Command:
    """One running ``bash -c``, watched from the event loop without helper threads.

    The merged stdout/stderr pipe is read by a loop reader into ``collector`` (``None``:
    discard). The exit is noticed through a pidfd (Linux 5.3+; elsewhere by polling) and
    the process is reaped here. Once it has exited and its output ended, the descriptors
    are closed and ``on_finished`` is called.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        pid: int,
        output: int,
        collector: OutputCollector,
    ) -> None:
        self.loop = loop
        self.pid = pid
        self.returncode: int | None = None
        self.collector: OutputCollector | None = collector
        self.exited = False
        self.eof = False
        self.on_finished: Callable[[], object] | None = None
        self._closed = False
        self._waiter: asyncio.Future[None] | None = None
        self._fd = output
        os.set_blocking(output, False)
        loop.add_reader(output, self._on_output)
        self._pidfd = -1
        try:
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._poll_exit(0.001)
        else:
            loop.add_reader(self._pidfd, self._reap)

    async def wait(self, timeout: float, *, eof: bool) -> bool:
        """Wait up to ``timeout`` seconds for the exit (``eof``: and the end of output);
        whether it happened. Cancelling the wait does not affect the command."""
        loop = self.loop
        deadline = loop.time() + timeout
        while not (self.exited and (self.eof or not eof)):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(remaining, _resolve, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        return True

    def _wake(self) -> None:
        if self._waiter is not None:
            _resolve(self._waiter)

    def _on_output(self) -> None:
        # Read until the pipe is empty: the end of output often follows the last data.
        while True:
            try:
                data = os.read(self._fd, _READ_SIZE)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                break
            if self.collector is not None:
                self.collector.feed(data)
        self.loop.remove_reader(self._fd)
        self.eof = True
        if not self.exited and self._pidfd >= 0:
            # The shell closes its output as it exits: wait a moment here rather than a
            # round of the event loop for the exit to be reported.
            poller = select.poll()
            poller.register(self._pidfd, select.POLLIN)
            poller.poll(_EXIT_AFTER_EOF_MS)
        self._reap()
        self._wake()
        self._maybe_finish()

    def _reap(self) -> None:
        if self.exited or not self._collect():
            return
        if self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = -1
        self.exited = True
        self._wake()
        self._maybe_finish()

    def _collect(self) -> bool:
        """Reap the process if it has exited (without blocking); whether it has."""
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else: the status is lost
                self.returncode = 255
            else:
                if pid == 0:
                    return False
                self.returncode = os.waitstatus_to_exitcode(status)
        return True

    def _poll_exit(self, delay: float) -> None:
        def tick() -> None:
            self._reap()
            if not self.exited:
                self._poll_exit(min(delay * 2, 0.05))

        self.loop.call_later(delay, tick)

    def _maybe_finish(self) -> None:
        if self.exited and self.eof:
            self.close()

    def kill_group(self) -> None:
        """SIGKILL the command's process group, if its leader is still unreaped (only then
        can the id not belong to someone else)."""
        if not self._collect():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    def _on_own_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return self.loop.is_closed()

    def close(self) -> None:
        """Stop watching and close the descriptors (idempotent; from another thread or loop,
        done on the command's own loop). An unreaped process is left to the watch that is
        still running (the pidfd reader or the poll)."""
        if self._closed:
            return
        if not self._on_own_loop():
            with contextlib.suppress(RuntimeError):  # that loop is closed: close here
                self.loop.call_soon_threadsafe(self.close)
                return
        self._closed = True
        if not self.eof:
            self.loop.remove_reader(self._fd)
        os.close(self._fd)
        self._wake()
        if self.on_finished is not None:
            self.on_finished()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _spawn(
    program: str, argv: list[str], env: dict[str, str], close: tuple[int, ...] = ()
) -> tuple[int, int]:
    """Start ``argv`` in a new session: stdin ``/dev/null``, stdout and stderr into one
    pipe, the signals Python ignores (SIGPIPE, SIGXFSZ) back to their defaults, and the
    descriptors ``close`` closed. Returns the pid and the pipe's read end.

    ``os.posix_spawn`` (vfork + exec) costs a fraction of ``subprocess.Popen``'s setup.
    Unlike ``Popen(close_fds=True)`` it closes nothing by itself: Python opens every
    descriptor non-inheritable (PEP 446), and ``close`` should list the inheritable ones
    (see ``_inheritable_fds``), typically those this process itself inherited. Runs on the
    event loop's thread, as ``asyncio``'s own subprocess support does.

    Raises:
        OSError: if the program cannot be started.
    """
    read_end, write_end = os.pipe()
    try:
        try:
            pid = os.posix_spawn(
                program,
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, write_end, 1),
                    (os.POSIX_SPAWN_DUP2, write_end, 2),
                    *((os.POSIX_SPAWN_CLOSE, fd) for fd in close),
                ],
                setsid=True,
                setsigdef=_DEFAULT_SIGNALS,
            )
        except NotImplementedError:  # no POSIX_SPAWN_SETSID in this libc
            pid = _spawn_with_popen(argv, env, write_end)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    return pid, read_end


def _inheritable_fds() -> tuple[int, ...]:
    """Descriptors above 2 that a child of this process would inherit."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        try:
            names = os.listdir("/dev/fd")
        except OSError:
            return ()
    found = []
    for name in names:
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):  # e.g. the listing's own, closed by now
                if os.get_inheritable(fd):
                    found.append(fd)
    return tuple(sorted(found))


def _spawn_with_popen(argv: list[str], env: dict[str, str], output: int) -> int:
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=output,
        env=env,
        start_new_session=True,
    )
    # The caller reaps the pid itself; keep Popen from reaping or warning about it.
    process.returncode = 0
    return process.pid


def _exit_status(returncode: int) -> int:
    """A shell-style status: 128 + N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def _check_options(options: SandboxOptions) -> None:
    if options.extra:
        unknown = ", ".join(sorted(map(str, options.extra)))
        raise ValueError(
            f"local backend: unknown option(s) {unknown}; it takes only the common "
            "SandboxOptions fields (image, workdir, terminal_timeout, terminal_lifetime, env, "
            "max_output_chars)"
        )
    limits = [name for name in _LIMITS if getattr(options, name) is not None]
    if limits:
        raise ValueError(
            f"local backend: cannot enforce {', '.join(limits)} (commands run directly on "
            "this host); leave them unset or use the docker backend for resource limits"
        )
    for key, value in options.env.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise ValueError(f"env: invalid variable name {key!r}")
        if not isinstance(value, str) or "\0" in value:
            raise ValueError(f"env[{key!r}] must be a string without NUL bytes, got {value!r}")
        if key == MARKER_VARIABLE:
            raise ValueError(f"env: {MARKER_VARIABLE} is reserved by the local backend")


def _state_parent() -> str:
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return tempfile.gettempdir()


def _needle(mark: str, *, exact: bool = False) -> bytes:
    """What a process's ``/proc/<pid>/environ`` (with a leading NUL) contains if it is ours."""
    return f"\0{MARKER_VARIABLE}={mark}{chr(0) if exact else ''}".encode()


def _sweep(needle: bytes) -> int:
    """SIGKILL every process whose environment holds ``needle``; repeat until none is left.

    Returns how many kills were sent (0 on a system without ``/proc``).
    """
    me = os.getpid()
    head = needle[1:]
    sent = 0
    for _ in range(_SWEEP_ROUNDS):
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return sent
        found = 0
        for pid in pids:
            if pid == me:
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as handle:
                    environ = handle.read()
            except OSError:
                continue
            if environ.startswith(head) or needle in environ:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    found += 1
        if not found:
            break
        sent += found
    return sent


def _sweep_and_remove(needle: bytes | None, paths: list[str]) -> None:
    if needle is not None:
        _sweep(needle)
    for path in paths:
        _remove_tree(path)


def _remove_tree(path: str) -> None:
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


_ORPHAN_NAME = re.compile(r"hermes-local-([0-9]+)-(?:.+-)?([0-9a-f]{10})")


def reap_orphans(directory: str | None = None) -> list[str]:
    """Remove what local sandboxes of processes that no longer exist left behind.

    A local sandbox's temporary directory is named after the process that made it. For
    every such directory in ``directory`` (default: the system temporary directory)
    whose process is gone (it was killed with SIGKILL, or died before closing), this
    kills the sandbox's commands that still run (found by their marker variable),
    removes the directory and its shell state, and reports the directory. Shell state
    left on tmpfs without its directory is removed too. Sandboxes of live processes are
    never touched. Blocking; never raises.

    Returns:
        The directories in ``directory`` that were removed.
    """
    base = directory or tempfile.gettempdir()
    roots = set(_list(base))
    states = {n.removesuffix(".shell") for n in _list(_state_parent()) if n.endswith(".shell")}
    removed = []
    for name in sorted(roots | states):
        found = _ORPHAN_NAME.fullmatch(name)
        if found is None or _process_exists(int(found[1])):
            continue
        path = os.path.join(base, name)
        state = os.path.join(_state_parent(), f"{name}.shell")
        _sweep_and_remove(_needle(found[2]), [path, state])
        if name in roots:
            removed.append(path)
    return removed


def _list(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # someone else's process (or a pid beyond range: not ours to judge)
    return True


def _write_file(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _copy_file(source: Path, target: Path) -> None:
    if source.is_dir():
        raise IsADirectoryError(f"{source} is a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def _copy_tree(source: Path, target: Path) -> None:
    if not source.is_dir():
        raise NotADirectoryError(f"{source} is not a directory")
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
