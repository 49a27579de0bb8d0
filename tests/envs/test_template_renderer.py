"""TemplateRenderer: transformers' apply_chat_template text, and the marked spans."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer
from transformers.utils.chat_template_utils import render_jinja_template

from hermes_envs._tokenizer import TemplateRenderer, chat_template_renderer, template_messages
from hermes_envs.scoring._encoding import TextEncoder
from hermes_envs.scoring._tokens import chat_template_tokens
from hermes_loop.templates._chat_template import CHATML_JINJA_TEMPLATE
from hermes_loop.templates._jinja_template import ChatTemplateError

from .conversations import TOOLS, conversations, reference_tokens
from .support import TOKENIZER

#: Uses what transformers passes besides messages: special tokens, ``tools is not
#: none``, ``documents``; no generation blocks.
PLAIN = (
    "{{ bos_token if bos_token is defined else 'NOBOS' }}|{{ pad_token }}|"
    "{% if tools is not none %}tools={{ tools | length }}{% endif %}"
    "{% if documents is none %}|nodocs{% endif %}\n"
    "{% for m in messages %}<{{ m.role }}>{{ m.content if m.content is string else '' }}"
    "{% for c in m.tool_calls or [] %}[{{ c.function.name }} {{ c.function.arguments | tojson }}]"
    "{% endfor %}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)
#: A set of templates: transformers picks ``tool_use`` when tools are given.
TEMPLATE_SET = {"default": "D:" + PLAIN, "tool_use": "T:" + CHATML_JINJA_TEMPLATE}


def _tokenizer(template: Any) -> Any:
    hf = AutoTokenizer.from_pretrained(TOKENIZER)
    hf.chat_template = template
    return hf


TOKENIZERS = {
    "shipped": AutoTokenizer.from_pretrained(TOKENIZER),
    "plain": _tokenizer(PLAIN),
    "set": _tokenizer(TEMPLATE_SET),
}


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@settings(max_examples=60, deadline=None)
@given(
    messages=conversations(),
    tools=st.sampled_from([None, [], TOOLS]),
    add_generation_prompt=st.booleans(),
)
def test_the_text_is_transformers_apply_chat_template(
    name: str, messages: list[dict[str, Any]], tools: Any, add_generation_prompt: bool
) -> None:
    hf = TOKENIZERS[name]
    renderer = chat_template_renderer(hf)
    assert isinstance(renderer, TemplateRenderer)
    expected = hf.apply_chat_template(
        template_messages(messages),
        tools=tools,
        add_generation_prompt=add_generation_prompt,
        tokenize=False,
    )
    assert renderer(messages, tools=tools, add_generation_prompt=add_generation_prompt) == expected


@settings(max_examples=120, deadline=None)
@given(messages=conversations(), with_tools=st.booleans())
def test_marked_spans_are_transformers_generation_indices(
    messages: list[dict[str, Any]], with_tools: bool
) -> None:
    hf = TOKENIZERS["shipped"]
    tools = TOOLS if with_tools else None
    renderer = TemplateRenderer(hf)
    found = renderer.marked(messages, tools)
    assert found is not None
    transformers_says: Any = render_jinja_template(
        [template_messages(messages)],
        tools=list(tools) if tools is not None else None,
        chat_template=hf.chat_template,
        return_assistant_tokens_mask=True,
        add_generation_prompt=False,
        **hf.special_tokens_map,
    )
    (text,), (indices,) = transformers_says
    assert found == (text, [tuple(pair) for pair in indices])
    turns = [m for m in messages if m["role"] == "assistant"]
    assert len(found[1]) == len(turns)


@settings(max_examples=150, deadline=None)
@given(messages=conversations(), with_tools=st.booleans())
def test_one_marked_render_gives_the_per_turn_tokens(
    messages: list[dict[str, Any]], with_tools: bool
) -> None:
    hf = TOKENIZERS["shipped"]
    tools = TOOLS if with_tools else None
    renderer = TemplateRenderer(hf)
    calls: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> str:
        calls.append(1)
        return renderer(*args, **kwargs)

    out = chat_template_tokens(
        messages,
        render=counting,
        encode_many=TextEncoder(hf).encode_many,
        eos_token="<|im_end|>",
        tools=tools,
        marked=renderer.marked,
    )
    assert calls == []  # the one render was the marked one
    assert (out.tokens, out.masks, out.drift) == reference_tokens(messages, renderer, hf, tools)


def test_without_blocks_or_with_blocks_in_a_macro_the_turns_are_rendered_apart() -> None:
    # A macro's text is buffered and written when the macro returns: the block's offset
    # while rendering misses the header the macro writes before it.
    in_macro = (
        "{% macro said(m) %}<assistant>{% generation %}{{ m.content }}{{ eos_token }}"
        "{% endgeneration %}{% endmacro %}{% for m in messages %}"
        "{% if m.role == 'assistant' %}{{ said(m) }}{% else %}<{{ m.role }}>{{ m.content }}"
        "{{ eos_token }}{% endif %}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "sure"},
    ]
    for template in (PLAIN, in_macro):
        hf = _tokenizer(template)
        renderer = TemplateRenderer(hf)
        assert renderer.marked(messages, None) is None
        out = chat_template_tokens(
            messages,
            render=renderer,
            encode_many=TextEncoder(hf).encode_many,
            eos_token="<|im_end|>",
            marked=renderer.marked,
        )
        assert (out.tokens, out.masks, out.drift) == reference_tokens(messages, renderer, hf, None)
        assert out.drift == 0
        assert any(mask != -100 for mask in out.masks)


def test_assistant_turns_a_template_leaves_unmarked_are_drift() -> None:
    only_last = (
        "{% for m in messages %}<{{ m.role }}>"
        "{% if m.role == 'assistant' and loop.last %}{% generation %}{{ m.content }}"
        "{{ eos_token }}{% endgeneration %}{% else %}{{ m.content }}{{ eos_token }}{% endif %}"
        "\n{% endfor %}"
    )
    hf = _tokenizer(only_last)
    renderer = TemplateRenderer(hf)
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "sure"},
    ]
    out = chat_template_tokens(
        messages,
        render=renderer,
        encode_many=TextEncoder(hf).encode_many,
        eos_token="<|im_end|>",
        marked=renderer.marked,
    )
    assert out.drift == 1
    unmasked = [token for token, mask in zip(out.tokens, out.masks, strict=True) if mask != -100]
    assert hf.decode(unmasked) == "sure<|im_end|>"


def test_a_template_that_refuses_says_so() -> None:
    hf = _tokenizer("{% generation %}{{ raise_exception('no tools here') }}{% endgeneration %}")
    renderer = TemplateRenderer(hf)
    with pytest.raises(ChatTemplateError, match="no tools here"):
        renderer.marked([{"role": "user", "content": "x"}], None)
    with pytest.raises(ValueError, match="no tools here"):
        renderer([{"role": "user", "content": "x"}])
