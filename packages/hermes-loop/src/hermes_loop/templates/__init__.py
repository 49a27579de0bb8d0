"""Prompts and tokens: the chat templates that turn messages into a model's text, and the
tokenizers that turn that text into ids.

The loop's Phase 2 endpoint and the model server use these; nothing here imports the
loop or the server. ``chat_template`` renders and parses the ChatML / Hermes prompt
format, ``jinja_template`` renders a model's own Jinja chat template (as
``transformers``' ``apply_chat_template`` does), ``reasoning`` takes ``<think>`` blocks
out of assistant text; ``tokenizer`` holds the ``Tokenizer`` protocol and its
``tokenizers``-backed implementation (the tiny tokenizer hermes-loop ships, any
``tokenizer.json``, or the tokenizer inside a GGUF model file, read by ``gguf``), and
``transformers_tokenizer`` the protocol over a ``transformers`` tokenizer.
"""

from __future__ import annotations

from hermes_loop.templates.chat_template import (
    CHATML_JINJA_TEMPLATE,
    parse_prompt,
    render_prompt,
)
from hermes_loop.templates.gguf import GGUFError
from hermes_loop.templates.jinja_template import (
    ChatTemplateError,
    ChatTemplateUnavailableError,
    GenerationSpanError,
    JinjaChatTemplate,
)
from hermes_loop.templates.reasoning import split_reasoning
from hermes_loop.templates.tokenizer import (
    DEFAULT_TOKENIZER_DIR,
    HFTokenizer,
    Tokenizer,
    TokenizerUnavailableError,
    load_tokenizer,
)
from hermes_loop.templates.transformers_tokenizer import TransformersTokenizer

__all__ = [
    "CHATML_JINJA_TEMPLATE",
    "DEFAULT_TOKENIZER_DIR",
    "ChatTemplateError",
    "ChatTemplateUnavailableError",
    "GGUFError",
    "GenerationSpanError",
    "HFTokenizer",
    "JinjaChatTemplate",
    "Tokenizer",
    "TokenizerUnavailableError",
    "TransformersTokenizer",
    "load_tokenizer",
    "parse_prompt",
    "render_prompt",
    "split_reasoning",
]
