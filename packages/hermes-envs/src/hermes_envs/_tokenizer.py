"""The environment's tokenizer, as hermes-loop and the token builders need it.

Atropos' ``BaseEnv`` loads a ``transformers`` tokenizer (``env.tokenizer_name``: a local
directory or a hub name; ``None`` for an environment that only evaluates).
``hermes_loop.templates.TransformersTokenizer`` gives it the small ``Tokenizer`` protocol
of ``hermes_loop.templates``, and ``chat_template_renderer`` renders prompts with the
tokenizer's own chat template (the text of ``tokenizer.apply_chat_template(...,
tokenize=False)``), so the Phase 2 prompts are the ones the model was trained on and the
Phase 1 training text is the one the model reads. A template that marks the model's
text with ``{% generation %}`` blocks also tells, in the same render, where each
assistant turn is (``TemplateRenderer.marked``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from hermes_loop.templates import DEFAULT_TOKENIZER_DIR, GenerationSpanError, JinjaChatTemplate

__all__ = [
    "ChatTemplateSpec",
    "TemplateRenderer",
    "chat_template_renderer",
    "shipped_tokenizer_dir",
    "template_messages",
]


def shipped_tokenizer_dir() -> str:
    """The small ChatML tokenizer hermes-loop ships (a local path, no hub needed)."""
    return str(resources.files("hermes_loop").joinpath(DEFAULT_TOKENIZER_DIR))


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


@dataclass(frozen=True, slots=True)
class ChatTemplateSpec:
    """What ``TemplateRenderer`` reads of a tokenizer, as plain data (JSON-ready): the
    template ``transformers`` picks with tools and without (``None`` where it refuses),
    the BOS and EOS tokens and the special tokens map. A ``TemplateRenderer`` of a spec
    renders what one of its tokenizer does (the token worker process renders with one).
    """

    with_tools: str | None
    without_tools: str | None
    bos_token: str | None
    eos_token: str | None
    special_tokens_map: dict[str, Any]

    @classmethod
    def of(cls, tokenizer: Any) -> ChatTemplateSpec:
        """The spec of a ``transformers`` tokenizer that has a chat template."""

        def source(tools: list[Any] | None) -> str | None:
            try:
                return str(tokenizer.get_chat_template(None, tools))
            except ValueError:
                return None

        return cls(
            source([]),
            source(None),
            tokenizer.bos_token,
            tokenizer.eos_token,
            dict(tokenizer.special_tokens_map),
        )

    def get_chat_template(self, chat_template: None, tools: Any) -> str:
        """The template for a call with ``tools`` (``None``: without), as the tokenizer's
        ``get_chat_template`` picks it.

        Raises:
            ValueError: where the tokenizer refused to pick one.
        """
        source = self.without_tools if tools is None else self.with_tools
        if source is None:
            raise ValueError(
                f"the tokenizer has no chat template for a conversation "
                f"{'without' if tools is None else 'with'} tools"
            )
        return source


class TemplateRenderer:
    """A tokenizer's chat template as ``render(messages, tools=..., add_generation_prompt=...)``.

    The text is that of ``tokenizer.apply_chat_template(messages, tools=...,
    add_generation_prompt=..., tokenize=False)``: the template ``transformers`` would pick
    (``get_chat_template``: the ``tool_use`` one of a set when tools are given), the
    tokenizer's special tokens as variables, rendered in the same sandboxed Jinja
    environment (``hermes_loop.templates.JinjaChatTemplate``). Tool-call arguments
    held as JSON text are handed to the template as objects (``template_messages``).
    The template is compiled once, and the special tokens read once, not per render.

    Args:
        tokenizer: a ``transformers`` tokenizer, or a ``ChatTemplateSpec``.

    Raises:
        ChatTemplateError: (a ``ValueError``) on a call, if the template refuses or fails
            on the conversation.
    """

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._variables = dict(tokenizer.special_tokens_map)
        self._compiled: dict[str, JinjaChatTemplate] = {}
        self._templates: dict[bool, JinjaChatTemplate] = {}

    def _template(self, tools: Sequence[Mapping[str, Any]] | None) -> JinjaChatTemplate:
        # transformers picks per call: with tools (even none), a set's ``tool_use``
        # template; without, its ``default`` (a ValueError when the set has no such one).
        with_tools = tools is not None
        template = self._templates.get(with_tools)
        if template is None:
            tokenizer = self._tokenizer
            source = tokenizer.get_chat_template(None, [] if with_tools else None)
            template = self._compiled.get(source)
            if template is None:
                template = JinjaChatTemplate(
                    source, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token
                )
                self._compiled[source] = template
            self._templates[with_tools] = template
        return template

    def __call__(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        """The conversation as the model reads it."""
        return self._template(tools)(
            template_messages(messages),
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            **self._variables,
        )

    def marked(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None
    ) -> tuple[str, list[tuple[int, int]]] | None:
        """The whole conversation (no generation prompt) and the character spans of the
        model's text in it, from one render; ``None`` when the template does not mark
        the model's text, or marks it inside a macro (where its place is not known).

        Raises:
            ChatTemplateError: if the template refuses or fails on the conversation.
        """
        template = self._template(tools)
        if not template.marks_generation:
            return None
        try:
            return template.render_spans(
                template_messages(messages),
                tools=tools,
                add_generation_prompt=False,
                **self._variables,
            )
        except GenerationSpanError:
            return None


def chat_template_renderer(tokenizer: Any) -> TemplateRenderer | None:
    """The tokenizer's chat template as a ``TemplateRenderer``, or ``None`` when it has
    none (hermes-loop then uses ChatML)."""
    if not getattr(tokenizer, "chat_template", None):
        return None
    return TemplateRenderer(tokenizer)
