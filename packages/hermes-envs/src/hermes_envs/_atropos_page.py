"""Atropos' HTML viewer of a group file (``<file>.html`` beside ``<file>.jsonl``), written
quietly.

``atroposlib.frontend.jsonl2html.generate_html`` writes this page and then prints
``Successfully generated HTML file: ...`` on stdout (and calls ``sys.exit`` on errors).
``write_atropos_page`` writes the same page with Atropos' own template and group
renderer, prints nothing and raises instead of exiting, so ``process`` keeps the file its
users had without the library's print.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

__all__ = ["write_atropos_page"]

#: What Atropos' page says when the group file holds no group to show.
_NO_GROUPS = "<p>No data to display. Input file might be empty or contain invalid data.</p>"


def write_atropos_page(group_file: str | os.PathLike[str]) -> Path:
    """Write the page ``generate_html(group_file)`` writes, to ``group_file`` with the suffix
    ``.html``, and return its path (blocking: call it in a thread). Lines that are not a
    JSON object with ``messages`` and ``scores`` are left out, as Atropos does.

    Raises:
        OSError: the group file or Atropos' template cannot be read, or the page cannot
            be written.
    """
    from atroposlib.frontend.jsonl2html import TEMPLATE_FILE, create_html_for_group

    groups = Path(group_file)
    parts: list[str] = []
    with groups.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                group = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                continue
            if isinstance(group, dict) and "messages" in group and "scores" in group:
                part = str(create_html_for_group(group, len(parts)))
                if part:
                    parts.append(part)
    template = Path(TEMPLATE_FILE).read_text(encoding="utf-8")
    page = template.format(
        title=html.escape(f"Rendered Messages - {groups.name}"),
        groups_html="\n".join(parts) if parts else _NO_GROUPS,
    )
    target = groups.with_suffix(".html")
    target.write_text(page, encoding="utf-8")
    return target
