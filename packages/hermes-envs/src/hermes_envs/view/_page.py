"""A viewer page: one self-contained HTML file (no CDN, nothing fetched), its data
carried inside it. Shared by ``hermes-envs view`` and ``hermes-bench view``."""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any, Final

from hermes_envs._files import write_whole

__all__ = ["fill_template", "page_template", "write_page_text"]

_PLACEHOLDER: Final = re.compile(r"__TITLE__|__DATA__|/\*__COMMON_CSS__\*/|//__COMMON_JS__")
#: A block's first line, in the shared ``page.html`` (where the block goes) and in a page
#: (where it starts).
_BLOCK: Final = re.compile(r"^<!--block:(\w+)-->\n", re.MULTILINE)


def page_template(page: str, tool: str) -> str:
    """The whole template of a viewer page: the page both viewers share (``page.html`` of
    this package: head, header, summary cards and notes, the sections of the table of rows
    and of the one row shown, the data block, the shared style and script) with ``page``'s
    blocks in and ``tool`` (the command's name) in its title; for :func:`fill_template`.

    ``page`` is made of blocks, each starting on a line ``<!--block:NAME-->`` (what comes
    before the first is a comment, left out): ``style`` (the page's own CSS), ``summary``
    (what the summary section shows below the cards and notes) and ``script`` (the page's
    program, run after the shared one, with the data as ``RUN``).

    Raises:
        ValueError: ``page`` lacks a block the shared page has, or has one it has not.
    """
    parts = _BLOCK.split(page)[1:]
    blocks = dict(zip(parts[::2], parts[1::2], strict=True))
    shell = resources.files("hermes_envs.view").joinpath("page.html").read_text("utf-8")
    slots = sorted(_BLOCK.findall(shell))
    if sorted(blocks) != slots:
        raise ValueError(f"a viewer page has the blocks {sorted(blocks)}; page.html takes {slots}")
    return _BLOCK.sub(lambda found: blocks[found.group(1)], shell.replace("__TOOL__", tool))


def fill_template(template: str, data: Any, title: str) -> str:
    """``template`` with its placeholders filled, in one pass (no text put in can be
    taken for a placeholder): ``__TITLE__`` by ``title`` (HTML-escaped), ``__DATA__`` by
    ``data`` as JSON, ``/*__COMMON_CSS__*/`` and ``//__COMMON_JS__`` by the style and
    script helpers both viewers share (``common.css``, ``common.js`` of this package).

    The data go inside a ``<script type="application/json">`` block of the template,
    with every ``<`` written as ``\\u003c``: valid JSON for ``JSON.parse``, and no
    ``</script>`` or ``<!--`` can appear inside the block whatever a rollout or trial
    printed. The page works from a ``file://`` URL and when served.

    Raises:
        TypeError: ``data`` holds something JSON cannot write.
    """
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    shared = resources.files("hermes_envs.view")
    values = {
        "__TITLE__": html.escape(title),
        "__DATA__": payload,
        "/*__COMMON_CSS__*/": shared.joinpath("common.css").read_text("utf-8"),
        "//__COMMON_JS__": shared.joinpath("common.js").read_text("utf-8"),
    }
    return _PLACEHOLDER.sub(lambda found: values[found.group(0)], template)


def write_page_text(page: str, target: Path) -> Path:
    """Write ``page`` to ``target`` whole or not at all; returns ``target``.

    Raises:
        OSError: the folder is not writable, or the disk is full (nothing is left
            behind at ``target``).
    """
    return write_whole(target, page.encode("utf-8"))
