"""``Sandbox.exec``'s per-call overrides (``env``, ``workdir``, ``user``) for a command
outside the session: checking them before anything runs, and the lines put before the
command that apply them."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

__all__ = ["call_prefix", "check_overrides"]

_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_overrides(
    env: Mapping[str, str] | None,
    workdir: str | None,
    user: str | None,
    *,
    session: bool,
    supports_user: bool,
    backend: str,
) -> None:
    """Check ``exec``'s per-call overrides before anything runs (``supports_user`` and
    ``backend``, the name in messages, are the sandbox's).

    Raises:
        ValueError: for an override with ``session=True``, a bad variable name, or a
            ``user`` the backend cannot take.
    """
    if session and (env is not None or workdir is not None or user is not None):
        raise ValueError(
            "exec(env=/workdir=/user=) applies to a command outside the session: pass "
            "session=False (in the session, put cd/export in the command itself)"
        )
    if user is not None and not supports_user:
        raise ValueError(
            f"{backend}: exec(user={user!r}) is not "
            "supported by this backend (commands run as its one user); leave user unset"
        )
    for name in env or {}:
        if not _SHELL_NAME.fullmatch(str(name)):
            raise ValueError(f"exec(env=...): {name!r} is not an environment variable name")


def call_prefix(env: Mapping[str, str] | None, workdir: str | None) -> str:
    """The lines put before a command to apply ``exec``'s per-call ``env`` and ``workdir``
    (already checked by ``check_overrides``; ``workdir`` resolved in the sandbox)."""
    lines = []
    for name, value in (env or {}).items():
        lines.append(f"export {name}={shlex.quote(str(value))}\n")
    if workdir is not None:
        start = shlex.quote(workdir)
        lines.append(
            f"cd -- {start} 2>/dev/null || {{ mkdir -p -- {start} && cd -- {start}; }}"
            f" || {{ echo 'sandbox: cannot enter the working directory '{start} >&2; exit 1; }}\n"
        )
    return "".join(lines)
