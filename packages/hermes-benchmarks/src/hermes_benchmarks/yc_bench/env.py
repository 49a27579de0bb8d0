"""``YCBenchEvalEnv``: YC-Bench as an eval-only ``HermesAgentBaseEnv``.

The evaluate flow (the reference's eval-only pattern):

1. ``setup()`` finds (or makes, once) yc-bench's own Python >= 3.12 environment and
   builds the run matrix, every preset with every seed.
2. ``evaluate()`` plays the runs not yet in ``output_dir/results.jsonl`` (all of them
   unless ``resume``), at most ``max_concurrent_runs`` at once, each through
   ``rollout_and_score_eval``; each finished run is one fsynced line; ``summary.json`` and
   a table come at the end, also when the run is interrupted (then the same command with
   ``--env.resume true`` finishes it).
3. ``rollout_and_score_eval(item)``: a local sandbox whose working directory is the run's
   folder (``output_dir/sims/<preset>-seed<seed>``, kept afterwards) with yc-bench on its
   ``PATH``; the world seeded as yc-bench's runner seeds the preset; the agent loop with
   the ``terminal`` tool until the model stops, its turns run out or ``run_timeout``
   passes; every process it left killed; the simulation finished by the harness if the
   agent left it unfinished; the score read from the database. Failures outside the
   model (yc-bench crashing, the sandbox, the model endpoint) are retried
   ``infra_retries`` times, kept with every attempt, and never scored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

from atroposlib.envs.server_handling.server_manager import APIServerConfig
from rich.console import Console

from hermes_benchmarks._agents import SingleSandbox, trial_infra_error
from hermes_benchmarks._errors import HermesBenchmarksError, ResultsFileError, TrialInfraError
from hermes_benchmarks._results import Attempt, TrialStatus, infra_attempt
from hermes_benchmarks.run import SUMMARY_FILE, open_results, run_jobs
from hermes_benchmarks.yc_bench._config import YCBenchEvalConfig
from hermes_benchmarks.yc_bench._install import YCBenchInstall, ensure_yc_bench
from hermes_benchmarks.yc_bench._prompt import SYSTEM_PROMPT, run_prompt
from hermes_benchmarks.yc_bench._results import (
    YCRunResult,
    YCSummary,
    summarize_runs,
    table,
)
from hermes_benchmarks.yc_bench._score import composite_score, normalised_funds
from hermes_benchmarks.yc_bench._sim import (
    DB_FILE,
    finish_simulation,
    sandbox_env,
    start_simulation,
)
from hermes_envs import (
    EnvSetupError,
    HermesAgentEvalEnv,
    eval_only_settings,
    local_endpoint,
    run_agent,
)
from hermes_loop import AgentResult, ToolSet
from hermes_sandbox import (
    Sandbox,
    SandboxClosedError,
    SandboxError,
    ToolContext,
    create_sandbox,
    sandbox_tools,
)

__all__ = ["SIMS_DIR", "YCBenchEvalEnv"]

logger = logging.getLogger(__name__)

#: The runs' simulation folders, inside ``output_dir``.
SIMS_DIR = "sims"


def _fresh_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)


class YCBenchEvalEnv(HermesAgentEvalEnv[dict[str, Any]]):
    """YC-Bench, eval-only: presets x seeds, each run scored
    ``survival_weight x survival + funds_weight x normalised_funds``."""

    name = "yc-bench"
    env_config_cls = YCBenchEvalConfig
    config: YCBenchEvalConfig
    #: Commands run in bubblewrap namespaces where they work (this env only awaits).
    local_isolation = "auto"

    @classmethod
    def config_init(cls) -> tuple[YCBenchEvalConfig, list[APIServerConfig]]:
        """The reference's settings: terminal only, 200 turns, temperature 0, the local
        backend; fast_test, medium and hard with seeds 1, 2, 3; a local endpoint."""
        config = YCBenchEvalConfig(
            enabled_toolsets=["terminal"],
            max_agent_turns=200,
            max_token_length=32000,
            agent_temperature=0.0,
            system_prompt=SYSTEM_PROMPT,
            terminal_backend="local",
            terminal_timeout=60,
            **eval_only_settings(),
        )
        return config, [local_endpoint("yc-bench")]

    # -- setup ---------------------------------------------------------------------------

    async def setup(self) -> None:
        """Find or make yc-bench's environment; build the run matrix.

        Raises:
            EnvSetupError: no usable yc-bench (the message says which option to set).
        """
        cfg = self.config
        try:
            self.install: YCBenchInstall = await asyncio.to_thread(
                ensure_yc_bench,
                command=cfg.yc_bench_command,
                python=cfg.yc_bench_python,
                venv_dir=cfg.yc_bench_venv,
                version=cfg.yc_bench_version,
                uv=cfg.uv,
            )
        except HermesBenchmarksError as error:
            raise EnvSetupError(str(error)) from None
        self.items: list[dict[str, Any]] = [
            {"preset": p, "seed": s} for p in cfg.presets for s in cfg.seeds
        ]
        self.next_index = 0
        self.output = await asyncio.to_thread(Path(cfg.output_dir).resolve)

    # -- the training interface, unused by an eval-only environment -----------------------

    async def get_next_item(self) -> dict[str, Any]:
        """The runs in order, round and round."""
        item = self.items[self.next_index % len(self.items)]
        self.next_index += 1
        return item

    def format_prompt(self, item: dict[str, Any]) -> str:
        """The run's opening message."""
        return run_prompt(item["preset"], int(item["seed"]), self.config.company_name)

    async def compute_reward(self, item: Any, result: AgentResult, ctx: ToolContext) -> float:
        """Not used: runs are scored by ``rollout_and_score_eval``.

        Raises:
            NotImplementedError: always.
        """
        raise NotImplementedError("YC-Bench is eval-only: use evaluate")

    async def collect_trajectories(self, item: Any) -> tuple[None, list[Any]]:
        """Eval-only: no training data."""
        return None, []

    async def score(self, rollout_group_data: Any) -> None:
        """Eval-only: no training data."""

    # -- one run -------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _sandbox(self, preset: str, sim_dir: Path, task_id: str) -> AsyncIterator[Sandbox]:
        cfg = self.config
        options = self.sandbox_options()
        env = {**dict(options.pop("env", None) or {}), **sandbox_env(self.install, sim_dir, preset)}
        options.pop("workdir", None)
        sandbox = create_sandbox(
            "local",
            task_id=task_id,
            workdir=str(sim_dir),
            # The harness reads the simulation's database there: shared with the host.
            host_dirs=[str(sim_dir), *options.pop("host_dirs", [])],
            env=env,
            terminal_timeout=float(cfg.terminal_timeout),
            terminal_lifetime=max(float(cfg.terminal_lifetime), cfg.run_timeout + 3600.0),
            **options,
        )
        try:
            await sandbox.start()
        except BaseException:
            await sandbox.close()
            raise
        try:
            yield sandbox
        finally:
            await asyncio.shield(sandbox.close())

    async def _play(
        self, sandbox: Sandbox, item: dict[str, Any]
    ) -> tuple[AgentResult | None, bool]:
        """The agent's turn (``run_agent``, as every agent run); ``(result, timed_out)``
        (no result when it timed out).

        Raises:
            TrialInfraError: kind ``model_endpoint`` or ``agent_crash`` (the sandbox died
                under a tool), as :func:`~hermes_benchmarks._agents.trial_infra_error`.
        """
        enabled = self.config.enabled_toolsets or ["terminal"]
        source = SingleSandbox(sandbox)
        tools = ToolSet(sandbox_tools(source, toolsets=enabled))
        async with self.agent_loop(tools) as loop:
            run = await run_agent(
                loop,
                self.build_messages(item),
                task_id=sandbox.task_id,
                sandboxes=source,
                time_limit=self.config.run_timeout,
            )
        if run.timed_out:
            return None, True
        if run.failure is not None:
            raise trial_infra_error(run.failure)
        return run.result, False

    async def _attempt(self, item: dict[str, Any], number: int) -> tuple[Attempt, dict[str, Any]]:
        cfg = self.config
        preset, seed = str(item["preset"]), int(item["seed"])
        sim_dir = self.output / SIMS_DIR / f"{preset}-seed{seed}"
        timings: dict[str, float] = {}
        since = time.monotonic()

        def lap(step: str) -> None:
            nonlocal since
            now = time.monotonic()
            timings[step] = round(now - since, 3)
            since = now

        fields: dict[str, Any] = {}
        try:
            await asyncio.to_thread(_fresh_dir, sim_dir)
            task_id = f"yc-bench-{preset}-{seed}-{number}"
            async with self._sandbox(preset, sim_dir, task_id) as sandbox:
                start = await start_simulation(
                    sandbox,
                    preset=preset,
                    seed=seed,
                    company_name=cfg.company_name,
                    start_date=cfg.start_date,
                    horizon_years=cfg.horizon_years,
                )
                lap("setup")
                result, timed_out = await self._play(sandbox, item)
                lap("agent")
                await sandbox.stop_processes()
                outcome, resumes = await finish_simulation(
                    sandbox, sim_dir / DB_FILE, max_resumes=cfg.max_auto_resumes
                )
                lap("finish")
        except TrialInfraError as error:
            return infra_attempt(error.kind, str(error), timings), fields
        except SandboxClosedError as error:
            return infra_attempt(
                "agent_crash", f"the sandbox closed under the run: {error}", timings
            ), {}
        except SandboxError as error:
            return infra_attempt("sandbox_start", f"{type(error).__name__}: {error}", timings), {}
        except OSError as error:
            return infra_attempt("sandbox_start", f"cannot prepare {sim_dir}: {error}", timings), {}
        tampered = outcome.tampered(start.initial_funds_cents)
        survival = 1.0 if outcome.survived and not tampered else 0.0
        funds = 0.0
        if survival and outcome.funds_cents > 0:
            funds = normalised_funds(outcome.funds_cents, start.initial_funds_cents)
        score = composite_score(
            survival, funds, survival_weight=cfg.survival_weight, funds_weight=cfg.funds_weight
        )
        extra: dict[str, Any] = {
            "initial_funds_cents": start.initial_funds_cents,
            "sim_time": outcome.sim_time.isoformat(),
            "horizon_end": start.horizon_end,
            "auto_resumes": resumes,
            "sim_dir": str(sim_dir),
        }
        if result is not None:
            extra.update(turns_used=result.turns_used, stop_reason=result.stop_reason)
        if timed_out:
            extra["agent_timed_out"] = True
        problem = None
        if tampered:
            problem = (
                f"the company's funds ({outcome.funds_cents}) are not its starting capital "
                f"plus its ledger ({start.initial_funds_cents + outcome.ledger_cents}): the "
                "database was edited; scored 0"
            )
        fields = {
            "survival": survival,
            "funds_cents": outcome.funds_cents,
            "normalised_funds": funds,
            "score": score,
            "terminal_reason": outcome.terminal_reason,
            "extra": extra,
        }
        status: TrialStatus = "pass" if survival == 1.0 else "fail"
        attempt = Attempt(status=status, reward=score, error=problem, timings=timings)
        return attempt, fields

    async def rollout_and_score_eval(self, eval_item: dict[str, Any]) -> YCRunResult:
        """Play and score one (preset, seed) run: up to ``1 + infra_retries`` attempts,
        every one kept; the verdict is the last one's."""
        attempts: list[Attempt] = []
        fields: dict[str, Any] = {}
        for number in range(self.config.infra_retries + 1):
            attempt, fields = await self._attempt(eval_item, number)
            attempts.append(attempt)
            if attempt.status != "infra_error":
                break
        preset, seed = str(eval_item["preset"]), int(eval_item["seed"])
        result = YCRunResult.from_attempts(
            preset,
            seed,
            attempts,
            preset=preset,
            seed=seed,
            agent=self.server_configs[0].model_name,
            **fields,
        )
        assert isinstance(result, YCRunResult)
        return result

    # -- the whole evaluation ------------------------------------------------------------

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        """Play every run not yet finished; stream results; summary and table at the end.

        Raises:
            EnvSetupError: ``results.jsonl`` already holds results and ``resume`` is off,
                or holds lines that are not YC-Bench results.
        """
        cfg = self.config
        console = Console(highlight=False, soft_wrap=True)
        try:
            log = await open_results(self.output, YCRunResult, resume=cfg.resume, backend="local")
        except ResultsFileError as error:
            raise EnvSetupError(str(error)) from None
        jobs = [
            partial(self.rollout_and_score_eval, item)
            for item in self.items
            if not log.is_finished(item["preset"], int(item["seed"]))
        ]
        console.print(
            f"YC-Bench: {len(self.items)} runs ({len(self.items) - len(jobs)} already done), "
            f"results in {self.output}"
        )
        start = time.time()

        def show(result: YCRunResult) -> None:
            self.stats.groups_done += 1
            if result.status == "infra_error":
                self.stats.infra_failures += 1
            self.reporter.update(self.stats)
            shown = (
                f"score {result.score:.3f} ({result.terminal_reason})"
                if result.score is not None
                else f"infra_error ({result.error_kind}): {result.error}"
            )
            console.print(f"{result.preset} seed {result.seed}: {shown}")

        summary = await run_jobs(
            log,
            jobs,
            max_concurrent=cfg.max_concurrent_runs,
            summarize=summarize_runs,
            summary_file=self.output / SUMMARY_FILE,
            on_result=show,
        )
        runs = list(log)
        console.print(table(runs, summary))
        console.print(f"summary: {self.output / SUMMARY_FILE}")
        await self._log_metrics(summary, runs, start)

    async def _log_metrics(self, summary: YCSummary, runs: list[YCRunResult], start: float) -> None:
        metrics: dict[str, float] = {
            "eval/avg_composite_score": summary.overall.mean_score or 0.0,
            "eval/survival_rate": summary.overall.survival_rate or 0.0,
            "eval/total_runs": float(summary.overall.runs),
            "eval/infra_errors": float(summary.overall.infra_errors),
        }
        for preset, group in summary.presets.items():
            metrics[f"eval/avg_score_{preset}"] = group.mean_score or 0.0
            metrics[f"eval/survival_rate_{preset}"] = group.survival_rate or 0.0
        samples = [r.model_dump(mode="json", exclude={"attempts"}) for r in runs]
        await self.log_evaluation(metrics, samples, start_time=start, verbose=False)


if __name__ == "__main__":
    YCBenchEvalEnv.cli()
