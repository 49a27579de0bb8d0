"""``Provider``: how the conformance suite gets sandboxes of one backend.

A provider names the backend, says whether it can run here (``unavailable``), makes
sandboxes (``provide``), declares which optional capabilities the suite may check
(``caps``) and may report what a run left behind (``leaked``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_sandbox.base import Sandbox
from hermes_sandbox.registry import create_sandbox

__all__ = ["CAPABILITIES", "Factory", "Provider"]

#: ``factory(**options)``: a new, not yet started sandbox; ``options`` are those of
#: ``create_sandbox`` (``SandboxOptions`` fields, and backend options).
Factory = Callable[..., Sandbox]

#: Optional capabilities a provider may declare; a check that needs one is skipped
#: (with this text) for providers that do not declare it.
CAPABILITIES: Mapping[str, str] = {
    "concurrency_64": "64 sandboxes at once",
    "process_limit": "pids_limit contains a fork bomb",
    "network_off": "network=False leaves only loopback and cannot reach the host",
    "host_paths": "sandbox paths are host paths (close removes the default workdir)",
    "session_escape": "a process that left the session with setsid dies at the timeout",
}


def _always_available() -> str | None:
    return None


@dataclass(frozen=True)
class Provider:
    """One backend as the conformance suite drives it.

    Attributes:
        name: the backend's name (in reports; ``for_backend`` also creates sandboxes
            with it).
        provide: ``provide(directory)``, an async context manager yielding a
            ``Factory``; ``directory`` is a fresh temporary directory the provider may
            use. The suite closes every sandbox it made before the context exits; an
            exception raised at its exit fails the check.
        caps: the optional capabilities (keys of ``CAPABILITIES``) the backend has.
        unavailable: ``None`` if the backend can run here, else why not (the checks
            are then reported as skipped with that reason).
        leaked: called after ``provide`` exited: what the run left behind (containers,
            directories, ...); anything listed fails the check.
    """

    name: str
    provide: Callable[[Path], AbstractAsyncContextManager[Factory]]
    caps: frozenset[str] = frozenset()
    unavailable: Callable[[], str | None] = _always_available
    leaked: Callable[[], list[str]] | None = None
    #: Extra lines for reports (e.g. the file the provider came from).
    origin: str = field(default="", compare=False)

    @classmethod
    def for_backend(
        cls,
        name: str,
        *,
        caps: Iterable[str] = (),
        unavailable: Callable[[], str | None] = _always_available,
        **options: Any,
    ) -> Provider:
        """A provider whose sandboxes are ``create_sandbox(name, **options, **per_check)``:
        the usual choice for a backend registered with ``@register_backend`` or the
        ``hermes_sandbox.backends`` entry point.

        ``options`` are given to every sandbox (a check's own options win).
        """
        fixed = dict(options)

        @contextlib.asynccontextmanager
        async def provide(directory: Path) -> AsyncIterator[Factory]:
            def factory(**wanted: Any) -> Sandbox:
                return create_sandbox(name, **{**fixed, **wanted})

            yield factory

        return cls(name=name, provide=provide, caps=frozenset(caps), unavailable=unavailable)

    def unknown_caps(self) -> list[str]:
        """Declared capabilities the suite does not know (a mistake of the provider)."""
        return sorted(set(self.caps) - set(CAPABILITIES))
