"""Prompts and tokens: the chat templates that turn messages into a model's text, and the
tokenizers that turn that text into ids.

The loop's endpoints and the model server use these; nothing here imports the loop or
the server. The modules are private (``_name``); their public names are exported here:
``_chat_template`` renders and parses the ChatML / Hermes prompt format
(``render_prompt``, ``parse_prompt``), ``_jinja_template`` renders a model's own Jinja
chat template as ``transformers``' ``apply_chat_template`` does (``JinjaChatTemplate``),
``_reasoning`` takes ``<think>`` blocks out of assistant text (``split_reasoning``);
``_tokenizer`` holds the ``Tokenizer`` protocol and its ``tokenizers``-backed
implementation (``load_tokenizer``: the tiny tokenizer hermes-loop ships, any
``tokenizer.json``, or the tokenizer inside a GGUF model file, read by ``_gguf``), and
``_transformers_tokenizer`` the protocol over a ``transformers`` tokenizer
(``TransformersTokenizer``).
"""

from __future__ import annotations

from hermes_loop.templates._chat_template import (
    CHATML_JINJA_TEMPLATE,
    parse_prompt,
    render_prompt,
)
from hermes_loop.templates._gguf import GGUFError
from hermes_loop.templates._jinja_template import (
    ChatTemplateError,
    ChatTemplateUnavailableError,
    GenerationSpanError,
    JinjaChatTemplate,
)
from hermes_loop.templates._reasoning import split_reasoning
from hermes_loop.templates._tokenizer import (
    DEFAULT_TOKENIZER_DIR,
    HFTokenizer,
    Tokenizer,
    TokenizerUnavailableError,
    load_tokenizer,
)
from hermes_loop.templates._transformers_tokenizer import TransformersTokenizer

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
