"""The viewer page: one self-contained HTML file (no CDN, nothing fetched)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Final

from hermes_benchmarks.view._records import RunData
from hermes_envs.view import fill_template, page_template, write_page_text

__all__ = ["PAGE_NAME", "render_page", "write_page"]

#: The page's file name in a run's folder.
PAGE_NAME: Final = "view.html"


def render_page(data: RunData) -> str:
    """The HTML page showing ``data`` (from :func:`~hermes_benchmarks.view.load_run`).

    The data travel inside the page as JSON in a ``<script type="application/json">``
    block, with every ``<`` written as ``\\u003c`` so no text of a trial can end the
    block (:func:`hermes_envs.view.fill_template`); ``viewer.html`` holds what this
    page adds to the page both viewers share (:func:`hermes_envs.view.page_template`).
    The page works from a ``file://`` URL and when served.
    """
    page = resources.files("hermes_benchmarks.view").joinpath("viewer.html").read_text("utf-8")
    return fill_template(page_template(page, "hermes-bench"), data, str(data.get("run", "run")))


def write_page(data: RunData, target: Path) -> Path:
    """Write the page to ``target`` (whole or not at all); ``target``.

    Raises:
        OSError: the folder is not writable, or the disk is full (nothing is left
            behind at ``target``).
    """
    return write_page_text(render_page(data), target)
