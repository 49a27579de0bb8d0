"""The six sample tasks shipped with the package (harbor's task layout).

They run on the local base image (``hermes-sandbox/debian:bookworm``, built by
``python -m hermes_sandbox.backends.docker build``) with no network, so that a new
install can try every command at once: ``hermes-bench terminalbench2 check
--env.tasks_dir "$(hermes-bench samples)"``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from hermes_benchmarks._errors import TaskError

__all__ = ["sample_tasks_dir"]


def sample_tasks_dir() -> Path:
    """The folder of the sample tasks inside the installed package.

    Raises:
        TaskError: the package is installed in a form without a folder on disk (a zip
            archive), with what to do.
    """
    folder = resources.files("hermes_benchmarks").joinpath("sample_tasks")
    if not isinstance(folder, Path) or not folder.is_dir():
        raise TaskError(
            "the sample tasks are not a folder on disk (a zipped install?): "
            "install hermes-benchmarks as a regular wheel"
        )
    return folder
