"""The exceptions of hermes-benchmarks, all under :class:`HermesBenchmarksError`.

The tree::

    HermesBenchmarksError
    ├── TaskError          a task folder or its task.toml is malformed, or a filter names no task
    │   └── DatasetError   a dataset of tasks cannot be loaded, or a row cannot be a task
    ├── ImageMapError      an ``image_map`` entry is not ``FROM=TO``
    ├── ImageError         a task's image could not be had (base missing, build failed)
    ├── ResultsFileError   results.jsonl cannot be resumed (a corrupt line, a foreign file)
    │   └── OutputFolderError  the output folder is in use by another run, or cannot be written
    ├── RewardError        the verifier wrote no reward, or one that cannot be read
    ├── TrialInfraError    infrastructure stopped a trial (``kind`` says where); retried
    ├── AgentLoadError     ``module:Class`` names no importable agent class
    ├── SettingsError      a run's settings are refused (leaderboard mode)
    ├── ArtifactsError     a trial's kept artifact folder is incomplete or not one
    └── RescoreError       a folder cannot be rescored (not a run, no artifacts, task moved)

Each carries a message that names what was wrong and what to do about it.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "AgentLoadError",
    "ArtifactsError",
    "DatasetError",
    "HermesBenchmarksError",
    "ImageError",
    "ImageMapError",
    "OutputFolderError",
    "RescoreError",
    "ResultsFileError",
    "RewardError",
    "RewardErrorKind",
    "SettingsError",
    "TaskError",
    "TrialInfraError",
]

#: Why a reward could not be had: no file at all, or a file that does not hold a number.
RewardErrorKind = Literal["reward_missing", "reward_unreadable"]


class HermesBenchmarksError(Exception):
    """Base class of every exception raised by hermes-benchmarks."""


class TaskError(HermesBenchmarksError):
    """A task is malformed (missing file, bad task.toml value) or a filter names no task."""


class DatasetError(TaskError):
    """A dataset of tasks cannot be loaded (unreachable, no such file, a missing column),
    or one of its rows cannot be unpacked into a task folder."""


class ImageMapError(HermesBenchmarksError, ValueError):
    """An ``image_map`` entry is not of the form ``FROM=TO``."""


class ImageError(HermesBenchmarksError):
    """A task's image could not be had: a base image is missing, or the build failed."""


class ResultsFileError(HermesBenchmarksError):
    """An existing results.jsonl cannot be resumed."""


class OutputFolderError(ResultsFileError):
    """The output folder is in use by another run (its lock is held), or it cannot be
    written (full, read-only); every line already written is kept."""


class RewardError(HermesBenchmarksError):
    """The verifier left no readable reward; ``kind`` says which way it failed."""

    def __init__(self, kind: RewardErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: RewardErrorKind = kind


class TrialInfraError(HermesBenchmarksError):
    """Infrastructure stopped a trial: not the model's 0. ``kind`` is an ``ErrorKind``
    (``image_build``, ``sandbox_start``, ``model_endpoint``, ``agent_crash``,
    ``verifier_crash``, ``verifier_timeout``, ``reward_missing``, ``reward_unreadable``)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class AgentLoadError(HermesBenchmarksError, ValueError):
    """An agent named as ``module:Class`` cannot be imported or is not an agent."""


class SettingsError(HermesBenchmarksError, ValueError):
    """A run's settings are refused: leaderboard mode with settings that are not
    comparable with the leaderboard, unless the run is marked unofficial."""


class ArtifactsError(HermesBenchmarksError):
    """A trial's artifact folder is not one (no manifest) or lost a file it lists."""


class RescoreError(HermesBenchmarksError):
    """A run cannot be re-verified: not a run, nothing kept to verify, or a task moved."""
