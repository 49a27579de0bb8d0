"""``StreamParser``: incremental parsing of text that arrives in pieces."""

from __future__ import annotations

from hermes_parsers._assembly import Assembler
from hermes_parsers._errors import NotTextError, StreamClosedError
from hermes_parsers._events import StreamEvent
from hermes_parsers._result import ParseResult
from hermes_parsers._scanner import Scanner

__all__ = ["StreamParser"]


class StreamParser:
    """Feed text with ``feed(delta)``; each call returns the events that became certain.

    ``close()`` returns exactly what ``parse(full_text)`` returns, however the text was
    cut into pieces. A stream is single-use: feeding after ``close()`` raises.
    """

    __slots__ = ("_assembler", "_closed", "_result", "_scanner")

    def __init__(self, scanner: Scanner, assembler: Assembler) -> None:
        self._scanner = scanner
        self._assembler = assembler
        self._closed = False
        self._result: ParseResult | None = None

    def feed(self, delta: str) -> list[StreamEvent]:
        """Consume the next piece of text.

        Raises:
            NotTextError: (a TypeError) if ``delta`` is not a ``str``.
            StreamClosedError: (a RuntimeError) if the stream was already closed.
            ParseError: in strict mode, once malformed markup is certain.
        """
        if self._closed:
            raise StreamClosedError("feed() after close(): start a new stream with parser.stream()")
        if not isinstance(delta, str):
            raise NotTextError(f"feed() takes str, got {type(delta).__name__}; decode bytes first")
        return self._assembler.add(self._scanner.feed(delta))

    def close(self) -> ParseResult:
        """End the text and return the final ``ParseResult`` (idempotent).

        Raises:
            ParseError: in strict mode, if the end of the text leaves markup malformed.
        """
        if self._result is None:
            self._closed = True
            self._assembler.add(self._scanner.finish())
            self._result = self._assembler.result()
        return self._result

    def flush(self) -> list[StreamEvent]:
        """End the text and return the last events; ``close()`` then gives the result."""
        if self._closed:
            return []
        self._closed = True
        events = self._assembler.add(self._scanner.finish())
        self._result = self._assembler.result()
        return events
