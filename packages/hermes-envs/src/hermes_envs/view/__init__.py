"""``hermes-envs view``: a ``process`` or ``evaluate`` output in the browser.

:func:`find_output` / :func:`load_output` read an output (the records of
``hermes_envs._records`` and the group file or ``metrics.json``), :func:`render_page`
makes one self-contained HTML page of it (no CDN, nothing fetched: it works from a
``file://`` URL), :class:`RunServer` serves a folder on 127.0.0.1 for ``--serve``. The
page and server parts (``page_template`` with the shared ``page.html``, ``common.css`` and
``common.js``; ``fill_template``, ``write_page_text``, :class:`RunServer`) and the
command's argument and serving steps (:func:`parse_view_args`, :func:`publish`) are
shared with ``hermes-bench view``.
"""

from __future__ import annotations

from hermes_envs.view._command import (
    VIEW_USAGE,
    ViewArgs,
    parse_view_args,
    publish,
    render_page,
    view_main,
)
from hermes_envs.view._load import Output, ViewData, find_output, load_output
from hermes_envs.view._page import fill_template, page_template, write_page_text
from hermes_envs.view._serve import RunServer

__all__ = [
    "VIEW_USAGE",
    "Output",
    "RunServer",
    "ViewArgs",
    "ViewData",
    "fill_template",
    "find_output",
    "load_output",
    "page_template",
    "parse_view_args",
    "publish",
    "render_page",
    "view_main",
    "write_page_text",
]
