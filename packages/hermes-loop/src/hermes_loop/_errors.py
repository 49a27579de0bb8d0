"""The root of every exception hermes-loop raises.

Every error class of the package derives from :class:`HermesLoopError`, so a caller can
catch the whole package's failures with one ``except``. Where callers already rely on a
builtin base (``KeyError`` for an unknown toolset, ``ValueError`` for a bad script), the
class keeps it as a second base.

The tree (the classes defined elsewhere are named with their module)::

    HermesLoopError
    ├── EndpointError                 the model endpoint failed; ``kind`` says how
    ├── InvalidMessagesError          (also ValueError) ``run()`` got unusable messages
    ├── ToolDefinitionError           (also ValueError) a bad ``Tool``, or two of one name
    ├── ResultFormatError             (also ValueError) not a saved ``AgentResult``
    ├── ToolInfrastructureError       a tool handler's failure that is not the model's
    ├── dispatch.ToolNotStartedError  a blocking handler got no thread in time
    ├── tokenizer.TokenizerUnavailableError  (also ImportError) ``tokenizers`` missing
    ├── server.ScriptError            (also ValueError) a script the server cannot play
    ├── server.ScriptExhaustedError   (also LookupError) the script has no turn left
    ├── server.ServerStartError       (also RuntimeError) the server did not start
    └── toolsets.UnknownToolsetError  (also KeyError) an unregistered toolset name

Arguments out of range at construction (``max_turns=0``, ``concurrency=0``) raise plain
``ValueError``: those are programming errors, not failures to handle at run time.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "EndpointError",
    "EndpointErrorKind",
    "HermesLoopError",
    "InvalidMessagesError",
    "ResultFormatError",
    "ToolDefinitionError",
    "ToolInfrastructureError",
]

EndpointErrorKind = Literal[
    "rate_limited", "server_error", "timeout", "connection", "bad_request", "bad_response"
]
"""How an endpoint failed: HTTP 429; HTTP 5xx; no answer in time; the connection failed
or dropped; another HTTP 4xx; a complete HTTP 200 answer of the wrong shape."""


class HermesLoopError(Exception):
    """Base class of every exception raised by hermes-loop."""


class EndpointError(HermesLoopError):
    """The model endpoint failed and retrying did not help.

    Attributes:
        kind: an ``EndpointErrorKind``.
        status: the HTTP status when there was one.
    """

    def __init__(self, kind: EndpointErrorKind, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind: EndpointErrorKind = kind
        self.status = status


class InvalidMessagesError(HermesLoopError, ValueError):
    """The messages given to ``AgentLoop.run`` are not a list of OpenAI chat messages."""


class ToolDefinitionError(HermesLoopError, ValueError):
    """A tool's name or parameter schema is invalid, or two different tools share a name."""


class ResultFormatError(HermesLoopError, ValueError):
    """A file or dict is not a saved ``AgentResult``."""


class ToolInfrastructureError(HermesLoopError):
    """Raised by a tool handler whose failure is the infrastructure's, not the model's
    (the machine it drives is gone, a service it needs is down): the rollout ends with
    ``stop_reason="infra_error"`` (kind ``tool_infra``) instead of going on."""
