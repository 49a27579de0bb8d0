"""Conversations for the Phase 1 token tests: a strategy of varied conversations, the
tool schema they offer, and the per-turn reference the one-pass paths must equal."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from hermes_envs.scoring._tokens import MASKED

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


def reference_tokens(
    messages: list[dict[str, Any]],
    render: Any,
    hf: Any,
    tools: list[dict[str, Any]] | None,
) -> tuple[list[int], list[int], int]:
    """Phase 1 as first written: per assistant turn, the prompt before it and the
    conversation up to it rendered apart; every piece encoded by ``hf.encode`` apart."""
    eos = hf.eos_token or "<|im_end|>"

    def encode(text: str) -> list[int]:
        return list(hf.encode(text, add_special_tokens=False))

    full = render(messages, tools=tools, add_generation_prompt=False)
    spans: list[tuple[int, int]] = []
    drift = 0
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        start_text = render(messages[:index], tools=tools, add_generation_prompt=True)
        end_text = render(messages[: index + 1], tools=tools, add_generation_prompt=False)
        if not (end_text.startswith(start_text) and full.startswith(end_text)):
            drift += 1
            continue
        end = len(end_text)
        trimmed = end_text[len(start_text) :].rstrip()
        if trimmed.endswith(eos):
            end = len(start_text) + len(trimmed)
        spans.append((len(start_text), end))
    tokens: list[int] = []
    masks: list[int] = []
    cursor = 0
    for start, end in spans:
        if start < cursor:
            drift += 1
            continue
        prompt_ids, reply_ids = encode(full[cursor:start]), encode(full[start:end])
        tokens += prompt_ids + reply_ids
        masks += [MASKED] * len(prompt_ids) + reply_ids
        cursor = end
    rest = encode(full[cursor:])
    return tokens + rest, masks + [MASKED] * len(rest), drift


TEXTS = st.sampled_from(
    [
        "",
        " ",
        "Done.",
        "  padded  \n",
        "ünïcode façade 日本語 👍",
        "line one\nline two\n\n",
        "<|im_end|> in the text",
        "<tool_call>not a call</tool_call>",
        '{"json": [1, 2]}',
    ]
)
ARGUMENTS = st.sampled_from(['{"command": "ls"}', "{}", "", "not json", '{"path": "é.txt"}'])


@st.composite
def _assistant(draw: st.DrawFn, turn: int) -> list[dict[str, Any]]:
    content = draw(st.one_of(st.none(), TEXTS, TEXTS.map(lambda t: [{"type": "text", "text": t}])))
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if draw(st.booleans()):
        message["reasoning_content"] = draw(TEXTS)
    calls = [
        {
            "id": f"call_{turn}_{n}",
            "type": "function",
            "function": {"name": draw(st.sampled_from(["terminal", "read_file"])), "arguments": a},
        }
        for n, a in enumerate(draw(st.lists(ARGUMENTS, max_size=3)))
    ]
    if calls:
        message["tool_calls"] = calls
    out = [message]
    for call in calls:
        if draw(st.booleans()):
            out.append({"role": "tool", "tool_call_id": call["id"], "content": draw(TEXTS)})
    return out


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Varied conversations: system or not, tool calls (several per turn, arguments JSON
    or not), tool results, user turns between, two assistant turns in a row, empty and
    None content, text parts, reasoning, unicode; ending on any role."""
    out: list[dict[str, Any]] = []
    if draw(st.booleans()):
        out.append({"role": "system", "content": draw(TEXTS)})
    out.append({"role": "user", "content": draw(TEXTS)})
    for turn in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["assistant", "assistant", "user"]))
        if kind == "user":
            out.append({"role": "user", "content": draw(TEXTS)})
        else:
            out += draw(_assistant(turn))
    return out
