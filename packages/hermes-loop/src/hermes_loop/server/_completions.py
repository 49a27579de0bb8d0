"""A turn turned into what a model would have produced: raw text, tokens and logprobs.

The raw text is the turn written by a ``hermes_parsers`` parser's ``render`` (reasoning
as a ``<think>`` block, tool calls in the format's markup); the tokens are that text
followed by the end-of-turn token, as a model that stops at ``<|im_end|>`` emits them.
Logprobs are deterministic negative numbers, a function of position and token id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hermes_loop.server._turns import Call, Turn
from hermes_loop.templates._chat_template import render_call
from hermes_loop.templates._tokenizer import Tokenizer
from hermes_parsers import ToolCallParser

__all__ = ["Completion", "logprob_of", "prepare", "render_turn"]


def logprob_of(position: int, token_id: int) -> float:
    """The scripted model's logprob for ``token_id`` at ``position``: in [-1.0, -0.001]."""
    return -(((token_id * 7919 + position * 104729) % 1000) + 1) / 1000.0


def _call_text(call: Call, parser: ToolCallParser) -> str:
    decoded = call.decoded_arguments()
    arguments: Any = call.arguments_json if decoded is None else decoded
    return render_call({"name": call.name, "arguments": arguments}, parser)


def render_turn(turn: Turn, parser: ToolCallParser) -> str:
    """The raw text a model in ``parser``'s format would write for ``turn`` (no stop token)."""
    # Empty reasoning reads back as none, so it is not written at all.
    reasoning = turn.reasoning if turn.reasoning and turn.reasoning.strip() else None
    calls = [{"name": call.name, "arguments": call.decoded_arguments()} for call in turn.tool_calls]
    if all(call["arguments"] is not None for call in calls):
        try:
            return parser.render(turn.content, calls or None, reasoning=reasoning)
        except ValueError:
            pass
    head = f"<think>\n{reasoning.strip()}\n</think>\n\n" if reasoning is not None else ""
    content = (turn.content or "").strip()
    rendered = "\n".join(_call_text(call, parser) for call in turn.tool_calls)
    if content and rendered:
        return f"{head}{content}\n{rendered}"
    return head + (content or rendered)


@dataclass(frozen=True, slots=True)
class Completion:
    """A turn, prepared once: raw text, token ids (end-of-turn token last), logprobs.

    ``message`` is the OpenAI assistant message; its tool calls carry ``id: None``
    unless the script gave one (``message_for`` fills them in per request).
    """

    turn: Turn
    text: str
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    visible_text: str
    finish_reason: str
    message: dict[str, Any]
    digest: str

    def message_for(self, turn_index: int) -> dict[str, Any]:
        """The assistant message with ``call_...`` ids, distinct per turn and call."""
        calls = self.message.get("tool_calls")
        if not calls:
            return dict(self.message)
        message = dict(self.message)
        message["tool_calls"] = [
            call if call["id"] else {**call, "id": f"call_{self.digest}{turn_index:03d}{index:03d}"}
            for index, call in enumerate(calls)
        ]
        return message


def prepare(turn: Turn, tokenizer: Tokenizer, parser: ToolCallParser) -> Completion:
    """Render, tokenize and score ``turn`` once."""
    text = render_turn(turn, parser)
    ids = (*tokenizer.encode(text), tokenizer.eos_token_id)
    logprobs = tuple(logprob_of(i, token) for i, token in enumerate(ids))
    finish = turn.finish_reason or ("tool_calls" if turn.tool_calls else "stop")
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()
    return Completion(
        turn=turn,
        text=text,
        token_ids=ids,
        logprobs=logprobs,
        visible_text=tokenizer.decode(ids, skip_special_tokens=True),
        finish_reason=finish,
        message=turn.to_message(),
        digest=digest,
    )


def truncated_message(
    ids: Sequence[int], tokenizer: Tokenizer, parser: ToolCallParser
) -> dict[str, Any]:
    """The assistant message a client would read from a reply cut after ``ids``."""
    return parser.parse(tokenizer.decode(ids)).to_message()
