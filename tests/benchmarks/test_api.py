"""The public surface of hermes_benchmarks is a deliberate, pinned list."""

from __future__ import annotations

import hermes_benchmarks

PUBLIC = [
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


def test_all_is_pinned_and_sorted() -> None:
    assert hermes_benchmarks.__all__ == PUBLIC
    assert sorted(PUBLIC) == PUBLIC
    for name in PUBLIC:
        assert hasattr(hermes_benchmarks, name), name


def test_every_error_is_under_the_package_root() -> None:
    for name in ("TaskError", "ImageError", "ImageMapError", "ResultsFileError", "RewardError"):
        assert issubclass(getattr(hermes_benchmarks, name), hermes_benchmarks.HermesBenchmarksError)
