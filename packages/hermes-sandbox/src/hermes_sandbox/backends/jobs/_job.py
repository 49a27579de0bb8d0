"""What the ssh and singularity backends share: running a command as a job, and killing it.

Both run each command through ``bash -c BOOT _ MARKER`` (a job with its own process
group, tagged with ``hermes_sandbox._processes.MARKER_VARIABLE``) and kill leftovers
with the scripts ``kill_command_script`` (one command) and ``kill_all_script`` (a whole
sandbox) write; ``JobLedger`` keeps a sandbox's markers and process groups. ``run_job`` is the one
runner of a command: it sends the script, waits for the exit report or the timeout,
kills the command's tree at the timeout or when the caller cancels, and drains the
output. A backend gives it a ``Job`` (the runner process it started: an ssh channel, an
``apptainer exec``) and a way to run a kill script. While the job runs, ``JobControl``
reads its ``hermes-pgid``/``hermes-exit`` reports from the runner's stderr and
``OutputPump`` feeds its output into an ``OutputCollector``; both read any
``ByteReader`` (an ``asyncio.StreamReader`` for the singularity CLI, an asyncssh
``SSHReader`` for an ssh channel).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shlex
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Protocol

from hermes_sandbox._errors import SandboxError
from hermes_sandbox._output import OutputCollector
from hermes_sandbox._processes import MARKER_VARIABLE, kill_functions, marker_pattern
from hermes_sandbox._result import ExecResult

__all__ = [
    "BOOT",
    "OUTPUT_GRACE",
    "OUTPUT_IDLE",
    "ByteReader",
    "Job",
    "JobControl",
    "JobLedger",
    "OutputPump",
    "check_env",
    "kill_all_script",
    "kill_command_script",
    "run_job",
    "safe_name",
]

#: After the command's shell has exited, output is still read until it ends, or until
#: none arrived for ``OUTPUT_IDLE`` seconds (a background job may hold the output open),
#: but for at most ``OUTPUT_GRACE`` seconds; later output is discarded.
OUTPUT_IDLE = 0.25
OUTPUT_GRACE = 5.0

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
_PGID_LINE = re.compile(rb"hermes-pgid:(\d+):(\d+)\n")
_EXIT_LINE = re.compile(rb"hermes-exit:(\d+)\n")

#: Runs (in the instance or the ssh channel) as ``bash -c BOOT _ MARKER``: starts the
#: script (read from stdin) as a job with its own process group and the marker in its
#: environment, reports ``pgid:sid`` on stderr, waits, reports the script's status and
#: exits with it.
BOOT = (
    "set -m\n"
    f'bash -c \'declare -rx {MARKER_VARIABLE}="$1"; eval "$(cat)" </dev/null\' _ "$1" 2>&1 &\n'
    'printf \'hermes-pgid:%s:%s\\n\' "$!" "$$" >&2\n'
    'wait "$!"; rc=$?\n'
    "printf 'hermes-exit:%s\\n' \"$rc\" >&2\n"
    'exit "$rc"\n'
)

#: The kill functions (``hermes_sandbox._processes``), run from the host's ``PATH``.
_FUNCS = kill_functions()


def _in_bash(body: str, *args: str) -> str:
    """A line that runs ``body`` (after the kill functions) in bash with ``args``, from
    whatever shell runs the line (an ssh login shell may not be bash)."""
    return f"bash -c {shlex.quote(_FUNCS + body)} _ {' '.join(map(shlex.quote, args))}\n"


def safe_name(text: str, limit: int) -> str:
    """``text`` with every run of characters other than letters, digits, ``_``, ``.``
    and ``-`` replaced by ``_``, cut to ``limit`` characters (``"task"`` if empty): a
    task id made fit for a directory or instance name."""
    return _UNSAFE_NAME_CHARS.sub("_", text)[:limit] or "task"


def check_env(env: Mapping[str, object], backend: str) -> None:
    """Check ``env`` can be exported into a command's shell.

    Raises:
        ValueError: naming the ``backend``, for names that are not shell variable names,
            for ``MARKER_VARIABLE`` (reserved), or for values that are not strings.
    """
    bad = [name for name in env if not _ENV_NAME.match(name)]
    if bad:
        raise ValueError(f"{backend} backend: invalid environment variable name(s): {bad!r}")
    if MARKER_VARIABLE in env:
        raise ValueError(f"{backend} backend: env: {MARKER_VARIABLE} is reserved by the sandbox")
    nonstr = [name for name, value in env.items() if not isinstance(value, str)]
    if nonstr:
        raise ValueError(f"{backend} backend: env values must be strings: {nonstr!r}")


def kill_command_script(group: tuple[int, int] | None, marker: str) -> str:
    """A bash script that kills one command: its process group (when known), then every
    process whose marker is exactly ``marker``."""
    script = "" if group is None else f"kill -9 -- -{group[0]} 2>/dev/null\n"
    return script + _in_bash('__hs_sweep "$1"; exit 0', marker_pattern(marker))


def kill_all_script(groups: Collection[tuple[int, int]], mark: str, *, ran: bool) -> str:
    """A bash script that kills what a sandbox's commands left: the process groups in
    ``groups`` (``(pgid, sid)``), then (if any command ``ran``) every process whose
    marker is ``mark.<n>``. Empty when there is nothing to kill."""
    script = ""
    if groups:
        targets = " " + " ".join(f"{g}:{s}" for g, s in sorted(groups)) + " "
        script += _in_bash('__hs_kill_groups "$1"', targets)
    if ran:
        script += _in_bash('__hs_sweep "$1"; exit 0', marker_pattern(mark, r"\.[0-9]+"))
    return script


class ByteReader(Protocol):
    """A stream of bytes: ``asyncio.StreamReader``, or asyncssh's ``SSHReader`` (bytes)."""

    async def read(self, n: int = -1, /) -> bytes:
        """Up to ``n`` bytes; ``b""`` at the end of the stream."""
        ...


class JobControl:
    """Reads the runner's stderr: the ``pgid:sid`` line, the exit line, diagnostics.

    ``ready`` is set once the process group is known (or the stream ended); ``done`` once
    the script's exit status arrived (or the stream ended without it). ``on_group`` is
    called with ``(pgid, sid)`` as soon as the group is known.
    """

    def __init__(self, on_group: Callable[[tuple[int, int]], None]) -> None:
        self.group: tuple[int, int] | None = None
        self.exit_code: int | None = None
        self.ready = asyncio.Event()
        self.done = asyncio.Event()
        self._buffer = bytearray()
        self._on_group = on_group

    async def consume(self, reader: ByteReader | None) -> None:
        """Read ``reader`` (None: nothing to read) to its end.

        A failing stream ends the reading as its end would: only cancellation escapes.
        ``ready`` and ``done`` are set on return, however it returns.
        """
        try:
            while reader is not None and (chunk := await reader.read(4096)):
                self._buffer += chunk
                if self.group is None and (match := _PGID_LINE.search(self._buffer)):
                    self.group = (int(match[1]), int(match[2]))
                    self._on_group(self.group)
                    del self._buffer[: match.end()]
                    self.ready.set()
                if self.group is not None and (match := _EXIT_LINE.search(self._buffer)):
                    self.exit_code = int(match[1])
                    del self._buffer[: match.end()]
                    self.done.set()
                if len(self._buffer) > 8192:
                    del self._buffer[: len(self._buffer) - 8192]
        except Exception:  # the pipe or channel went away; nothing more to learn
            pass
        finally:
            self.ready.set()
            self.done.set()

    def text(self) -> str:
        """What the runner wrote besides its reports (its last 8 KiB), stripped."""
        return bytes(self._buffer).decode(errors="replace").strip()


class OutputPump:
    """Feeds a command's output into an ``OutputCollector`` as it arrives.

    Reading starts at construction (so it needs a running event loop) and stops at the
    end of the stream, on a read error, or at ``stop()``.
    """

    def __init__(self, reader: ByteReader, collector: OutputCollector) -> None:
        self.received = 0
        self._reader = reader
        self._collector = collector
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        with contextlib.suppress(Exception):
            while chunk := await self._reader.read(1 << 16):
                self.received += len(chunk)
                self._collector.feed(chunk)

    async def drain(self, idle: float, grace: float) -> None:
        """Wait for the end of the output, or until none came for ``idle`` seconds, or
        at most ``grace`` seconds (a background job may keep the output open)."""
        deadline = asyncio.get_running_loop().time() + grace
        while not self._task.done():
            seen = self.received
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return
            await asyncio.wait({self._task}, timeout=min(idle, left))
            if self.received == seen:
                return

    def stop(self) -> None:
        """Stop reading (what was fed so far stays in the collector)."""
        self._task.cancel()


#: Seconds a kill waits for the job's process group to be known before it falls back to
#: the marker sweep alone.
GROUP_WAIT = 5.0


class JobLedger:
    """The jobs of one sandbox: a marker per command (``<mark>.<n>``) and the process
    groups seen, for killing what they left (``kill_all_script``)."""

    def __init__(self) -> None:
        self.mark = uuid.uuid4().hex
        self.runs = 0
        self.groups: set[tuple[int, int]] = set()

    def next_marker(self) -> str:
        """The marker of the next command."""
        self.runs += 1
        return f"{self.mark}.{self.runs}"

    def kill_all_script(self) -> str:
        """A bash script killing every process the sandbox's commands left (empty when
        no command ran)."""
        return kill_all_script(self.groups, self.mark, ran=self.runs > 0)

    def forget(self, groups: Collection[tuple[int, int]] | None = None) -> None:
        """Drop the process groups (after they were killed): ``groups``, or all."""
        if groups is None:
            self.groups.clear()
        else:
            self.groups.difference_update(groups)

    async def stop(self, run: Callable[[str], Awaitable[tuple[int, bytes, bytes]]]) -> None:
        """Kill every process the sandbox's commands left (``stop_processes``): run the
        kill script through ``run`` (the backend's way to run a bash script outside any
        command; it returns exit code, stdout, stderr), then drop the groups it killed.
        Does nothing when no command ran.

        Raises:
            SandboxError: if the kill script failed.
            Exception: what ``run`` raises.
        """
        groups = set(self.groups)
        script = kill_all_script(groups, self.mark, ran=self.runs > 0)
        if not script:
            return
        code, out, err = await run(script)
        if code != 0:
            detail = (out + err).decode(errors="replace").strip() or "no output"
            raise SandboxError(
                f"the script killing the sandbox's processes failed (exit {code}): {detail}"
            )
        self.forget(groups)


class Job(Protocol):
    """The runner process of one command (``bash -c BOOT _ MARKER``), as started by a
    backend: where its output and its reports come from, and the backend's answers to
    what ``run_job`` cannot know by itself."""

    @property
    def output(self) -> ByteReader:
        """The command's stdout and stderr, interleaved."""
        ...

    @property
    def control(self) -> ByteReader | None:
        """The runner's stderr (its ``hermes-pgid``/``hermes-exit`` reports)."""
        ...

    async def send(self, script: bytes) -> None:
        """Give the runner the command script and end its stdin."""
        ...

    async def failed_to_start(self, diagnostics: str) -> Exception:
        """The error to raise when the runner never reported its process group
        (``diagnostics``: what it wrote besides its reports)."""
        ...

    async def exit_status(self, wait: float) -> int:
        """The exit code when the runner ended without reporting the command's status
        (it was killed, or its connection went away), waiting at most ``wait`` seconds.

        Raises:
            SandboxClosedError: if the status is lost with the connection.
        """
        ...

    async def close(self) -> None:
        """Release the runner process (it is ended if it still runs)."""
        ...


async def run_job(
    job: Job,
    script: bytes,
    *,
    timeout: float,
    collector: OutputCollector,
    on_group: Callable[[tuple[int, int]], None],
    kill: Callable[[tuple[int, int] | None], Awaitable[object]],
) -> ExecResult:
    """Run one command through its runner ``job`` and return its result.

    At ``timeout`` (exit code 124, ``timed_out``) and when the caller is cancelled (or
    anything fails) while the command runs, ``kill(group)`` runs a kill script for the
    command (``group`` is its ``(pgid, sid)``, None if never reported) before this
    returns or raises. After the command's shell exited, output is read until it ends,
    or none came for ``OUTPUT_IDLE`` seconds, for at most ``OUTPUT_GRACE`` seconds.
    The job is closed in every case.

    Raises:
        Exception: ``job.failed_to_start(...)`` if the runner never reported its
            process group; what ``job.exit_status`` raises; what ``job.send`` raises.
    """
    control = JobControl(on_group)
    control_task = asyncio.ensure_future(control.consume(job.control))
    pump = OutputPump(job.output, collector)

    async def kill_command() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(control.ready.wait()), GROUP_WAIT)
        with contextlib.suppress(Exception):
            await kill(control.group)

    finished = False
    try:
        await job.send(script)
        try:
            async with asyncio.timeout(timeout):
                await control.done.wait()
        except TimeoutError:
            await asyncio.shield(kill_command())
            finished = True
            return ExecResult(collector.text(), 124, True, collector.truncated)
        finished = True
        await pump.drain(OUTPUT_IDLE, OUTPUT_GRACE)
        if control.group is None:
            raise await job.failed_to_start(control.text())
        code = control.exit_code
        if code is None:
            code = await job.exit_status(OUTPUT_GRACE)
        return ExecResult(collector.text(), code, False, collector.truncated)
    finally:
        if not finished:
            # Cancelled (or failed) while the command ran: its process tree must die.
            await asyncio.shield(kill_command())
        pump.stop()
        control_task.cancel()
        await asyncio.shield(job.close())
