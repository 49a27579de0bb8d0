"""hermes-parsers: turn raw model text into OpenAI-shaped tool calls, and back.

>>> from hermes_parsers import get_parser
>>> parser = get_parser("hermes")
>>> content, calls = parser.parse(
...     'Checking.<tool_call>{"name": "ls", "arguments": {"path": "/"}}</tool_call>'
... )
>>> content, calls[0].function.name, calls[0].function.arguments
('Checking.', 'ls', '{"path": "/"}')
"""

from __future__ import annotations

from hermes_parsers import formats as _formats  # registers the built-in formats
from hermes_parsers._api import get_parser, list_parsers, register_parser
from hermes_parsers._base import ToolCallParser
from hermes_parsers._errors import (
    ArgumentsError,
    HermesParsersError,
    NotTextError,
    OptionError,
    ParseError,
    RegistrationError,
    RenderError,
    StreamClosedError,
    ToolCallError,
    UnknownParserError,
)
from hermes_parsers._events import ContentDelta, ReasoningDelta, StreamEvent, ToolCallEvent
from hermes_parsers._registry import ENTRY_POINT_GROUP, ParserRegistry
from hermes_parsers._result import ParseResult
from hermes_parsers._stream import StreamParser
from hermes_parsers._tool_call import FunctionCall, ToolCall

__version__ = "0.1.0"

__all__ = [
    "ENTRY_POINT_GROUP",
    "ArgumentsError",
    "ContentDelta",
    "FunctionCall",
    "HermesParsersError",
    "NotTextError",
    "OptionError",
    "ParseError",
    "ParseResult",
    "ParserRegistry",
    "ReasoningDelta",
    "RegistrationError",
    "RenderError",
    "StreamClosedError",
    "StreamEvent",
    "StreamParser",
    "ToolCall",
    "ToolCallError",
    "ToolCallEvent",
    "ToolCallParser",
    "UnknownParserError",
    "__version__",
    "get_parser",
    "list_parsers",
    "register_parser",
]

del _formats
