"""A viewer page: one self-contained HTML file (no CDN, nothing fetched), its data
carried inside it. Shared by ``hermes-envs view`` and ``hermes-bench view``."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from hermes_envs.files import write_whole

__all__ = ["fill_template", "write_page_text"]


def fill_template(template: str, data: Any, title: str) -> str:
    """``template`` with ``__TITLE__`` replaced by ``title`` (HTML-escaped) and
    ``__DATA__`` by ``data`` as JSON.

    The data go inside a ``<script type="application/json">`` block of the template,
    with every ``<`` written as ``\\u003c``: valid JSON for ``JSON.parse``, and no
    ``</script>`` or ``<!--`` can appear inside the block whatever a rollout or trial
    printed. The page works from a ``file://`` URL and when served.

    Raises:
        TypeError: ``data`` holds something JSON cannot write.
    """
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return template.replace("__TITLE__", html.escape(title)).replace("__DATA__", payload)


def write_page_text(page: str, target: Path) -> Path:
    """Write ``page`` to ``target`` whole or not at all; returns ``target``.

    Raises:
        OSError: the folder is not writable, or the disk is full (nothing is left
            behind at ``target``).
    """
    return write_whole(target, page.encode("utf-8"))
