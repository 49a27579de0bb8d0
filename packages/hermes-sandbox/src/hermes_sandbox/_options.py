"""``SandboxOptions``: what every backend understands (each may add its own)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["SandboxOptions"]


@dataclass(frozen=True, slots=True)
class SandboxOptions:
    """Options common to all backends.

    Args:
        image: container/VM image (docker, modal, daytona, singularity); ignored by local/ssh.
        workdir: the working directory commands start in (created if missing). Unset: the
            backend's default (docker: the image's ``WORKDIR``, else ``/workspace``).
        terminal_timeout: default seconds per command; at the timeout the whole process
            tree of the command is killed and the result has ``timed_out=True``.
        terminal_lifetime: seconds the sandbox may live; after that it is closed and any
            use raises ``SandboxClosedError``.
        env: environment variables every command sees, on top of the image's own (docker).
            Nothing of the host's environment reaches a sandbox unless it is put here.
        user: the user commands run as (a name or ``uid[:gid]``) on backends that can
            switch users (docker; unset: the image's ``USER``, else root); the others
            refuse it.
        cpus, memory_mb, pids_limit: resource limits where the backend supports them.
        network: whether commands may reach the network (docker default: off).
        max_output_chars: output beyond this is cut (head and tail kept, marker between);
            memory stays bounded however much a command prints.
        extra: backend-specific options (e.g. docker's ``runtime``, ssh's ``host``).
    """

    image: str | None = None
    workdir: str | None = None
    terminal_timeout: float = 120.0
    terminal_lifetime: float = 3600.0
    env: Mapping[str, str] = field(default_factory=dict)
    user: str | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    pids_limit: int | None = None
    network: bool = False
    max_output_chars: int = 100_000
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_kwargs(cls, **options: Any) -> SandboxOptions:
        """Build options; unknown keys go to ``extra`` (backends reject what they don't know).

        Raises:
            ValueError: for a non-positive timeout, lifetime or output limit.
        """
        known = {f.name for f in fields(cls)}
        common = {k: v for k, v in options.items() if k in known}
        extra = {
            **dict(common.pop("extra", {}) or {}),
            **{k: v for k, v in options.items() if k not in known},
        }
        made = cls(**common, extra=extra)
        for name in ("terminal_timeout", "terminal_lifetime", "max_output_chars"):
            if getattr(made, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(made, name)!r}")
        return made
