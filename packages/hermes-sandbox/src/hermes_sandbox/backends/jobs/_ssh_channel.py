"""One command of an ssh sandbox on its channel, as ``run_job`` drives it, and what a
finished channel reports (its exit code, its output as bytes)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, cast

from hermes_sandbox._errors import SandboxClosedError, SandboxError
from hermes_sandbox.backends.jobs._job import ByteReader

if TYPE_CHECKING:
    from asyncssh import SSHClientConnection, SSHClientProcess

__all__ = ["ChannelJob", "as_bytes", "exit_code"]


class ChannelJob:
    """One command's runner on an ssh channel, as ``run_job`` drives it (``target``, the
    host as ``user@host:port``, names it in messages)."""

    def __init__(
        self, target: str, conn: SSHClientConnection, process: SSHClientProcess[bytes]
    ) -> None:
        self._target = target
        self._conn = conn
        self._process = process

    @property
    def output(self) -> ByteReader:
        return self._process.stdout

    @property
    def control(self) -> ByteReader | None:
        return self._process.stderr

    async def send(self, script: bytes) -> None:
        self._process.stdin.write(script)
        self._process.stdin.write_eof()

    async def failed_to_start(self, diagnostics: str) -> Exception:
        target = self._target
        if self._conn.is_closed():
            return SandboxClosedError(f"ssh: the connection to {target} was lost")
        return SandboxError(f"ssh: could not start bash on {target}: {diagnostics or 'no output'}")

    async def exit_status(self, wait: float) -> int:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._process.wait_closed(), wait)
        code = exit_code(self._process)
        if code is None:
            raise SandboxClosedError(
                f"ssh: the connection to {self._target} was lost while the command ran"
            )
        return code

    async def close(self) -> None:
        self._process.close()


def exit_code(process: SSHClientProcess[bytes]) -> int | None:
    """The channel's exit code as a shell reports it (``128 + n`` for signal ``n``), or
    None if the connection was lost before it was known."""
    status = process.exit_status
    if status is not None and status >= 0:
        return int(status)
    code = process.returncode
    if code is None:
        return None
    return 128 - code if code < 0 else code


def as_bytes(data: object) -> bytes:
    """A channel's output (bytes, text or None) as bytes."""
    if data is None:
        return b""
    if isinstance(data, str):
        return data.encode()
    return bytes(cast(bytes, data))
