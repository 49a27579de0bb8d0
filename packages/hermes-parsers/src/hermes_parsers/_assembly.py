"""Turning scanner segments into a ``ParseResult`` and stream events.

One ``Assembler`` serves both ``parse()`` and streaming, so the two cannot disagree.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from hermes_parsers._arguments import decode_arguments
from hermes_parsers._errors import ArgumentsError, ParseError, ParseErrorKind
from hermes_parsers._events import ContentDelta, ReasoningDelta, StreamEvent, ToolCallEvent
from hermes_parsers._result import ParseResult
from hermes_parsers._segments import Content, Malformed, RawCall, Reasoning, Segment
from hermes_parsers._tool_call import FunctionCall, ToolCall

__all__ = ["Assembler", "call_id"]

_build_call = ToolCall._build
_crc32 = zlib.crc32
_from_value = FunctionCall.from_value


def call_id(index: int, name: str, raw: str, data: bytes | None = None) -> str:
    """A deterministic id for a call that the format gave none: the same call text at
    the same place in the output always gets the same id (``call_<index>_<crc32>``).
    ``data``: ``raw`` already encoded as UTF-8, if the caller has it."""
    if data is None:
        data = raw.encode("utf-8", "surrogatepass")
    checksum = zlib.crc32(data)
    return f"call_{index}_{checksum:08x}"


class Assembler:
    """Accumulates segments; validates calls; lenient or strict about malformed markup."""

    __slots__ = ("_calls", "_content", "_parser", "_reasoning", "_strict")

    def __init__(self, parser: str, *, strict: bool) -> None:
        self._parser = parser
        self._strict = strict
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[ToolCall] = []

    def add(self, segments: Iterable[Segment], *, events: bool = True) -> list[StreamEvent]:
        """Take the next segments in text order and return the events they make certain
        (no events are built with ``events=False``, as ``parse()`` needs none).

        Raises:
            ParseError: in strict mode, on the first malformed segment.
        """
        out: list[StreamEvent] = []
        content = self._content
        calls = self._calls
        for segment in segments:
            # Segment classes are final, so exact type checks are enough (and fast).
            kind = type(segment)
            if kind is Content:
                text = segment.text  # type: ignore[union-attr]
                if not text:
                    continue
            elif kind is RawCall:
                call = self._validate(segment)  # type: ignore[arg-type]
                if call is not None:
                    if events:
                        out.append(ToolCallEvent(len(calls), call))
                    calls.append(call)
                    continue
                text = segment.raw  # type: ignore[union-attr]
            elif kind is Reasoning:
                self._reasoning.append(segment.text)  # type: ignore[union-attr]
                if events:
                    out.append(ReasoningDelta(segment.text))  # type: ignore[union-attr]
                continue
            elif kind is Malformed:
                self._malformed(segment)  # type: ignore[arg-type]
                text = segment.raw  # type: ignore[union-attr]
            else:
                raise TypeError(f"not a segment: {segment!r}")
            content.append(text)
            if events:
                out.append(ContentDelta(text))
        return out

    def _malformed(self, segment: Malformed, kind: ParseErrorKind = "markup") -> None:
        if self._strict:
            raise ParseError(
                self._parser, segment.reason, segment.offset, segment.raw[:80], kind=kind
            )

    def _validate(self, raw: RawCall) -> ToolCall | None:
        name = raw.name
        if type(name) is str:
            name = name.strip()
        if not isinstance(name, str) or not name:
            self._malformed(
                Malformed(raw.raw, "tool call without a function name", raw.offset), "name"
            )
            return None
        text = raw.raw
        data = None  # the call's UTF-8 bytes, kept for its id's checksum
        if not text.isascii():
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:
                reason = f"call to {name!r} holds a lone surrogate, which no UTF-8 text can hold"
                self._malformed(Malformed(text, reason, raw.offset), "encoding")
                return None
        arguments = raw.arguments
        if type(arguments) is not dict:
            try:
                arguments = decode_arguments(arguments)
            except ArgumentsError as exc:
                self._malformed(
                    Malformed(raw.raw, f"call to {name!r}: {exc}", raw.offset), "arguments"
                )
                return None
        identifier = raw.id
        if not identifier:
            # call_id(), inlined: parse() builds one per call.
            checksum = _crc32(text.encode("ascii") if data is None else data)
            identifier = f"call_{len(self._calls)}_{checksum:08x}"
        return _build_call(identifier, _from_value(name, arguments))

    def result(self) -> ParseResult:
        """The ``ParseResult`` for everything added so far."""
        content = "".join(self._content).strip() or None
        reasoning = "".join(self._reasoning).strip() or None
        return ParseResult(content, list(self._calls) or None, reasoning)
