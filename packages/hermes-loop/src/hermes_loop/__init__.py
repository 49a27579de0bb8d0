"""hermes-loop: a multi-turn tool-calling agent loop over any OpenAI-compatible endpoint.

Every public name is imported on first use: the loop pulls in ``jsonschema`` and the
endpoints ``openai`` (together about a second of start-up), which code that needs one
small piece (the model server's command line, a chat-template render in a worker
process) never pays for. ``lazy_exports`` makes such a package ``__getattr__``; the
other packages of the workspace use it for their own lazy names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes_loop._lazy import lazy_exports

if TYPE_CHECKING:
    from hermes_loop._dispatch import ToolOutcome, ToolRunner
    from hermes_loop._errors import (
        EndpointError,
        EndpointErrorKind,
        HermesLoopError,
        InvalidMessagesError,
        ResultFormatError,
        ToolDefinitionError,
        ToolInfrastructureError,
    )
    from hermes_loop._handler_pool import HandlerThreadPool
    from hermes_loop._loop import AgentLoop, HermesAgentLoop
    from hermes_loop._result import (
        AgentResult,
        InfraError,
        InfraErrorKind,
        RolloutProgress,
        ToolError,
        TurnRecord,
    )
    from hermes_loop._scope import LoopScope, bind_loop_scope, current_loop_scope
    from hermes_loop._tools import Tool, ToolInvocation, ToolLike
    from hermes_loop._toolsets import ToolRegistry, ToolSet, UnknownToolsetError
    from hermes_loop._trajectory import atif_trajectory
    from hermes_loop.endpoints._base import ChatServer, ChatSession, ModelTurn, SamplingParams
    from hermes_loop.endpoints._generate import GenerateChatServer
    from hermes_loop.endpoints._openai_chat import OpenAIChatServer

__version__ = "0.1.0"

__all__ = [
    "AgentLoop",
    "AgentResult",
    "ChatServer",
    "ChatSession",
    "EndpointError",
    "EndpointErrorKind",
    "GenerateChatServer",
    "HandlerThreadPool",
    "HermesAgentLoop",
    "HermesLoopError",
    "InfraError",
    "InfraErrorKind",
    "InvalidMessagesError",
    "LoopScope",
    "ModelTurn",
    "OpenAIChatServer",
    "ResultFormatError",
    "RolloutProgress",
    "SamplingParams",
    "Tool",
    "ToolDefinitionError",
    "ToolError",
    "ToolInfrastructureError",
    "ToolInvocation",
    "ToolLike",
    "ToolOutcome",
    "ToolRegistry",
    "ToolRunner",
    "ToolSet",
    "TurnRecord",
    "UnknownToolsetError",
    "__version__",
    "atif_trajectory",
    "bind_loop_scope",
    "current_loop_scope",
    "lazy_exports",
]

#: Names imported on first access, and the module that holds each.
_LAZY = {
    "AgentLoop": "hermes_loop._loop",
    "AgentResult": "hermes_loop._result",
    "ChatServer": "hermes_loop.endpoints._base",
    "ChatSession": "hermes_loop.endpoints._base",
    "EndpointError": "hermes_loop._errors",
    "EndpointErrorKind": "hermes_loop._errors",
    "GenerateChatServer": "hermes_loop.endpoints._generate",
    "HandlerThreadPool": "hermes_loop._handler_pool",
    "HermesAgentLoop": "hermes_loop._loop",
    "HermesLoopError": "hermes_loop._errors",
    "InfraError": "hermes_loop._result",
    "InfraErrorKind": "hermes_loop._result",
    "InvalidMessagesError": "hermes_loop._errors",
    "LoopScope": "hermes_loop._scope",
    "ModelTurn": "hermes_loop.endpoints._base",
    "OpenAIChatServer": "hermes_loop.endpoints._openai_chat",
    "ResultFormatError": "hermes_loop._errors",
    "RolloutProgress": "hermes_loop._result",
    "SamplingParams": "hermes_loop.endpoints._base",
    "Tool": "hermes_loop._tools",
    "ToolDefinitionError": "hermes_loop._errors",
    "ToolError": "hermes_loop._result",
    "ToolInfrastructureError": "hermes_loop._errors",
    "ToolInvocation": "hermes_loop._tools",
    "ToolLike": "hermes_loop._tools",
    "ToolOutcome": "hermes_loop._dispatch",
    "ToolRegistry": "hermes_loop._toolsets",
    "ToolRunner": "hermes_loop._dispatch",
    "ToolSet": "hermes_loop._toolsets",
    "TurnRecord": "hermes_loop._result",
    "UnknownToolsetError": "hermes_loop._toolsets",
    "atif_trajectory": "hermes_loop._trajectory",
    "bind_loop_scope": "hermes_loop._scope",
    "current_loop_scope": "hermes_loop._scope",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
