"""Turning whatever a tool handler returned into the text of a tool message."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["cap_output", "to_text"]


def to_text(value: Any) -> str:
    """``str`` as is, ``bytes`` as UTF-8 (bad bytes replaced), ``None`` as "", else JSON."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, bytes | bytearray | memoryview):
        text = bytes(value).decode("utf-8", errors="replace")
    elif value is None:
        text = ""
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    # Lone surrogates cannot be sent as JSON to a server; NULs confuse tokenizers.
    if "\x00" in text:
        text = text.replace("\x00", "\\0")
    return text.encode("utf-8", errors="replace").decode("utf-8")


def cap_output(text: str, limit: int) -> str:
    """Keep at most ``limit`` characters: the head and tail, with a visible marker between."""
    if limit <= 0 or len(text) <= limit:
        return text
    marker = f"\n\n[... {len(text) - limit} characters truncated ...]\n\n"
    keep = max(limit - len(marker), 0)
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]
