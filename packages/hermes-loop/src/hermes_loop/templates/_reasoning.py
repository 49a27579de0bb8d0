"""Taking ``<think>...</think>`` reasoning out of assistant text."""

from __future__ import annotations

__all__ = ["split_reasoning"]

_OPEN, _CLOSE = "<think>", "</think>"


def split_reasoning(text: str) -> tuple[str | None, str | None]:
    """Split ``text`` into (content, reasoning).

    Every ``<think>...</think>`` block is reasoning; an unclosed ``<think>`` runs to the
    end; a ``</think>`` with no opener closes reasoning that began in the prompt. Both
    parts are stripped; empty parts are ``None``.
    """
    content: list[str] = []
    reasoning: list[str] = []
    rest = text
    first_close, first_open = rest.find(_CLOSE), rest.find(_OPEN)
    if first_close >= 0 and (first_open < 0 or first_close < first_open):
        reasoning.append(rest[:first_close])
        rest = rest[first_close + len(_CLOSE) :]
    while rest:
        start = rest.find(_OPEN)
        if start < 0:
            content.append(rest)
            break
        content.append(rest[:start])
        end = rest.find(_CLOSE, start)
        if end < 0:
            reasoning.append(rest[start + len(_OPEN) :])
            break
        reasoning.append(rest[start + len(_OPEN) : end])
        rest = rest[end + len(_CLOSE) :]
    joined_content = "".join(content).strip() or None
    joined_reasoning = "\n".join(part.strip() for part in reasoning if part.strip()) or None
    return joined_content, joined_reasoning
