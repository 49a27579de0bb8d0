"""Which conversation a request belongs to, and how far along it is.

A scripted reply is chosen by the number of assistant turns the request already holds;
fault attempts are counted per conversation, keyed by a hash of its opening (everything
up to and including the first user message), which stays the same on every turn and
every retry of one rollout. Chat requests carry messages; ``/generate`` requests carry a
ChatML prompt, read here as text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from hermes_loop.templates._chat_template import IM_END, IM_START

__all__ = ["chat_key", "chat_turn_index", "prompt_key", "prompt_turn_index"]

_ASSISTANT = f"{IM_START}assistant"
_USER = f"{IM_START}user"


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()


def chat_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """The conversation key of a chat request's ``messages``."""
    end = len(messages)
    for index, message in enumerate(messages):
        if message.get("role") == "user":
            end = index + 1
            break
    return _digest(json.dumps(list(messages[:end]), sort_keys=True, default=str))


def chat_turn_index(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many assistant turns a chat request's ``messages`` already hold."""
    return sum(1 for message in messages if message.get("role") == "assistant")


def prompt_key(text: str) -> str:
    """The conversation key of a ChatML prompt."""
    start = text.find(_USER)
    if start >= 0:
        end = text.find(IM_END, start)
        prefix = text[: end + len(IM_END)] if end >= 0 else text
    else:
        first = text.find(_ASSISTANT)
        prefix = text[:first] if first > 0 else text
    return _digest(prefix)


def prompt_turn_index(text: str) -> int:
    """How many assistant turns a ChatML prompt already holds (an open one does not count)."""
    count = text.count(_ASSISTANT)
    if count and IM_END not in text[text.rfind(_ASSISTANT) :]:
        count -= 1
    return count
