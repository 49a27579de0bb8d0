"""YC-Bench: the agent runs a simulated AI startup through the ``yc-bench`` command line.

The pieces that need neither Atropos nor yc-bench are importable from here; the
environment itself is :class:`hermes_benchmarks.yc_bench.env.YCBenchEvalEnv` (it loads
hermes-envs and Atropos), run with ``python -m hermes_benchmarks.suites.yc_bench
evaluate`` or ``hermes-bench yc-bench evaluate``.
"""

from __future__ import annotations

from hermes_benchmarks.yc_bench._install import (
    YC_BENCH_VERSION,
    YCBenchInstall,
    YCBenchMissingError,
    ensure_yc_bench,
    find_python,
)
from hermes_benchmarks.yc_bench._player import greedy_player
from hermes_benchmarks.yc_bench._results import YCRunResult, YCSummary, read_runs, summarize_runs
from hermes_benchmarks.yc_bench._score import (
    SimOutcome,
    composite_score,
    normalised_funds,
    read_outcome,
)

__all__ = [
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
]
