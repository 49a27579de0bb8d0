"""A model's own Jinja chat template, rendered as ``transformers``' ``apply_chat_template``.

Models ship their chat template in ``tokenizer_config.json`` (``chat_template``), in a
``chat_template.jinja`` file, or in GGUF metadata (``tokenizer.chat_template``).
``JinjaChatTemplate`` renders one with the environment ``transformers`` sets up: a sandboxed
Jinja environment with ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols``
extension, a ``tojson`` filter that keeps non-ASCII text, and the ``raise_exception`` and
``strftime_now`` globals; ``bos_token`` and ``eos_token`` are passed in as variables.

Rendering needs ``jinja2``, which comes with the ``hermes-loop[server]`` extra.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from hermes_loop.errors import HermesLoopError

__all__ = ["ChatTemplateError", "ChatTemplateUnavailableError", "JinjaChatTemplate"]

_MARK = "\u2063HERMES-END-OF-TURN-PROBE\u2063"


class ChatTemplateUnavailableError(HermesLoopError, ImportError):
    """``jinja2`` is missing, so a model's own chat template cannot be rendered."""


class ChatTemplateError(HermesLoopError, ValueError):
    """A chat template does not compile, or refused to render a conversation."""


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


class JinjaChatTemplate:
    """A compiled Jinja chat template; calling it renders a conversation as prompt text.

    Args:
        source: the template text.
        bos_token, eos_token: the values of the template's ``bos_token`` and
            ``eos_token`` variables.

    Raises:
        ChatTemplateUnavailableError: (an ``ImportError``) if ``jinja2`` is missing; the
            message names the ``hermes-loop[server]`` extra.
        ChatTemplateError: (a ``ValueError``) if the template does not compile.
    """

    def __init__(
        self, source: str, *, bos_token: str | None = None, eos_token: str | None = None
    ) -> None:
        try:
            import jinja2
            from jinja2 import ext, sandbox
        except ImportError as exc:
            raise ChatTemplateUnavailableError(
                "rendering the model's own chat template needs the 'jinja2' library; "
                "install it with: pip install 'hermes-loop[server]'"
            ) from exc
        self._error = jinja2.TemplateError

        def raise_exception(message: str) -> None:
            raise jinja2.TemplateError(message)

        env = sandbox.ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[ext.loopcontrols]
        )
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = _strftime_now
        try:
            self._template = env.from_string(source)
        except jinja2.TemplateError as exc:
            raise ChatTemplateError(f"the chat template does not compile: {exc}") from exc
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token

    def __call__(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        **variables: Any,
    ) -> str:
        """Render ``messages`` (and ``tools``) as prompt text.

        ``variables`` are passed to the template as they are (e.g. ``enable_thinking``).

        Raises:
            ChatTemplateError: if the template raises (``raise_exception``) or fails on
                this conversation; the message carries the template's own words.
        """
        context: dict[str, Any] = {
            "messages": [dict(message) for message in messages],
            "add_generation_prompt": add_generation_prompt,
            "bos_token": self.bos_token or "",
            "eos_token": self.eos_token or "",
            **variables,
        }
        if tools:
            context["tools"] = [dict(tool) for tool in tools]
        try:
            return str(self._template.render(**context))
        except self._error as exc:
            raise ChatTemplateError(f"the chat template refused the conversation: {exc}") from exc
        except (TypeError, KeyError, AttributeError) as exc:
            raise ChatTemplateError(f"the chat template failed on the conversation: {exc}") from exc

    def end_of_turn(self) -> str | None:
        """The text the template writes right after an assistant message, up to the first
        whitespace (``<|im_end|>``, ``<end_of_turn>``, ``<|eot_id|>``...), or ``None`` when
        it writes nothing there or refuses the probe conversation."""
        probe = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": _MARK}]
        try:
            text = self(probe, add_generation_prompt=False)
        except ChatTemplateError:
            return None
        _, found, after = text.partition(_MARK)
        pieces = after.split()
        return pieces[0] if found and pieces else None
