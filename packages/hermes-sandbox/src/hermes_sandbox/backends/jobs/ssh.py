"""The ``ssh`` backend: a per-task directory on a remote host, reached with asyncssh.

Each sandbox opens its own SSH connection (or borrows one the caller owns, see
``connection``), creates ``<base_dir>/<task>-<random>`` on the remote host and runs every
command there through a fresh channel (``_ssh_channel.py``). Files travel over SFTP
(``_ssh_sftp.py``), directory trees as tar streams over a channel. ``close()`` kills
what the sandbox's commands left running, removes the per-task directory and the shell
state, and closes the connection.

An asyncssh connection belongs to the event loop that opened it. When the sandbox is used
from another loop while its own still runs (a blocking ``ToolContext`` call made on that
loop's thread runs on the context's private loop), that loop gets a connection of its own
to the same host, opened on first use and closed with the sandbox (``_ssh_loops.py``;
the connection options and opening a connection are ``_ssh_connect.py``); the remote state
(directory, shell session, jobs) is the same whichever connection reaches it. A
caller-owned ``connection`` cannot be copied: such a sandbox is used from its own loop
only (elsewhere asyncssh refuses, and ``ToolContext`` says to await its async twins).

How a command runs: the channel starts ``env -i PATH=… HOME=… LANG=… bash -c BOOT``, so
the remote login environment does not reach the command; the command script (with
``options.env`` as ``export`` lines in front) travels over stdin, never on a command
line. ``BOOT`` starts the script as a background job under ``set -m``, which gives it a
process group of its own, reports ``pgid:sid`` on the channel's stderr and waits. The
command's stdout and stderr share the channel's stdout, so they stay interleaved. Every
process of the command inherits ``HERMES_SANDBOX_MARKER=<sandbox>.<command number>``
(read-only in the shell, so the saved session environment cannot replace it).

At the timeout (or when the caller cancels) a second channel kills the command's process
group and then every process whose environment carries the command's marker (read from
``/proc/*/environ``), so children that left the group (``setsid``, ``nohup … &``) die
too. ``close()`` does the same for every command of the sandbox. Only a process that
both wipes its environment and leaves its process group escapes.

Remote host requirements: Linux (``/proc``), ``bash``, ``env``, ``cat``, ``tar``,
``grep``, ``timeout``, and the SFTP subsystem. Resource limits (``cpus``, ``memory_mb``,
``pids_limit``) cannot be enforced on a plain remote account and are rejected;
``network`` is not controlled (the remote host's network is what it is).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import posixpath
import shlex
import uuid
from typing import TYPE_CHECKING

from hermes_sandbox._base import Sandbox
from hermes_sandbox._errors import (
    BackendUnavailableError,
    SandboxClosedError,
    SandboxError,
    SandboxStartError,
)
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._output import OutputCollector
from hermes_sandbox._processes import DEFAULT_PATH
from hermes_sandbox._result import ExecResult
from hermes_sandbox._teardown import run_detached
from hermes_sandbox.backends.jobs._job import (
    BOOT,
    JobLedger,
    check_env,
    kill_command_script,
    run_job,
    safe_name,
)
from hermes_sandbox.backends.jobs._ssh_channel import ChannelJob, as_bytes
from hermes_sandbox.backends.jobs._ssh_connect import SSHEndpoint
from hermes_sandbox.backends.jobs._ssh_loops import LoopConnection, LoopConnections
from hermes_sandbox.backends.jobs._ssh_sftp import (
    TRANSFER_TIMEOUT,
    open_sftp,
    read_file,
    write_file,
)
from hermes_sandbox.backends.option_check import check_extra

try:
    import asyncssh
except ImportError:  # pragma: no cover - exercised only without the extra
    _HAVE_ASYNCSSH = False
else:
    _HAVE_ASYNCSSH = True

if TYPE_CHECKING:
    from asyncssh import SFTPClient, SSHClientConnection

__all__ = ["SSHSandbox"]

_log = logging.getLogger(__name__)

#: The ``options.extra`` keys this backend understands.
OPTION_KEYS = frozenset(
    {
        "host",
        "port",
        "username",
        "client_keys",
        "key_path",
        "passphrase",
        "password",
        "known_hosts",
        "host_key",
        "insecure_skip_host_key_check",
        "base_dir",
        "connect_timeout",
        "connection",
    }
)

#: Seconds allowed for the small housekeeping commands (setup, kill, cleanup).
HOUSEKEEPING_TIMEOUT = 60.0
#: Seconds ``close()`` spends reconnecting to clean up after the connection died.
RECONNECT_TIMEOUT = 10.0


class SSHSandbox(Sandbox):
    """A sandbox in a per-task directory of a remote host, over SSH (asyncssh).

    ``options.extra`` keys:

    - ``host`` (required unless ``connection`` is given), ``port`` (22), ``username``
      (default: the local user name);
    - authentication: ``client_keys`` (private key paths or asyncssh key objects),
      ``key_path`` (one private key path), ``passphrase``, ``password``; with none of
      them, asyncssh's defaults apply (``~/.ssh/id_*`` and the ssh agent);
    - host key policy, at most one of: ``known_hosts`` (a known_hosts file path or an
      ``asyncssh.SSHKnownHosts``), ``host_key`` (the server's public key(s): OpenSSH
      text, a ``.pub`` path or an ``asyncssh.SSHKey``, or a list of them), or
      ``insecure_skip_host_key_check=True``; with none, ``~/.ssh/known_hosts`` is used;
    - ``base_dir``: the remote directory under which each task gets its own directory
      (default ``/tmp/hermes-sandbox-<username>``; it must belong to the login user);
    - ``connect_timeout``: seconds (default 30);
    - ``connection``: an open ``asyncssh.SSHClientConnection`` to share instead of
      opening one per sandbox. The caller owns it (the sandbox never closes it); every
      sandbox on it uses up to three channels at once, and OpenSSH allows
      ``MaxSessions`` (default 10) per connection.

    ``workdir`` defaults to the per-task directory, which ``close()`` removes; a
    ``workdir`` you give is created if missing and left in place at close. ``HOME`` is
    the per-task directory. ``~/.ssh/config`` is not read.

    Raises:
        BackendUnavailableError: if asyncssh is not installed.
        ValueError: for unknown or invalid options.
    """

    backend = "ssh"

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        if not _HAVE_ASYNCSSH:
            raise BackendUnavailableError(
                "the ssh backend needs asyncssh: pip install 'hermes-sandbox[ssh]'"
            )
        super().__init__(options, task_id=task_id)
        extra = dict(options.extra)
        check_extra("ssh", extra, OPTION_KEYS)
        limits = [n for n in ("cpus", "memory_mb", "pids_limit") if getattr(options, n)]
        if limits:
            raise ValueError(
                f"ssh backend cannot enforce {', '.join(limits)} on a remote account; "
                "remove them or use the docker or singularity backend"
            )
        check_env(options.env, "ssh")
        self._shared: SSHClientConnection | None = extra.get("connection")
        if self._shared is not None and not isinstance(self._shared, asyncssh.SSHClientConnection):
            raise ValueError("ssh backend: connection must be an asyncssh.SSHClientConnection")
        host = extra.get("host")
        if self._shared is None and not (isinstance(host, str) and host):
            raise ValueError("ssh backend needs host=... (or connection=...)")
        self.endpoint = SSHEndpoint.from_options(extra, host or "shared-connection")
        self.host = self.endpoint.host
        self.port = self.endpoint.port
        self.username = self.endpoint.username
        base_dir = str(extra.get("base_dir") or f"/tmp/hermes-sandbox-{self.username}")
        if not posixpath.isabs(base_dir):
            raise ValueError(f"ssh backend: base_dir must be an absolute path, got {base_dir!r}")
        safe_task = safe_name(self.task_id, 48)
        self.base_dir = posixpath.normpath(base_dir)
        self.root_dir = posixpath.join(self.base_dir, f"{safe_task}-{uuid.uuid4().hex[:8]}")
        if options.workdir is None:
            self.workdir = self.root_dir
        self._conn: SSHClientConnection | None = None
        self._sftp: SFTPClient | None = None
        self._sftp_lock = asyncio.Lock()
        self._jobs = JobLedger()
        # The connections of other loops than the one the connection belongs to.
        self._loops = LoopConnections(self.endpoint.connect)

    @property
    def target(self) -> str:
        """``user@host:port``, for messages."""
        return self.endpoint.target

    # lifecycle ----------------------------------------------------------------------
    async def _start(self) -> None:
        self._loops.home = asyncio.get_running_loop()
        if self._shared is not None:
            self._conn = self._shared
        else:
            self._conn = await self.endpoint.connect()
        try:
            await self._setup_remote()
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._cleanup_remote())
            await asyncio.shield(self._disconnect())
            raise

    async def _setup_remote(self) -> None:
        script = (
            "umask 077\n"
            f"base={shlex.quote(self.base_dir)}; root={shlex.quote(self.root_dir)}\n"
            "for tool in bash env cat tar grep timeout; do command -v $tool >/dev/null 2>&1 || "
            '{ echo "$tool is not installed on the remote host"; exit 65; }; done\n'
            "[ -d /proc/self ] || { echo 'the remote host has no /proc (needs Linux)'; exit 65; }\n"
            'mkdir -p -- "$base" || exit 66\n'
            '[ -O "$base" ] || { echo "$base belongs to another user; set base_dir"; exit 66; }\n'
            'mkdir -- "$root" || exit 67\n'
            f"mkdir -- {shlex.quote(self._state_dir)} || exit 67\n"
            f"mkdir -p -- {shlex.quote(self.workdir)} || exit 68\n"
        )
        rc, out, err = await self._pipe(script, timeout=HOUSEKEEPING_TIMEOUT)
        if rc != 0:
            detail = (out + err).decode(errors="replace").strip()
            raise SandboxStartError(
                f"ssh: preparing {self.root_dir} on {self.target} failed (exit {rc}): {detail}"
            )

    async def _close(self) -> None:
        try:
            await asyncio.wait_for(self._cleanup_remote(), HOUSEKEEPING_TIMEOUT)
        except Exception as exc:
            _log.warning("ssh: cleanup of %s on %s failed: %s", self.root_dir, self.target, exc)
        finally:
            await self._disconnect()

    def _close_now(self) -> None:
        # The connection belongs to the event loop that made it, which may be gone: drop
        # it (the OS closes it at exit) and clean up over a fresh one, on a fresh loop.
        self._sftp = None
        self._conn = None
        if self._shared is not None:
            _log.warning(
                "ssh: sandbox %s on %s was not closed and runs on a connection this process "
                "does not own; %s is left behind",
                self.task_id,
                self.target,
                self.root_dir,
            )
            return
        run_detached(self._close(), timeout=self.CLOSE_NOW_TIMEOUT)

    async def _cleanup_remote(self) -> None:
        if self._conn is None or self._conn.is_closed():
            if self._shared is not None:
                return
            # The connection died: reconnect once to clean up what the sandbox left.
            self._conn = await asyncio.wait_for(self.endpoint.connect(), RECONNECT_TIMEOUT)
            self._loops.home = asyncio.get_running_loop()
        script = self._jobs.kill_all_script()
        script += (
            f"rm -rf -- {shlex.quote(self.root_dir)} {shlex.quote(self._state_dir)} "
            f"{shlex.quote(self._state_dir)}.*\n"
        )
        rc, out, err = await self._pipe(script, timeout=HOUSEKEEPING_TIMEOUT)
        if rc != 0:
            raise SandboxError((out + err).decode(errors="replace").strip() or f"exit {rc}")
        self._jobs.forget()

    async def _disconnect(self) -> None:
        self._loops.close_all()
        sftp, self._sftp = self._sftp, None
        if sftp is not None:
            sftp.exit()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(sftp.wait_closed(), 5)
        conn, self._conn = self._conn, None
        if conn is not None and conn is not self._shared:
            conn.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 5)

    # commands -----------------------------------------------------------------------
    def _runner_command(self, marker: str) -> str:
        return (
            f"exec env -i PATH={shlex.quote(DEFAULT_PATH)} HOME={shlex.quote(self.root_dir)} "
            f"LANG=C.UTF-8 bash -c {shlex.quote(BOOT)} _ {marker}"
        )

    def _script_with_env(self, script: str) -> bytes:
        exports = "".join(
            f"export {name}={shlex.quote(value)}\n" for name, value in self.options.env.items()
        )
        return (exports + script).encode()

    async def _run(self, script: str, *, timeout: float) -> ExecResult:
        conn = await self._connection()
        collector = OutputCollector(self.options.max_output_chars)
        marker = self._jobs.next_marker()
        try:
            process = await conn.create_process(self._runner_command(marker), encoding=None)
        except (asyncssh.Error, OSError) as exc:
            raise self._lost(exc) from exc

        async def kill(group: tuple[int, int] | None) -> object:
            return await self._pipe(
                kill_command_script(group, marker), timeout=HOUSEKEEPING_TIMEOUT
            )

        try:
            return await run_job(
                ChannelJob(self.target, conn, process),
                self._script_with_env(script),
                timeout=timeout,
                collector=collector,
                on_group=self._jobs.groups.add,
                kill=kill,
            )
        except (asyncssh.Error, OSError) as exc:
            raise self._lost(exc) from exc

    async def _stop_processes(self) -> None:
        async def run(script: str) -> tuple[int, bytes, bytes]:
            return await self._pipe(script, timeout=HOUSEKEEPING_TIMEOUT)

        await self._jobs.stop(run)

    async def _away_session(self) -> LoopConnection | None:
        """The connection of the running loop when it is not the sandbox's own loop and
        that one still runs (opened on first use); None where the own connection serves
        (always for a caller-owned ``connection``, which cannot be copied).

        Raises:
            SandboxClosedError: if the sandbox's connection is closed.
            SandboxStartError: if the extra connection cannot be opened.
        """
        self._live_connection()
        if self._shared is not None:
            return None
        return await self._loops.for_running_loop()

    async def _connection(self) -> SSHClientConnection:
        """The connection to use from the running loop.

        Raises:
            SandboxClosedError: if the sandbox's connection is closed.
            SandboxStartError: if another loop's connection cannot be opened.
        """
        away = await self._away_session()
        if away is not None and away.conn is not None:
            return away.conn
        return self._live_connection()

    def _live_connection(self) -> SSHClientConnection:
        conn = self._conn
        if conn is None or conn.is_closed():
            raise SandboxClosedError(
                f"ssh: the connection to {self.target} is closed; close this sandbox and "
                "start a new one"
            )
        return conn

    def _lost(self, exc: BaseException) -> SandboxError:
        alive = self._conn is not None and not self._conn.is_closed()
        if alive and isinstance(exc, asyncssh.ChannelOpenError):
            return SandboxError(
                f"ssh: {self.target} refused a new channel ({exc}); too many concurrent "
                "commands on one connection? (sshd's MaxSessions, default 10)"
            )
        return SandboxClosedError(f"ssh: the connection to {self.target} failed: {exc}")

    async def _pipe(
        self, command: str, *, stdin: bytes | None = None, timeout: float
    ) -> tuple[int, bytes, bytes]:
        """Run ``command`` in the remote login shell; its exit code, stdout and stderr.

        For the backend's own short commands and transfers (not for user commands).
        """
        conn = await self._connection()
        try:
            async with asyncio.timeout(timeout):
                result = await conn.run(command, input=stdin, encoding=None, check=False)
        except TimeoutError as exc:
            raise SandboxError(
                f"ssh: {command.splitlines()[0][:80]!r} on {self.target} took over {timeout:g}s"
            ) from exc
        except (asyncssh.Error, OSError) as exc:
            raise self._lost(exc) from exc
        code = result.returncode
        if code is None:
            raise SandboxClosedError(f"ssh: the connection to {self.target} was lost")
        return code, as_bytes(result.stdout), as_bytes(result.stderr)

    # files --------------------------------------------------------------------------
    async def _sftp_client(self) -> SFTPClient:
        away = await self._away_session()
        if away is not None and away.conn is not None:
            async with away.lock:
                if away.sftp is None:
                    away.sftp = await open_sftp(away.conn, self.target)
                return away.sftp
        async with self._sftp_lock:
            if self._sftp is None:
                self._sftp = await open_sftp(self._live_connection(), self.target)
            return self._sftp

    async def _read_bytes(self, path: str) -> bytes:
        return await read_file(await self._sftp_client(), path)

    async def _write_bytes(self, path: str, data: bytes) -> None:
        await write_file(await self._sftp_client(), path, data)

    async def _put_archive(self, remote_dir: str, archive: bytes) -> None:
        quoted = shlex.quote(remote_dir)
        rc, out, err = await self._pipe(
            f"mkdir -p -- {quoted} && tar -xf - -C {quoted}",
            stdin=archive,
            timeout=TRANSFER_TIMEOUT,
        )
        if rc != 0:
            detail = (err or out).decode(errors="replace").strip()
            raise SandboxError(f"ssh: could not unpack the upload into {remote_dir}: {detail}")

    async def _get_archive(self, remote_dir: str) -> bytes:
        quoted = shlex.quote(remote_dir)
        rc, out, err = await self._pipe(
            f"[ -d {quoted} ] || exit 44; tar -cf - -C {quoted} .", timeout=TRANSFER_TIMEOUT
        )
        if rc == 44:
            raise FileNotFoundError(
                errno.ENOENT, f"no directory {remote_dir} in sandbox {self.task_id}", remote_dir
            )
        if rc != 0:
            detail = err.decode(errors="replace").strip()
            raise SandboxError(f"ssh: could not archive {remote_dir}: {detail}")
        return out
