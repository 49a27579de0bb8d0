"""Model endpoints the loop can drive: Phase 1 (chat) and Phase 2 (raw generation).

The two endpoint classes are imported on first use: they pull in the ``openai`` package
(about a second of start-up), which code that needs only the shared types — the model
server's command line, for one — never pays for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_loop import _lazy
from hermes_loop.endpoints._base import (
    ChatServer,
    ChatSession,
    EndpointError,
    ModelTurn,
    SamplingParams,
)

if TYPE_CHECKING:
    from hermes_loop.endpoints._generate import GenerateChatServer
    from hermes_loop.endpoints._openai_chat import OpenAIChatServer

__all__ = [
    "ChatServer",
    "ChatSession",
    "EndpointError",
    "GenerateChatServer",
    "ModelTurn",
    "OpenAIChatServer",
    "SamplingParams",
]

#: Names imported on first access, and the module that holds each.
_LAZY = {
    "GenerateChatServer": "hermes_loop.endpoints._generate",
    "OpenAIChatServer": "hermes_loop.endpoints._openai_chat",
}


__getattr__, __dir__ = _lazy.lazy_exports(__name__, _LAZY)
