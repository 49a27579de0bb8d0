"""The ``singularity`` backend: an Apptainer/SingularityCE instance per task, via the CLI.

``start()`` creates a per-task host directory and runs::

    apptainer instance start --containall --writable-tmpfs --bind HOSTDIR:WORKDIR \\
        [--net --network none] [--cpus N] [--memory NM] [--pids-limit N] IMAGE NAME

Commands run as ``apptainer exec --cleanenv instance://NAME bash -c BOOT _ MARKER``; the
command script (with ``options.env`` as ``export`` lines in front) travels over stdin,
never on a command line. ``BOOT`` starts it as a job with its own process group
(``set -m``) and ``HERMES_SANDBOX_MARKER=<sandbox>.<command number>`` in its
environment, reports ``pgid:sid`` on stderr and waits; the command's stdout and stderr
share one pipe, so they stay interleaved. At the timeout, or when the caller cancels, a
second ``exec`` kills the process group and every process carrying the command's marker
inside the instance, so the whole process tree dies, children that called ``setsid``
included. ``close()`` kills what commands left running, removes the shell state, runs
``instance stop --force NAME`` and deletes the host directory.

The CLI itself runs with a minimal environment (PATH, HOME, USER, LOGNAME, LANG, TMPDIR,
XDG_RUNTIME_DIR, DBUS_SESSION_BUS_ADDRESS, plus ``cli_env``), so neither host secrets nor
``APPTAINER_*``/``APPTAINERENV_*`` settings of the calling process reach the container.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import shlex
import shutil
import signal
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import (
    BackendUnavailableError,
    SandboxClosedError,
    SandboxError,
    SandboxStartError,
)
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._output import OutputCollector
from hermes_sandbox._result import ExecResult
from hermes_sandbox.backends.jobs._job import (
    BOOT,
    OUTPUT_GRACE,
    ByteReader,
    JobLedger,
    check_env,
    kill_command_script,
    run_job,
    safe_name,
)
from hermes_sandbox.backends.option_check import check_extra

__all__ = ["SingularitySandbox"]

_log = logging.getLogger(__name__)

#: The ``options.extra`` keys this backend understands.
OPTION_KEYS = frozenset(
    {"binary", "host_dir", "overlay", "containall", "start_args", "cli_env", "start_timeout"}
)
#: CLI names looked up on PATH, in order, when ``binary`` is not given.
BINARY_NAMES = ("apptainer", "singularity")
#: Host variables the CLI keeps (it needs them to find its config, cache and cgroups).
CLI_ENV_KEEP = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
)
#: Seconds allowed for one file or directory transfer.
TRANSFER_TIMEOUT = 600.0
#: Seconds allowed for housekeeping commands (probe, kill, cleanup, stop).
HOUSEKEEPING_TIMEOUT = 60.0


_READ = (
    'if [ -d "$1" ]; then exit 21; elif [ ! -e "$1" ]; then exit 2; '
    'elif [ ! -r "$1" ]; then exit 13; fi; exec cat -- "$1"'
)
_WRITE = '[ -d "$1" ] && exit 21; mkdir -p -- "$(dirname -- "$1")" || exit 20; exec cat > "$1"'
_PUT_ARCHIVE = 'mkdir -p -- "$1" && exec tar -xf - -C "$1"'
_GET_ARCHIVE = '[ -d "$1" ] || exit 44; exec tar -cf - -C "$1" .'


def find_binary(binary: str | None = None) -> str | None:
    """The apptainer/singularity CLI to use: ``binary`` (a path or a name on PATH), else
    the first of ``apptainer``, ``singularity`` on PATH; None if there is none."""
    if binary:
        if os.sep in binary:
            return binary if os.access(binary, os.X_OK) and os.path.isfile(binary) else None
        return shutil.which(binary)
    for name in BINARY_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class SingularitySandbox(Sandbox):
    """A sandbox in an Apptainer (or SingularityCE) instance, driven through its CLI.

    ``options.image`` (required): what ``instance start`` accepts (a ``.sif`` file, a
    sandbox directory, ``docker://…``). ``workdir`` (default ``/workspace``) is a bind
    of a fresh per-task host directory. ``network=False`` (the default) starts the
    instance with ``--net --network none``; ``cpus``, ``memory_mb``, ``pids_limit`` become
    ``--cpus``, ``--memory``, ``--pids-limit`` (they need cgroups v2 and, unprivileged,
    systemd delegation; otherwise ``start()`` fails with the CLI's message).

    ``options.extra`` keys:

    - ``binary``: path or name of the CLI (default: ``apptainer``, then ``singularity``
      on PATH);
    - ``host_dir``: host directory for the per-task directories (default: the system
      temporary directory);
    - ``overlay``: an overlay image or directory to use instead of ``--writable-tmpfs``;
    - ``containall``: True (default) for ``--containall`` (own PID/IPC namespaces, clean
      environment, contained /tmp and home); False for ``--contain`` only;
    - ``start_args``: extra ``instance start`` flags (a list of strings);
    - ``cli_env``: extra environment variables for the CLI process itself (e.g.
      ``APPTAINER_CACHEDIR``);
    - ``start_timeout``: seconds allowed for ``instance start`` (default 300).

    Raises:
        BackendUnavailableError: if no apptainer/singularity binary is found.
        ValueError: for unknown or invalid options.
    """

    backend = "singularity"

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        super().__init__(options, task_id=task_id)
        extra = dict(options.extra)
        check_extra("singularity", extra, OPTION_KEYS)
        wanted = extra.get("binary")
        if wanted is not None and not isinstance(wanted, (str, os.PathLike)):
            raise ValueError(f"singularity backend: binary must be a path, got {wanted!r}")
        binary = find_binary(os.fspath(wanted) if wanted is not None else None)
        if binary is None:
            where = (
                f"{os.fspath(wanted)!r} is not an executable"
                if wanted
                else ("neither apptainer nor singularity is on PATH")
            )
            raise BackendUnavailableError(
                f"singularity backend: {where}; install Apptainer "
                "(https://apptainer.org/docs/admin/main/installation.html) or pass "
                "binary='/path/to/apptainer'"
            )
        self.binary = binary
        if not options.image:
            raise ValueError(
                "singularity backend needs image=... (a .sif file, a sandbox directory "
                "or a docker:// reference)"
            )
        for name, value in (("workdir", self.workdir),):
            if not os.path.isabs(value) or any(c in value for c in ":,\n"):
                raise ValueError(
                    f"singularity backend: {name} must be an absolute path without ':' or "
                    f"',' (it becomes a bind destination), got {value!r}"
                )
        check_env(options.env, "singularity")
        self._host_root = _optional_path(extra, "host_dir")
        self._overlay = _optional_path(extra, "overlay")
        self._containall = extra.get("containall", True)
        if not isinstance(self._containall, bool):
            raise ValueError("singularity backend: containall must be True or False")
        start_args = extra.get("start_args", [])
        if isinstance(start_args, str) or not all(isinstance(a, str) for a in start_args):
            raise ValueError("singularity backend: start_args must be a list of strings")
        self._start_args = list(start_args)
        cli_env = extra.get("cli_env", {})
        if not isinstance(cli_env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in cli_env.items()
        ):
            raise ValueError("singularity backend: cli_env must map strings to strings")
        self._cli_env = _cli_environment(cli_env)
        self._start_timeout = float(extra.get("start_timeout", 300.0))
        if self._start_timeout <= 0:
            raise ValueError("singularity backend: start_timeout must be positive")
        safe_task = safe_name(self.task_id, 40)
        self.instance_name = f"hermes-{safe_task}-{uuid.uuid4().hex[:8]}"
        self.host_dir: str | None = None
        self._instance_started = False
        self._jobs = JobLedger()

    @property
    def instance(self) -> str:
        """``instance://NAME``."""
        return f"instance://{self.instance_name}"

    # lifecycle ----------------------------------------------------------------------
    def start_command(self, host_dir: str) -> list[str]:
        """The ``instance start`` argv for a per-task host directory."""
        argv = [
            self.binary,
            "instance",
            "start",
            "--containall" if self._containall else "--contain",
        ]
        argv += ["--overlay", self._overlay] if self._overlay else ["--writable-tmpfs"]
        argv += ["--bind", f"{host_dir}:{self.workdir}"]
        if not self.options.network:
            argv += ["--net", "--network", "none"]
        if self.options.cpus is not None:
            argv += ["--cpus", f"{self.options.cpus:g}"]
        if self.options.memory_mb is not None:
            argv += ["--memory", f"{self.options.memory_mb}M"]
        if self.options.pids_limit is not None:
            argv += ["--pids-limit", str(self.options.pids_limit)]
        argv += self._start_args
        argv += [str(self.options.image), self.instance_name]
        return argv

    async def _start(self) -> None:
        try:
            self.host_dir = await asyncio.to_thread(
                tempfile.mkdtemp, prefix=f"{self.instance_name}-", dir=self._host_root
            )
        except OSError as exc:
            raise SandboxStartError(
                f"singularity: cannot create a host directory in "
                f"{self._host_root or tempfile.gettempdir()}: {exc}; set host_dir"
            ) from exc
        if any(c in self.host_dir for c in ":,\n"):
            await asyncio.to_thread(shutil.rmtree, self.host_dir, True)
            raise SandboxStartError(
                f"singularity: the host directory {self.host_dir!r} has ':' or ',' in its "
                "path and cannot be bound; set host_dir"
            )
        try:
            await self._start_instance()
        except BaseException:
            await asyncio.shield(self._teardown())
            raise

    async def _start_instance(self) -> None:
        assert self.host_dir is not None
        argv = self.start_command(self.host_dir)
        self._instance_started = True  # from here on, close() must try to stop it
        rc, out, err = await self._cli(argv, timeout=self._start_timeout)
        if rc != 0:
            raise SandboxStartError(
                f"singularity: `{_show(argv)}` failed (exit {rc}): "
                f"{_text(err or out) or 'no output'}{_start_hint(_text(err))}"
            )
        probe = (
            f"mkdir -m 700 -p -- {shlex.quote(self._state_dir)} && "
            f"mkdir -p -- {shlex.quote(self.workdir)}"
        )
        rc, out, err = await self._exec_bash(probe, timeout=HOUSEKEEPING_TIMEOUT)
        if rc != 0:
            raise SandboxStartError(
                f"singularity: instance {self.instance_name} started but running bash in it "
                f"failed (exit {rc}): {_text(err or out) or 'no output'}; the image needs "
                "bash, mkdir, cat, grep, timeout and tar"
            )

    async def _close(self) -> None:
        await self._teardown()

    async def _teardown(self) -> None:
        if self._instance_started:
            script = self._jobs.kill_all_script()
            script += f"rm -rf -- {shlex.quote(self._state_dir)}"
            with contextlib.suppress(Exception):
                await self._exec_bash(script, timeout=HOUSEKEEPING_TIMEOUT)
            argv = [self.binary, "instance", "stop", "--force", self.instance_name]
            try:
                rc, out, err = await self._cli(argv, timeout=HOUSEKEEPING_TIMEOUT)
                if rc != 0 and "no instance found" not in _text(err).lower():
                    _log.warning("singularity: `%s` failed: %s", _show(argv), _text(err or out))
            except Exception as exc:
                _log.warning("singularity: `%s` failed: %s", _show(argv), exc)
            self._instance_started = False
            self._jobs.forget()
        host_dir, self.host_dir = self.host_dir, None
        if host_dir is not None:
            try:
                await asyncio.to_thread(shutil.rmtree, host_dir)
            except FileNotFoundError:
                pass
            except OSError as exc:
                _log.warning("singularity: could not remove %s: %s", host_dir, exc)

    # commands -----------------------------------------------------------------------
    def exec_command(self, *args: str) -> list[str]:
        """The argv that runs ``args`` in the instance with a clean environment."""
        return [self.binary, "exec", "--cleanenv", self.instance, *args]

    def _script_with_env(self, script: str) -> bytes:
        env = {"LANG": "C.UTF-8", **self.options.env}
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        return (exports + script).encode()

    async def _run(self, script: str, *, timeout: float) -> ExecResult:
        collector = OutputCollector(self.options.max_output_chars)
        marker = self._jobs.next_marker()
        # The output pipe is ours, not asyncio's: a background job may hold it open long
        # after the CLI exited, and asyncio's wait() would wait for it.
        read_fd, write_fd = os.pipe()
        try:
            process = await self._spawn(
                self.exec_command("bash", "-c", BOOT, "_", marker), stdout=write_fd
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        output = asyncio.StreamReader(limit=1 << 20)
        read_end = os.fdopen(read_fd, "rb", buffering=0)
        try:
            pipe, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(output), read_end
            )
        except BaseException:
            read_end.close()
            await asyncio.shield(_reap(process))
            raise

        async def kill(group: tuple[int, int] | None) -> object:
            script = kill_command_script(group, marker)
            return await self._exec_bash(script, timeout=HOUSEKEEPING_TIMEOUT)

        return await run_job(
            _CliJob(self.instance_name, process, output, pipe),
            self._script_with_env(script),
            timeout=timeout,
            collector=collector,
            on_group=self._jobs.groups.add,
            kill=kill,
        )

    async def _stop_processes(self) -> None:
        async def run(script: str) -> tuple[int, bytes, bytes]:
            return await self._exec_bash(script, timeout=HOUSEKEEPING_TIMEOUT)

        await self._jobs.stop(run)

    async def _exec_bash(
        self, script: str, *args: str, stdin: bytes | None = None, timeout: float
    ) -> tuple[int, bytes, bytes]:
        return await self._cli(
            self.exec_command("bash", "-c", script, "_", *args), stdin=stdin, timeout=timeout
        )

    async def _spawn(
        self, argv: Sequence[str], *, stdout: int = asyncio.subprocess.PIPE
    ) -> asyncio.subprocess.Process:
        try:
            return await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=stdout,
                stderr=asyncio.subprocess.PIPE,
                env=self._cli_env,
                start_new_session=True,
            )
        except OSError as exc:
            raise SandboxError(f"singularity: cannot run {self.binary}: {exc}") from exc

    async def _cli(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float
    ) -> tuple[int, bytes, bytes]:
        """Run the CLI to completion; its exit code, stdout and stderr."""
        process = await self._spawn(argv)
        try:
            async with asyncio.timeout(timeout):
                out, err = await process.communicate(stdin)
        except TimeoutError as exc:
            raise SandboxError(f"singularity: `{_show(argv)}` took over {timeout:g}s") from exc
        finally:
            await asyncio.shield(_reap(process))
        return _exit_code(process.returncode), out, err

    # files --------------------------------------------------------------------------
    async def _read_bytes(self, path: str) -> bytes:
        rc, out, err = await self._exec_bash(_READ, path, timeout=TRANSFER_TIMEOUT)
        if rc != 0:
            raise self._file_error(rc, err, path)
        return out

    async def _write_bytes(self, path: str, data: bytes) -> None:
        rc, _out, err = await self._exec_bash(_WRITE, path, stdin=data, timeout=TRANSFER_TIMEOUT)
        if rc != 0:
            raise self._file_error(rc, err, path)

    def _file_error(self, rc: int, err: bytes, path: str) -> Exception:
        detail = _text(err)
        if "no instance found" in detail.lower():
            return SandboxClosedError(f"singularity: instance {self.instance_name} is gone")
        if rc == 2:
            return FileNotFoundError(errno.ENOENT, "no such file or directory", path)
        if rc == 21:
            return IsADirectoryError(errno.EISDIR, "is a directory", path)
        if rc == 13:
            return PermissionError(errno.EACCES, "permission denied", path)
        if rc == 20:
            return NotADirectoryError(errno.ENOTDIR, detail or "not a directory", path)
        return OSError(errno.EIO, f"{detail or f'exit {rc}'}", path)

    async def _put_archive(self, remote_dir: str, archive: bytes) -> None:
        rc, out, err = await self._exec_bash(
            _PUT_ARCHIVE, remote_dir, stdin=archive, timeout=TRANSFER_TIMEOUT
        )
        if rc != 0:
            raise SandboxError(
                f"singularity: could not unpack the upload into {remote_dir}: {_text(err or out)}"
            )

    async def _get_archive(self, remote_dir: str) -> bytes:
        rc, out, err = await self._exec_bash(_GET_ARCHIVE, remote_dir, timeout=TRANSFER_TIMEOUT)
        if rc == 44:
            raise FileNotFoundError(
                errno.ENOENT, f"no directory {remote_dir} in sandbox {self.task_id}", remote_dir
            )
        if rc != 0:
            raise SandboxError(f"singularity: could not archive {remote_dir}: {_text(err)}")
        return out


class _CliJob:
    """One command's runner, an ``apptainer exec`` process, as ``run_job`` drives it."""

    def __init__(
        self,
        instance_name: str,
        process: asyncio.subprocess.Process,
        output: asyncio.StreamReader,
        pipe: asyncio.ReadTransport,
    ) -> None:
        self._instance_name = instance_name
        self._process = process
        self._output = output
        self._pipe = pipe

    @property
    def output(self) -> ByteReader:
        return self._output

    @property
    def control(self) -> ByteReader | None:
        return self._process.stderr

    async def send(self, script: bytes) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            stdin.write(script)
            await stdin.drain()
            stdin.close()

    async def failed_to_start(self, diagnostics: str) -> Exception:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._process.wait(), OUTPUT_GRACE)
        message = diagnostics or f"exit {_exit_code(self._process.returncode)}"
        if "no instance found" in message.lower():
            return SandboxClosedError(
                f"singularity: instance {self._instance_name} is gone: {message}"
            )
        return SandboxError(
            f"singularity: could not run bash in instance {self._instance_name}: {message}"
        )

    async def exit_status(self, wait: float) -> int:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._process.wait(), wait)
        return _exit_code(self._process.returncode)

    async def close(self) -> None:
        self._pipe.close()
        await _reap(self._process)


async def _reap(process: asyncio.subprocess.Process) -> None:
    """Make sure a CLI process (and its process group) is gone and waited for."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(process.wait(), HOUSEKEEPING_TIMEOUT)


def _exit_code(code: int | None) -> int:
    if code is None:
        return 255
    return 128 - code if code < 0 else code


def _text(data: bytes) -> str:
    return data.decode(errors="replace").strip()


def _show(argv: Sequence[str]) -> str:
    return " ".join(shlex.quote(a) for a in argv)


def _start_hint(stderr: str) -> str:
    lowered = stderr.lower()
    if "network" in lowered:
        return (
            "; network=False asks for --net --network none, which this installation may "
            "not allow for your user: pass network=True or allow it in apptainer.conf"
        )
    if "cgroup" in lowered or "systemd" in lowered:
        return (
            "; cpus/memory_mb/pids_limit need cgroups v2 (and systemd delegation when "
            "unprivileged): unset them or run where that is available"
        )
    if "unknown flag" in lowered:
        return "; this apptainer/singularity version lacks a flag the sandbox needs"
    return ""


def _optional_path(extra: Mapping[str, Any], name: str) -> str | None:
    value = extra.get(name)
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"singularity backend: {name} must be a path, got {value!r}")
    return os.fspath(value)


def _cli_environment(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: os.environ[k] for k in CLI_ENV_KEEP if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra)
    return env
