"""What ``parse`` gives for text whose every call is well-formed, built without the
scanner and the assembler.

A format's ``_parse_quick`` reads the common case (content, then calls that are all
well-formed) with a few ``str.find`` calls and hands the calls to ``quick_result``, which
applies the assembler's own checks and id rule. Anything the quick reading does not
recognise makes it answer ``None``, and ``parse`` takes the general path, which gives the
same result for every text the quick reading accepts (``tests/parsers/test_quick.py``
compares the two on generated texts).
"""

from __future__ import annotations

import zlib
from typing import Any

from hermes_parsers.result import ParseResult
from hermes_parsers.tool_call import (
    _SET_FUNCTION,
    _SET_ID,
    _SET_NAME,
    _SET_TEXT,
    _SET_TYPE,
    _SET_VALUE,
    FunctionCall,
    ToolCall,
)

__all__ = ["QuickCall", "quick_call", "quick_calls_result", "quick_result"]

#: One call as the quick reading found it: name, decoded arguments (a dict), the call's
#: text as written (its id's checksum covers it), the id the format wrote (or ``None``).
QuickCall = tuple[Any, dict[str, Any], str, str | None]

_new = object.__new__
_crc32 = zlib.crc32
_result = ParseResult._quick


def quick_result(content: str, calls: list[QuickCall]) -> ParseResult | None:
    """The ``ParseResult`` of ``content`` (all the text outside the calls, joined) and
    ``calls``, as the assembler makes it when every call is valid; ``None`` when one is
    not (a name that is not a non-empty string once stripped, a call holding a lone
    surrogate), for the general path to report."""
    built: list[ToolCall] = []
    for name, arguments, raw, identifier in calls:
        if type(name) is not str:
            return None
        name = name.strip()
        if not name:
            return None
        call = quick_call(len(built), name, arguments, raw, identifier)
        if call is None:
            return None
        built.append(call)
    return _result(content.strip() or None, built or None)


def quick_call(
    index: int, name: str, arguments: dict[str, Any], raw: str, identifier: str | None = None
) -> ToolCall | None:
    """The call at ``index`` of ``name`` (already stripped, not empty) with ``arguments``
    decoded from ``raw``: ``ToolCall._build(id, FunctionCall.from_value(name,
    arguments))`` inlined, its id ``identifier`` or the assembler's
    ``call_{index}_{crc32:08x}`` of ``raw``'s UTF-8; ``None`` if ``raw`` holds a lone
    surrogate."""
    try:
        data = raw.encode()  # UTF-8: the id's checksum covers these bytes
    except UnicodeEncodeError:
        return None
    function = _new(FunctionCall)
    _SET_NAME(function, name)
    _SET_TEXT(function, None)
    _SET_VALUE(function, arguments)
    call = _new(ToolCall)
    # printf-style costs less here than an f-string.
    _SET_ID(call, identifier or "call_%d_%08x" % (index, _crc32(data)))  # noqa: UP031
    _SET_FUNCTION(call, function)
    _SET_TYPE(call, "function")
    return call


def quick_calls_result(content: str, calls: list[ToolCall]) -> ParseResult:
    """The ``ParseResult`` of ``content`` and calls made by ``quick_call``."""
    return _result(content.strip() or None, calls or None)
