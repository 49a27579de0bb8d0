"""Files of an ssh sandbox over SFTP: opening the client, reading and writing a file,
and SFTP errors as the ``OSError`` the operating system would raise."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import posixpath
from typing import TYPE_CHECKING, cast

from hermes_sandbox._errors import SandboxError

with contextlib.suppress(ImportError):  # the ssh extra; SSHSandbox says when it is missing
    import asyncssh

if TYPE_CHECKING:
    from asyncssh import SFTPClient, SSHClientConnection

__all__ = ["TRANSFER_TIMEOUT", "open_sftp", "os_error", "read_file", "write_file"]

#: Seconds allowed for one file or directory transfer.
TRANSFER_TIMEOUT = 600.0


async def open_sftp(conn: SSHClientConnection, target: str) -> SFTPClient:
    """An SFTP client on ``conn`` (``target`` names the host in messages).

    Raises:
        SandboxError: if the server has no SFTP subsystem or the channel fails.
    """
    try:
        return await conn.start_sftp_client()
    except (asyncssh.Error, OSError) as exc:
        raise SandboxError(
            f"ssh: cannot open SFTP on {target} ({exc}); enable the sftp "
            "subsystem in sshd_config (Subsystem sftp internal-sftp)"
        ) from exc


async def read_file(sftp: SFTPClient, path: str) -> bytes:
    """The bytes of the remote file ``path``.

    Raises:
        IsADirectoryError: if it is a directory.
        OSError: as ``os_error`` maps the SFTP error (``FileNotFoundError``, ...).
        SandboxError: if it takes over ``TRANSFER_TIMEOUT`` seconds.
    """
    try:
        async with asyncio.timeout(TRANSFER_TIMEOUT):
            attrs = await sftp.stat(path)
            if attrs.type == asyncssh.FILEXFER_TYPE_DIRECTORY:
                raise IsADirectoryError(errno.EISDIR, "is a directory", path)
            async with sftp.open(path, "rb") as handle:
                if attrs.type == asyncssh.FILEXFER_TYPE_REGULAR and attrs.size:
                    return cast(bytes, await handle.read())
                # Size unknown (e.g. /proc files): read until EOF.
                chunks = []
                while chunk := await handle.read(1 << 16):
                    chunks.append(cast(bytes, chunk))
                return b"".join(chunks)
    except asyncssh.SFTPError as exc:
        raise os_error(exc, path) from exc
    except TimeoutError as exc:
        raise SandboxError(f"ssh: reading {path} took over {TRANSFER_TIMEOUT:g}s") from exc


async def write_file(sftp: SFTPClient, path: str, data: bytes) -> None:
    """Create or replace the remote file ``path`` (parent directories are made).

    Raises:
        IsADirectoryError: if it is a directory.
        OSError: as ``os_error`` maps the SFTP error.
        SandboxError: if it takes over ``TRANSFER_TIMEOUT`` seconds.
    """
    try:
        async with asyncio.timeout(TRANSFER_TIMEOUT):
            parent = posixpath.dirname(path)
            if parent and parent != "/":
                await sftp.makedirs(parent, exist_ok=True)
            async with sftp.open(path, "wb") as handle:
                await handle.write(data)
    except asyncssh.SFTPError as exc:
        # SFTP v3 reports writing to a directory as a plain "Failure".
        with contextlib.suppress(asyncssh.SFTPError):
            if await sftp.isdir(path):
                raise IsADirectoryError(errno.EISDIR, "is a directory", path) from exc
        raise os_error(exc, path) from exc
    except TimeoutError as exc:
        raise SandboxError(f"ssh: writing {path} took over {TRANSFER_TIMEOUT:g}s") from exc


def os_error(exc: Exception, path: str) -> OSError:
    """The ``OSError`` subclass that matches an asyncssh SFTP error on ``path``."""
    mapping: list[tuple[str, type[OSError], int]] = [
        ("SFTPNoSuchFile", FileNotFoundError, errno.ENOENT),
        ("SFTPNoSuchPath", FileNotFoundError, errno.ENOENT),
        ("SFTPPermissionDenied", PermissionError, errno.EACCES),
        ("SFTPFileIsADirectory", IsADirectoryError, errno.EISDIR),
        ("SFTPNotADirectory", NotADirectoryError, errno.ENOTDIR),
    ]
    for name, cls, code in mapping:
        if isinstance(exc, getattr(asyncssh, name)):
            return cls(code, str(getattr(exc, "reason", exc)) or cls.__name__, path)
    return OSError(errno.EIO, f"sftp: {getattr(exc, 'reason', exc)}", path)
