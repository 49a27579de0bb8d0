"""The ``tokens`` entry of a scored rollout's record (``hermes_envs._records``): each
token's text, the trained marks, the counts and the score.

Plain data in, plain data out, and light (the token worker process imports it): the
environment's records writer makes the entry with these functions, and so does the token
worker, so both write the same text.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from hermes_envs._chunk_texts import ChunkTexts, packed

__all__ = ["Decoder", "PieceDecoder", "RecordTokensText", "record_tokens", "record_tokens_text"]

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
    trained = _trained(masks)
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


class RecordTokensText:
    """``text(ids, masks, score)``: ``record_tokens_text`` with the JSON text of each
    stretch of ``CHUNK`` token texts remembered by its ids (the rollouts of a run open
    with the same system prompt and tools, so most stretches were written before).

    Args:
        decode_each: as ``PieceDecoder``'s.

    Not thread-safe: one caller (thread) at a time.
    """

    def __init__(self, decode_each: Callable[[list[list[int]]], Sequence[Any]]) -> None:
        self._decode = PieceDecoder(decode_each)
        self._chunks = ChunkTexts()

    def text(
        self,
        ids: list[int],
        masks: list[int],
        score: float,
        packed_rows: tuple[array[int] | None, array[int] | None] | None = None,
    ) -> str:
        """The same text as ``record_tokens_text(ids, masks, score, decoder)``.
        ``packed_rows``: ``ids`` and ``masks`` packed (``hermes_envs._chunk_texts.packed``),
        when the caller has them.

        Raises:
            Exception: whatever the decoder raises for an id it cannot decode.
        """
        if packed_rows is None:
            packed_rows = packed(ids), packed(masks)
        tokens, marks = packed_rows
        if tokens is None or marks is None:  # not 64-bit integers: no stretches
            return record_tokens_text(ids, masks, score, self._decode)
        pieces = self._stretches(tokens, ids, self._piece_texts)
        trained = "".join(self._stretches(marks, masks, _trained))
        return (
            f'{{"pieces": [{", ".join(pieces)}], "trained": "{trained}", "count": {len(ids)}, '
            f'"trained_count": {trained.count("1")}, "score": {json.dumps(score)}}}'
        )

    def _piece_texts(self, ids: list[int]) -> str:
        return ", ".join([json.dumps(piece, ensure_ascii=False) for piece in self._decode(ids)])

    def _stretches(
        self, packed: array[int], values: list[int], make: Callable[[list[int]], str]
    ) -> list[str]:
        """``make`` of each ``CHUNK`` of ``values`` (``packed``: the same as an array),
        remembered by the stretch's bytes (and by ``make``: pieces and marks apart)."""
        tag = b"p" if make == self._piece_texts else b"m"
        return self._chunks.texts(packed, lambda start, stop: make(values[start:stop]), tag)


def _trained(masks: list[int]) -> str:
    """``"0"`` where the mask is -100, else ``"1"``."""
    return "".join(["0" if mask == -100 else "1" for mask in masks])
