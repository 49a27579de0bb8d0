"""The sandbox conformance suite, for any backend: built-in or third-party.

Every built-in backend passes these checks in hermes-sandbox's own tests; a backend
registered through ``@register_backend`` or the ``hermes_sandbox.backends`` entry point
runs the very same checks in its author's tests. The suite needs no test framework::

    import asyncio
    from hermes_sandbox.testing import Provider, run_conformance

    provider = Provider.for_backend("mybackend", caps={"concurrency_64"})
    report = asyncio.run(run_conformance(provider))
    print(report.summary())
    report.raise_for_failures()          # ConformanceError listing what failed

and ``hermes_sandbox.testing.pytest_adapter.conformance_tests`` turns it into one pytest
test per check (pytest is imported only by that module).

The checks look for a command's processes on this host through ``/proc``, so they run
on Linux; for a backend whose commands run on another machine those probes pass
trivially and the rest still apply.
"""

from __future__ import annotations

from hermes_sandbox._errors import ConformanceError
from hermes_sandbox.testing.bench import Bench
from hermes_sandbox.testing.checks import CHECKS, Check
from hermes_sandbox.testing.probes import CheckSkipped
from hermes_sandbox.testing.provider import CAPABILITIES, LIMITS, Factory, Provider
from hermes_sandbox.testing.suite import (
    CheckOutcome,
    CheckResult,
    ConformanceReport,
    run_check,
    run_conformance,
)

__all__ = [
    "CAPABILITIES",
    "CHECKS",
    "LIMITS",
    "Bench",
    "Check",
    "CheckOutcome",
    "CheckResult",
    "CheckSkipped",
    "ConformanceError",
    "ConformanceReport",
    "Factory",
    "Provider",
    "run_check",
    "run_conformance",
]
