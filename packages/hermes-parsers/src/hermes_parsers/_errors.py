"""Errors raised by hermes-parsers: one root, ``HermesParsersError``, and a class per kind.

Each class also derives from the built-in exception it replaces (``ValueError``,
``KeyError``, ``TypeError``, ``RuntimeError``), so code written against those keeps
working. Where one class covers several situations, ``.kind`` (a ``Literal``) tells them
apart: classify errors by class and ``kind``, never by their message text.

    HermesParsersError
    ├── ParseError (ValueError)          strict mode: malformed markup; .kind, .reason, ...
    ├── UnknownParserError (KeyError)    get_parser: no parser by that name
    ├── RegistrationError (ValueError, TypeError)  register_parser refused; .kind
    ├── ToolCallError (ValueError)       a tool call given to the package is invalid; .kind
    │   └── ArgumentsError               its arguments are not a JSON object; .problem
    ├── RenderError (ValueError)         render cannot write this turn; .kind
    ├── OptionError (ValueError)         a parser option has a value it does not take
    ├── NotTextError (TypeError)         parse()/feed() given something other than str
    └── StreamClosedError (RuntimeError) feed() after close()
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

__all__ = [
    "ArgumentsError",
    "ArgumentsErrorKind",
    "HermesParsersError",
    "NotTextError",
    "OptionError",
    "ParseError",
    "ParseErrorKind",
    "RegistrationError",
    "RegistrationErrorKind",
    "RenderError",
    "RenderErrorKind",
    "StreamClosedError",
    "ToolCallError",
    "ToolCallErrorKind",
    "UnknownParserError",
]

#: ``markup``: the format's markup is broken (unclosed, stray, unreadable JSON body...);
#: ``name``: a call without a usable function name; ``arguments``: arguments that are not
#: a JSON object; ``encoding``: a call holding a lone surrogate, which UTF-8 cannot carry.
ParseErrorKind = Literal["markup", "name", "arguments", "encoding"]
#: ``invalid_json``: not valid JSON; ``not_object``: JSON, but not an object;
#: ``unencodable``: a value that cannot be written as strict JSON (NaN, a set...).
ArgumentsErrorKind = Literal["invalid_json", "not_object", "unencodable"]
#: ``name``: no function name (a string); ``arguments``: see ``ArgumentsError``.
ToolCallErrorKind = Literal["name", "arguments"]
#: ``content``: the content or reasoning holds this format's markup, or the format cannot
#: hold content beside calls; ``call``: a call's name, id, key or value cannot be written
#: so that it reads back unchanged.
RenderErrorKind = Literal["content", "call"]
#: ``not_a_parser``: the decorated object is not a ``ToolCallParser`` subclass;
#: ``empty_name``: a name or alias is empty; ``name_taken``: another class has the name.
RegistrationErrorKind = Literal["not_a_parser", "empty_name", "name_taken"]


class HermesParsersError(Exception):
    """The root of every error hermes-parsers raises on purpose."""


class ParseError(HermesParsersError, ValueError):
    """Strict mode only: the text holds tool-call markup that is malformed.

    Attributes:
        parser: name of the parser that raised.
        kind: what kind of problem (see ``ParseErrorKind``).
        reason: what was wrong, in words.
        position: character offset in the text where the malformed markup starts.
        snippet: up to 80 characters of the text at ``position``.
    """

    def __init__(
        self,
        parser: str,
        reason: str,
        position: int,
        snippet: str,
        *,
        kind: ParseErrorKind = "markup",
    ) -> None:
        self.parser = parser
        self.kind: ParseErrorKind = kind
        self.reason = reason
        self.position = position
        self.snippet = snippet
        super().__init__(
            f"{self.where()} (use strict=False to keep malformed markup as content instead)"
        )

    def where(self) -> str:
        """``parser: reason at offset N: 'snippet'``, without advice on what to do."""
        return f"{self.parser}: {self.reason} at offset {self.position}: {self.snippet!r}"


class UnknownParserError(HermesParsersError, KeyError):
    """``get_parser`` was asked for a name no parser is registered under."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        self.known = sorted(known)
        super().__init__(name)

    def __str__(self) -> str:
        return (
            f"no tool-call parser named {self.name!r}; known parsers: {', '.join(self.known)}. "
            "Register more with @register_parser or the 'hermes_parsers' entry-point group."
        )


class RegistrationError(HermesParsersError, ValueError, TypeError):
    """``register_parser`` refused a class or a name (see ``RegistrationErrorKind``).

    A ``TypeError`` too, as a non-parser class used to raise one."""

    def __init__(self, message: str, *, kind: RegistrationErrorKind) -> None:
        self.kind: RegistrationErrorKind = kind
        super().__init__(message)


class ToolCallError(HermesParsersError, ValueError):
    """A tool call handed to the package (``ToolCall.from_dict``, ``render``) is invalid."""

    def __init__(self, message: str, *, kind: ToolCallErrorKind = "name") -> None:
        self.kind: ToolCallErrorKind = kind
        super().__init__(message)


class ArgumentsError(ToolCallError):
    """The arguments of a call are not a JSON object (see ``ArgumentsErrorKind``)."""

    def __init__(self, message: str, *, problem: ArgumentsErrorKind = "invalid_json") -> None:
        self.problem: ArgumentsErrorKind = problem
        super().__init__(message, kind="arguments")


class RenderError(HermesParsersError, ValueError):
    """``render`` cannot write this turn in the format (see ``RenderErrorKind``)."""

    def __init__(self, message: str, *, kind: RenderErrorKind) -> None:
        self.kind: RenderErrorKind = kind
        super().__init__(message)


class OptionError(HermesParsersError, ValueError):
    """A parser was made with an option value it does not take (e.g. Mistral's ``style``)."""


class NotTextError(HermesParsersError, TypeError):
    """``parse()`` or ``feed()`` was given something other than ``str`` (decode bytes
    first)."""


class StreamClosedError(HermesParsersError, RuntimeError):
    """``feed()`` was called on a stream after ``close()``."""
