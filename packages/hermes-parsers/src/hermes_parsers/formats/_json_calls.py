"""Helpers shared by formats that write a call as a JSON object ``{"name", "arguments"}``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from hermes_parsers._arguments import decode_json_prefix, load_json
from hermes_parsers._quick import Block, quick_blocks
from hermes_parsers._result import ParseResult
from hermes_parsers._segments import Content, Malformed, RawCall, Segment
from hermes_parsers._tool_call import ToolCall

__all__ = [
    "call_from_object",
    "dump_call_object",
    "escape_markers",
    "quick_json_blocks",
    "read_json_object_body",
]


def call_from_object(
    value: Any, raw: str, offset: int, argument_keys: Sequence[str] = ("arguments",)
) -> Segment:
    """A ``RawCall`` from a decoded ``{"name": ..., "arguments": {...}}`` object.

    ``argument_keys`` are tried in order (llama writes ``parameters``).
    """
    if not isinstance(value, dict):
        return Malformed(raw, "a tool call must be a JSON object", offset)
    if "name" not in value:
        return Malformed(raw, 'tool call JSON has no "name"', offset)
    arguments: Any = None
    for key in argument_keys:
        if key in value:
            arguments = value[key]
            break
    return RawCall(value["name"], arguments, raw, offset, value.get("id") or None)


def read_json_object_body(body: str, raw: str, offset: int, terminated: bool) -> list[Segment]:
    """Read a region body holding one JSON call object.

    A terminated body must be exactly one JSON value. An unterminated one (the text
    ended before the closing marker) may be followed by more text, kept as content.
    """
    if not body or body.isspace():
        return [Malformed(raw, "empty tool call", offset)]
    if terminated:
        try:
            value = load_json(body)
        except ValueError as exc:
            return [Malformed(raw, f"tool call is not valid JSON ({exc})", offset)]
        return [call_from_object(value, raw, offset)]
    lead = len(body) - len(body.lstrip())
    try:
        value, end = decode_json_prefix(body, lead)
    except ValueError as exc:
        return [Malformed(raw, f"unterminated tool call is not valid JSON ({exc})", offset)]
    start_len = len(raw) - len(body)
    segments: list[Segment] = [call_from_object(value, raw[: start_len + end], offset)]
    if body[end:]:
        segments.append(Content(body[end:]))
    return segments


def quick_json_blocks(
    text: str,
    start_tag: str,
    end_tag: str,
    outside_markers: Sequence[str],
    *,
    strict: bool,
    other_body: Callable[[str], bool] | None = None,
) -> ParseResult | None:
    """The quick reading (see ``hermes_parsers._quick``) of a format whose calls are
    closed ``start_tag``...``end_tag`` blocks read by ``read_json_object_body`` in a
    region that retries nested openers, and whose other openers are ``outside_markers``.

    Takes blocks holding one JSON object with a ``"name"`` and object (or absent or null)
    ``"arguments"``, with none of ``outside_markers`` outside the blocks (inside a block
    the scanner looks for nothing but ``end_tag``, as here). Leniently, a block that is
    not such an object is content, as the general path keeps it, unless its body holds
    another ``start_tag`` (read again from there). ``None`` for anything else, and for a
    body ``other_body`` says the format reads some other way."""

    def read(text: str, at: int, end: int) -> Block:
        body = text[at:end]
        if other_body is not None and other_body(body):
            return None
        try:
            value = load_json(body)
        except (ValueError, RecursionError):
            value = None
        if type(value) is not dict or "name" not in value:
            return None if strict or start_tag in body else True
        arguments = value.get("arguments")
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict:
            return None
        return (value["name"], arguments, value.get("id") or None)

    return quick_blocks(text, (start_tag, end_tag), tuple(outside_markers), read)


def escape_markers(json_text: str, markers: Sequence[str]) -> str:
    """Spell any marker inside ``json_text`` with its first character ``\\u``-escaped.

    Markers cannot occur in JSON outside string literals, and their first characters
    (``<``, ``[``, ``｜``...) never belong to an escape sequence, so this changes only
    how strings are spelled, never what they decode to.
    """
    for marker in markers:
        if marker in json_text:
            json_text = json_text.replace(marker, f"\\u{ord(marker[0]):04x}{marker[1:]}")
    return json_text


def dump_call_object(
    call: ToolCall, markers: Sequence[str], arguments_key: str = "arguments"
) -> str:
    """``{"name": ..., "arguments": {...}}`` for ``call``, with ``markers`` escaped."""
    arguments = json.loads(call.function.arguments)
    text = json.dumps({"name": call.function.name, arguments_key: arguments}, ensure_ascii=False)
    return escape_markers(text, markers)
