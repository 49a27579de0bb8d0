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
    from hermes_benchmarks.agents import Agent, HermesAgent, load_agent
    from hermes_benchmarks.artifacts import ArtifactManifest
    from hermes_benchmarks.dataset import load_dataset_tasks
    from hermes_benchmarks.errors import (
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
    from hermes_benchmarks.image_map import DockerfileBases, ImageMap, normalize_image
    from hermes_benchmarks.images import build_task_image, task_image_tag
    from hermes_benchmarks.oracle import OracleAgent
    from hermes_benchmarks.record import current_record
    from hermes_benchmarks.rescore import rescore_run
    from hermes_benchmarks.results import Attempt, ResultsLog, TrialResult
    from hermes_benchmarks.reward import parse_reward
    from hermes_benchmarks.run import run_benchmark
    from hermes_benchmarks.samples import sample_tasks_dir
    from hermes_benchmarks.summary import RunSummary, pass_at_k, summarize
    from hermes_benchmarks.task import Task, TaskConfig, load_task, load_tasks
    from hermes_benchmarks.trial import TrialSettings, run_trial
    from hermes_benchmarks.verifier import verify

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
    "Agent": "hermes_benchmarks.agents",
    "AgentLoadError": "hermes_benchmarks.errors",
    "ArtifactManifest": "hermes_benchmarks.artifacts",
    "ArtifactsError": "hermes_benchmarks.errors",
    "Attempt": "hermes_benchmarks.results",
    "DatasetError": "hermes_benchmarks.errors",
    "DockerfileBases": "hermes_benchmarks.image_map",
    "HermesAgent": "hermes_benchmarks.agents",
    "HermesBenchmarksError": "hermes_benchmarks.errors",
    "ImageError": "hermes_benchmarks.errors",
    "ImageMap": "hermes_benchmarks.image_map",
    "ImageMapError": "hermes_benchmarks.errors",
    "OracleAgent": "hermes_benchmarks.oracle",
    "OutputFolderError": "hermes_benchmarks.errors",
    "RescoreError": "hermes_benchmarks.errors",
    "ResultsFileError": "hermes_benchmarks.errors",
    "ResultsLog": "hermes_benchmarks.results",
    "RewardError": "hermes_benchmarks.errors",
    "RunSummary": "hermes_benchmarks.summary",
    "SettingsError": "hermes_benchmarks.errors",
    "Task": "hermes_benchmarks.task",
    "TaskConfig": "hermes_benchmarks.task",
    "TaskError": "hermes_benchmarks.errors",
    "TrialInfraError": "hermes_benchmarks.errors",
    "TrialResult": "hermes_benchmarks.results",
    "TrialSettings": "hermes_benchmarks.trial",
    "build_task_image": "hermes_benchmarks.images",
    "current_record": "hermes_benchmarks.record",
    "load_agent": "hermes_benchmarks.agents",
    "load_dataset_tasks": "hermes_benchmarks.dataset",
    "load_task": "hermes_benchmarks.task",
    "load_tasks": "hermes_benchmarks.task",
    "normalize_image": "hermes_benchmarks.image_map",
    "parse_reward": "hermes_benchmarks.reward",
    "pass_at_k": "hermes_benchmarks.summary",
    "rescore_run": "hermes_benchmarks.rescore",
    "run_benchmark": "hermes_benchmarks.run",
    "run_trial": "hermes_benchmarks.trial",
    "sample_tasks_dir": "hermes_benchmarks.samples",
    "summarize": "hermes_benchmarks.summary",
    "task_image_tag": "hermes_benchmarks.images",
    "verify": "hermes_benchmarks.verifier",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
