"""A suite's run from its settings: the tasks, the agent, the trial settings, the run.

``hermes-bench <suite> evaluate`` and the suites' Atropos environments
(:mod:`hermes_benchmarks.env`) both go through here, so the same settings give the same
run: :func:`load_suite_tasks` (``tasks_dir``, else ``dataset_name``), :func:`choose_agent`
and :func:`run_suite` (leaderboard rules, then
:func:`~hermes_benchmarks.run.run_benchmark`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hermes_benchmarks._agents import Agent, load_agent
from hermes_benchmarks._config import HarnessSettings, Suite, leaderboard_problems
from hermes_benchmarks._errors import DatasetError, SettingsError
from hermes_benchmarks._image_map import ImageMap
from hermes_benchmarks._oracle import OracleAgent
from hermes_benchmarks._results import TrialResult
from hermes_benchmarks._summary import RunSummary
from hermes_benchmarks._task import Task, load_tasks
from hermes_benchmarks._trial import TrialSettings
from hermes_benchmarks.dataset import load_dataset_tasks
from hermes_benchmarks.run import RunProgress, run_benchmark

__all__ = [
    "choose_agent",
    "leaderboard_notes",
    "load_suite_tasks",
    "run_suite",
    "trial_settings",
]


def load_suite_tasks(suite: Suite, config: HarnessSettings) -> list[Task]:
    """The run's tasks (blocking): the task folders of ``tasks_dir`` when it is set, else
    the rows of ``dataset_name`` (split ``dataset_split``) unpacked under ``cache_dir``;
    ``task_filter`` applied either way. A dataset row without timeouts gets the suite's.

    Raises:
        TaskError: ``tasks_dir`` is missing or malformed, or ``task_filter`` names no task.
        DatasetError: neither ``tasks_dir`` nor ``dataset_name`` is set, or the dataset
            cannot be loaded or unpacked (one line naming both options).
    """
    if config.tasks_dir is not None:
        return load_tasks(config.tasks_dir, config.task_filter or None)
    if not config.dataset_name:
        raise DatasetError(
            "no tasks: set --env.tasks_dir to a local folder of task folders or "
            f"--env.dataset_name to a dataset of tasks (e.g. {suite.dataset_name})"
        )
    return load_dataset_tasks(
        config.dataset_name,
        split=config.dataset_split,
        task_filter=config.task_filter or None,
        cache_dir=config.cache_dir,
        agent_timeout_sec=suite.agent_timeout_sec,
        verifier_timeout_sec=suite.verifier_timeout_sec,
    )


def trial_settings(config: HarnessSettings) -> TrialSettings:
    """How each trial runs: backend, image map, timeout multiplier, retries.

    Raises:
        ImageMapError: an ``image_map`` entry is not ``FROM=TO``.
    """
    return TrialSettings(
        backend=config.terminal_backend,
        image_map=ImageMap.parse(config.image_map),
        timeout_multiplier=config.timeout_multiplier,
        infra_retries=config.infra_retries,
        offline_builds=config.offline_builds,
        build_network=config.build_network,
        network=config.network,
        start_ahead=config.start_ahead,
    )


def choose_agent(name: str, hermes: Callable[[], Agent]) -> Agent:
    """The agent ``name`` names: ``hermes`` (built by ``hermes``), ``oracle``, or a
    ``module:Class``.

    Raises:
        AgentLoadError: ``module:Class`` names no usable agent.
    """
    if name == "oracle":
        return OracleAgent()
    if name == "hermes":
        return hermes()
    return load_agent(name)


def leaderboard_notes(suite: Suite, config: HarnessSettings) -> list[str]:
    """What the summary says about leaderboard mode (nothing when it is off).

    Raises:
        SettingsError: leaderboard mode with non-comparable settings and not
            ``unofficial`` (the message lists them).
    """
    if not config.leaderboard:
        return []
    problems = leaderboard_problems(config, suite)
    if problems and not config.unofficial:
        raise SettingsError(
            f"leaderboard mode refuses these settings ({'; '.join(problems)}): fix them, or "
            "pass --env.unofficial true to run anyway, marked unofficial"
        )
    if problems:
        return [f"unofficial leaderboard run: {'; '.join(problems)}"]
    return [
        "leaderboard run: settings comparable with the leaderboard (harbor's defaults: each "
        "sandbox's network as its task's allow_internet, on unless the task turns it off)"
    ]


async def run_suite(
    suite: Suite,
    config: HarnessSettings,
    tasks: Sequence[Task],
    agent: Agent,
    *,
    on_progress: Callable[[RunProgress, TrialResult | None], None] | None = None,
) -> RunSummary:
    """Run ``n_trials`` of every task with ``agent`` into ``output_dir``
    (:func:`~hermes_benchmarks.run.run_benchmark`); the run's summary.

    Raises:
        SettingsError: leaderboard mode refuses the settings.
        ImageMapError: an ``image_map`` entry is not ``FROM=TO``.
        ResultsFileError: ``output_dir`` holds results and ``resume`` is off, or a line
            that is not a result.
        OSError: the output folder cannot be written.
    """
    notes = leaderboard_notes(suite, config)
    return await run_benchmark(
        tasks,
        agent,
        trial_settings(config),
        output_dir=config.output_dir,
        n_trials=config.n_trials,
        max_concurrent_tasks=config.max_concurrent_tasks,
        resume=config.resume,
        notes=notes,
        on_progress=on_progress,
    )
