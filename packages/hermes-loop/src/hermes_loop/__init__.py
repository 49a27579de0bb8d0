"""hermes-loop: a multi-turn tool-calling agent loop over any OpenAI-compatible endpoint."""

from __future__ import annotations

from hermes_loop.dispatch import ToolOutcome, ToolRunner
from hermes_loop.endpoints import (
    ChatServer,
    ChatSession,
    GenerateChatServer,
    ModelTurn,
    OpenAIChatServer,
    SamplingParams,
)
from hermes_loop.errors import (
    EndpointError,
    HermesLoopError,
    InvalidMessagesError,
    ResultFormatError,
    ToolDefinitionError,
)
from hermes_loop.handler_pool import HandlerThreadPool
from hermes_loop.loop import AgentLoop, HermesAgentLoop
from hermes_loop.result import AgentResult, InfraError, ToolError
from hermes_loop.tools import Tool, ToolInvocation
from hermes_loop.toolsets import ToolRegistry, ToolSet, UnknownToolsetError

__version__ = "0.1.0"

__all__ = [
    "AgentLoop",
    "AgentResult",
    "ChatServer",
    "ChatSession",
    "EndpointError",
    "GenerateChatServer",
    "HandlerThreadPool",
    "HermesAgentLoop",
    "HermesLoopError",
    "InfraError",
    "InvalidMessagesError",
    "ModelTurn",
    "OpenAIChatServer",
    "ResultFormatError",
    "SamplingParams",
    "Tool",
    "ToolDefinitionError",
    "ToolError",
    "ToolInvocation",
    "ToolOutcome",
    "ToolRegistry",
    "ToolRunner",
    "ToolSet",
    "UnknownToolsetError",
    "__version__",
]
