"""The token ids of a chat request's prompt, as the tokenizer would give them.

A conversation is rendered as ChatML blocks (one per message, plus the system/tools
block); each block's ids are computed once and reused, so a long rollout does not
re-encode its history on every request. Reuse is exact when the tokenizer splits on the
ChatML markers (each a single special token), which every block starts and ends with;
otherwise the whole prompt is encoded each time.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from hermes_loop.templates._chat_template import IM_END, IM_START, render_blocks
from hermes_loop.templates._tokenizer import Tokenizer
from hermes_parsers import ToolCallParser

__all__ = ["PromptEncoder"]

#: Entries a cache may hold before it is emptied (a bound on memory, not a tuning knob).
CACHE_LIMIT = 100_000


class PromptEncoder:
    """Encodes chat prompts, reusing the ids of blocks seen before.

    Args:
        tokenizer: the server's tokenizer.
        parser: the format tool calls and tool schemas are rendered in.
    """

    def __init__(self, tokenizer: Tokenizer, parser: ToolCallParser) -> None:
        self.tokenizer = tokenizer
        self.parser = parser
        self._rendered: dict[Hashable, str] = {}
        self._ids: dict[str, tuple[int, ...]] | None = None
        if all(len(tokenizer.encode(mark)) == 1 for mark in (IM_START, IM_END)):
            self._ids = {}

    def encode(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> list[int]:
        """The token ids of the prompt ``messages`` and ``tools`` render to.

        Raises:
            ValueError: if the conversation cannot be rendered or encoded (the message
                says why).
        """
        if len(self._rendered) >= CACHE_LIMIT:
            self._rendered.clear()
        blocks = render_blocks(messages, tools, parser=self.parser, cache=self._rendered)
        try:
            return self._encode(blocks)
        except (TypeError, UnicodeError) as exc:
            raise ValueError(f"the tokenizer cannot encode it ({exc})") from None

    def _encode(self, blocks: Sequence[str]) -> list[int]:
        cache = self._ids
        if cache is None:
            return self.tokenizer.encode("".join(blocks))
        ids: list[int] = []
        for block in blocks:
            found = cache.get(block)
            if found is None:
                if len(cache) >= CACHE_LIMIT:
                    cache.clear()
                found = cache[block] = tuple(self.tokenizer.encode(block))
            ids += found
        return ids
