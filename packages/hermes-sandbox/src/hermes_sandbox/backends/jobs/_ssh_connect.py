"""Reaching an ssh backend's host: the connection options and opening a connection.

``SSHEndpoint.from_options`` reads and checks the connection options of
``SSHSandbox`` (``host``, ``port``, ``username``, the authentication and host key
options, ``connect_timeout``); ``SSHEndpoint.connect`` opens a connection with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_sandbox._errors import SandboxStartError

with contextlib.suppress(ImportError):  # the ssh extra; SSHSandbox says when it is missing
    import asyncssh

if TYPE_CHECKING:
    from asyncssh import SSHClientConnection

__all__ = ["CONNECT_ATTEMPTS", "SSHEndpoint"]

#: How often a connection attempt that was dropped before authentication is retried
#: (sshd drops connections beyond ``MaxStartups`` while many sandboxes start at once).
CONNECT_ATTEMPTS = 4

_KEY_TEXT = re.compile(r"^\s*(ssh-|ecdsa-|sk-|rsa-|x509v3-)")


@dataclass(frozen=True)
class SSHEndpoint:
    """Where and how to connect: ``host``, ``port``, ``username``, ``connect_timeout``
    (seconds), ``auth`` (asyncssh keyword arguments) and ``host_key_policy``
    (``(kind, value)``, kind one of ``default``, ``insecure``, ``host_key``,
    ``known_hosts``)."""

    host: str
    port: int
    username: str
    connect_timeout: float
    auth: dict[str, Any]
    host_key_policy: tuple[str, Any]

    @classmethod
    def from_options(cls, extra: Mapping[str, Any], host: str) -> SSHEndpoint:
        """The endpoint the options ``extra`` describe (``host`` already chosen).

        Raises:
            ValueError: for an invalid port, connect_timeout, authentication or host key
                option.
        """
        port = port_option(extra)
        username = str(extra.get("username") or getpass.getuser())
        connect_timeout = float(extra.get("connect_timeout", 30.0))
        if connect_timeout <= 0:
            raise ValueError("ssh backend: connect_timeout must be positive")
        return cls(
            host=host,
            port=port,
            username=username,
            connect_timeout=connect_timeout,
            auth=auth_options(extra),
            host_key_policy=host_key_policy(extra),
        )

    @property
    def target(self) -> str:
        """``user@host:port``, for messages."""
        return f"{self.username}@{self.host}:{self.port}"

    async def connect(self) -> SSHClientConnection:
        """Open a connection (retrying when sshd drops it before authentication).

        Raises:
            SandboxStartError: saying what was wrong (host key, authentication,
                reachability) and what to do.
        """
        known_hosts = await self._resolve_known_hosts()
        kwargs: dict[str, Any] = {
            "port": self.port,
            "username": self.username,
            "known_hosts": known_hosts,
            "config": None,
            "connect_timeout": self.connect_timeout,
            **self.auth,
        }
        delay = 0.2
        for attempt in range(1, CONNECT_ATTEMPTS + 1):
            try:
                return await asyncssh.connect(self.host, **kwargs)
            except asyncssh.HostKeyNotVerifiable as exc:
                raise SandboxStartError(
                    f"ssh: the host key of {self.host}:{self.port} is not trusted ({exc}); "
                    "add it to known_hosts, pass host_key=<the server's public key>, or, "
                    "for throwaway test hosts only, insecure_skip_host_key_check=True"
                ) from exc
            except asyncssh.PermissionDenied as exc:
                raise SandboxStartError(
                    f"ssh: {self.target} refused authentication ({exc}); check username and "
                    "client_keys/key_path/password, and that the key is in the remote "
                    "authorized_keys"
                ) from exc
            except (asyncssh.ConnectionLost, ConnectionResetError, BrokenPipeError) as exc:
                # sshd drops unauthenticated connections beyond MaxStartups: try again.
                if attempt == CONNECT_ATTEMPTS:
                    raise SandboxStartError(
                        f"ssh: {self.host}:{self.port} dropped the connection {attempt} times "
                        f"({exc}); if many sandboxes start at once, raise sshd's MaxStartups"
                    ) from exc
                await asyncio.sleep(delay * (1 + random.random()))
                delay *= 2
            except (OSError, TimeoutError) as exc:
                raise SandboxStartError(
                    f"ssh: cannot connect to {self.host}:{self.port} "
                    f"({exc or type(exc).__name__}); check that sshd runs there and is "
                    "reachable, or raise connect_timeout"
                ) from exc
            except asyncssh.Error as exc:
                raise SandboxStartError(f"ssh: connecting to {self.target} failed: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    async def _resolve_known_hosts(self) -> Any:
        kind, value = self.host_key_policy
        if kind == "insecure":
            return None
        if kind == "host_key":
            return (await asyncio.to_thread(load_public_keys, value), [], [])
        if isinstance(value, asyncssh.SSHKnownHosts):
            return value
        path = value if kind == "known_hosts" else "~/.ssh/known_hosts"
        try:
            return await asyncio.to_thread(read_known_hosts, path)
        except OSError as exc:
            if kind == "known_hosts":
                raise SandboxStartError(f"ssh: cannot read known_hosts file {path}: {exc}") from exc
            raise SandboxStartError(
                f"ssh: no ~/.ssh/known_hosts to check the host key of {self.host}:{self.port}; "
                "pass known_hosts=<file> or host_key=<the server's public key>"
            ) from exc


def port_option(extra: Mapping[str, Any]) -> int:
    value = extra.get("port", 22)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise ValueError(f"ssh backend: port must be an integer from 1 to 65535, got {value!r}")
    return value


def auth_options(extra: Mapping[str, Any]) -> dict[str, Any]:
    keys: list[Any] = []
    client_keys = extra.get("client_keys")
    if client_keys is not None:
        if isinstance(client_keys, (str, os.PathLike)):
            client_keys = [client_keys]
        keys.extend(client_keys)
    if extra.get("key_path") is not None:
        keys.append(extra["key_path"])
    keys = [
        os.path.expanduser(os.fspath(k)) if isinstance(k, (str, os.PathLike)) else k for k in keys
    ]
    auth: dict[str, Any] = {}
    if keys:
        # Only the given keys: no agent, no default identities.
        auth.update(client_keys=keys, agent_path=None, agent_identities=None)
    if extra.get("passphrase") is not None:
        auth["passphrase"] = extra["passphrase"]
    if extra.get("password") is not None:
        auth["password"] = extra["password"]
        if not keys:
            auth.update(client_keys=None, agent_path=None, agent_identities=None)
    return auth


def host_key_policy(extra: Mapping[str, Any]) -> tuple[str, Any]:
    chosen = [
        name
        for name in ("known_hosts", "host_key", "insecure_skip_host_key_check")
        if extra.get(name) not in (None, False)
    ]
    if len(chosen) > 1:
        raise ValueError(
            f"ssh backend: give only one of known_hosts, host_key, "
            f"insecure_skip_host_key_check (got {', '.join(chosen)})"
        )
    if not chosen:
        return ("default", None)
    name = chosen[0]
    if name == "insecure_skip_host_key_check":
        if extra[name] is not True:
            raise ValueError("ssh backend: insecure_skip_host_key_check must be True or False")
        return ("insecure", None)
    value = extra[name]
    if name == "host_key":
        items = value if isinstance(value, (list, tuple)) else [value]
        if not items:
            raise ValueError("ssh backend: host_key is empty")
        return ("host_key", list(items))
    return ("known_hosts", value)


def read_known_hosts(path: Any) -> Any:
    """Load a known_hosts file (reads the disk: call it in a thread)."""
    return asyncssh.read_known_hosts(os.path.expanduser(os.fspath(path)))


def load_public_keys(items: Iterable[Any]) -> list[Any]:
    """Public keys from OpenSSH text, ``.pub`` paths or key objects (may read files)."""
    keys: list[Any] = []
    for item in items:
        if isinstance(item, asyncssh.SSHKey):
            keys.append(item)
        elif isinstance(item, bytes) or (isinstance(item, str) and _KEY_TEXT.match(item)):
            keys.append(asyncssh.import_public_key(item))
        elif isinstance(item, (str, os.PathLike)):
            try:
                keys.extend(asyncssh.read_public_key_list(os.path.expanduser(os.fspath(item))))
            except OSError as exc:
                raise SandboxStartError(f"ssh: cannot read host_key file {item}: {exc}") from exc
        else:
            raise SandboxStartError(f"ssh: host_key entries must be keys or paths, got {item!r}")
    return keys
