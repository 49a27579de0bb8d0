"""The viewer page: one self-contained HTML file (no CDN, nothing fetched)."""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Final

from hermes_benchmarks.files import write_whole
from hermes_benchmarks.view.records import RunData

__all__ = ["PAGE_NAME", "render_page", "write_page"]

#: The page's file name in a run's folder.
PAGE_NAME: Final = "view.html"


def render_page(data: RunData) -> str:
    """The HTML page showing ``data`` (from :func:`~hermes_benchmarks.view.load_run`).

    The data travel inside the page as JSON in a ``<script type="application/json">``
    block, with every ``<`` written as ``\\u003c`` so no text of a trial can end the
    block; the page works from a ``file://`` URL and when served.
    """
    template = resources.files("hermes_benchmarks.view").joinpath("viewer.html").read_text("utf-8")
    # Every "<" as its JSON escape: valid JSON for JSON.parse, and no "</script>" or
    # "<!--" can appear inside the block whatever a trial printed.
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    title = html.escape(str(data.get("run", "run")))
    return template.replace("__TITLE__", title).replace("__DATA__", payload)


def write_page(data: RunData, target: Path) -> Path:
    """Write the page to ``target`` (whole or not at all); ``target``.

    Raises:
        OSError: the folder is not writable, or the disk is full (nothing is left
            behind at ``target``).
    """
    return write_whole(target, render_page(data).encode("utf-8"))
