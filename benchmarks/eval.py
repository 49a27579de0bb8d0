"""The harness's own speed: the oracle over the shipped tasks on the docker backend.

Runs every shipped sample task (``hermes_benchmarks/sample_tasks``) with the oracle agent
at concurrency 1 with no sandbox started ahead (the baseline, no bar), then at
concurrency 1 and 8 as a run goes by default (images built once first, so builds are
cache hits), and
prints the wall time per trial split into image, sandbox start, agent, integrity (the
wait for the agent's system changes beyond the tests' set-up, and the check for
processes left running with the reward's reads), verifier and teardown (medians; in a
run the sandbox is closed in the background while the next trial starts, so teardown is
only what the trial waited, and the run's wall time includes the wait for the last
closes; and the next trial's sandbox is started while a trial runs, as every run does on
docker: ``image`` and ``sandbox start`` are then what the trial waited for them), and the
run's wall time per trial. When harbor's command line (``harbor``) is installed, it
runs the same tasks with its oracle at concurrency 8 in the same run, and the ratio of
the two wall times per trial is shown; otherwise that column is skipped, saying why.

Bars: at concurrency 1, a one-command trial (sandbox start, agent, verifier, teardown)
takes at most 0.4 s of wall time per trial; at concurrency 8 every trial passes, and
with harbor installed the run takes at most 0.1x harbor's wall time per trial. Exits 1
when a bar is missed, 2 when docker or the base image is missing. Run: ``uv run python
benchmarks/eval.py [--trials N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hermes_benchmarks import OracleAgent, TrialResult, TrialSettings, load_tasks, sample_tasks_dir
from hermes_benchmarks.run import RESULTS_FILE, run_benchmark
from hermes_sandbox.backends.docker import (
    DEFAULT_IMAGE,
    DockerDaemon,
    DockerUnreachableError,
    image_exists,
)

TASKS = sample_tasks_dir()
#: The phases of a trial; ``integrity`` is the verdict's protection in shared mode: the
#: wait for the agent's system changes (docker diff) beyond the tests' set-up, and the
#: check for processes left running with the reads of the reward (a second read
#: 0.25 s later only when a process is left).
STEPS = ("image", "sandbox_start", "agent", "artifacts", "integrity", "verifier", "teardown")
#: Wall seconds per trial at concurrency 1, end to end, images built.
BAR_SECONDS = 0.4
#: Our wall time per trial at concurrency 8 over harbor's, at most (when installed).
HARBOR_BAR = 0.1
HARBOR_CONCURRENCY = 8


async def _run(
    concurrency: int, trials: int, ahead: int | None = None
) -> tuple[list[TrialResult], float]:
    tasks = load_tasks(TASKS)
    with tempfile.TemporaryDirectory(prefix="hermes-eval-") as folder:
        started = time.monotonic()
        await run_benchmark(
            tasks,
            OracleAgent(),
            TrialSettings(infra_retries=0, start_ahead=ahead),
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


def _harbor(trials: int) -> tuple[float | None, str]:
    """Harbor's wall seconds per trial for the oracle over the same tasks at concurrency
    8 (``trials`` attempts each), or None and why not."""
    harbor = shutil.which("harbor")
    if harbor is None:
        return None, "harbor's command line is not installed"
    count = len(load_tasks(TASKS)) * trials
    with tempfile.TemporaryDirectory(prefix="hermes-eval-harbor-") as folder:
        argv = [harbor, "run", "-p", str(TASKS), "-a", "oracle"]
        argv += ["-n", str(HARBOR_CONCURRENCY), "-k", str(trials)]
        started = time.monotonic()
        done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, check=False)
        elapsed = time.monotonic() - started
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        return None, f"harbor run failed ({done.returncode}): {last}"
    return elapsed / count, ""


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
    per_trial: dict[int, float] = {}
    # the baseline: concurrency 1 with no sandbox started ahead (no bar)
    results, elapsed = asyncio.run(_run(1, args.trials, ahead=0))
    print(_row("1, none ahead", results, elapsed))
    for concurrency in (1, HARBOR_CONCURRENCY):
        results, elapsed = asyncio.run(_run(concurrency, args.trials))
        per_trial[concurrency] = elapsed / len(results)
        print(_row(f"concurrency {concurrency}", results, elapsed))
        if any(r.status != "pass" for r in results):
            failed = True
            print(f"  not every trial passed at concurrency {concurrency}")
        if concurrency == 1 and elapsed / len(results) > BAR_SECONDS:
            failed = True
            print(f"  over the bar: {elapsed / len(results):.2f} s > {BAR_SECONDS} s per trial")
    theirs, why = _harbor(args.trials)
    if theirs is None:
        print(f"harbor: skipped ({why})")
    else:
        ratio = per_trial[HARBOR_CONCURRENCY] / theirs
        verdict = "ok" if ratio <= HARBOR_BAR else "MISSED"
        print(
            f"harbor at concurrency {HARBOR_CONCURRENCY}: {theirs:.3f} s per trial; ours "
            f"{per_trial[HARBOR_CONCURRENCY]:.3f} s = {ratio:.2f}x (bar <= {HARBOR_BAR}) {verdict}"
        )
        failed = failed or ratio > HARBOR_BAR
    print(
        "(seconds; step columns are medians per trial, wall/trial = run wall time / trials; "
        "'none ahead': --env.start_ahead 0)"
    )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
