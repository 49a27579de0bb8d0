"""The suites ``hermes-bench`` runs, each a :class:`~hermes_benchmarks._config.Suite` with
its ``default.yaml`` beside this file (``<suite>.yaml``)."""

from __future__ import annotations

from importlib import resources

from hermes_benchmarks._config import Suite

__all__ = ["SUITES", "TBLITE", "TERMINALBENCH2", "YC_BENCH", "Suite", "default_yaml"]

#: Terminal-Bench 2: binary pass/fail per trial; leaderboard mode available.
TERMINALBENCH2 = Suite(
    name="terminalbench2",
    dataset_name="NousResearch/terminal-bench-2",
    tiers=(),
    leaderboard_trials=5,
    agent_timeout_sec=1800.0,
    verifier_timeout_sec=600.0,
)
#: TBLite: the same harness on a lighter dataset, reported per difficulty tier.
TBLITE = Suite(
    name="tblite",
    dataset_name="NousResearch/openthoughts-tblite",
    tiers=("easy", "medium", "hard", "extreme"),
    leaderboard_trials=None,
    agent_timeout_sec=1200.0,
    verifier_timeout_sec=180.0,
)
#: YC-Bench: a simulated startup run through the yc-bench command line, presets x seeds
#: (its own environment and options: ``hermes_benchmarks.suites.yc_bench``).
YC_BENCH = Suite(name="yc-bench", dataset_name="collinear-ai/yc-bench")

SUITES: dict[str, Suite] = {suite.name: suite for suite in (TERMINALBENCH2, TBLITE, YC_BENCH)}


def default_yaml(suite: Suite) -> str:
    """The text of ``suite``'s shipped ``default.yaml``."""
    return resources.files(__package__).joinpath(f"{suite.name}.yaml").read_text("utf-8")
