"""The conformance checks, by name, in the order the suite runs them.

A check is an ``async def name(bench: Bench) -> None`` that raises
``ConformanceError`` (through ``expect``/``expect_equal``/``expect_raises``) when the
backend misbehaves and ``CheckSkipped`` (through ``bench.needs``) when it does not
apply. The modules group them: ``commands`` (running commands), ``session`` (the shell
session), ``files`` (files and transfers), ``lifecycle`` (isolation, closing, pools,
options), ``verification`` (``stop_processes`` and commands outside the session),
``reward`` (reward code's ``ToolContext``) and ``capabilities`` (the optional ones of
``CAPABILITIES``). A check that verifies a known limit (``LIMITS``) names it in its
module's ``LIMITED``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from hermes_sandbox.testing.bench import Bench
from hermes_sandbox.testing.checks import (
    capabilities,
    commands,
    files,
    lifecycle,
    reward,
    session,
    verification,
)

__all__ = ["CHECKS", "Bench", "Check"]


@dataclass(frozen=True)
class Check:
    """One conformance check: its name, what it checks (its docstring's first line), the
    coroutine function that runs it and the known limit (a key of ``LIMITS``) it
    verifies instead for a provider that declares it."""

    name: str
    run: Callable[[Bench], Awaitable[None]]
    limit: str | None = None

    @property
    def description(self) -> str:
        """The first line of the check's docstring."""
        return (self.run.__doc__ or "").strip().splitlines()[0] if self.run.__doc__ else ""


def _collect() -> dict[str, Check]:
    found: dict[str, Check] = {}
    modules = (commands, session, files, lifecycle, verification, reward, capabilities)
    for module in modules:
        limited: Mapping[str, str] = getattr(module, "LIMITED", {})
        for run in module.CHECKS:
            found[run.__name__] = Check(run.__name__, run, limited.get(run.__name__))
    return found


#: Every check by name, in the order the suite runs them.
CHECKS: Mapping[str, Check] = _collect()
