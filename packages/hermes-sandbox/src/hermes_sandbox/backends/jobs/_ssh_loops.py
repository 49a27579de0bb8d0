"""An ssh sandbox used from other event loops than its own: a connection per loop.

An asyncssh connection belongs to the event loop that opened it. When the sandbox is used
from another loop while its own still runs (a blocking ``ToolContext`` call made on that
loop's thread runs on the context's private loop), that loop gets a connection of its
own to the same host, opened on first use and closed with the sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asyncssh import SFTPClient, SSHClientConnection

__all__ = ["LoopConnection", "LoopConnections"]


@dataclass
class LoopConnection:
    """The connection (and SFTP client) of an event loop other than the sandbox's own."""

    conn: SSHClientConnection | None = None
    sftp: SFTPClient | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class LoopConnections:
    """The connections of the loops other than ``home`` (the loop the sandbox's own
    connection belongs to), each opened with ``connect`` on first use."""

    def __init__(self, connect: Callable[[], Awaitable[SSHClientConnection]]) -> None:
        self.home: asyncio.AbstractEventLoop | None = None
        self._connect = connect
        self._by_loop: dict[asyncio.AbstractEventLoop, LoopConnection] = {}

    async def for_running_loop(self) -> LoopConnection | None:
        """The running loop's connection when it is not ``home`` and ``home`` still runs
        (opened, or reopened if it closed, on first use); None where the sandbox's own
        connection serves.

        Raises:
            Exception: what ``connect`` raises.
        """
        loop = asyncio.get_running_loop()
        home = self.home
        if home is None or loop is home or not home.is_running():
            return None
        away = self._by_loop.get(loop)
        if away is None:
            away = self._by_loop.setdefault(loop, LoopConnection())
        async with away.lock:
            if away.conn is None or away.conn.is_closed():
                away.sftp = None
                away.conn = await self._connect()
        return away

    def close_all(self) -> None:
        """Close the connections of other loops, each on its own loop."""
        while self._by_loop:
            loop, away = self._by_loop.popitem()
            conn = away.conn
            if conn is None:
                continue
            try:
                here = asyncio.get_running_loop() is loop
            except RuntimeError:
                here = False
            with contextlib.suppress(RuntimeError):  # that loop is closed: the OS closes it
                if here:
                    conn.close()
                else:
                    loop.call_soon_threadsafe(conn.close)
