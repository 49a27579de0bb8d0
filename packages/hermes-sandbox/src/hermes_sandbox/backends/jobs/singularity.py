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
    JobLedger,
    check_env,
    kill_command_script,
    run_job,
    safe_name,
)
from hermes_sandbox.backends.jobs._singularity_cli import (
    CLI_ENV_KEEP as CLI_ENV_KEEP,
)
from hermes_sandbox.backends.jobs._singularity_cli import (
    HOUSEKEEPING_TIMEOUT,
    CliJob,
    cli_environment,
    reap,
    run_cli,
    show,
    spawn_cli,
    start_hint,
    text,
)
from hermes_sandbox.backends.jobs._singularity_cli import (
    find_binary as find_binary,
)
from hermes_sandbox.backends.option_check import check_extra

__all__ = ["SingularitySandbox"]

_log = logging.getLogger(__name__)

#: The ``options.extra`` keys this backend understands.
OPTION_KEYS = frozenset(
    {"binary", "host_dir", "overlay", "containall", "start_args", "cli_env", "start_timeout"}
)
#: Seconds allowed for one file or directory transfer.
TRANSFER_TIMEOUT = 600.0


_READ = (
    'if [ -d "$1" ]; then exit 21; elif [ ! -e "$1" ]; then exit 2; '
    'elif [ ! -r "$1" ]; then exit 13; fi; exec cat -- "$1"'
)
_WRITE = '[ -d "$1" ] && exit 21; mkdir -p -- "$(dirname -- "$1")" || exit 20; exec cat > "$1"'
_PUT_ARCHIVE = 'mkdir -p -- "$1" && exec tar -xf - -C "$1"'
_GET_ARCHIVE = '[ -d "$1" ] || exit 44; exec tar -cf - -C "$1" .'


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
        self._cli_env = cli_environment(cli_env)
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
                f"singularity: `{show(argv)}` failed (exit {rc}): "
                f"{text(err or out) or 'no output'}{start_hint(text(err))}"
            )
        probe = (
            f"mkdir -m 700 -p -- {shlex.quote(self._state_dir)} && "
            f"mkdir -p -- {shlex.quote(self.workdir)}"
        )
        rc, out, err = await self._exec_bash(probe, timeout=HOUSEKEEPING_TIMEOUT)
        if rc != 0:
            raise SandboxStartError(
                f"singularity: instance {self.instance_name} started but running bash in it "
                f"failed (exit {rc}): {text(err or out) or 'no output'}; the image needs "
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
                if rc != 0 and "no instance found" not in text(err).lower():
                    _log.warning("singularity: `%s` failed: %s", show(argv), text(err or out))
            except Exception as exc:
                _log.warning("singularity: `%s` failed: %s", show(argv), exc)
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
            process = await spawn_cli(
                self.binary,
                self._cli_env,
                self.exec_command("bash", "-c", BOOT, "_", marker),
                stdout=write_fd,
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
            await asyncio.shield(reap(process))
            raise

        async def kill(group: tuple[int, int] | None) -> object:
            script = kill_command_script(group, marker)
            return await self._exec_bash(script, timeout=HOUSEKEEPING_TIMEOUT)

        return await run_job(
            CliJob(self.instance_name, process, output, pipe),
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

    async def _cli(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float
    ) -> tuple[int, bytes, bytes]:
        """Run the CLI to completion; its exit code, stdout and stderr."""
        return await run_cli(self.binary, self._cli_env, argv, stdin=stdin, timeout=timeout)

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
        detail = text(err)
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
                f"singularity: could not unpack the upload into {remote_dir}: {text(err or out)}"
            )

    async def _get_archive(self, remote_dir: str) -> bytes:
        rc, out, err = await self._exec_bash(_GET_ARCHIVE, remote_dir, timeout=TRANSFER_TIMEOUT)
        if rc == 44:
            raise FileNotFoundError(
                errno.ENOENT, f"no directory {remote_dir} in sandbox {self.task_id}", remote_dir
            )
        if rc != 0:
            raise SandboxError(f"singularity: could not archive {remote_dir}: {text(err)}")
        return out


def _optional_path(extra: Mapping[str, Any], name: str) -> str | None:
    value = extra.get(name)
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"singularity backend: {name} must be a path, got {value!r}")
    return os.fspath(value)
