"""Reading one Python literal of JSON's shape, without ``eval``.

Chat templates that write values with Jinja's ``| string`` filter, and models imitating
them, spell values as Python does: ``True``, ``None``, ``{'k': 'v'}``, ``(1, 2)``. The
untyped-value formats (GLM, Qwen3-Coder, LongCat's tag variant) read such text back with
``python_literal``, which accepts only what JSON can hold and never evaluates code.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

__all__ = ["python_literal"]


class _NotLiteral(Exception):
    """The text is not one literal of the supported kind."""


_MAX_DEPTH = 100
_SPACE = " \t\r\n"
_NUMBER = re.compile(r"[+-]?[0-9.][0-9A-Za-z_.]*(?:(?<=[eE])[+-][0-9][0-9_]*)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None}
_STRING_STOPS = {"'": re.compile(r"['\\\n]"), '"': re.compile(r'["\\\n]')}
_SIMPLE_ESCAPES = {
    "\n": "",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_NAMED_ESCAPE = re.compile(r"\{([^{}\n]{1,100})\}")
_OCTAL = re.compile(r"[0-7]{1,3}")


class _LiteralReader:
    """Reads one Python literal of JSON's shape: strings, numbers, ``True``/``False``/
    ``None``, lists, tuples (as lists) and dicts with string keys. Linear time."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def read(self) -> Any:
        value = self._value(0)
        self._space()
        if self.pos != len(self.text):
            raise _NotLiteral
        return value

    def _space(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _SPACE:
            pos += 1
        self.pos = pos

    def _peek(self) -> str:
        self._space()
        if self.pos >= len(self.text):
            raise _NotLiteral
        return self.text[self.pos]

    def _value(self, depth: int) -> Any:
        char = self._peek()
        if char in "[(":
            return self._sequence(depth + 1)
        if char == "{":
            return self._dict(depth + 1)
        if char in "'\"":
            return self._string()
        if char in "+-." or char.isdigit():
            return self._number()
        match = _WORD.match(self.text, self.pos)
        if match is None or match.group() not in _CONSTANTS:
            raise _NotLiteral
        self.pos = match.end()
        return _CONSTANTS[match.group()]

    def _sequence(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise _NotLiteral
        close = "]" if self.text[self.pos] == "[" else ")"
        self.pos += 1
        items: list[Any] = []
        comma = False
        while True:
            if self._peek() == close:
                self.pos += 1
                break
            items.append(self._value(depth))
            char = self._peek()
            if char == ",":
                self.pos += 1
                comma = True
            elif char != close:
                raise _NotLiteral
        if close == ")" and len(items) == 1 and not comma:
            return items[0]  # (x) is x, not a tuple
        return items

    def _dict(self, depth: int) -> dict[str, Any]:
        if depth > _MAX_DEPTH:
            raise _NotLiteral
        self.pos += 1
        result: dict[str, Any] = {}
        while True:
            if self._peek() == "}":
                self.pos += 1
                return result
            key = self._value(depth)
            if not isinstance(key, str) or self._peek() != ":":
                raise _NotLiteral
            self.pos += 1
            result[key] = self._value(depth)
            char = self._peek()
            if char == ",":
                self.pos += 1
            elif char != "}":
                raise _NotLiteral

    def _number(self) -> int | float:
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            raise _NotLiteral
        token = match.group()
        self.pos = match.end()
        try:
            return int(token, 0)
        except ValueError:
            if all(char in "0123456789_" for char in token.lstrip("+-")):
                raise _NotLiteral from None  # "010": Python has no such literal
        try:
            number = float(token)
        except ValueError:
            raise _NotLiteral from None
        if not math.isfinite(number):
            raise _NotLiteral
        return number

    def _string(self) -> str:
        text = self.text
        quote = text[self.pos]
        if text.startswith(quote * 3, self.pos):
            raise _NotLiteral  # triple-quoted strings are not read
        stops = _STRING_STOPS[quote]
        pos = self.pos + 1
        parts: list[str] = []
        while True:
            match = stops.search(text, pos)
            if match is None or match.group() == "\n":
                raise _NotLiteral
            parts.append(text[pos : match.start()])
            pos = match.end()
            if match.group() == quote:
                self.pos = pos
                return "".join(parts)
            char, pos = self._escape(pos)
            parts.append(char)

    def _escape(self, pos: int) -> tuple[str, int]:
        """The character a backslash escape at ``pos`` (after the backslash) stands for."""
        text = self.text
        if pos >= len(text):
            raise _NotLiteral
        char = text[pos]
        if char in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[char], pos + 1
        if char in _HEX_ESCAPES:
            digits = text[pos + 1 : pos + 1 + _HEX_ESCAPES[char]]
            if len(digits) != _HEX_ESCAPES[char] or not all(
                d in "0123456789abcdefABCDEF" for d in digits
            ):
                raise _NotLiteral
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise _NotLiteral  # beyond Unicode, or a lone surrogate UTF-8 cannot hold
            return chr(code), pos + 1 + len(digits)
        octal = _OCTAL.match(text, pos)
        if octal is not None:
            return chr(int(octal.group(), 8)), octal.end()
        if char == "N":
            named = _NAMED_ESCAPE.match(text, pos + 1)
            if named is None:
                raise _NotLiteral
            try:
                return unicodedata.lookup(named.group(1)), named.end()
            except KeyError:
                raise _NotLiteral from None
        return "\\" + char, pos + 1  # Python keeps unknown escapes as written


def python_literal(text: str) -> tuple[bool, Any]:
    """``(True, value)`` if ``text`` is one Python literal JSON can hold, else ``(False, None)``.

    Reads strings (single or double quotes, Python escapes), numbers (``0x``, ``_``,
    a sign), ``True``/``False``/``None``, lists, tuples (as lists) and dicts with string
    keys, nested up to 100 deep. Not read: what JSON cannot hold (sets, complex
    numbers, non-string keys, infinite floats) and escapes giving a lone surrogate
    (``'\\ud800'``). Never evaluates code; linear time.
    """
    try:
        return True, _LiteralReader(text).read()
    except _NotLiteral:
        return False, None
