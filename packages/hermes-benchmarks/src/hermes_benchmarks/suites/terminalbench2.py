"""TerminalBench2 as an eval-only Atropos environment (``HermesAgentBaseEnv``).

Run it as a script, with Atropos' options::

    python -m hermes_benchmarks.suites.terminalbench2 evaluate --config FILE \\
        --env.tasks_dir DIR --openai.base_url URL --openai.model_name NAME

``evaluate`` runs the very harness ``hermes-bench terminalbench2 evaluate`` runs
(:func:`~hermes_benchmarks._evaluation.load_suite_tasks`, then
:func:`~hermes_benchmarks._evaluation.run_suite`: image builds, the verifier, retries,
``--env.resume``, ``results.jsonl`` and ``summary.json`` in ``--env.output_dir``), with
the hermes agent loop on the environment's server (``--openai.base_url``,
``--openai.model_name``, ``--openai.api_key``; ``--env.max_agent_turns``,
``--env.agent_temperature``, ``--env.max_tokens_per_turn``, ``--env.system_prompt``),
so the same settings give the same results. The harness settings are
:class:`~hermes_benchmarks._config.HarnessSettings`' fields (``--env.tasks_dir``,
``--env.dataset_name``, ``--env.n_trials``, ``--env.agent oracle``, ...), with the
defaults of the suite's ``default.yaml``. Atropos' ``evaluate_log`` also writes
``metrics.json`` and one sample per trial (``samples.jsonl``) to
``--env.data_dir_to_save_evals``.

The environment follows the reference's eval-only pattern: ``eval_handling`` STOP_TRAIN,
``steps_per_eval`` 1, ``total_steps`` 1, ``collect_trajectories`` returning
``(None, [])``, :meth:`TerminalBench2EvalEnv.rollout_and_score_eval` for one task. Its
base is :class:`~hermes_envs.HermesAgentEvalEnv`, which holds only what evaluation uses
(no tokenizer, sandbox pool or tools: ``process`` and ``serve`` stop at start).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any, ClassVar

from atroposlib.envs.server_handling.server_manager import APIServerConfig
from rich.console import Console

from hermes_benchmarks._agents import AGENT_TOOLSETS, Agent, HermesAgent
from hermes_benchmarks._config import HarnessSettings, Suite
from hermes_benchmarks._errors import DatasetError, HermesBenchmarksError
from hermes_benchmarks._evaluation import choose_agent, load_suite_tasks, run_suite, trial_settings
from hermes_benchmarks._report import results_tables
from hermes_benchmarks._results import TrialResult
from hermes_benchmarks._summary import RunSummary
from hermes_benchmarks._task import Task
from hermes_benchmarks._trial import run_trial
from hermes_benchmarks.cli import resolve
from hermes_benchmarks.run import RESULTS_FILE, SUMMARY_FILE, RunProgress
from hermes_benchmarks.suites import TERMINALBENCH2
from hermes_envs import (
    DatasetLoadError,
    EnvSetupError,
    HermesAgentEnvConfig,
    HermesAgentEvalEnv,
    eval_only_settings,
)
from hermes_sandbox.backends.docker import RUN_ID

__all__ = ["TerminalBench2EvalConfig", "TerminalBench2EvalEnv", "main"]


class TerminalBench2EvalConfig(HarnessSettings, HermesAgentEnvConfig):
    """The environment's config: the harness settings (first: their definitions win,
    e.g. ``terminal_backend`` defaults to docker) over ``HermesAgentEnvConfig``."""


class TerminalBench2EvalEnv(HermesAgentEvalEnv[Task]):
    """Terminal-Bench 2 as an eval-only environment: ``evaluate`` runs the suite.

    Raises (from ``setup`` / ``evaluate``, printed as one line by the command line):
        DatasetLoadError: the dataset cannot be loaded or unpacked (names
            ``--env.tasks_dir`` and ``--env.dataset_name``).
        EnvSetupError: the tasks, the results folder, the agent or leaderboard mode
            refuse to start (the message says what to change).
    """

    name = "terminal-bench-2"
    env_config_cls = TerminalBench2EvalConfig
    #: The suite whose ``default.yaml``, timeouts, tiers and leaderboard rule apply.
    suite: ClassVar[Suite] = TERMINALBENCH2

    config: TerminalBench2EvalConfig
    tasks: list[Task]
    summary: RunSummary | None

    @classmethod
    def config_init(cls) -> tuple[TerminalBench2EvalConfig, list[APIServerConfig]]:
        """The suite's ``default.yaml`` as an environment config and server.

        The tokenizer is the small one hermes-loop ships: evaluation never tokenizes.
        """
        bench, openai = resolve(cls.suite, [])
        harness = {name: getattr(bench, name) for name in HarnessSettings.model_fields}
        config = TerminalBench2EvalConfig(
            **harness,
            enabled_toolsets=list(AGENT_TOOLSETS),
            max_agent_turns=bench.max_turns,
            agent_temperature=openai.temperature,
            max_tokens_per_turn=openai.max_tokens,
            **eval_only_settings(),
        )
        server = APIServerConfig(
            base_url=openai.base_url,
            model_name=openai.model,
            server_type="openai",
            health_check=False,
        )
        return config, [server]

    # -- the hermes agent on this environment's server ---------------------------------

    def hermes_agent(self) -> Agent:
        """The hermes agent loop on the first server config, with the environment's turn
        budget, temperature, token cap, system prompt and extra request fields.

        Raises:
            EnvSetupError: the server is not a chat-completions endpoint
                (``server_type`` other than ``openai``).
        """
        server = self.server_configs[0]
        if server.server_type != "openai":
            raise EnvSetupError(
                f"openai.server_type {server.server_type!r}: benchmarks talk to a chat "
                "completions endpoint; set --openai.server_type openai"
            )
        cfg = self.config
        return HermesAgent(
            str(server.base_url),
            server.model_name,
            api_key=server.api_key or None,
            max_turns=cfg.max_agent_turns,
            temperature=cfg.agent_temperature,
            max_tokens=cfg.max_tokens_per_turn,
            system_prompt=cfg.system_prompt,
            extra_body=cfg.extra_body,
        )

    def agent(self) -> Agent:
        """The agent ``--env.agent`` names (``hermes``: :meth:`hermes_agent`).

        Raises:
            EnvSetupError: ``module:Class`` names no usable agent, or the server is not
                a chat-completions endpoint.
        """
        try:
            return choose_agent(self.config.agent, self.hermes_agent)
        except HermesBenchmarksError as error:
            raise EnvSetupError(str(error)) from error

    # -- eval-only: the training side is not used ---------------------------------------

    async def setup(self) -> None:
        """Load the tasks (``tasks_dir``, else ``dataset_name``), filtered.

        Raises:
            DatasetLoadError: the dataset cannot be loaded or unpacked.
            EnvSetupError: the tasks folder or a task is malformed, or the filter names
                no task.
        """
        try:
            self.tasks = await asyncio.to_thread(load_suite_tasks, self.suite, self.config)
        except DatasetError as error:
            raise DatasetLoadError(str(error)) from error
        except HermesBenchmarksError as error:
            raise EnvSetupError(str(error)) from error
        self.summary = None
        self._next = 0

    async def get_next_item(self) -> Task:
        """The tasks in order, round and round (not used by ``evaluate``)."""
        task = self.tasks[self._next % len(self.tasks)]
        self._next += 1
        return task

    def format_prompt(self, item: Task) -> str:
        """The task's instruction."""
        return item.instruction

    # -- evaluation -----------------------------------------------------------------------

    async def rollout_and_score_eval(self, eval_item: Task, trial: int = 0) -> TrialResult:
        """One trial of one task with ``--env.agent``: image, sandbox, agent, verifier
        (:func:`~hermes_benchmarks._trial.run_trial`; infrastructure failures retried and
        recorded, never raised). ``evaluate`` runs every trial the same way, through
        :func:`~hermes_benchmarks._evaluation.run_suite`.

        Raises:
            EnvSetupError: the agent cannot be built.
        """
        settings = trial_settings(self.config)
        return await run_trial(eval_item, self.agent(), settings, trial=trial, run_id=RUN_ID)

    def _progress(self, progress: RunProgress, result: TrialResult | None) -> None:
        self.stats.groups_done = progress.done
        self.stats.rollouts_done = progress.done - progress.skipped
        self.stats.infra_failures = progress.infra_errors
        self.reporter.update(self.stats)

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        """Run every trial of every task into ``--env.output_dir`` (``results.jsonl``,
        ``summary.json``), print the results tables, and log the metrics and one sample
        per trial with Atropos' ``evaluate_log`` (and wandb when on).

        Raises:
            EnvSetupError: the results folder, the agent or leaderboard mode refuse to
                start (nothing is run then).
            asyncio.CancelledError: when cancelled: every sandbox closed, the results so
                far kept (finish with ``--env.resume true``).
        """
        start = time.time()
        agent = self.agent()
        try:
            summary = await run_suite(
                self.suite, self.config, self.tasks, agent, on_progress=self._progress
            )
        except HermesBenchmarksError as error:
            raise EnvSetupError(str(error)) from error
        self.summary = summary
        console = Console(highlight=False, soft_wrap=True)
        for table in results_tables(summary):
            console.print(table)
        for note in summary.notes:
            console.print(note)
        output = Path(self.config.output_dir)
        console.print(f"results: {output / RESULTS_FILE}; summary: {output / SUMMARY_FILE}")
        metrics = eval_metrics(summary)
        samples = await asyncio.to_thread(_read_results, output / RESULTS_FILE)
        await self.log_evaluation(
            metrics,
            samples,
            start_time=start,
            generation_parameters={
                "temperature": self.config.agent_temperature,
                "max_tokens": self.config.max_tokens_per_turn,
                "max_agent_turns": self.config.max_agent_turns,
                "agent": self.config.agent,
            },
        )
        if self.config.use_wandb:
            await self.wandb_log(metrics)


def eval_metrics(summary: RunSummary) -> dict[str, float]:
    """The run's metrics: ``eval/pass_rate`` (over scored trials; infrastructure failures
    counted apart), trials, passed, infra errors, pass@k, and the same per tier."""
    metrics: dict[str, float] = {}
    groups = {"": summary.overall, **{f"_{tier}": group for tier, group in summary.tiers.items()}}
    for suffix, group in groups.items():
        rate = group.passed / group.scored if group.scored else 0.0
        metrics[f"eval/pass_rate{suffix}"] = rate
        metrics[f"eval/trials{suffix}"] = float(group.trials)
        metrics[f"eval/passed{suffix}"] = float(group.passed)
        metrics[f"eval/infra_errors{suffix}"] = float(group.infra_errors)
        for k, value in group.pass_at_k.items():
            metrics[f"eval/pass_at_{k}{suffix}"] = value
    return metrics


def _read_results(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    """``python -m hermes_benchmarks.suites.terminalbench2 evaluate ...``."""
    TerminalBench2EvalEnv.cli()


if __name__ == "__main__":
    main()
