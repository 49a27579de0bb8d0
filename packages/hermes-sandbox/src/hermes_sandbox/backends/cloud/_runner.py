"""A sandbox whose commands run through a remote provider's exec API.

``RemoteShellSandbox`` is what the ``modal`` and ``daytona`` backends share: both can only
ask a remote machine to "run this argv and give me its output and exit code", so
everything else (killing a command's process tree at its timeout, keeping output bounded,
killing a command whose caller was cancelled) is done by a small bash runner inside the
sandbox:

* the command runs in its own process group (``set -m``) with a marker variable; a
  watchdog kills that group, every descendant and every process carrying the marker at
  the timeout, and the result says ``timed_out``;
* output (stdout and stderr interleaved) goes through a FIFO into ``dd bs=1 count=HEAD``
  then ``tail -c TAIL``, so at most ``max_output_chars`` bytes ever leave the sandbox
  however much the command prints, with the count of dropped bytes;
* when the command's shell exits, the command is over: background jobs keep running
  (until the sandbox closes) and their later output is drained and discarded;
* the runner writes the command's process-group id to a file, so a cancelled ``exec``
  can kill the command with a second, tiny exec;
* a random token ends the runner's output with ``dropped exit_code timed_out``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import posixpath
import uuid
from abc import abstractmethod
from typing import ClassVar

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import SandboxError, SandboxStartError
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._output import OutputCollector
from hermes_sandbox._processes import MARKER_VARIABLE, kill_functions, marker_pattern
from hermes_sandbox._result import ExecResult

__all__ = ["RemoteShellSandbox"]

logger = logging.getLogger(__name__)

# --- bash that runs inside the sandbox ---------------------------------------------------

#: The kill functions (``hermes_sandbox._processes``), run from the sandbox's ``PATH``.
_FUNCS = kill_functions()

#: Runs ``bash -c SCRIPT`` with a timeout and bounded output.
#: Arguments: script, timeout seconds, head bytes, tail bytes, run-file prefix, token,
#: the token's marker pattern (``marker_pattern``).
#: The command gets its own process group and the marker; its output goes through a FIFO
#: to a reader that keeps the first bytes in ``$p.head`` and the last in ``$p.tail``
#: (counting the rest). The head is copied by ``dd bs=1``: it never reads past its count
#: and writes every byte at once (``head -c`` would hold them in a stdio buffer). When
#: the command's shell has exited, the runner waits for the end of output: up to 10 s
#: when nothing of the command's process group is left (the reader only has to catch
#: up), 0.2 s when a background job of the command may still hold the output; the
#: reader is then left draining it (so the job is not killed by SIGPIPE), the byte
#: counter is killed (it would wait forever for a FIFO the runner removes as it exits)
#: and the output so far is reported. Nothing but the runner holds
#: the runner's stdout (helpers redirect it before they open a FIFO, which blocks), so
#: the provider's exec returns when the runner does.
_RUNNER = (
    _FUNCS
    + r"""
s=$1 t=$2 h=$3 k=$4 p=$5 tok=$6 m=$7
exec 2>/dev/null </dev/null
[ -e "$p.cancel" ] && exit 130
if ! { mkdir -p "${p%/*}" && mkfifo "$p.out" "$p.cnt" "$p.tick"; }; then
  printf 'hermes-sandbox: cannot create run files under %s\n' "${p%/*}"; exit 125
fi
trap 'rm -f "$p".out "$p".cnt "$p".tick "$p".n "$p".head "$p".tail "$p".pid "$p".timeout \
  "$p".killed "$p".cancel' EXIT
exec 9<>"$p.tick"
set -m
@MARKER=$tok bash -c "readonly @MARKER
$s" >"$p.out" 2>&1 &
c=$!
set +m
echo "$c" >"$p.pid"
[ -e "$p.cancel" ] && __hs_kill g "$c" "$m"
wc -c >"$p.n" <"$p.cnt" &
n=$!
( dd bs=1 count="$h" >"$p.head"; tee "$p.cnt" | tail -c "$k" >"$p.tail" ) >/dev/null <"$p.out" &
r=$!
set -m
(
  sleep "$t"; : >"$p.timeout"; __hs_kill g "$c" "$m"; : >"$p.killed"
  sleep 2; __hs_tree g "$r"; kill -KILL "${__hs_found[@]}"
) >/dev/null &
w=$!
set +m
wait "$c"; rc=$?
i=0
while [ -e "$p.timeout" ] && ! [ -e "$p.killed" ] && [ "$i" -lt 2000 ]; do
  read -r -t 0.005 -u 9; i=$((i + 1))
done
g=2000; __hs_tree g "$c"; [ "${#__hs_found[@]}" -eq 0 ] || g=40
i=0
while kill -0 "$r" && [ "$i" -lt "$g" ]; do read -r -t 0.005 -u 9; i=$((i + 1)); done
kill -KILL -- "-$w"
to=0; [ -e "$p.timeout" ] && to=1
cat "$p.head"
if kill -0 "$r"; then
  kill -KILL "$n"
  printf '\n%s 0 %s %s\n' "$tok" "$rc" "$to"
  exit 0
fi
wait "$n"
d=$(( $(cat "$p.n" || echo 0) - k )); [ "$d" -gt 0 ] || d=0
[ "$d" -gt 0 ] && printf '%s' "$tok:cut"
cat "$p.tail"
printf '\n%s %s %s %s\n' "$tok" "$d" "$rc" "$to"
"""
).replace("@MARKER", MARKER_VARIABLE)

#: Kills the command of a run whose caller went away (arguments: run-file prefix, the
#: token's marker pattern).
#: The tombstone stops a runner that has not started the command yet; the runner then
#: finishes by itself.
_KILLER = (
    _FUNCS
    + r"""
: >"$1.cancel"
c=$(cat "$1.pid" 2>/dev/null)
__hs_kill g "$c" "$2"
exit 0
"""
)

#: Kills every process the sandbox's commands left (``stop_processes``; arguments: the
#: directory of the run files, the marker pattern of the sandbox's tokens): the process
#: group and tree of every command still running (its run's ``.pid`` file), and every
#: process whose marker matches, pass after pass until none is left (exit 1 if they kept
#: coming).
_STOPPER = (
    _FUNCS
    + r"""
exec </dev/null
for f in "$1"/run-*.pid; do
  [ -e "$f" ] || continue
  read -r c <"$f" 2>/dev/null && [ -n "$c" ] && __hs_kill g "$c" ""
done
__hs_sweep "$2"
"""
)

#: Creates the working directory (with sudo if the user may not) and checks the tools
#: the runner needs; prints the sandbox's temporary directory.
_PROBE = r"""
w=$1
if ! mkdir -p -- "$w" 2>/dev/null; then
  sudo -n mkdir -p -- "$w" && sudo -n chown "$(id -u):$(id -g)" -- "$w"
fi >/dev/null 2>&1
if ! [ -d "$w" ] || ! [ -w "$w" ]; then
  printf 'cannot create or write the working directory %s\n' "$w"; exit 3
fi
m=
for x in mkfifo dd tail tee wc sleep cat rm mkdir grep tar; do
  command -v "$x" >/dev/null 2>&1 || m="$m $x"
done
[ -z "$m" ] || { printf 'missing commands:%s\n' "$m"; exit 4; }
printf 'TMPDIR=%s\n' "${TMPDIR:-/tmp}"
"""


class RemoteShellSandbox(Sandbox):
    """A sandbox on a remote machine reached only through "run argv, return output".

    Subclasses implement ``_create_remote``, ``_destroy_remote``, ``_exec_argv`` and the
    file hooks; this class runs commands through the in-sandbox runner (timeouts that
    kill the whole process tree, bounded output, kill on cancellation) and makes start
    and close leak-free even when cancelled.
    """

    #: Backend name used in error messages.
    label: ClassVar[str] = "remote"
    #: Seconds the client waits beyond a command's timeout before it gives up on the
    #: sandbox (network and scheduling slack; the runner itself enforces the timeout).
    answer_grace: ClassVar[float] = 30.0
    #: Seconds a cancelled ``start()`` waits for a creation in flight, so that what was
    #: created can be destroyed instead of leaking until its own lifetime runs out.
    start_grace: ClassVar[float] = 30.0
    #: Seconds allowed for the kill of a cancelled command.
    control_timeout: ClassVar[float] = 20.0
    #: Seconds allowed for the first command (the start-up probe), which also waits for
    #: the provider to schedule the sandbox and pull its image.
    probe_timeout: ClassVar[float] = 600.0

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        super().__init__(options, task_id=task_id)
        # Every run's token (its marker) starts with this: ``stop_processes`` finds them.
        self._token_prefix = f"__hermes_end_{uuid.uuid4().hex[:16]}_"
        if options.pids_limit is not None:
            raise ValueError(
                f"{self.label} backend cannot limit the number of processes "
                f"(pids_limit={options.pids_limit}); leave pids_limit unset or use the "
                "docker backend"
            )

    # hooks for subclasses -----------------------------------------------------------
    @property
    @abstractmethod
    def remote_id(self) -> str:
        """The provider's id of the sandbox (for messages), or ``"(none)"``."""

    @abstractmethod
    async def _create_remote(self) -> None:
        """Create the remote sandbox.

        Raises:
            SandboxStartError: saying what was wrong and what to do.
        """

    @abstractmethod
    async def _destroy_remote(self) -> None:
        """Destroy the remote sandbox (idempotent; quiet if it is already gone)."""

    @abstractmethod
    async def _exec_argv(self, argv: list[str], *, timeout: float, cap: int) -> tuple[int, bytes]:
        """Run ``argv`` in the sandbox; return its exit code and its stdout+stderr (the
        first ``cap`` bytes).

        Raises:
            SandboxClosedError: if the sandbox is gone.
            SandboxError: if the provider failed to run it.
        """

    # lifecycle ----------------------------------------------------------------------
    async def _start(self) -> None:
        inner = asyncio.ensure_future(self._start_remote())
        try:
            await asyncio.shield(inner)
        except asyncio.CancelledError:
            await self._abandon_start(inner)
            raise

    async def _start_remote(self) -> None:
        try:
            await self._create_remote()
            await self._probe()
        except BaseException:
            await self._destroy_quietly()
            raise

    async def _abandon_start(self, inner: asyncio.Future[None]) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(inner), self.start_grace)
        except BaseException:  # failed, took too long, or we were cancelled again
            inner.cancel()
            with contextlib.suppress(BaseException):
                await inner
        await self._destroy_quietly()

    async def _close(self) -> None:
        await self._destroy_quietly()

    async def _destroy_quietly(self) -> None:
        try:
            await self._destroy_remote()
        except Exception as exc:
            logger.warning("%s: could not destroy sandbox %s: %s", self.label, self.task_id, exc)

    async def _probe(self) -> None:
        argv = ["bash", "-c", _PROBE, "hermes-probe", self.workdir]
        try:
            async with asyncio.timeout(self.probe_timeout):
                code, raw = await self._exec_argv(argv, timeout=self.probe_timeout, cap=65536)
        except TimeoutError:
            raise SandboxStartError(
                f"{self.label}: sandbox {self.remote_id} did not run a first command within "
                f"{self.probe_timeout:g}s; the provider may be out of capacity"
            ) from None
        except SandboxError as exc:
            raise SandboxStartError(f"{exc} (while starting)") from exc
        text = raw.decode("utf-8", errors="replace").strip()
        if code != 0 or "TMPDIR=" not in text:
            raise SandboxStartError(
                f"{self.label}: sandbox {self.remote_id} cannot run commands "
                f"(exit {code}: {text[-500:] or 'no output'}); use an image with bash and "
                "coreutils (e.g. debian:12-slim) and a working directory the user may create"
            )
        tmp = text.rpartition("TMPDIR=")[2].splitlines()[0].strip() or "/tmp"
        self._state_dir = posixpath.join(tmp, posixpath.basename(self._state_dir))

    # commands -----------------------------------------------------------------------
    async def _run(self, script: str, *, timeout: float) -> ExecResult:
        limit = self.options.max_output_chars
        head = max(limit // 2, 1)
        tail = max(limit - head, 1)
        prefix = f"{self._state_dir}/run-{uuid.uuid4().hex[:12]}"
        token = f"{self._token_prefix}{uuid.uuid4().hex}__"
        argv = ["bash", "-c", _RUNNER, "hermes-run", script, f"{timeout:.3f}"]
        argv += [str(head), str(tail), prefix, token, marker_pattern(token)]
        deadline = timeout + self.answer_grace
        try:
            async with asyncio.timeout(deadline):
                code, raw = await self._exec_argv(argv, timeout=deadline, cap=limit + 65536)
        except TimeoutError:
            await self._kill_run(prefix, token)
            raise SandboxError(
                f"{self.label}: sandbox {self.remote_id} did not answer within {deadline:g}s "
                f"for a command with a {timeout:g}s timeout; it may be overloaded or dead"
            ) from None
        except BaseException:
            await self._kill_run(prefix, token)
            raise
        return self._parse(raw, code, token, limit)

    async def _stop_processes(self) -> None:
        pattern = marker_pattern(self._token_prefix, "[0-9a-f]+__")
        argv = ["bash", "-c", _STOPPER, "hermes-stop", self._state_dir, pattern]
        async with asyncio.timeout(self.control_timeout):
            code, raw = await self._exec_argv(argv, timeout=self.control_timeout, cap=4096)
        if code != 0:
            shown = raw[-500:].decode("utf-8", errors="replace").strip()
            raise SandboxError(
                f"{self.label}: could not stop the processes of sandbox {self.remote_id} "
                f"(exit {code}: {shown or 'no output'}); close it instead"
            )

    async def _kill_run(self, prefix: str, token: str) -> None:
        """Kill the command of a run whose caller went away (best effort, never raises)."""
        argv = ["bash", "-c", _KILLER, "hermes-kill", prefix, marker_pattern(token)]
        job = asyncio.ensure_future(self._exec_argv(argv, timeout=self.control_timeout, cap=4096))
        try:
            await asyncio.wait_for(asyncio.shield(job), self.control_timeout)
        except BaseException as exc:  # the caller's own error is re-raised by _run
            job.cancel()
            logger.debug("%s: kill of %s did not complete: %r", self.label, prefix, exc)

    def _parse(self, raw: bytes, code: int, token: str, limit: int) -> ExecResult:
        end = b"\n" + token.encode()
        at = raw.rfind(end)
        fields = raw[at + len(end) :].split() if at >= 0 else []
        if len(fields) < 3:
            shown = raw[-1000:].decode("utf-8", errors="replace")
            raise SandboxError(
                f"{self.label}: the command runner in sandbox {self.remote_id} failed "
                f"(exit {code}): {shown or 'no output'}"
            )
        dropped, exit_code, timed_out = int(fields[0]), int(fields[1]), fields[2] == b"1"
        body = raw[:at]
        output = OutputCollector(limit)
        cut = (token + ":cut").encode()
        if dropped > 0 and cut in body:
            first, _, last = body.partition(cut)
            output.feed(first)
            output.skip(dropped)
            output.feed(last)
        else:
            output.feed(body)
        return ExecResult(
            output.text(), 124 if timed_out else exit_code, timed_out, output.truncated
        )
