"""Running the conformance checks: ``run_conformance`` (all of them, or some, for one
provider) and ``run_check`` (one), each returning plain results, no test framework
needed.

Each check runs in a fresh temporary directory with its own ``provide`` context; every
sandbox it made is closed afterwards, and the check fails if ``close()`` raised, if the
provider's ``leaked()`` lists anything, or if it ran over its time limit.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hermes_sandbox._errors import ConformanceError
from hermes_sandbox.testing.bench import Bench
from hermes_sandbox.testing.checks import CHECKS, Check
from hermes_sandbox.testing.probes import CheckSkipped
from hermes_sandbox.testing.provider import CAPABILITIES, LIMITS, Provider

__all__ = [
    "CheckOutcome",
    "CheckResult",
    "ConformanceReport",
    "run_check",
    "run_conformance",
]

#: How a check ended.
CheckOutcome = Literal["passed", "failed", "skipped"]

#: Seconds one check may take by default (the largest moves a gigabyte of output).
DEFAULT_CHECK_TIMEOUT = 900.0


@dataclass(frozen=True)
class CheckResult:
    """How one check went for one provider."""

    provider: str
    check: str
    outcome: CheckOutcome
    detail: str = ""
    duration: float = 0.0

    @property
    def failed(self) -> bool:
        """Whether the check failed."""
        return self.outcome == "failed"

    def __str__(self) -> str:
        line = f"{self.provider}::{self.check}: {self.outcome}"
        return f"{line} ({self.detail})" if self.detail else line


@dataclass(frozen=True)
class ConformanceReport:
    """Every check's result for one provider, in the suite's order."""

    provider: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no check failed (skipped checks do not count)."""
        return not self.failures

    @property
    def failures(self) -> list[CheckResult]:
        """The failed checks."""
        return [r for r in self.results if r.failed]

    def outcome(self, check: str) -> CheckOutcome:
        """How the check named ``check`` went.

        Raises:
            KeyError: if the report has no such check.
        """
        for result in self.results:
            if result.check == check:
                return result.outcome
        raise KeyError(f"no check {check!r} in this report")

    def summary(self) -> str:
        """One line per check."""
        return "\n".join(str(r) for r in self.results)

    def raise_for_failures(self) -> None:
        """Raise if any check failed.

        Raises:
            ConformanceError: listing the failed checks (``failures`` maps each name to
                what went wrong).
        """
        failed = self.failures
        if failed:
            raise ConformanceError(
                f"{self.provider} failed {len(failed)} conformance check(s):\n"
                + "\n".join(str(r) for r in failed),
                failures={r.check: r.detail for r in failed},
            )


def _find(names: Iterable[str] | None) -> list[Check]:
    if names is None:
        return list(CHECKS.values())
    wanted = list(names)
    unknown = [n for n in wanted if n not in CHECKS]
    if unknown:
        raise KeyError(f"unknown check(s) {unknown}; known checks: {', '.join(CHECKS)}")
    return [CHECKS[n] for n in wanted]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ConformanceError):
        return str(exc)
    lines = traceback.format_exception(exc)
    return f"{type(exc).__name__}: {exc}\n" + "".join(lines[-12:])


async def _close_all(bench: Bench) -> list[str]:
    outcomes = await asyncio.gather(*(s.close() for s in bench.made), return_exceptions=True)
    return [
        f"close() of sandbox {s.task_id} raised {type(o).__name__}: {o}"
        for s, o in zip(bench.made, outcomes, strict=True)
        if isinstance(o, BaseException)
    ]


async def _run_in(provider: Provider, check: Check, directory: Path, timeout: float) -> str:
    """Run ``check``; '' if it passed, else what went wrong.

    Raises:
        CheckSkipped: if the check does not apply.
    """
    problems: list[str] = []
    try:
        async with provider.provide(directory) as factory:
            bench = Bench(provider, factory, directory)
            try:
                async with asyncio.timeout(timeout):
                    await check.run(bench)
            except CheckSkipped:
                raise
            except TimeoutError:
                problems.append(f"the check took over {timeout:g}s")
            except Exception as exc:
                problems.append(_describe(exc))
            finally:
                problems += await _close_all(bench)
    except CheckSkipped:
        raise
    except Exception as exc:  # raised by the provider's provide() at its exit
        problems.append(f"the provider failed after the check: {_describe(exc)}")
    if provider.leaked is not None:
        left = await asyncio.to_thread(provider.leaked)
        if left:
            problems.append(f"{provider.name} left resources behind: {left}")
    return "\n".join(problems)


async def run_check(
    provider: Provider,
    check: str,
    *,
    directory: Path | None = None,
    timeout: float = DEFAULT_CHECK_TIMEOUT,
) -> CheckResult:
    """Run the check named ``check`` against ``provider``.

    Args:
        provider: the backend under test.
        check: a name from ``CHECKS``.
        directory: an empty directory the run may use (default: a temporary one,
            removed afterwards).
        timeout: seconds the check may take.

    Raises:
        KeyError: for an unknown check name (the message lists the known ones).
    """
    chosen = _find([check])[0]
    reason = provider.unavailable()
    if reason is not None:
        return CheckResult(provider.name, check, "skipped", f"unavailable here: {reason}")
    unknown = provider.unknown_caps()
    if unknown:
        return CheckResult(
            provider.name,
            check,
            "failed",
            f"the provider declares unknown capabilities {unknown}; "
            f"known: {', '.join(CAPABILITIES)}",
        )
    unknown = provider.unknown_limits()
    if unknown:
        return CheckResult(
            provider.name,
            check,
            "failed",
            f"the provider declares unknown limits {unknown}; known: {', '.join(LIMITS)}",
        )
    own = directory is None
    where = Path(tempfile.mkdtemp(prefix=f"hermes-conformance-{check}-")) if own else directory
    assert where is not None
    started = time.monotonic()
    try:
        problem = await _run_in(provider, chosen, where, timeout)
    except CheckSkipped as skip:
        return CheckResult(provider.name, check, "skipped", str(skip))
    finally:
        if own:
            await asyncio.to_thread(shutil.rmtree, where, True)
    took = time.monotonic() - started
    if problem:
        return CheckResult(provider.name, check, "failed", problem, took)
    declared = provider.limits.get(chosen.limit) if chosen.limit is not None else None
    if declared is not None:
        note = f"declared limit {chosen.limit!r}: {declared}; it fails as documented"
        return CheckResult(provider.name, check, "passed", note, took)
    return CheckResult(provider.name, check, "passed", "", took)


async def run_conformance(
    provider: Provider,
    *,
    checks: Iterable[str] | None = None,
    timeout: float = DEFAULT_CHECK_TIMEOUT,
) -> ConformanceReport:
    """Run the conformance checks (all, or those named in ``checks``) against
    ``provider``, one after another, each in its own temporary directory.

    Returns a report; it does not raise for failed checks (call
    ``report.raise_for_failures()`` for that).

    Raises:
        KeyError: for an unknown check name.
    """
    chosen = _find(checks)
    results = [await run_check(provider, c.name, timeout=timeout) for c in chosen]
    return ConformanceReport(provider.name, results)
