"""The ``tokens`` entry of a scored rollout's record (``hermes_envs._records``): each
token's text, the trained marks, the counts and the score.

Plain data in, plain data out, and light (the token worker process imports it): the
environment's records writer makes the entry with these functions, and so does the token
worker, so both write the same text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Decoder", "PieceDecoder", "record_tokens", "record_tokens_text"]

#: Each token's text, in order, of a list of token ids.
Decoder = Callable[[Sequence[int]], list[str]]


class PieceDecoder:
    """``decoder(ids)``: each token's text, remembered by id (the rollouts of a run share
    most of their tokens: only ids not seen before reach ``decode_each``).

    Args:
        decode_each: the text of each of a list of single-token id lists (as a
            tokenizer's ``batch_decode([[id], ...])``).

    Not thread-safe: one caller (thread) at a time.
    """

    def __init__(self, decode_each: Callable[[list[list[int]]], Sequence[Any]]) -> None:
        self._decode_each = decode_each
        self._known: dict[int, str] = {}

    def __call__(self, ids: Sequence[int]) -> list[str]:
        """The text of each of ``ids``.

        Raises:
            Exception: whatever ``decode_each`` raises for an id it cannot decode.
        """
        known = self._known
        new = sorted({i for i in ids if i not in known})
        if new:
            texts = self._decode_each([[i] for i in new])
            known.update(zip(new, map(str, texts), strict=True))
        return [known[i] for i in ids]


def record_tokens(
    ids: Any, masks: Any, score: Any, decode: Decoder | None
) -> dict[str, Any] | None:
    """The ``tokens`` entry of a record: ``pieces`` (each token's text), ``trained``
    (``"1"`` where the mask is not -100, else ``"0"``), ``count``, ``trained_count`` and
    ``score``; ``None`` when ``ids`` or ``masks`` is not a list or there is no decoder."""
    if not isinstance(ids, list) or not isinstance(masks, list) or decode is None:
        return None
    trained = "".join(["0" if mask == -100 else "1" for mask in masks])
    return {
        "pieces": decode(ids),
        "trained": trained,
        "count": len(ids),
        "trained_count": trained.count("1"),
        "score": score,
    }


def record_tokens_text(ids: list[int], masks: list[int], score: float, decode: Decoder) -> str:
    """The JSON text of ``record_tokens(ids, masks, score, decode)`` as it stands in a
    record's text (``json.dumps(record, ensure_ascii=False)``)."""
    return json.dumps(record_tokens(ids, masks, score, decode), ensure_ascii=False)
