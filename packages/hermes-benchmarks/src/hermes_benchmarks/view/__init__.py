"""``hermes-bench view``: a run in the browser.

:func:`load_run` reads a run's folder (``summary.json``, ``results.jsonl`` and each
trial's record folder), :func:`render_page` / :func:`write_page` make one
self-contained HTML page of it (no CDN, nothing fetched: it works from a ``file://``
URL), :class:`RunServer` serves the folder on 127.0.0.1 for ``--serve``.
"""

from __future__ import annotations

from hermes_benchmarks.view._command import VIEW_USAGE, view_main
from hermes_benchmarks.view._page import PAGE_NAME, render_page, write_page
from hermes_benchmarks.view._records import TEXT_CAP, RunData, load_run
from hermes_envs.view import RunServer

__all__ = [
    "PAGE_NAME",
    "TEXT_CAP",
    "VIEW_USAGE",
    "RunData",
    "RunServer",
    "load_run",
    "render_page",
    "view_main",
    "write_page",
]
