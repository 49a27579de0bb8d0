"""The harness's own speed: the oracle over the shipped tasks on the docker backend.

Runs every shipped sample task (``hermes_benchmarks/sample_tasks``) with the oracle agent
at concurrency 1 and then 8 (images built once first, so builds are cache hits), and
prints the wall time per trial split into image, sandbox start, agent, integrity (the
agent's system changes and the reward's second read), verifier and teardown (medians),
and the run's wall time per trial.

Bars: at concurrency 1, a trial of a one-command task takes at most 2 s of wall time end
to end (harbor measured 4.3-7 s per such trial on this machine kind); at concurrency 8
every trial passes. Exits 1 when a bar is missed, 2 when docker or the base image is
missing. Run: ``uv run python benchmarks/eval.py [--trials N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hermes_benchmarks import OracleAgent, TrialResult, TrialSettings, load_tasks
from hermes_benchmarks.run import RESULTS_FILE, run_benchmark
from hermes_benchmarks.samples import sample_tasks_dir
from hermes_sandbox.backends.docker import (
    DEFAULT_IMAGE,
    DockerDaemon,
    DockerUnreachableError,
    image_exists,
)

TASKS = sample_tasks_dir()
#: The phases of a trial; ``integrity`` is the verdict's protection in shared mode: the
#: wait for the agent's system changes (docker diff) beyond the tests' set-up, and the
#: second read of the reward after it settles.
STEPS = ("image", "sandbox_start", "agent", "artifacts", "integrity", "verifier", "teardown")
#: Wall seconds per trial at concurrency 1, end to end, images built.
BAR_SECONDS = 2.0


async def _run(concurrency: int, trials: int) -> tuple[list[TrialResult], float]:
    tasks = load_tasks(TASKS)
    with tempfile.TemporaryDirectory(prefix="hermes-eval-") as folder:
        started = time.monotonic()
        await run_benchmark(
            tasks,
            OracleAgent(),
            TrialSettings(infra_retries=0),
            output_dir=folder,
            n_trials=trials,
            max_concurrent_tasks=concurrency,
        )
        elapsed = time.monotonic() - started
        lines = (Path(folder) / RESULTS_FILE).read_text().splitlines()
    return [TrialResult.model_validate_json(line) for line in lines], elapsed


def _row(label: str, results: list[TrialResult], elapsed: float) -> str:
    medians = [statistics.median(r.timings.get(step, 0.0) for r in results) for step in STEPS]
    total = statistics.median(sum(r.timings.values()) for r in results)
    passed = sum(r.status == "pass" for r in results)
    cells = " ".join(f"{value:>13.3f}" for value in medians)
    return (
        f"{label:<14} {len(results):>6} {passed:>6} {cells} {total:>9.3f} "
        f"{elapsed / len(results):>9.3f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2, help="trials per task (default 2)")
    args = parser.parse_args()
    try:
        DockerDaemon.open().close()
    except DockerUnreachableError:
        print("docker does not answer: run .ci/services/docker.sh", file=sys.stderr)
        return 2
    if not image_exists(DEFAULT_IMAGE):
        print(f"{DEFAULT_IMAGE} is not built: run .ci/services/docker.sh", file=sys.stderr)
        return 2
    asyncio.run(_run(4, 1))  # build every image once: the rows below measure cache hits
    header = " ".join(f"{step:>13}" for step in STEPS)
    print(f"{'run':<14} {'trials':>6} {'passed':>6} {header} {'trial':>9} {'wall/trial':>9}")
    failed = False
    for concurrency in (1, 8):
        results, elapsed = asyncio.run(_run(concurrency, args.trials))
        print(_row(f"concurrency {concurrency}", results, elapsed))
        if any(r.status != "pass" for r in results):
            failed = True
            print(f"  not every trial passed at concurrency {concurrency}")
        if concurrency == 1 and elapsed / len(results) > BAR_SECONDS:
            failed = True
            print(f"  over the bar: {elapsed / len(results):.2f} s > {BAR_SECONDS} s per trial")
    print("(seconds; step columns are medians per trial, wall/trial = run wall time / trials)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
