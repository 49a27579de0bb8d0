"""Training tokens of a rollout.

Phase 1 (a chat-completions server gives no token ids): the conversation is rendered
with the tokenizer's chat template, tool calls written the way the template writes
them, and tokenized piece by piece (prompt, assistant turn, prompt, ..., rest); every
assistant turn is unmasked, everything else is ``-100``. Where each assistant turn is
comes from the template's ``{% generation %}`` blocks when it has them (one render), else
from rendering the conversation up to each turn.

Phase 2 (a raw ``/generate`` server): the exact token ids, masks and logprobs hermes-loop
recorded in ``managed_state``. A conversation is one sequence as long as each prompt
extends the previous prompt and completion; each time one did not, hermes-loop started
a new sequence. That is *drift*: it is counted, reported, and the last sequence (the
whole final turn's context) is what is trained on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MASKED", "Marked", "TokenizedRollout", "chat_template_tokens", "managed_tokens"]

#: The mask value of positions with no loss (Atropos' convention).
MASKED = -100

Render = Callable[..., str]
EncodeMany = Callable[[Sequence[str]], list[list[int]]]
#: ``marked(messages, tools) -> (whole text, [(start, end), ...]) | None``: the model's
#: text in one render (``hermes_envs._tokenizer.TemplateRenderer.marked``).
Marked = Callable[
    [Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]] | None],
    "tuple[str, list[tuple[int, int]]] | None",
]


@dataclass(frozen=True, slots=True)
class TokenizedRollout:
    """One rollout's training sequence.

    Attributes:
        tokens: token ids of the whole conversation.
        masks: ``-100`` where no loss applies, else the token id.
        logprobs: inference logprobs (``1.0`` on masked positions), Phase 2 only.
        drift: turns whose prompt did not extend the tokens before it (Phase 2), or
            assistant turns the chat template did not render as a prefix (Phase 1).
    """

    tokens: list[int]
    masks: list[int]
    logprobs: list[float] | None = None
    drift: int = 0


def chat_template_tokens(
    messages: Sequence[Mapping[str, Any]],
    *,
    render: Render,
    encode_many: EncodeMany,
    eos_token: str,
    tools: Sequence[Mapping[str, Any]] | None = None,
    marked: Marked | None = None,
) -> TokenizedRollout:
    """Phase 1 tokens and masks from a chat template.

    With ``marked`` (a template with ``{% generation %}`` blocks), the conversation is
    rendered once and the marked spans are the assistant turns, as the template's author
    marked them; assistant turns left unmarked are counted in ``drift``. Without it, or
    when it returns ``None``, each turn is found by rendering, as follows.

    The conversation is rendered whole. Each assistant turn's text is what rendering
    ``messages[: i + 1]`` adds to ``messages[:i]`` with the generation prompt: the model's
    words and its end-of-turn token (the newline the template writes after it stays
    masked). A template that rewrites earlier turns (so a turn is not a prefix of the
    whole) leaves that turn masked and counts it in ``drift``. The text is then encoded in
    pieces (the prompt before each turn, the turn, the rest), together in one ``encode_many``
    call.

    Renders: one of the whole conversation and two per assistant turn (the prompt before
    it and the conversation up to it), except that a last message that is an assistant
    turn ends at the whole.

    Args:
        messages: the conversation (OpenAI shape).
        render: ``render(messages, tools=..., add_generation_prompt=...) -> text``.
        encode_many: texts to their token ids, adding no BOS/EOS (e.g.
            ``TextEncoder.encode_many``).
        eos_token: the end-of-turn token text.
        tools: the tool schemas the rollout was offered.
        marked: the template's marked render, if it has one.

    Raises:
        ValueError: if the template cannot render the conversation.
    """
    found = marked(messages, tools) if marked is not None else None
    if found is not None:
        full, spans = found
        turns = sum(1 for message in messages if message.get("role") == "assistant")
        return _encode_spans(full, spans, turns, encode_many)
    full = render(messages, tools=tools, add_generation_prompt=False)
    last = len(messages) - 1
    pieces: list[str] = []
    cursor = 0
    drift = 0
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        start_text = render(messages[:index], tools=tools, add_generation_prompt=True)
        if index == last:
            end_text = full
        else:
            end_text = render(messages[: index + 1], tools=tools, add_generation_prompt=False)
        if not (end_text.startswith(start_text) and full.startswith(end_text)):
            drift += 1
            continue
        start = len(start_text)
        end = len(end_text)
        trimmed = end_text[start:].rstrip()
        if trimmed.endswith(eos_token):
            end = start + len(trimmed)
        if start < cursor:
            # Overlaps the turn before it (a template that writes no text between turns).
            drift += 1
            continue
        pieces += [full[cursor:start], full[start:end]]
        cursor = end
    pieces.append(full[cursor:])
    return _encode(pieces, encode_many, drift)


def _encode_spans(
    full: str, spans: Sequence[tuple[int, int]], turns: int, encode_many: EncodeMany
) -> TokenizedRollout:
    """Tokens of ``full`` with the ``spans`` unmasked; a span that overlaps the one
    before it stays masked, and every assistant turn without a span is drift."""
    pieces: list[str] = []
    cursor = 0
    kept = 0
    for start, end in spans:
        if start < cursor:
            continue
        pieces += [full[cursor:start], full[start:end]]
        cursor = end
        kept += 1
    pieces.append(full[cursor:])
    return _encode(pieces, encode_many, max(0, turns - kept))


def _encode(pieces: Sequence[str], encode_many: EncodeMany, drift: int) -> TokenizedRollout:
    """``pieces`` alternate masked and unmasked text (masked first), encoded together."""
    tokens: list[int] = []
    masks: list[int] = []
    for number, ids in enumerate(encode_many(pieces)):
        tokens += ids
        masks += ids if number % 2 else [MASKED] * len(ids)
    return TokenizedRollout(tokens, masks, None, drift)


def managed_tokens(state: Mapping[str, Any]) -> TokenizedRollout:
    """Phase 2 tokens, masks and logprobs from a rollout's ``managed_state``.

    Raises:
        ValueError: if the state holds no sequence, or its lists differ in length.
    """
    nodes = state.get("nodes") or []
    if not nodes:
        raise ValueError("managed_state holds no token sequence (no model turn was recorded)")
    node = nodes[-1]
    tokens = [int(t) for t in node["tokens"]]
    masks = [int(m) for m in node["masked_tokens"]]
    logprobs = [float(lp) for lp in node["logprobs"]]
    if not len(tokens) == len(masks) == len(logprobs):
        raise ValueError(
            f"managed_state sequence lengths differ: {len(tokens)} tokens, {len(masks)} masks, "
            f"{len(logprobs)} logprobs"
        )
    return TokenizedRollout(tokens, masks, logprobs, len(nodes) - 1)
