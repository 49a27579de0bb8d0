"""The scripted model server: a real HTTP server on 127.0.0.1 that plays an LLM offline.

It speaks OpenAI's ``/v1/chat/completions`` (every role of the API) and ``/v1/responses``
(the Responses API), and the ``/generate`` route of Atropos' managed vLLM server, and
answers from a ``Script`` (a list of turns), a ``Replay`` of a recorded conversation, or
a ``Policy`` function; each turn can inject faults (HTTP errors, delays, hangs, truncated
bodies). Serving needs the ``hermes-loop[server]`` extra (``aiohttp``, ``tokenizers``);
``ModelServer`` and the route paths are imported from ``hermes_loop.server.app`` on first
use, so scripts, turns and ``ModelServerProcess`` work without it, and a missing extra is
an ``ImportError`` naming it.

>>> from hermes_loop.server import ModelServer, Script, Turn, Call
>>> script = Script([Turn(tool_calls=[Call("terminal", {"command": "ls"})]), Turn("Done.")])
>>> # async with ModelServer(script) as server:
>>> #     client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hermes_loop.server.completions import Completion, logprob_of, render_turn
from hermes_loop.server.process import ModelServerProcess, ModelServerThread, ServerStartError
from hermes_loop.server.responders import (
    ModelRequest,
    Policy,
    PolicyFunction,
    Replay,
    Responder,
    Script,
    ScriptExhaustedError,
    load_script_file,
    responders_from_data,
)
from hermes_loop.server.turns import FINISH_REASONS, Call, Fault, ScriptError, Turn

if TYPE_CHECKING:
    from hermes_loop.server.app import CHAT_PATH, GENERATE_PATH, RESPONSES_PATH, ModelServer

#: Names served from ``hermes_loop.server.app`` (which needs aiohttp) on first access.
_FROM_APP = ("CHAT_PATH", "GENERATE_PATH", "RESPONSES_PATH", "ModelServer")

__all__ = [
    "CHAT_PATH",
    "FINISH_REASONS",
    "GENERATE_PATH",
    "RESPONSES_PATH",
    "Call",
    "Completion",
    "Fault",
    "ModelRequest",
    "ModelServer",
    "ModelServerProcess",
    "ModelServerThread",
    "Policy",
    "PolicyFunction",
    "Replay",
    "Responder",
    "Script",
    "ScriptError",
    "ScriptExhaustedError",
    "ServerStartError",
    "Turn",
    "load_script_file",
    "logprob_of",
    "render_turn",
    "responders_from_data",
]


def __getattr__(name: str) -> Any:
    """``ModelServer`` and the route paths, imported when first asked for.

    Raises:
        ImportError: if the ``server`` extra (aiohttp) is not installed; the message says
            how to install it.
        AttributeError: for any other unknown name.
    """
    if name in _FROM_APP:
        return getattr(importlib.import_module("hermes_loop.server.app"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
