"""The conformance suite as pytest tests: ``conformance_tests(provider, ...)`` gives a
test function parametrized over every (provider, check) pair. This module imports
pytest; nothing else in ``hermes_sandbox`` does.

In a third-party backend's test module::

    from hermes_sandbox.testing import Provider
    from hermes_sandbox.testing.pytest_adapter import conformance_tests

    test_conformance = conformance_tests(Provider.for_backend("mybackend"))

Each test runs its check with ``asyncio.run`` (no pytest plugin needed) in pytest's
``tmp_path``; a failed check fails the test with the suite's explanation, a check that
does not apply (or a provider unavailable here) is skipped with the reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes_sandbox.testing.checks import CHECKS
from hermes_sandbox.testing.provider import Provider
from hermes_sandbox.testing.suite import DEFAULT_CHECK_TIMEOUT, CheckResult, run_check

__all__ = ["conformance_tests", "report_to_pytest"]


def report_to_pytest(result: CheckResult) -> None:
    """Turn one check's result into pytest's verdict.

    Raises:
        pytest.skip.Exception: for a skipped check.
        pytest.fail.Exception: for a failed check (with what went wrong).
    """
    if result.outcome == "skipped":
        pytest.skip(f"{result.provider}: {result.detail}")
    if result.outcome == "failed":
        pytest.fail(f"{result.provider} failed {result.check}:\n{result.detail}", pytrace=False)


def conformance_tests(
    *providers: Provider,
    checks: list[str] | None = None,
    timeout: float = DEFAULT_CHECK_TIMEOUT,
) -> Callable[[Provider, str, Path], None]:
    """A pytest test function running ``checks`` (default: all) for each provider,
    one test per pair, with ids ``<provider>-<check>``.

    Raises:
        ValueError: if no provider is given.
        KeyError: for an unknown check name.
    """
    if not providers:
        raise ValueError("conformance_tests needs at least one Provider")
    names = list(CHECKS) if checks is None else list(checks)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise KeyError(f"unknown check(s) {unknown}; known checks: {', '.join(CHECKS)}")
    pairs = [(p, n) for p in providers for n in names]

    @pytest.mark.parametrize(("provider", "check"), pairs, ids=[f"{p.name}-{n}" for p, n in pairs])
    def test_conformance(provider: Provider, check: str, tmp_path: Path) -> None:
        result = asyncio.run(run_check(provider, check, directory=tmp_path, timeout=timeout))
        report_to_pytest(result)

    return test_conformance
