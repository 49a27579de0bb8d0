"""The apptainer/singularity CLI as the ``singularity`` backend runs it: finding the
binary, the CLI's own minimal environment, running it to completion, one command's
``apptainer exec`` process as ``run_job`` drives it, and the words of its failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
from collections.abc import Mapping, Sequence

from hermes_sandbox._errors import SandboxClosedError, SandboxError
from hermes_sandbox.backends.jobs._job import OUTPUT_GRACE, ByteReader

__all__ = [
    "BINARY_NAMES",
    "CLI_ENV_KEEP",
    "HOUSEKEEPING_TIMEOUT",
    "CliJob",
    "cli_environment",
    "exit_code",
    "find_binary",
    "reap",
    "run_cli",
    "show",
    "spawn_cli",
    "start_hint",
    "text",
]

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
#: Seconds allowed for housekeeping commands (probe, kill, cleanup, stop).
HOUSEKEEPING_TIMEOUT = 60.0


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


def cli_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """The CLI process's environment: ``CLI_ENV_KEEP`` of this process's, then ``extra``."""
    env = {k: os.environ[k] for k in CLI_ENV_KEEP if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.update(extra)
    return env


async def spawn_cli(
    binary: str,
    env: Mapping[str, str],
    argv: Sequence[str],
    *,
    stdout: int = asyncio.subprocess.PIPE,
) -> asyncio.subprocess.Process:
    """Start ``argv`` (the CLI ``binary`` and its arguments) in a session of its own.

    Raises:
        SandboxError: if it cannot be started.
    """
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=stdout,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        raise SandboxError(f"singularity: cannot run {binary}: {exc}") from exc


async def run_cli(
    binary: str,
    env: Mapping[str, str],
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    timeout: float,
) -> tuple[int, bytes, bytes]:
    """Run the CLI to completion; its exit code, stdout and stderr.

    Raises:
        SandboxError: if it cannot be started, or takes over ``timeout`` seconds.
    """
    process = await spawn_cli(binary, env, argv)
    try:
        async with asyncio.timeout(timeout):
            out, err = await process.communicate(stdin)
    except TimeoutError as exc:
        raise SandboxError(f"singularity: `{show(argv)}` took over {timeout:g}s") from exc
    finally:
        await asyncio.shield(reap(process))
    return exit_code(process.returncode), out, err


class CliJob:
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
        message = diagnostics or f"exit {exit_code(self._process.returncode)}"
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
        return exit_code(self._process.returncode)

    async def close(self) -> None:
        self._pipe.close()
        await reap(self._process)


async def reap(process: asyncio.subprocess.Process) -> None:
    """Make sure a CLI process (and its process group) is gone and waited for."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(process.wait(), HOUSEKEEPING_TIMEOUT)


def exit_code(code: int | None) -> int:
    """A process's return code as a shell reports it (``128 + n`` for signal ``n``; 255
    when unknown)."""
    if code is None:
        return 255
    return 128 - code if code < 0 else code


def text(data: bytes) -> str:
    """CLI output as stripped text."""
    return data.decode(errors="replace").strip()


def show(argv: Sequence[str]) -> str:
    """``argv`` as a shell command line, for messages."""
    return " ".join(shlex.quote(a) for a in argv)


def start_hint(stderr: str) -> str:
    """What to do about a failed ``instance start``, from its stderr ("" if nothing
    known)."""
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
