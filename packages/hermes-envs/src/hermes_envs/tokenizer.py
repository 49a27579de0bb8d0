"""The environment's tokenizer, as hermes-loop and the token builders need it.

Atropos' ``BaseEnv`` loads a ``transformers`` tokenizer (``env.tokenizer_name``: a local
directory or a hub name). ``TransformersTokenizer`` gives it the small ``Tokenizer``
protocol of ``hermes_loop.tokenizer`` (no BOS/EOS added by ``encode``), and
``chat_template_renderer`` renders prompts with the tokenizer's own chat template, so
the Phase 2 prompts are the ones the model was trained on.

Adapter note: ``TransformersTokenizer`` could move to ``hermes_loop.tokenizer`` next to
``HFTokenizer``; it is kept here until hermes-loop offers it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "TokenizerLoadError",
    "TransformersTokenizer",
    "chat_template_renderer",
    "template_messages",
]


class TokenizerLoadError(RuntimeError):
    """The configured tokenizer could not be loaded; the message names the option to set."""


class TransformersTokenizer:
    """``hermes_loop.tokenizer.Tokenizer`` over a ``transformers`` tokenizer.

    Args:
        tokenizer: a ``transformers.PreTrainedTokenizerBase``.

    Raises:
        ValueError: if the tokenizer has no end-of-sequence token.
    """

    def __init__(self, tokenizer: Any) -> None:
        if tokenizer.eos_token is None or tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos_token; set one in its tokenizer_config")
        self.backend = tokenizer

    @property
    def eos_token(self) -> str:
        """The end-of-turn token text."""
        return str(self.backend.eos_token)

    @property
    def eos_token_id(self) -> int:
        """The id of ``eos_token``."""
        return int(self.backend.eos_token_id)

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


def _arguments(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def template_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as chat templates expect them: tool-call arguments as objects, not JSON text.

    Hugging Face templates write ``arguments | tojson``; OpenAI messages carry JSON text,
    which would be quoted twice. Arguments that are not JSON are left as text.
    """
    out = []
    for message in messages:
        copy = dict(message)
        calls = copy.get("tool_calls")
        if calls:
            fixed = []
            for call in calls:
                call = dict(call)
                function = dict(call.get("function") or {})
                function["arguments"] = _arguments(function.get("arguments"))
                call["function"] = function
                fixed.append(call)
            copy["tool_calls"] = fixed
        out.append(copy)
    return out


def chat_template_renderer(tokenizer: Any) -> Callable[..., str] | None:
    """A ``render(messages, tools=..., add_generation_prompt=...)`` over the tokenizer's
    chat template, or ``None`` when it has none (hermes-loop then uses ChatML)."""
    if not getattr(tokenizer, "chat_template", None):
        return None

    def render(
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        return str(
            tokenizer.apply_chat_template(
                template_messages(messages),
                tools=list(tools) if tools else None,
                add_generation_prompt=add_generation_prompt,
                tokenize=False,
            )
        )

    return render
