"""hermes-benchmarks: agent benchmarks in harbor's task layout, and their harness.

Tasks read from their folders (:func:`load_tasks`) or a dataset
(:func:`load_dataset_tasks`), the trial runner (:func:`run_trial`: image, sandbox, agent,
verifier; what the agent did scored, what broke retried), whole runs
(:func:`run_benchmark`: resumable, one per output folder), pluggable agents
(:class:`HermesAgent`, :class:`OracleAgent`, ``module:Class`` via :func:`load_agent`),
crash-safe streamed results (:class:`ResultsLog`), summaries with pass@k
(:func:`summarize`), the trial's record (:func:`current_record`) and the shipped sample
tasks (:func:`sample_tasks_dir`); the ``hermes-bench`` command builds on these (see the
package README).

Every public name is imported on first use, so that ``hermes-bench --help`` and code
that needs one small piece do not pay for the agent loop's and the endpoints' imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_loop import lazy_exports

if TYPE_CHECKING:
    from hermes_benchmarks._agents import Agent, HermesAgent, load_agent
    from hermes_benchmarks._errors import (
        AgentLoadError,
        ArtifactsError,
        DatasetError,
        HermesBenchmarksError,
        ImageError,
        ImageMapError,
        OutputFolderError,
        RescoreError,
        ResultsFileError,
        RewardError,
        SettingsError,
        TaskError,
        TrialInfraError,
    )
    from hermes_benchmarks._image_map import DockerfileBases, ImageMap, normalize_image
    from hermes_benchmarks._oracle import OracleAgent
    from hermes_benchmarks._record import current_record
    from hermes_benchmarks._rescore import rescore_run
    from hermes_benchmarks._results import Attempt, ResultsLog, TrialResult
    from hermes_benchmarks._reward import parse_reward
    from hermes_benchmarks._samples import sample_tasks_dir
    from hermes_benchmarks._summary import RunSummary, pass_at_k, summarize
    from hermes_benchmarks._task import Task, TaskConfig, load_task, load_tasks
    from hermes_benchmarks._trial import TrialSettings, run_trial
    from hermes_benchmarks._verifier import verify
    from hermes_benchmarks.artifacts import ArtifactManifest
    from hermes_benchmarks.dataset import load_dataset_tasks
    from hermes_benchmarks.images import build_task_image, task_image_tag
    from hermes_benchmarks.run import run_benchmark

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentLoadError",
    "ArtifactManifest",
    "ArtifactsError",
    "Attempt",
    "DatasetError",
    "DockerfileBases",
    "HermesAgent",
    "HermesBenchmarksError",
    "ImageError",
    "ImageMap",
    "ImageMapError",
    "OracleAgent",
    "OutputFolderError",
    "RescoreError",
    "ResultsFileError",
    "ResultsLog",
    "RewardError",
    "RunSummary",
    "SettingsError",
    "Task",
    "TaskConfig",
    "TaskError",
    "TrialInfraError",
    "TrialResult",
    "TrialSettings",
    "__version__",
    "build_task_image",
    "current_record",
    "load_agent",
    "load_dataset_tasks",
    "load_task",
    "load_tasks",
    "normalize_image",
    "parse_reward",
    "pass_at_k",
    "rescore_run",
    "run_benchmark",
    "run_trial",
    "sample_tasks_dir",
    "summarize",
    "task_image_tag",
    "verify",
]

#: Names imported on first access, and the module that holds each.
_LAZY = {
    "Agent": "hermes_benchmarks._agents",
    "AgentLoadError": "hermes_benchmarks._errors",
    "ArtifactManifest": "hermes_benchmarks.artifacts",
    "ArtifactsError": "hermes_benchmarks._errors",
    "Attempt": "hermes_benchmarks._results",
    "DatasetError": "hermes_benchmarks._errors",
    "DockerfileBases": "hermes_benchmarks._image_map",
    "HermesAgent": "hermes_benchmarks._agents",
    "HermesBenchmarksError": "hermes_benchmarks._errors",
    "ImageError": "hermes_benchmarks._errors",
    "ImageMap": "hermes_benchmarks._image_map",
    "ImageMapError": "hermes_benchmarks._errors",
    "OracleAgent": "hermes_benchmarks._oracle",
    "OutputFolderError": "hermes_benchmarks._errors",
    "RescoreError": "hermes_benchmarks._errors",
    "ResultsFileError": "hermes_benchmarks._errors",
    "ResultsLog": "hermes_benchmarks._results",
    "RewardError": "hermes_benchmarks._errors",
    "RunSummary": "hermes_benchmarks._summary",
    "SettingsError": "hermes_benchmarks._errors",
    "Task": "hermes_benchmarks._task",
    "TaskConfig": "hermes_benchmarks._task",
    "TaskError": "hermes_benchmarks._errors",
    "TrialInfraError": "hermes_benchmarks._errors",
    "TrialResult": "hermes_benchmarks._results",
    "TrialSettings": "hermes_benchmarks._trial",
    "build_task_image": "hermes_benchmarks.images",
    "current_record": "hermes_benchmarks._record",
    "load_agent": "hermes_benchmarks._agents",
    "load_dataset_tasks": "hermes_benchmarks.dataset",
    "load_task": "hermes_benchmarks._task",
    "load_tasks": "hermes_benchmarks._task",
    "normalize_image": "hermes_benchmarks._image_map",
    "parse_reward": "hermes_benchmarks._reward",
    "pass_at_k": "hermes_benchmarks._summary",
    "rescore_run": "hermes_benchmarks._rescore",
    "run_benchmark": "hermes_benchmarks.run",
    "run_trial": "hermes_benchmarks._trial",
    "sample_tasks_dir": "hermes_benchmarks._samples",
    "summarize": "hermes_benchmarks._summary",
    "task_image_tag": "hermes_benchmarks.images",
    "verify": "hermes_benchmarks._verifier",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
