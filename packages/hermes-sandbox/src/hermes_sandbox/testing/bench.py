"""``Bench``: what one conformance check gets to work with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes_sandbox._base import Sandbox
from hermes_sandbox.testing.probes import CheckSkipped
from hermes_sandbox.testing.provider import CAPABILITIES, LIMITS, Factory, Provider

__all__ = ["Bench"]


class Bench:
    """What a check gets: sandboxes of the provider, a directory, and ``needs``.

    Every sandbox made through ``sandbox`` or ``started`` is closed after the check.
    """

    def __init__(self, provider: Provider, factory: Factory, directory: Path) -> None:
        self.provider = provider
        self.directory = directory
        self._factory = factory
        self.made: list[Sandbox] = []

    def sandbox(self, **options: Any) -> Sandbox:
        """A new, not yet started sandbox (``options`` as for ``create_sandbox``).

        Raises:
            ValueError: for options the backend rejects at creation.
        """
        made = self._factory(**options)
        self.made.append(made)
        return made

    async def started(self, **options: Any) -> Sandbox:
        """A started sandbox (options may be rejected at creation or at start)."""
        return await self.sandbox(**options).start()

    def has(self, capability: str) -> bool:
        """Whether the provider declares ``capability``."""
        return capability in self.provider.caps

    def limit(self, name: str) -> str | None:
        """The provider's reason for the known limit ``name``, or None if it does not
        declare it.

        Raises:
            KeyError: for a name that is not in ``LIMITS`` (a mistake of the check).
        """
        if name not in LIMITS:
            raise KeyError(f"unknown limit {name!r}; known: {', '.join(LIMITS)}")
        return self.provider.limits.get(name)

    def needs(self, capability: str) -> None:
        """Skip the check unless the provider declares ``capability``.

        Raises:
            CheckSkipped: if it does not.
        """
        if capability not in self.provider.caps:
            raise CheckSkipped(
                f"{self.provider.name} does not declare {capability!r} ({CAPABILITIES[capability]})"
            )
