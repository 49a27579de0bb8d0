"""GLM tool calls: GLM-4.5 / 4.6 (``glm45``) and GLM-4.7 / GLM-5 (``glm47``).

Both families write a call as the function name followed by key/value pairs in their
own tags (each tag is one special token of the GLM tokenizer). GLM-4.5 and GLM-4.6 put
each tag on its own line, and a newline between the text and each call::

    <think>The user wants the weather.</think>
    Let me check.
    <tool_call>get_weather
    <arg_key>city</arg_key>
    <arg_value>Beijing</arg_value>
    <arg_key>days</arg_key>
    <arg_value>3</arg_value>
    </tool_call>

GLM-4.7 and GLM-5 write the same markup with no whitespace at all::

    Let me check.<tool_call>get_time<arg_key>tz</arg_key><arg_value>UTC</arg_value></tool_call>

GLM-4.7 thinks by default and its prompt ends with ``<think>``, so its output starts
inside the reasoning (``reasoning</think>text<tool_call>...``): use
``think_prefilled=True`` for it. GLM-4.5 opens ``<think>`` itself.

What both parsers accept:

* text before, between and after calls, all kept as content;
* either layout, and any whitespace around the name and between the tags (also a
  literal ``\\n``, which GLM-4.7 sometimes writes between tags);
* a call without arguments (``<tool_call>get_time</tool_call>``);
* a repeated key: the last value wins.

Values. The chat templates write a string value as it is and any other value as JSON
(``tojson``), so a value's type is not in the text:

* with ``tools`` schemas, a declared parameter's value is converted to its declared
  type (``schema.coerce_value``): a ``string`` parameter keeps its text exactly,
  whitespace included;
* without a schema for the parameter, the value is decoded the way vLLM's and SGLang's
  GLM parsers (and hermes-agent's) do it: the text, stripped, as JSON; else as a Python
  literal (``True``, ``None``, ``'text'``, ``(1, 2)``, ``{'a': 1}``: the JSON-shaped part
  of Python's literal syntax, read here without ``eval``); else the text unchanged. So
  ``42`` is a number and ``hello`` a string. Unlike vLLM, text that is not one literal
  (such as ``1, 2``) and literals JSON cannot hold (sets, complex numbers, non-string
  keys) stay text, and a string keeps its whitespace.

Malformed, kept as content (or a ``ParseError`` in strict mode) while the good calls
beside it are kept: a call without ``</tool_call>`` (the output was cut off: the
arguments may be incomplete, so the call is never run); a call without a name, or with
a name that is not one word (whitespace, quotes, braces or angle brackets: a sentence
or a JSON object where the name should be); a key without ``</arg_key>`` or
``<arg_value>``; an empty key; a value without ``</arg_value>`` (a value running into
another ``<arg_key>`` or ``<arg_value>`` is taken as a lost ``</arg_value>``); other
text between the tags.

Rendering follows each chat template's assistant turn: ``<think>reasoning</think>``, the
content, then the calls, joined by newlines (GLM-4.5) or by nothing (GLM-4.7); left out
are only the turn's leading newline (GLM-4.5) and the empty ``<think></think>`` (or bare
``</think>``) the templates write when there is no reasoning. Non-string values are
written as JSON (``tojson``) with any GLM tag inside a string escaped (``\\u003c``), so
they read back unchanged. A string is written bare, as the template does, whenever it
reads back as itself: always for a parameter the ``tools`` schemas declare a string.
Without a schema, a string that would read back as something else (``"42"``, ``"true"``,
``" 42"``) is written as a JSON string instead (``<arg_value>"42"</arg_value>``); give the
parser the ``tools`` to render exactly what the template renders. A value that cannot be
spelled so that it reads back unchanged (a string holding ``</arg_value>``, ``<arg_key>``,
``<arg_value>`` or ``</tool_call>``; a value a schema would turn into another type) makes
``render`` raise ``RenderError`` (a ``ValueError``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, ClassVar

from hermes_parsers._api import register_parser
from hermes_parsers._arguments import load_json
from hermes_parsers._base import ToolCallParser
from hermes_parsers._errors import RenderError
from hermes_parsers._quick import Block, quick_blocks
from hermes_parsers._result import ParseResult
from hermes_parsers._scanner import Region
from hermes_parsers._schema import coerce_value
from hermes_parsers._segments import Malformed, RawCall, Segment
from hermes_parsers._tool_call import ToolCall
from hermes_parsers.formats._json_calls import escape_markers
from hermes_parsers.formats._python_literal import python_literal
from hermes_parsers.formats._xml_params import same_json

__all__ = ["Glm45Parser", "Glm47Parser"]

_START = "<tool_call>"
_END = "</tool_call>"
_KEY = "<arg_key>"
_KEY_END = "</arg_key>"
_VALUE = "<arg_value>"
_VALUE_END = "</arg_value>"
_THINK = "<think>"
_THINK_END = "</think>"

#: Tags a key cannot hold (it would read as a lost ``</arg_key>``).
_NOT_IN_KEY = (_KEY, _VALUE, _VALUE_END)
#: Tags ``render`` refuses in a key.
_UNWRITABLE_KEY = (*_NOT_IN_KEY, _KEY_END, _END)
#: Tags a value cannot hold: the value would end early, or read as a lost ``</arg_value>``.
_NOT_IN_VALUE = (_KEY, _VALUE, _VALUE_END, _END)
#: Characters a function name cannot hold (text or JSON where a name should be); Python's
#: ``\s`` is ``str.isspace``.
_BAD_NAME_CHAR = re.compile(r"[\s<>{}\"']")
#: A well-formed key/value opening: whitespace or literal ``\\n``s, a key without tags,
#: whitespace or literal ``\\n``s, then ``<arg_value>`` (anything else: the general reader).
#: Then the value, up to the first ``</arg_value>`` and holding neither ``<arg_key>`` nor
#: ``<arg_value>``, and that closing tag.
_PAIR = re.compile(
    r"(?:\s|\\n)*<arg_key>([^<]*)</arg_key>(?:\s|\\n)*<arg_value>"
    r"([^<]*+(?:<(?!/arg_value>|arg_key>|arg_value>)[^<]*+)*+)</arg_value>"
)


def _is_gap(text: str) -> bool:
    """Whether ``text`` (between two tags) is only whitespace and literal ``\\n``s."""
    return not text or text.isspace() or not text.replace("\\n", "").strip()


def _name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a function name, or ``None`` if it can."""
    if not name:
        return "tool call without a function name"
    if _BAD_NAME_CHAR.search(name):
        return f"function name {name[:40]!r} is not one word"
    return None


_FIRST_CHAR = re.compile(r"\S")
#: The characters JSON values and the Python literals read here can start with.
_LITERAL_STARTS = frozenset("{[\"'(+-.0123456789tfnTFN")


def _finite(value: Any) -> bool:
    """Whether ``value`` holds no infinite float (JSON's ``1e999`` decodes to one)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return True


def read_untyped(text: str) -> Any:
    """A value without a schema: stripped JSON, else a Python literal, else the text."""
    first = text[:1]
    if first not in _LITERAL_STARTS:
        if not first.isspace():
            return text  # empty, or prose: no literal starts with its first character
        found = _FIRST_CHAR.search(text)
        if found is None or found.group() not in _LITERAL_STARTS:
            return text  # prose: neither JSON nor a literal (and no copy of a long text)
    stripped = text.strip()
    try:
        return load_json(stripped)  # strict: rejects NaN and numbers that overflow
    except (ValueError, RecursionError):
        pass
    ok, value = python_literal(stripped)
    return value if ok else text


# the parsers ----------------------------------------------------------------------------
class _GlmParser(ToolCallParser):
    """``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>``."""

    markers = (_START,)
    vocabulary = (_START, _END, _KEY, _KEY_END, _VALUE, _VALUE_END, _THINK, _THINK_END)
    #: What the template writes between reasoning, content and calls.
    _joiner: ClassVar[str] = "\n"
    reasoning_padding = ""
    after_reasoning = "\n"
    reasoning_forbidden = (_THINK,)

    def _call_regions(self) -> list[Region]:
        return [Region(_START, _END, self._read_call)]

    # reading ----------------------------------------------------------------------------
    def _parse_quick(self, text: str) -> ParseResult | None:
        """Closed calls that ``_read_body`` reads, and no ``<think>`` outside them: what
        the scanner and ``_read_call`` give without a ``Malformed`` (inside a call the
        scanner looks for nothing but ``</tool_call>``, as here)."""
        if self.think_prefilled:
            return None
        return quick_blocks(text, (_START, _END), (_THINK,), self._quick_body)

    def _quick_body(self, text: str, at: int, end: int) -> Block:
        """``_read_body`` of ``text[at:end]`` when that reads a call, else ``None``. A
        body holding another ``<tool_call>`` is read again from it only when it reads as
        malformed: ``None`` here too."""
        read = self._read_body(text[at:end])
        return None if isinstance(read, str) else (read[0], read[1], None)

    def _read_call(self, body: str, raw: str, offset: int, terminated: bool) -> list[Segment]:
        at = offset - (len(raw) - len(body) - (len(_END) if terminated else 0))
        if not terminated:
            return [Malformed(raw, f"tool call not closed: {_END!r} missing", at)]
        read = self._read_body(body)
        if isinstance(read, str):
            return [Malformed(raw, read, at)]
        name, arguments = read
        return [RawCall(name, arguments, raw, at)]

    def _read_body(self, body: str) -> tuple[str, dict[str, Any]] | str:
        """``(name, arguments)`` from a call's body, or why it is malformed."""
        first = body.find(_KEY)
        pos = len(body) if first < 0 else first
        name = body[:pos].strip()
        problem = _name_problem(name)
        if problem is not None:
            return problem
        arguments: dict[str, Any] = {}
        # Whitespace after the last pair (GLM-4.5 writes a newline there) is a gap the
        # loop would only find after a failed match and a search: stop before it.
        size = len(body.rstrip()) if body[-1:].isspace() else len(body)
        untyped = not self.schemas  # then _convert is read_untyped
        while pos < size:
            # The common, well-formed pair in one match: gap, key, gap, <arg_value>.
            pair = _PAIR.match(body, pos)
            if pair is not None:
                key = pair[1].strip()
                if key:
                    value = pair[2]
                    if not untyped:
                        arguments[key] = self._convert(name, key, value)
                    elif (lead := value[:1]) not in _LITERAL_STARTS and not lead.isspace():
                        arguments[key] = value  # prose, as read_untyped returns it
                    else:
                        arguments[key] = read_untyped(value)
                    pos = pair.end()
                    continue
            key_at = body.find(_KEY, pos)
            gap = body[pos:] if key_at < 0 else body[pos:key_at]
            if not _is_gap(gap):
                return f"unexpected text {gap.strip()[:40]!r} in the arguments of {name!r}"
            if key_at < 0:
                break
            key_start = key_at + len(_KEY)
            key_end = body.find(_KEY_END, key_start)
            if key_end < 0:
                return f"{_KEY!r} without {_KEY_END!r} in the arguments of {name!r}"
            key = body[key_start:key_end]
            if "<" in key and any(tag in key for tag in _NOT_IN_KEY):
                return f"{_KEY!r} without {_KEY_END!r} in the arguments of {name!r}"
            key = key.strip()
            if not key:
                return f"empty argument key in a call to {name!r}"
            after_key = key_end + len(_KEY_END)
            value_at = body.find(_VALUE, after_key)
            if value_at < 0 or not _is_gap(body[after_key:value_at]):
                return f"argument {key!r} of {name!r} has no {_VALUE!r}"
            value_start = value_at + len(_VALUE)
            value_end = body.find(_VALUE_END, value_start)
            value = body[value_start:] if value_end < 0 else body[value_start:value_end]
            if value_end < 0 or _KEY in value or _VALUE in value:
                return f"the value of argument {key!r} of {name!r} has no {_VALUE_END!r}"
            arguments[key] = self._convert(name, key, value)
            pos = value_end + len(_VALUE_END)
        return name, arguments

    def _convert(self, tool: str, key: str, text: str) -> Any:
        """A value's text as the type the schema declares, else as ``read_untyped`` reads it."""
        schema = self.schemas.param(tool, key) if self.schemas else None
        if schema is None:
            return read_untyped(text)
        value = coerce_value(text, schema)
        return value if _finite(value) else text

    # rendering --------------------------------------------------------------------------
    def _render_body(self, content: str, calls: list[ToolCall]) -> str:
        rendered = self._render_calls(calls)
        return f"{content}{self._joiner}{rendered}" if content else rendered

    def _render_calls(self, calls: list[ToolCall]) -> str:
        return self._joiner.join(self._render_call(call) for call in calls)

    def _render_call(self, call: ToolCall) -> str:
        name = call.function.name
        problem = _name_problem(name)
        if problem is not None:
            raise RenderError(f"{self.name}: cannot write a call: {problem}", kind="call")
        sep = self._joiner
        pieces = [f"{_START}{name}{sep}"]
        for key, value in json.loads(call.function.arguments).items():
            if not key or key != key.strip() or any(t in key for t in _UNWRITABLE_KEY):
                raise RenderError(
                    f"{self.name}: cannot write the argument key {key!r} of {name!r}", kind="call"
                )
            spelled = self._spell(name, key, value)
            pieces.append(f"{_KEY}{key}{_KEY_END}{sep}{_VALUE}{spelled}{_VALUE_END}{sep}")
        pieces.append(_END)
        return "".join(pieces)

    def _spell(self, tool: str, key: str, value: Any) -> str:
        """The text of one value: as the template writes it when that reads back as
        ``value``; else (a string) as a JSON string; else ``ValueError``."""
        if isinstance(value, str):
            if any(tag in value for tag in _NOT_IN_VALUE):
                raise RenderError(
                    f"{self.name}: the string value of {key!r} in a call to {tool!r} holds "
                    "GLM markup, which the format cannot write inside a value",
                    kind="call",
                )
            candidates = [value, json.dumps(value, ensure_ascii=False)]
        else:
            candidates = [escape_markers(json.dumps(value, ensure_ascii=False), _NOT_IN_VALUE)]
        for text in candidates:
            if same_json(self._convert(tool, key, text), value):
                return text
        raise RenderError(
            f"{self.name}: the value {value!r} of {key!r} in a call to {tool!r} cannot be "
            "written so that it reads back unchanged (the tool's schema gives it another type)",
            kind="call",
        )


@register_parser("glm45", "glm46")
class Glm45Parser(_GlmParser):
    """GLM-4.5 and GLM-4.6: calls on their own lines (reads the GLM-4.7 layout too)."""


@register_parser("glm47", "glm5")
class Glm47Parser(_GlmParser):
    """GLM-4.7 and GLM-5: the GLM-4.5 markup with no whitespace (reads both layouts)."""

    _joiner = ""
    after_reasoning = ""
