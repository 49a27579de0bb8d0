"""TBLite (OpenThoughts Terminal Bench Lite) as an eval-only Atropos environment.

A thin subclass of :class:`~hermes_benchmarks.suites.terminalbench2.TerminalBench2EvalEnv`:
only the suite differs (its dataset ``NousResearch/openthoughts-tblite``, the timeouts a
dataset row without its own gets, results per difficulty tier: easy, medium, hard,
extreme)::

    python -m hermes_benchmarks.suites.tblite evaluate --config FILE \\
        --env.tasks_dir DIR --openai.base_url URL --openai.model_name NAME
"""

from __future__ import annotations

from typing import ClassVar

from hermes_benchmarks._config import Suite
from hermes_benchmarks.suites import TBLITE
from hermes_benchmarks.suites.terminalbench2 import TerminalBench2EvalEnv

__all__ = ["TBLiteEvalEnv", "main"]


class TBLiteEvalEnv(TerminalBench2EvalEnv):
    """TBLite: the TerminalBench2 environment on the TBLite suite."""

    name = "openthoughts-tblite"
    suite: ClassVar[Suite] = TBLITE


def main() -> None:
    """``python -m hermes_benchmarks.suites.tblite evaluate ...``."""
    TBLiteEvalEnv.cli()


if __name__ == "__main__":
    main()
