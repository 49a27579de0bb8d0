"""The scripted model server: a real HTTP server on 127.0.0.1 that plays an LLM offline.

It speaks OpenAI's ``/v1/chat/completions`` (every role of the API) and ``/v1/responses``
(the Responses API), and the ``/generate`` route of Atropos' managed vLLM server, and
answers from a ``Script`` (a list of turns), a ``Replay`` of a recorded conversation, or
a ``Policy`` function; each turn can inject faults (HTTP errors, delays, hangs, truncated
bodies). Serving needs the ``hermes-loop[server]`` extra (``aiohttp``, ``tokenizers``);
``ModelServer`` and the route paths are imported from ``hermes_loop.server._app`` on first
use, so scripts, turns and ``ModelServerProcess`` work without it, and a missing extra is
an ``ImportError`` naming it.

>>> from hermes_loop.server import ModelServer, Script, Turn, Call
>>> script = Script([Turn(tool_calls=[Call("terminal", {"command": "ls"})]), Turn("Done.")])
>>> # async with ModelServer(script) as server:
>>> #     client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_loop import _lazy
from hermes_loop.server._completions import Completion, logprob_of, render_turn
from hermes_loop.server._process import ModelServerProcess, ModelServerThread, ServerStartError
from hermes_loop.server._responders import (
    ModelRequest,
    Policy,
    PolicyFunction,
    Replay,
    Responder,
    Script,
    ScriptExhaustedError,
)
from hermes_loop.server._script_files import load_script_file, responders_from_data
from hermes_loop.server._turns import FINISH_REASONS, Call, Fault, ScriptError, Turn

if TYPE_CHECKING:
    from hermes_loop.server._app import CHAT_PATH, GENERATE_PATH, RESPONSES_PATH, ModelServer

#: Names imported on first access, from ``hermes_loop.server._app``: it needs aiohttp (an
#: ``ImportError`` that says how to install it when the ``server`` extra is missing).
_LAZY = dict.fromkeys(
    ("CHAT_PATH", "GENERATE_PATH", "RESPONSES_PATH", "ModelServer"), "hermes_loop.server._app"
)

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


__getattr__, __dir__ = _lazy.lazy_exports(__name__, _LAZY)
