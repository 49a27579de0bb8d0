"""``ExecStream``: the output of one started exec, read straight from the daemon's socket.

``POST /exec/{id}/start`` upgrades the HTTP connection to a raw stream of frames (an
8-byte header: stream number, then the payload's length; stdout is 1, stderr 2). Reading
it with asyncio lets a running command hold no thread.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Final
from urllib.parse import quote

from hermes_sandbox._errors import SandboxClosedError, SandboxError

__all__ = ["CHUNK", "READ_LIMIT", "ExecStream"]

#: Bytes read at a time from a stream (and from archive downloads).
CHUNK: Final = 1 << 16
#: The asyncio reader's buffer limit for exec streams.
READ_LIMIT: Final = 1 << 16


class ExecStream:
    """The multiplexed output of one started exec, read from the daemon's socket."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def start(self, version: str, exec_id: str) -> None:
        """Send ``POST /exec/{id}/start`` and read the response head.

        Raises:
            SandboxClosedError: if the exec or its container is gone.
            SandboxError: for any other refusal.
        """
        body = b'{"Detach":false,"Tty":false}'
        head = (
            f"POST /v{version}/exec/{quote(exec_id)}/start HTTP/1.1\r\n"
            "Host: docker\r\nUser-Agent: hermes-sandbox\r\n"
            "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        self._writer.write(head + body)
        await self._writer.drain()
        try:
            response = await self._reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise SandboxError("docker: the daemon closed the exec stream at once") from exc
        status_line = response.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        if status in (101, 200):
            return
        detail = b""
        with contextlib.suppress(Exception):
            detail = await asyncio.wait_for(self._reader.read(4096), 2)
        message = f"docker: exec start failed: {status_line} {detail.decode(errors='replace')}"
        if status in (404, 409):
            raise SandboxClosedError(message)
        raise SandboxError(message)

    async def pump(
        self, on_stdout: Callable[[bytes], None], on_stderr: Callable[[bytes], None]
    ) -> None:
        """Read frames until the stream ends, passing each piece to its stream's callback.
        Memory stays bounded: at most one chunk is held at a time."""
        reader = self._reader
        while True:
            try:
                header = await reader.readexactly(8)
            except asyncio.IncompleteReadError:
                return
            sink = on_stderr if header[0] == 2 else on_stdout
            remaining = int.from_bytes(header[4:8], "big")
            while remaining:
                chunk = await reader.read(min(remaining, CHUNK))
                if not chunk:
                    return
                remaining -= len(chunk)
                sink(chunk)

    async def send(self, data: bytes) -> None:
        """Write ``data`` to the exec's stdin (an exec created with ``stdin=True``).

        Raises:
            SandboxClosedError: if the connection is gone.
        """
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:
            raise SandboxClosedError(f"docker: the exec's input is closed: {exc}") from exc

    async def close_input(self) -> None:
        """End the exec's stdin (the reading side sees end of file); idempotent."""
        with contextlib.suppress(OSError, RuntimeError):
            if self._writer.can_write_eof() and not self._writer.is_closing():
                self._writer.write_eof()

    async def aclose(self) -> None:
        """Close the socket (idempotent)."""
        self._writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), 1)
