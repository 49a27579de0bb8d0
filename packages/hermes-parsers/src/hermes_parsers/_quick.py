"""What ``parse`` gives for text whose every call is well-formed, built without the
scanner and the assembler.

A format's ``_parse_quick`` reads the common case (content, then calls that are all
well-formed) with a few ``str.find`` calls and hands the calls to ``quick_result``, which
applies the assembler's own checks and id rule. Anything the quick reading does not
recognise makes it answer ``None``, and ``parse`` takes the general path, which gives the
same result for every text the quick reading accepts (``tests/parsers/test_quick.py``
compares the two on generated texts). A quick reading that has already done some of the
general path's work on a text it cannot read may instead finish the general path with it
(Llama's hands the C decoder's error for a refused object to its scanner, which would
otherwise decode that object again to find it).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any, TypeVar

from hermes_parsers._arguments import _LONG_STRING
from hermes_parsers._result import ParseResult
from hermes_parsers._tool_call import (
    _SET_FUNCTION,
    _SET_ID,
    _SET_NAME,
    _SET_TEXT,
    _SET_TYPE,
    _SET_VALUE,
    UNWRITTEN_SHORT,
    FunctionCall,
    ToolCall,
)

__all__ = [
    "Block",
    "QuickCall",
    "quick_blocks",
    "quick_call",
    "quick_calls_result",
    "quick_named_call",
    "quick_result",
    "quick_section",
]

#: One call as the quick reading found it: name, decoded arguments (a dict), the call's
#: text as written (its id's checksum covers it), the id the format wrote (or ``None``).
QuickCall = tuple[Any, dict[str, Any], str, str | None]

_T = TypeVar("_T")

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
    index: int,
    name: str,
    arguments: dict[str, Any],
    raw: str,
    identifier: str | None = None,
    checksum: int = -1,
) -> ToolCall | None:
    """The call at ``index`` of ``name`` (already stripped, not empty) with ``arguments``
    decoded from ``raw``: ``ToolCall._build(id, FunctionCall.from_value(name,
    arguments))`` inlined, its id ``identifier`` or the assembler's
    ``call_{index}_{crc32:08x}`` of ``raw``'s UTF-8; ``None`` if ``raw`` holds a lone
    surrogate. A caller that has that crc32 (and so knows ``raw`` holds no lone
    surrogate) passes it as ``checksum``; ``raw`` is then only measured (it may then be
    just the arguments' JSON text: its length tells whether any string in them can be
    long, see ``UNWRITTEN_SHORT``)."""
    if checksum < 0 and not (identifier and raw.isascii()):  # ASCII: no lone surrogate
        try:
            data = raw.encode()  # UTF-8: the id's checksum covers these bytes
        except UnicodeEncodeError:
            return None
        checksum = 0 if identifier else _crc32(data)
    function = _new(FunctionCall)
    _SET_NAME(function, name)
    # A decoded string is never longer than its JSON text: a short call holds no long one.
    _SET_TEXT(function, UNWRITTEN_SHORT if len(raw) < _LONG_STRING else None)
    _SET_VALUE(function, arguments)
    call = _new(ToolCall)
    # printf-style costs less here than an f-string.
    _SET_ID(call, identifier or "call_%d_%08x" % (index, checksum))  # noqa: UP031
    _SET_FUNCTION(call, function)
    _SET_TYPE(call, "function")
    return call


def quick_calls_result(content: str, calls: list[ToolCall]) -> ParseResult:
    """The ``ParseResult`` of ``content`` and calls made by ``quick_call``."""
    return _result(content.strip() or None, calls or None)


def quick_named_call(
    index: int, name: Any, arguments: dict[str, Any], raw: str, identifier: str | None = None
) -> ToolCall | None:
    """``quick_call`` for a name as the format read it: ``None`` unless it is a string
    that is not empty once stripped (``quick_result``'s check of each call)."""
    if type(name) is not str:
        return None
    name = name.strip()
    if not name:
        return None
    return quick_call(index, name, arguments, raw, identifier)


def quick_section(
    text: str,
    inner: int,
    close: int,
    markers: tuple[str, str, str],
    read: Callable[[str, int, int, int, int], _T | None],
) -> list[_T] | None:
    """The calls of the section ``text[inner:close]`` when it holds only calls separated
    by whitespace, each read by ``read``; ``None`` otherwise (no call, other text in the
    section, a call not closed before the next one or the section's end, or a call
    ``read`` refuses).

    ``markers`` are the call's opening and closing markers and what both start with
    (one search finds the closing marker and any opening marker before it). ``read(text,
    index, start, at, end)`` gets the call's index in the section, where its opening
    marker starts, and where the text between the markers starts and ends.
    """
    begin, end_marker, shared = markers
    calls: list[_T] = []
    position = inner
    start = text.find(begin, inner, close)
    while start >= 0:
        if start != position and not text[position:start].isspace():
            return None  # text in the section outside any call
        at = start + len(begin)
        end = text.find(shared, at, close)
        while end >= 0 and not text.startswith(end_marker, end):
            if text.startswith(begin, end):
                return None  # not closed before the next call
            end = text.find(shared, end + 1, close)
        if end < 0:
            return None  # not closed before the section's end
        call = read(text, len(calls), start, at, end)
        if call is None:
            return None
        calls.append(call)
        position = end + len(end_marker)
        start = text.find(begin, position, close)
    if not calls or (position != close and not text[position:close].isspace()):
        return None  # no call, or text after the last one
    return calls


#: What ``quick_blocks``' reader makes of a block: ``(name, arguments, id or None)`` for
#: a call, ``True`` for a block the general path keeps as content, ``None`` for anything
#: else (then the quick reading answers ``None``).
Block = tuple[Any, dict[str, Any], str | None] | bool | None


def quick_blocks(
    text: str,
    markers: tuple[str, str],
    markup: tuple[str, ...],
    read: Callable[[str, int, int], Block],
) -> ParseResult | None:
    """``parse``'s result for text whose calls each stand in a closed block (``markers``:
    its opening and closing marker), with text around them that holds none of
    ``markup`` (the format's other openers); ``None`` for anything else.

    ``read(text, at, end)`` reads the block's body ``text[at:end]`` (see ``Block``).
    """
    begin, end_marker = markers
    start = text.find(begin)
    if start < 0:
        return None
    outside: list[str] = []
    calls: list[QuickCall] = []
    position = 0
    while start >= 0:
        if start != position:
            gap = text[position:start]
            for marker in markup:
                if marker in gap:
                    return None
            outside.append(gap)
        at = start + len(begin)
        end = text.find(end_marker, at)
        if end < 0:
            return None
        found = read(text, at, end)
        position = end + len(end_marker)
        if found is None or found is False:
            return None
        if found is True:
            outside.append(text[start:position])
        else:
            calls.append((found[0], found[1], text[start:position], found[2]))
        start = text.find(begin, position)
    tail = text[position:]
    for marker in markup:
        if marker in tail:
            return None
    outside.append(tail)
    return quick_result("".join(outside), calls)
