"""``Provider``: how the conformance suite gets sandboxes of one backend.

A provider names the backend, says whether it can run here (``unavailable``), makes
sandboxes (``provide``), declares which optional capabilities the suite may check
(``caps``) and which known limits the backend has (``limits``), and may report what a run
left behind (``leaked``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_sandbox._base import Sandbox
from hermes_sandbox._registry import create_sandbox

__all__ = ["CAPABILITIES", "LIMITS", "Factory", "Provider"]

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


#: Known limits a provider may declare, each with the reason it gives: the check of that
#: behaviour then verifies that the backend fails clearly, as documented, instead of
#: working (a declared limit is never a silent skip, and a limit the backend does not
#: have fails the check, so declarations stay true).
LIMITS: Mapping[str, str] = {
    "blocking_on_loop": "a blocking ToolContext call made on the sandbox's own event-loop "
    "thread (ctx.terminal(...) inside an async def compute_reward) cannot reach the sandbox "
    "and raises ToolContextError(kind='loop_blocked')",
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
        limits: the known limits (keys of ``LIMITS``) the backend has, each mapped to
            the backend's own reason (shown in reports).
    """

    name: str
    provide: Callable[[Path], AbstractAsyncContextManager[Factory]]
    caps: frozenset[str] = frozenset()
    unavailable: Callable[[], str | None] = _always_available
    leaked: Callable[[], list[str]] | None = None
    limits: Mapping[str, str] = field(default_factory=dict, compare=False)
    #: Extra lines for reports (e.g. the file the provider came from).
    origin: str = field(default="", compare=False)

    @classmethod
    def for_backend(
        cls,
        name: str,
        *,
        caps: Iterable[str] = (),
        unavailable: Callable[[], str | None] = _always_available,
        limits: Mapping[str, str] | None = None,
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

        return cls(
            name=name,
            provide=provide,
            caps=frozenset(caps),
            unavailable=unavailable,
            limits=dict(limits or {}),
        )

    def unknown_caps(self) -> list[str]:
        """Declared capabilities the suite does not know (a mistake of the provider)."""
        return sorted(set(self.caps) - set(CAPABILITIES))

    def unknown_limits(self) -> list[str]:
        """Declared limits the suite does not know (a mistake of the provider)."""
        return sorted(set(self.limits) - set(LIMITS))
