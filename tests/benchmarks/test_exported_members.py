"""hermes-benchmarks's public surface: its public subpackages and what each exports, pinned.

Changing a list here is a deliberate change of the package's API; other packages import
only these names and the root's (``tests/test_import_graph.py``), and the root's
``__all__`` is pinned in ``test_api.py``. Checks in ``tests/exported_members.py``.
"""

from __future__ import annotations

import importlib

import pytest

from hermes_benchmarks import HermesBenchmarksError
from tests.exported_members import export_problems, exported_errors, public_subpackages

#: Every public subpackage (no part of its name starts with ``_``) and its ``__all__``.
SUBPACKAGES: dict[str, list[str]] = {
    "hermes_benchmarks.suites": [
        "SUITES",
        "TBLITE",
        "TERMINALBENCH2",
        "YC_BENCH",
        "Suite",
        "default_yaml",
    ],
    "hermes_benchmarks.view": [
        "PAGE_NAME",
        "TEXT_CAP",
        "VIEW_USAGE",
        "RunData",
        "RunServer",
        "load_run",
        "render_page",
        "view_main",
        "write_page",
    ],
    "hermes_benchmarks.yc_bench": [
        "YC_BENCH_VERSION",
        "SimOutcome",
        "YCBenchInstall",
        "YCBenchMissingError",
        "YCRunResult",
        "YCSummary",
        "composite_score",
        "ensure_yc_bench",
        "find_python",
        "greedy_player",
        "normalised_funds",
        "read_outcome",
        "read_runs",
        "summarize_runs",
    ],
}


def test_the_public_subpackages_are_pinned() -> None:
    assert public_subpackages("hermes_benchmarks") == sorted(SUBPACKAGES)


@pytest.mark.parametrize("module", sorted(SUBPACKAGES))
def test_each_subpackage_exports_its_pinned_names(module: str) -> None:
    assert importlib.import_module(module).__all__ == SUBPACKAGES[module]


@pytest.mark.parametrize("module", ["hermes_benchmarks", *sorted(SUBPACKAGES)])
def test_exports_resolve_and_nothing_public_is_left_out(module: str) -> None:
    assert export_problems(module) == []


@pytest.mark.parametrize("module", ["hermes_benchmarks", *sorted(SUBPACKAGES)])
def test_every_exported_error_is_under_the_package_root(module: str) -> None:
    for error in exported_errors(module):
        assert issubclass(error, HermesBenchmarksError), f"{module}.{error.__name__}"
