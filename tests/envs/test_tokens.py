"""Training tokens: Phase 1 from the chat template, Phase 2 from managed_state."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer

from hermes_envs._tokenizer import chat_template_renderer
from hermes_envs.scoring._encoding import TextEncoder
from hermes_envs.scoring._tokens import MASKED, chat_template_tokens, managed_tokens
from hermes_loop.templates._chat_template import render_prompt
from hermes_loop.templates._transformers_tokenizer import TransformersTokenizer

from .conversations import TOOLS, conversations, reference_tokens
from .support import TOKENIZER

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Make a file."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "terminal", "arguments": '{"command": "touch a"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"output": "", "exit_code": 0}'},
    {"role": "assistant", "content": "Done."},
]


def _spans(tokens: list[int], masks: list[int]) -> list[list[int]]:
    spans: list[list[int]] = []
    current: list[int] = []
    for token, mask in zip(tokens, masks, strict=True):
        if mask != MASKED:
            assert mask == token
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    if current:
        spans.append(current)
    return spans


def test_phase1_unmasks_exactly_the_assistant_turns_as_the_template_writes_them() -> None:
    hf = AutoTokenizer.from_pretrained(TOKENIZER)
    tok = TransformersTokenizer(hf)
    render = chat_template_renderer(hf)
    assert render is not None
    out = chat_template_tokens(
        CONVERSATION,
        render=render,
        encode_many=TextEncoder(hf).encode_many,
        eos_token=tok.eos_token,
        tools=TOOLS,
    )
    full = render(CONVERSATION, tools=TOOLS, add_generation_prompt=False)
    assert tok.decode(out.tokens) == full
    assert len(out.tokens) == len(out.masks)
    assert out.drift == 0
    assert out.logprobs is None
    replies = [tok.decode(span) for span in _spans(out.tokens, out.masks)]
    assert replies == [
        '<tool_call>\n{"name": "terminal", "arguments": {"command": "touch a"}}\n</tool_call>'
        "<|im_end|>",
        "Done.<|im_end|>",
    ]


def test_phase1_counts_turns_a_template_rewrites_as_drift() -> None:
    hf = AutoTokenizer.from_pretrained(TOKENIZER)
    tok = TransformersTokenizer(hf)
    real = chat_template_renderer(hf)
    assert real is not None

    def forgetful(messages: Any, tools: Any = None, add_generation_prompt: bool = True) -> str:
        # Like templates that drop earlier turns' content once a later one exists.
        messages = list(messages)
        last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
        kept = [
            {**m, "content": "", "tool_calls": None}
            if m["role"] == "assistant" and i != last
            else m
            for i, m in enumerate(messages)
        ]
        return real(kept, tools=tools, add_generation_prompt=add_generation_prompt)

    out = chat_template_tokens(
        CONVERSATION,
        render=forgetful,
        encode_many=TextEncoder(hf).encode_many,
        eos_token=tok.eos_token,
        tools=TOOLS,
    )
    # Neither turn is a prefix of what follows it: both are counted, none is trained on,
    # and the tokens are still the whole conversation as the template renders it.
    assert out.drift == 2
    assert _spans(out.tokens, out.masks) == []
    assert tok.decode(out.tokens) == forgetful(
        CONVERSATION, tools=TOOLS, add_generation_prompt=False
    )


def test_phase2_takes_the_last_sequence_and_counts_drift() -> None:
    state = {
        "nodes": [
            {"tokens": [1, 2, 3], "masked_tokens": [-100, 2, 3], "logprobs": [1.0, -0.1, -0.2]},
            {"tokens": [4, 5], "masked_tokens": [-100, 5], "logprobs": [1.0, -0.3]},
        ]
    }
    out = managed_tokens(state)
    assert (out.tokens, out.masks, out.logprobs, out.drift) == ([4, 5], [-100, 5], [1.0, -0.3], 1)


def test_phase2_refuses_empty_or_ragged_state() -> None:
    with pytest.raises(ValueError, match="no token sequence"):
        managed_tokens({"nodes": []})
    with pytest.raises(ValueError, match="lengths differ"):
        managed_tokens({"nodes": [{"tokens": [1], "masked_tokens": [1, 2], "logprobs": [0.0]}]})


# -- the one-pass path against the reference: every turn rendered on its own -----------


def _renderers(hf: Any) -> dict[str, Any]:
    template = chat_template_renderer(hf)
    assert template is not None

    def forgetful(messages: Any, tools: Any = None, add_generation_prompt: bool = True) -> str:
        # Drops the reasoning of every assistant turn but the last (as some templates
        # do), so earlier turns are rewritten once a later one exists.
        last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
        kept = [
            {k: v for k, v in m.items() if k != "reasoning_content"} if i != last else m
            for i, m in enumerate(messages)
        ]
        return template(kept, tools=tools, add_generation_prompt=add_generation_prompt)

    def glued(messages: Any, tools: Any = None, add_generation_prompt: bool = True) -> str:
        # No text between turns: the end of one assistant turn is where the next begins.
        text = template(messages, tools=tools, add_generation_prompt=add_generation_prompt)
        return text.replace("<|im_end|>\n", "<|im_end|>")

    return {"template": template, "chatml": render_prompt, "forgetful": forgetful, "glued": glued}


HF = AutoTokenizer.from_pretrained(TOKENIZER)
RENDERERS = _renderers(HF)


@pytest.mark.parametrize("kind", sorted(RENDERERS))
@settings(max_examples=120, deadline=None)
@given(messages=conversations(), with_tools=st.booleans())
def test_phase1_equals_the_per_turn_reference(
    kind: str, messages: list[dict[str, Any]], with_tools: bool
) -> None:
    render = RENDERERS[kind]
    tools = TOOLS if with_tools else None
    out = chat_template_tokens(
        messages,
        render=render,
        encode_many=TextEncoder(HF).encode_many,
        eos_token="<|im_end|>",
        tools=tools,
    )
    assert (out.tokens, out.masks, out.drift) == reference_tokens(messages, render, HF, tools)


def test_phase1_renders_the_whole_once_and_two_per_turn_but_the_last() -> None:
    real = RENDERERS["template"]
    calls: list[tuple[int, bool]] = []

    def counting(messages: Any, tools: Any = None, add_generation_prompt: bool = True) -> str:
        calls.append((len(messages), add_generation_prompt))
        return str(real(messages, tools=tools, add_generation_prompt=add_generation_prompt))

    encoder = TextEncoder(HF)
    chat_template_tokens(
        CONVERSATION, render=counting, encode_many=encoder.encode_many, eos_token="<|im_end|>"
    )
    # The whole; before and up to turn 2; before turn 4, which ends the conversation.
    assert calls == [(5, False), (2, True), (3, False), (4, True)]
    calls.clear()
    chat_template_tokens(
        CONVERSATION[:-1],
        render=counting,
        encode_many=encoder.encode_many,
        eos_token="<|im_end|>",
    )
    assert calls == [(4, False), (2, True), (3, False)]
