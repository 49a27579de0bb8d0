"""A model's own Jinja chat template, rendered as ``transformers``' ``apply_chat_template``.

Models ship their chat template in ``tokenizer_config.json`` (``chat_template``), in a
``chat_template.jinja`` file, or in GGUF metadata (``tokenizer.chat_template``).
``JinjaChatTemplate`` renders one with the environment ``transformers`` sets up: a sandboxed
Jinja environment with ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols``
extension, a ``tojson`` filter that keeps non-ASCII text, and the ``raise_exception`` and
``strftime_now`` globals, and ``{% generation %}`` blocks; ``bos_token`` and ``eos_token``
are passed in as variables, and ``tools`` and ``documents`` are ``None`` when not given.

``{% generation %} ... {% endgeneration %}`` is how a template marks the text the model
writes (``transformers`` reads these blocks for ``return_assistant_tokens_mask``). The
blocks change nothing in the text; ``JinjaChatTemplate.render_spans`` also returns where
they are, so a trainer can unmask exactly those characters from one render.

Rendering needs ``jinja2``, which comes with the ``hermes-loop[server]`` extra.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hermes_loop._errors import HermesLoopError

__all__ = [
    "ChatTemplateError",
    "ChatTemplateUnavailableError",
    "GenerationSpanError",
    "JinjaChatTemplate",
]

_MARK = "\u2063HERMES-END-OF-TURN-PROBE\u2063"


class ChatTemplateUnavailableError(HermesLoopError, ImportError):
    """``jinja2`` is missing, so a model's own chat template cannot be rendered."""


class ChatTemplateError(HermesLoopError, ValueError):
    """A chat template does not compile, or refused to render a conversation."""


class GenerationSpanError(ChatTemplateError):
    """A ``{% generation %}`` block's text is not written where it was rendered (the
    block sits inside a macro or a ``{% set %}`` block), so its span cannot be told."""


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


@dataclass(slots=True)
class _Spans:
    """The text rendered so far (its length) and the generation blocks met in it."""

    length: int = 0
    marked: list[tuple[int, str]] = field(default_factory=list)


#: The spans of the render under way in this thread or task (``render_spans``), if any.
_RENDERING: ContextVar[_Spans | None] = ContextVar("hermes_generation_spans", default=None)


def _generation_extension(seen: list[bool]) -> type:
    """A Jinja extension for ``{% generation %}...{% endgeneration %}``: the block's text
    is written as it is and, while ``render_spans`` runs, recorded with its start; each
    block parsed appends to ``seen``."""
    from jinja2 import ext, nodes

    class GenerationBlocks(ext.Extension):
        tags = {"generation"}  # noqa: RUF012  # jinja2 declares it a set

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            seen.append(True)
            return nodes.CallBlock(self.call_method("_mark"), [], [], body).set_lineno(lineno)

        def _mark(self, caller: Callable[[], str]) -> str:
            text = caller()
            spans = _RENDERING.get()
            if spans is not None:
                spans.marked.append((spans.length, text))
            return text

    return GenerationBlocks


#: What a plain ``dict`` answers as an attribute (its methods and dunders): every other
#: name, read as ``message.role``, can only be one of its keys.
_DICT_ATTRIBUTES = frozenset(dir(dict))


def _environment_class() -> type:
    """``ImmutableSandboxedEnvironment`` with a shorter road to a plain dict's keys.

    ``message.role`` on a ``dict`` first tries the attribute ``role``, fails (an
    exception raised and caught) and then reads the key: a chat template does this
    dozens of times per conversation. For a plain dict and a name that is not one of
    ``dict``'s attributes the attribute cannot exist, so the key is read at once; the
    answer is the same (the value, or undefined when the key is missing), and the
    sandbox's checks (which apply only to attributes found) are not skipped.
    """
    from jinja2 import sandbox

    class ChatEnvironment(sandbox.ImmutableSandboxedEnvironment):
        def getattr(self, obj: Any, attribute: str) -> Any:
            if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
                try:
                    return obj[attribute]
                except KeyError:
                    return self.undefined(obj=obj, name=attribute)
            return super().getattr(obj, attribute)

    return ChatEnvironment


class JinjaChatTemplate:
    """A compiled Jinja chat template; calling it renders a conversation as prompt text.

    Args:
        source: the template text.
        bos_token, eos_token: the values of the template's ``bos_token`` and
            ``eos_token`` variables (undefined there when ``None``, as in
            ``transformers``).

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
            from jinja2 import ext
        except ImportError as exc:
            raise ChatTemplateUnavailableError(
                "rendering the model's own chat template needs the 'jinja2' library; "
                "install it with: pip install 'hermes-loop[server]'"
            ) from exc
        self._error = jinja2.TemplateError

        def raise_exception(message: str) -> None:
            raise jinja2.TemplateError(message)

        seen: list[bool] = []
        env = _environment_class()(
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[_generation_extension(seen), ext.loopcontrols],
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
        #: Whether the template marks the model's text with ``{% generation %}`` blocks.
        self.marks_generation: bool = bool(seen)

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
        context = self._context(messages, tools, add_generation_prompt, variables)
        with self._template_errors():
            return str(self._template.render(**context))

    def render_spans(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        **variables: Any,
    ) -> tuple[str, list[tuple[int, int]]]:
        """Render as calling the template does, and say where its ``{% generation %}``
        blocks are: ``(text, [(start, end), ...])``, character offsets into ``text`` in
        the order the blocks were written (none when the template marks nothing,
        ``marks_generation`` false).

        Raises:
            ChatTemplateError: as calling the template.
            GenerationSpanError: (a ``ChatTemplateError``) if a block's text is not where
                it was rendered (a block inside a macro or a ``{% set %}`` block is
                written later, elsewhere): use the plain render then.
        """
        context = self._context(messages, tools, add_generation_prompt, variables)
        spans = _Spans()
        pieces: list[str] = []
        token = _RENDERING.set(spans)
        try:
            with self._template_errors():
                for piece in self._template.generate(**context):
                    pieces.append(piece)
                    spans.length += len(piece)
        finally:
            _RENDERING.reset(token)
        text = "".join(pieces)
        found: list[tuple[int, int]] = []
        for start, marked in spans.marked:
            end = start + len(marked)
            if text[start:end] != marked:
                raise GenerationSpanError(
                    "a {% generation %} block of the chat template is not written where it "
                    "is rendered (inside a macro or a {% set %} block?); its span is unknown"
                )
            found.append((start, end))
        return text, found

    @contextmanager
    def _template_errors(self) -> Iterator[None]:
        """What a render raises, as ``ChatTemplateError`` with the template's words."""
        try:
            yield
        except self._error as exc:
            raise ChatTemplateError(f"the chat template refused the conversation: {exc}") from exc
        except (TypeError, KeyError, AttributeError) as exc:
            raise ChatTemplateError(f"the chat template failed on the conversation: {exc}") from exc

    def _context(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        add_generation_prompt: bool,
        variables: Mapping[str, Any],
    ) -> dict[str, Any]:
        # As transformers: ``tools`` and ``documents`` are None (not undefined) when
        # absent; a special token the tokenizer does not have is undefined.
        context: dict[str, Any] = {
            "messages": [dict(message) for message in messages],
            "tools": None if tools is None else [dict(tool) for tool in tools],
            "documents": None,
            "add_generation_prompt": add_generation_prompt,
        }
        if self.bos_token is not None:
            context["bos_token"] = self.bos_token
        if self.eos_token is not None:
            context["eos_token"] = self.eos_token
        context.update(variables)
        return context

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
