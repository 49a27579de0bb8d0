"""Training tokens: Phase 1 from the chat template, Phase 2 from managed_state."""

from __future__ import annotations

from typing import Any

import pytest
from transformers import AutoTokenizer

from hermes_envs.scoring.tokens import MASKED, chat_template_tokens, managed_tokens
from hermes_envs.tokenizer import chat_template_renderer
from hermes_loop.transformers_tokenizer import TransformersTokenizer

from .support import TOKENIZER

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": "Run a command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    }
]
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
        CONVERSATION, render=render, encode=tok.encode, eos_token=tok.eos_token, tools=TOOLS
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
        CONVERSATION, render=forgetful, encode=tok.encode, eos_token=tok.eos_token, tools=TOOLS
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


def test_the_text_encoder_gives_the_tokenizers_own_ids() -> None:
    from hermes_envs.tokenizer import text_encoder

    hf = AutoTokenizer.from_pretrained(TOKENIZER)
    assert hf.is_fast
    render = chat_template_renderer(hf)
    assert render is not None
    text = render(CONVERSATION, tools=TOOLS, add_generation_prompt=False)
    encode = text_encoder(hf)
    for piece in (text, "Done.<|im_end|>", " ünïcode\n\n  spaces ", ""):
        assert encode(piece) == hf.encode(piece, add_special_tokens=False)
    assert encode(text) == TransformersTokenizer(hf).encode(text)

    long = text * 2
    first = encode(long)
    first.append(-1)  # a caller's list is its own
    assert encode(long) == hf.encode(long, add_special_tokens=False)
