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
    from hermes_loop.dispatch import ToolOutcome, ToolRunner
    from hermes_loop.endpoints._base import ChatServer, ChatSession, ModelTurn, SamplingParams
    from hermes_loop.endpoints._generate import GenerateChatServer
    from hermes_loop.endpoints._openai_chat import OpenAIChatServer
    from hermes_loop.errors import (
        EndpointError,
        EndpointErrorKind,
        HermesLoopError,
        InvalidMessagesError,
        ResultFormatError,
        ToolDefinitionError,
        ToolInfrastructureError,
    )
    from hermes_loop.handler_pool import HandlerThreadPool
    from hermes_loop.loop import AgentLoop, HermesAgentLoop
    from hermes_loop.result import (
        AgentResult,
        InfraError,
        InfraErrorKind,
        RolloutProgress,
        ToolError,
        TurnRecord,
    )
    from hermes_loop.scope import LoopScope, bind_loop_scope, current_loop_scope
    from hermes_loop.tools import Tool, ToolInvocation, ToolLike
    from hermes_loop.toolsets import ToolRegistry, ToolSet, UnknownToolsetError
    from hermes_loop.trajectory import atif_trajectory

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
    "AgentLoop": "hermes_loop.loop",
    "AgentResult": "hermes_loop.result",
    "ChatServer": "hermes_loop.endpoints._base",
    "ChatSession": "hermes_loop.endpoints._base",
    "EndpointError": "hermes_loop.errors",
    "EndpointErrorKind": "hermes_loop.errors",
    "GenerateChatServer": "hermes_loop.endpoints._generate",
    "HandlerThreadPool": "hermes_loop.handler_pool",
    "HermesAgentLoop": "hermes_loop.loop",
    "HermesLoopError": "hermes_loop.errors",
    "InfraError": "hermes_loop.result",
    "InfraErrorKind": "hermes_loop.result",
    "InvalidMessagesError": "hermes_loop.errors",
    "LoopScope": "hermes_loop.scope",
    "ModelTurn": "hermes_loop.endpoints._base",
    "OpenAIChatServer": "hermes_loop.endpoints._openai_chat",
    "ResultFormatError": "hermes_loop.errors",
    "RolloutProgress": "hermes_loop.result",
    "SamplingParams": "hermes_loop.endpoints._base",
    "Tool": "hermes_loop.tools",
    "ToolDefinitionError": "hermes_loop.errors",
    "ToolError": "hermes_loop.result",
    "ToolInfrastructureError": "hermes_loop.errors",
    "ToolInvocation": "hermes_loop.tools",
    "ToolLike": "hermes_loop.tools",
    "ToolOutcome": "hermes_loop.dispatch",
    "ToolRegistry": "hermes_loop.toolsets",
    "ToolRunner": "hermes_loop.dispatch",
    "ToolSet": "hermes_loop.toolsets",
    "TurnRecord": "hermes_loop.result",
    "UnknownToolsetError": "hermes_loop.toolsets",
    "atif_trajectory": "hermes_loop.trajectory",
    "bind_loop_scope": "hermes_loop.scope",
    "current_loop_scope": "hermes_loop.scope",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
