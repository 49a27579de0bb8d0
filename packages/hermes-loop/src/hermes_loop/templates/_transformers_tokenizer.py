"""``TransformersTokenizer``: the ``Tokenizer`` protocol over a ``transformers`` tokenizer.

Atropos environments load a ``transformers`` tokenizer (a local folder or a hub name);
this adapter gives it to the loop and ``GenerateChatServer`` without hermes-loop
depending on ``transformers``: it only calls methods every ``PreTrainedTokenizerBase``
has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["TransformersTokenizer"]


class TransformersTokenizer:
    """A ``hermes_loop.templates._tokenizer.Tokenizer`` over a ``transformers`` tokenizer.

    ``encode`` adds no special tokens; ``add_bos_token`` is read off the tokenizer's own
    behaviour (does encoding with special tokens put BOS first?), so it matches what the
    model was trained on whatever the tokenizer class.

    Args:
        tokenizer: a ``transformers.PreTrainedTokenizerBase``.

    Raises:
        ValueError: if the tokenizer has no end-of-sequence token.
    """

    def __init__(self, tokenizer: Any) -> None:
        if tokenizer.eos_token is None or tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos_token; set one in its tokenizer_config")
        self.backend = tokenizer
        bos_id = tokenizer.bos_token_id
        probe = list(tokenizer.encode("a", add_special_tokens=True)) if bos_id is not None else []
        self._add_bos = bos_id is not None and probe[:1] == [bos_id]

    @property
    def eos_token(self) -> str:
        """The end-of-turn token text."""
        return str(self.backend.eos_token)

    @property
    def eos_token_id(self) -> int:
        """The id of ``eos_token``."""
        return int(self.backend.eos_token_id)

    @property
    def bos_token(self) -> str | None:
        """The beginning-of-sequence token text, or None."""
        token = self.backend.bos_token
        return None if token is None else str(token)

    @property
    def bos_token_id(self) -> int | None:
        """The id of ``bos_token``, or None."""
        token_id = self.backend.bos_token_id
        return None if token_id is None else int(token_id)

    @property
    def add_bos_token(self) -> bool:
        """Whether the model's own tokenization of a prompt starts with BOS."""
        return self._add_bos

    @property
    def chat_template(self) -> str | None:
        """The tokenizer's Jinja chat template (its ``"default"`` one when it has several)."""
        template = getattr(self.backend, "chat_template", None)
        if isinstance(template, dict):
            template = template.get("default")
        return template if isinstance(template, str) and template else None

    @property
    def special_tokens(self) -> tuple[str, ...]:
        """Tokens that ``decode(..., skip_special_tokens=True)`` drops."""
        return tuple(self.backend.all_special_tokens)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; no BOS/EOS added, special tokens written as text kept."""
        return list(self.backend.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """The text of ``ids``, exactly (no clean-up of spaces)."""
        return str(
            self.backend.decode(
                list(ids),
                skip_special_tokens=skip_special_tokens,
                clean_up_tokenization_spaces=False,
            )
        )
