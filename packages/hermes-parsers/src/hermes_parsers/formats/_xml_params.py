"""Helpers for formats that write each tool-call argument as bare text between XML-ish tags.

Qwen3-Coder (``<parameter=city>\\nParis\\n</parameter>``) and GLM-4.5/4.7
(``<arg_key>city</arg_key><arg_value>Paris</arg_value>``) spell every argument value as
untyped text. This module holds what such formats share:

* ``MarkerFinder``: ``str.find`` over one text with a per-marker cache, so a parser whose
  position only moves forward finds markers in linear total time.
* ``read_untyped`` / ``read_value``: turning a value's text back into a JSON value, without
  and with the parameter's JSON schema.
* ``template_text`` / ``spell_value``: writing a value the way the model's chat template
  does, falling back to a JSON spelling when the template's spelling would not read back
  as the same value, or would contain one of the format's markers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from hermes_parsers._arguments import load_json
from hermes_parsers._schema import coerce_value
from hermes_parsers.formats._json_calls import escape_markers
from hermes_parsers.formats._python_literal import python_literal

__all__ = [
    "MarkerFinder",
    "read_untyped",
    "read_value",
    "same_json",
    "skip_space",
    "spell_value",
    "template_text",
    "trim_newlines",
]

_PYTHON_CONSTANTS: dict[str, Any] = {"True": True, "False": False, "None": None}
# What strict JSON text can start with, apart from the words true/false/null: anything
# else is not JSON, and is not worth an attempt (a failed decode costs an exception).
_JSON_STARTS = frozenset('{["-0123456789')
_JSON_WORDS = frozenset({"true", "false", "null"})
#: What the text read by ``read_untyped`` starts with when it is anything but a string:
#: JSON, the JSON words and the Python constants.
_UNTYPED_STARTS = _JSON_STARTS | frozenset("tfnTFN")
_STRING_TYPES = frozenset({"string", "str", "text", "varchar", "char", "enum"})
_DECODE_ERRORS = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)


class MarkerFinder:
    """Finds markers in one text, remembering each marker's next occurrence.

    ``find(marker, pos)`` equals ``text.find(marker, pos)``. While the positions asked
    about never decrease, each marker's searches cover disjoint stretches of the text, so
    the total work is linear in the text length however many times it is asked; a step
    back costs only the stretch stepped over.
    """

    __slots__ = ("_cache", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._cache: dict[str, tuple[int, int]] = {}  # marker -> (searched from, found at)

    def find(self, marker: str, pos: int) -> int:
        """The index of the first ``marker`` at or after ``pos``, or -1."""
        cached = self._cache.get(marker)
        if cached is not None:
            origin, found = cached
            if origin <= pos:
                if found < 0 or found >= pos:
                    return found
            else:
                # A step back: only the stretch before ``origin`` is unknown; past it the
                # first occurrence is the one already found.
                early = self.text.find(marker, pos, origin + len(marker) - 1)
                found = early if early >= 0 else found
                self._cache[marker] = (pos, found)
                return found
        found = self.text.find(marker, pos)
        self._cache[marker] = (pos, found)
        return found

    def first(self, markers: Iterable[str], pos: int) -> tuple[int, str]:
        """The earliest of ``markers`` at or after ``pos``: ``(index, marker)``, or ``(-1, "")``."""
        best, which = -1, ""
        for marker in markers:
            index = self.find(marker, pos)
            if index >= 0 and (best < 0 or index < best):
                best, which = index, marker
        return best, which


def skip_space(text: str, pos: int) -> int:
    """The first index at or after ``pos`` that is not whitespace (``len(text)`` if none)."""
    end = len(text)
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def trim_newlines(text: str) -> str:
    """Drop one leading and one trailing newline: the template writes ``\\n`` around values."""
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    return text


def _python_container(text: str) -> tuple[bool, Any]:
    """A Python-literal list or dict such as ``{'a': True}`` (what ``str(dict)`` writes)."""
    ok, value = python_literal(text)
    return (True, value) if ok and isinstance(value, list | dict) else (False, None)


def read_untyped(text: str) -> Any:
    """Read a value's text with no schema to go by.

    In order: the text (stripped) as strict JSON (numbers, ``true``, ``null``, quoted
    strings, objects, arrays); the Python constants ``True``, ``False``, ``None`` (what a
    Jinja ``| string`` filter writes for booleans and null); a Python-literal list or dict
    (``{'k': 'v'}``); otherwise the text itself, unchanged (not stripped). Never raises.
    """
    head = text[:1]
    if head not in _UNTYPED_STARTS and head.strip():
        return text  # prose: no JSON value, constant or container starts like this
    stripped = text.strip()
    if not stripped:
        return text
    first = stripped[0]
    # The words and constants are at most 5 characters: longer text is not hashed.
    short = len(stripped) <= 5
    if first in _JSON_STARTS or (short and stripped in _JSON_WORDS):
        try:
            return load_json(stripped)
        except _DECODE_ERRORS:
            pass
    if short and stripped in _PYTHON_CONSTANTS:
        return _PYTHON_CONSTANTS[stripped]
    if first in "[{":
        ok, value = _python_container(stripped)
        if ok:
            return value
    return text


def _schema_types(schema: Mapping[str, Any], depth: int = 0) -> set[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared.lower()}
    if isinstance(declared, list):
        return {t.lower() for t in declared if isinstance(t, str)}
    found: set[str] = set()
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and depth < 16:
            for option in options:
                if isinstance(option, Mapping):
                    found |= _schema_types(option, depth + 1)
    if not found and "enum" in schema:
        found.add("enum")
    return found


def read_value(text: str, schema: Mapping[str, Any] | None) -> Any:
    """Read a value's text, converting it to the type ``schema`` declares.

    With a schema, ``hermes_parsers._schema.coerce_value`` decides; when the schema admits
    no string type and no declared type fits, the untyped reading is used instead (so a
    Python-literal dict still becomes an object). Without a schema: ``read_untyped``.
    Never raises.
    """
    if schema is None:
        return read_untyped(text)
    try:
        value = coerce_value(text, schema)
    except RecursionError:
        value = text
    if isinstance(value, str) and value == text and not _schema_types(schema) & _STRING_TYPES:
        return read_untyped(text)
    return value


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same, telling ``1``, ``1.0`` and ``true`` apart."""
    try:
        return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return False


def template_text(value: Any, scalars: Literal["python", "json"] = "python") -> str:
    """How a chat template writes an argument value.

    Strings are written as they are and objects/arrays with ``tojson`` (transformers'
    filter: ``json.dumps(value, ensure_ascii=False)``). Other scalars: ``"python"`` is the
    Jinja ``| string`` filter (``True``, ``None``, ``1.5``), as in the Qwen3-Coder
    template; ``"json"`` is ``tojson`` (``true``, ``null``), as in GLM's.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list) or scalars == "json":
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def spell_value(
    value: Any,
    read: Callable[[str], Any],
    *,
    template: str,
    forbidden: Sequence[str],
) -> str | None:
    """The text to write for ``value`` so that ``read`` gives it back.

    ``template`` (the chat template's own spelling, see ``template_text``) is used when it
    contains none of the ``forbidden`` markers and reads back as ``value``. Otherwise the
    JSON spelling, with any forbidden marker's first character ``\\u``-escaped, is used if
    it reads back. ``None`` when neither does (the caller raises).
    """
    if not any(marker in template for marker in forbidden) and same_json(read(template), value):
        return template
    try:
        spelled = escape_markers(json.dumps(value, ensure_ascii=False), forbidden)
    except (TypeError, ValueError, RecursionError):
        return None
    if any(marker in spelled for marker in forbidden):
        return None
    return spelled if same_json(read(spelled), value) else None
