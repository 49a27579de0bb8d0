"""Text to token ids with the environment's tokenizer, many texts per call.

Phase 1 scoring encodes each rollout as a handful of pieces (the prompt before each
assistant turn, the turn itself, the rest). ``TextEncoder.encode_many`` encodes them
together, with the ids of ``tokenizer.encode(text, add_special_tokens=False)`` for each.

On a fast (Rust-backed) ``transformers`` tokenizer two things make that cheap:

- the text is encoded by its ``backend_tokenizer``, long stretches with
  ``encode_batch_fast``, which runs without holding the GIL (the event loop keeps running
  rollouts while a finished one is encoded on the tokenizer thread), short ones with
  ``encode``, holding it (giving the GIL up for a few microseconds of work costs more: the
  tokenizer thread then waits for a busy event loop to hand it back);
- the tokenizer cuts a text at its added tokens (``<|im_start|>``, ``<|im_end|>`` ...)
  before anything else and encodes the stretches between them independently, so a text
  is encoded stretch by stretch, and long stretches are remembered: the system prompt
  and tool schemas every rollout opens with are encoded once per process, not once per
  rollout. Each stretch is encoded between the added tokens that surround it in the
  text (their ids then taken off and checked), so that whatever an added token does to
  its neighbours (``lstrip``/``rstrip``) and anything that depends on a stretch being
  the first of the text happen exactly as in the whole text. An added token that could
  overlap another one, or that is matched after normalisation or only as a whole word,
  is never a cut.
"""

from __future__ import annotations

import logging
import re
import threading
from array import array
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TextEncoder"]

logger = logging.getLogger(__name__)

#: A stretch of text between added tokens: (the added token before it or "", the text,
#: the added token after it or "").
Stretch = tuple[str, str, str]

#: Stretches (with their added tokens) of this many characters or more are encoded
#: without holding the GIL; shorter ones with it.
RELEASE_FROM = 2048

#: Longer stretches (a huge tool output) are never remembered: they are seldom seen twice
#: and would make the memory the cache holds unbounded.
LONGEST_REMEMBERED = 1 << 16


class TextEncoder:
    """``encode(text)`` / ``encode_many(texts)`` -> token ids, adding no BOS/EOS.

    Exactly ``tokenizer.encode(text, add_special_tokens=False)`` for every text. A fast
    ``transformers`` tokenizer is called through its ``backend_tokenizer`` (calls that
    release the GIL; texts cut at added tokens, long stretches remembered, see the
    module docstring); any other object with ``encode(text, add_special_tokens=False)``
    through that, text by text.

    Stretches of ``remember_from`` to ``LONGEST_REMEMBERED`` characters are remembered
    (the last ``cache_size`` of them, their ids as 32-bit arrays), and apart from them
    the last ``short_cache_size`` shorter ones: the bits of template text between added
    tokens (``"\n"``, ``"assistant\n"`` ...) come back in every rollout, and one call of
    the tokenizer costs 10-40 us however short its text. Each call returns new lists,
    which the caller may change.

    Thread-safe: calls from several threads take turns (the environment makes its tokens
    on one tokenizer thread, but ``tokenize_rollout`` may be called from anywhere).

    Args:
        tokenizer: a ``transformers`` tokenizer, or anything with
            ``encode(text, add_special_tokens=False) -> list[int]``.
        cache_size: how many long stretches to remember (0: none).
        remember_from: the length from which a stretch counts as long.
        short_cache_size: how many shorter stretches to remember (0: none).

    Raises:
        TypeError: if ``tokenizer`` has no ``encode``.
        ValueError: if ``cache_size``, ``remember_from`` or ``short_cache_size`` is
            negative.
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        cache_size: int = 256,
        remember_from: int = 256,
        short_cache_size: int = 4096,
    ):
        if not callable(getattr(tokenizer, "encode", None)):
            raise TypeError(
                f"TextEncoder needs a tokenizer with encode(); got {type(tokenizer).__name__}"
            )
        if cache_size < 0 or remember_from < 0 or short_cache_size < 0:
            raise ValueError(
                "cache_size, remember_from and short_cache_size must be >= 0, got "
                f"{cache_size}, {remember_from} and {short_cache_size}"
            )
        self._tokenizer = tokenizer
        backend = getattr(tokenizer, "backend_tokenizer", None)
        fast = backend is not None and getattr(tokenizer, "is_fast", False)
        # encode_batch_fast (tokenizers >= 0.21) skips the character offsets we do not use.
        self._batch = (
            getattr(backend, "encode_batch_fast", None) or getattr(backend, "encode_batch", None)
            if fast
            else None
        )
        self._one = getattr(backend, "encode", None) if fast else None
        self._cuts = _cut_tokens(backend) if self._batch is not None else {}
        self._cut_pattern = (
            re.compile("|".join(re.escape(t) for t in sorted(self._cuts, key=len, reverse=True)))
            if self._cuts
            else None
        )
        self._cache: OrderedDict[Stretch, array[int]] = OrderedDict()
        self._short: OrderedDict[Stretch, array[int]] = OrderedDict()
        self._cache_size = cache_size
        self._short_cache_size = short_cache_size
        self._remember_from = remember_from
        self._lock = threading.Lock()

    def __call__(self, text: str) -> list[int]:
        """The ids of ``text`` (as ``encode_many([text])[0]``)."""
        return self.encode_many([text])[0]

    def encode_many(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids of each of ``texts``, in order (stretches already remembered are not
        encoded again)."""
        if self._batch is None:
            return [list(self._tokenizer.encode(t, add_special_tokens=False)) for t in texts]
        with self._lock:
            return self._encode_cut(texts)

    def _encode_cut(self, texts: Sequence[str]) -> list[list[int]]:
        plans = [self._plan(text) for text in texts]
        known: dict[Stretch, Sequence[int]] = {}
        missing: list[Stretch] = []
        for plan in plans:
            for part in plan:
                if isinstance(part, int) or part in known:
                    continue
                cache, _size = self._cache_for(part)
                cached = cache.get(part)
                if cached is None:
                    known[part] = []
                    missing.append(part)
                else:
                    cache.move_to_end(part)
                    known[part] = cached
        if missing:
            try:
                fresh = self._raw(missing)
            except _NotCuttable as exc:
                logger.warning("%s; encoding whole texts from now on", exc)
                self._cut_pattern = None
                self._cache.clear()
                self._short.clear()
                return self._encode_cut(texts)
            for part, found in zip(missing, fresh, strict=True):
                known[part] = found
                if len(part[1]) > LONGEST_REMEMBERED:
                    continue
                cache, size = self._cache_for(part)
                if size:
                    cache[part] = array("i", found)
                    if len(cache) > size:
                        cache.popitem(last=False)
        out: list[list[int]] = []
        for plan in plans:
            ids: list[int] = []
            for part in plan:
                if isinstance(part, int):
                    ids.append(part)
                else:
                    ids += known[part]
            out.append(ids)
        return out

    def _cache_for(self, part: Stretch) -> tuple[OrderedDict[Stretch, array[int]], int]:
        """The memory for ``part`` (long or short stretches) and how many it holds."""
        if len(part[1]) >= self._remember_from:
            return self._cache, self._cache_size
        return self._short, self._short_cache_size

    def _plan(self, text: str) -> list[Stretch | int]:
        """``text`` as added-token ids and stretches (with the added tokens around them)."""
        if self._cut_pattern is None:
            return [("", text, "")] if text else []
        plan: list[Stretch | int] = []
        edge = 0
        before = ""
        for mark in self._cut_pattern.finditer(text):
            if mark.start() > edge:
                plan.append((before, text[edge : mark.start()], mark.group()))
            plan.append(self._cuts[mark.group()])
            edge = mark.end()
            before = mark.group()
        if edge < len(text):
            plan.append((before, text[edge:], ""))
        return plan

    def _raw(self, stretches: list[Stretch]) -> list[list[int]]:
        """The ids of each stretch, from its encoding between its added tokens (whose ids
        are then taken off).

        Raises:
            _NotCuttable: if an added token did not come out as its own id.
        """
        batch, one = self._batch, self._one
        assert batch is not None
        assert one is not None
        out = []
        for before, text, after in stretches:
            context = before + text + after
            if len(context) >= RELEASE_FROM:
                # Long: without the GIL, so the event loop runs meanwhile (one text per
                # call: no waking of the tokenizer's thread pool).
                (encoding,) = batch([context], add_special_tokens=False)
            else:
                # Short: holding the GIL costs less than giving it up and waiting for it
                # to come back from a busy event loop.
                encoding = one(context, add_special_tokens=False)
            ids = list(encoding.ids)
            if before:
                if not ids or ids[0] != self._cuts[before]:
                    raise _NotCuttable(_broken(before, text))
                del ids[0]
            if after:
                if not ids or ids[-1] != self._cuts[after]:
                    raise _NotCuttable(_broken(after, text))
                del ids[-1]
            out.append(ids)
        return out


class _NotCuttable(Exception):
    """The tokenizer did not encode an added token around a stretch as its own id."""


def _broken(token: str, text: str) -> str:
    return (
        f"the tokenizer did not encode the added token {token!r} beside {text[:60]!r} as "
        "its own id, so its texts cannot be encoded stretch by stretch"
    )


def _cut_tokens(backend: Any) -> dict[str, int]:
    """The added tokens a text may be cut at, by text: matched on the raw text (not
    normalised), not only as whole words, overlapping no other added token."""
    decoder: Mapping[int, Any] = {}
    getter = getattr(backend, "get_added_tokens_decoder", None)
    if callable(getter):
        decoder = getter()
    split_special = bool(getattr(backend, "encode_special_tokens", False))
    added = {str(token.content): (index, token) for index, token in decoder.items()}
    cuts: dict[str, int] = {}
    for text, (index, token) in added.items():
        if not text or token.normalized or token.single_word:
            continue
        if token.special and split_special:
            continue  # special tokens are then encoded as plain text
        if any(other != text and _overlap(other, text) for other in added):
            continue
        cuts[text] = index
    return cuts


def _overlap(other: str, token: str) -> bool:
    """Whether ``other`` could take a match from ``token``: it contains ``token``, or a
    tail of it is a head of ``token`` (so a match of ``other`` would start first)."""
    if token in other:
        return True
    return any(other.endswith(token[:size]) for size in range(1, min(len(other), len(token))))
