"""The pieces a format scanner cuts raw text into, before they become a ``ParseResult``.

They are plain (mutable, slotted) records because parsing makes many of them; treat
them as read-only. Format modules produce these; the assembler (``_assembly.py``)
validates calls, assigns ids and turns malformed pieces into content (lenient) or a
``ParseError`` (strict).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, final

__all__ = ["Content", "Malformed", "RawCall", "Reasoning", "Segment"]


@final
@dataclass(slots=True)
class Content:
    """Plain text outside any markup."""

    text: str


@final
@dataclass(slots=True)
class Reasoning:
    """The body of a reasoning block such as ``<think>...</think>``."""

    text: str


@final
@dataclass(slots=True)
class RawCall:
    """A call as the format spelled it, not yet validated.

    ``arguments`` is either JSON text or an already-decoded value; the assembler
    requires a JSON object. ``raw`` is the exact source text, kept as content if the
    call turns out to be invalid; ``offset`` is where ``raw`` starts in the whole text.
    """

    name: Any
    arguments: Any
    raw: str
    offset: int
    id: str | None = None


@final
@dataclass(slots=True)
class Malformed:
    """Markup that could not be read as a call: kept as content, or raised in strict mode."""

    raw: str
    reason: str
    offset: int


Segment = Content | Reasoning | RawCall | Malformed
