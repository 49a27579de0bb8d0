"""Llama 3.1 / 3.2 / 3.3 and Llama 4 JSON tool calls (``llama3_json``, ``llama4_json``).

Llama writes a call as a bare JSON object, with no markup around it::

    {"name": "get_weather", "parameters": {"city": "Paris"}}

Both parsers read the same things (vLLM serves both names with one parser too):

* Where a call may be. A JSON object is read wherever an opening ``{`` appears in the
  content, not only at the start of the text: models often write a sentence first, and
  vLLM and the reference implementation read calls anywhere as well.
* What is a call. A JSON object with a ``"name"`` and either ``"arguments"`` or
  ``"parameters"`` (``"arguments"`` wins when both are present), wherever it is; as in vLLM
  and the reference implementation, ``{"name": "now"}`` without either key is not a call.
  Other keys, such as the ``"type": "function"`` that Meta's own tooling writes, are
  ignored. Arguments may also be a JSON string holding an object (double-encoded); a
  non-string or empty name, or arguments that are not an object, make the call malformed.
* Call positions. The start of the text, the end of a ``<think>`` block, right after a
  ``<|python_tag|>`` / ``<|python_start|>`` / ``<|python_end|>`` token, and right after a
  call (optionally past one ``;`` separator). An object at a call position is tool-call
  markup: if it is not a call (no ``"name"``, no arguments, broken JSON) it is malformed
  (kept as content; ``strict`` raises).
* Elsewhere, ``{`` is ordinary text unless it opens a call: an object that is not a call
  (``{"name": "Alice"}``, ``{x}``, ``f() { ... }``) stays content silently, and only broken
  JSON whose first key is ``"name"`` counts as malformed.
* Several calls. Separated by ``;`` (``{...}; {...}``, what vLLM reads), by whitespace or
  by nothing (``{...}{...}``, what the Llama 4 template writes). A ``;`` between two calls,
  or after the last call at the end of the text, is markup; any other ``;`` is content.
* Special tokens. ``<|python_tag|>`` (Llama 3) must be followed by a JSON call: Llama 3.1's
  built-in tools (``<|python_tag|>brave_search.call(query="...")``) and code-interpreter
  text are not JSON calls, so the tag is malformed there and kept with the text as content.
  ``<|python_start|>`` and ``<|python_end|>`` (Llama 4, which wraps calls as
  ``<|python_start|>{...}<|python_end|>``; the Hugging Face template wraps the *content*
  that way instead) are dropped wherever they appear.
* Content is all text outside calls and reasoning, before and after the calls.
* Reasoning: ``<think>...</think>`` (distilled reasoning models on Llama) becomes
  ``reasoning``; an unclosed ``<think>`` makes the rest reasoning. With
  ``think_prefilled`` the text starts inside ``<think>``.

How far an object runs is decided while the text arrives, by tracking strings, escapes
and brackets, so streaming needs no look-ahead and gives ``parse()``'s result for every
chunking. An object stops being read at the first character that JSON cannot have there
outside a string (``;``, ``)``, ``<``, a mismatched bracket, or anything but ``"`` or
``}`` right after ``{``); that character is read again as content, so ``Use { and then
{"name": ...}`` still finds the call. Strings may hold raw control characters (newlines);
``NaN``, ``Infinity``, numbers too large for a float (``1e999``) and ``\\u`` escapes that
leave a lone surrogate (``\\ud800``) make the object invalid. Each character is
examined a bounded number of times: time is linear in the input.

Values are typed JSON, so ``tools`` schemas change nothing here (as in vLLM and SGLang,
a string stays a string even where the schema declares a number).

Rendering follows the chat templates:

* ``llama3_json`` writes ``{"name": "f", "parameters": {...}}`` (Llama 3.1/3.2/3.3
  template). The template drops a tool-call turn's content and renders a single call, so
  content beside calls is refused, and several calls are joined with ``"; "``, the
  separator vLLM and SGLang read.
* ``llama4_json`` writes the content directly followed by one object per call with no
  separator, as vLLM's ``tool_chat_template_llama4_json.jinja`` does (the Hugging Face
  Llama 4 template also wraps the content in ``<|python_start|>...<|python_end|>``, which
  Meta called a mistake; both spellings parse).

``render`` checks that its output parses back to the same content, calls and reasoning,
and raises ``RenderError`` when it would not (for instance content that itself holds a
call-shaped JSON object).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from hermes_parsers._api import register_parser
from hermes_parsers._arguments import (
    _LAX_SCAN,
    _SURROGATE_ESCAPE,
    decode_json_prefix,
    json_end,
    load_json,
)
from hermes_parsers._base import ToolCallParser
from hermes_parsers._errors import RenderError
from hermes_parsers._quick import quick_calls_result, quick_named_call
from hermes_parsers._result import ParseResult
from hermes_parsers._scanner import Scanner
from hermes_parsers._segments import Content, Malformed, RawCall, Reasoning, Segment
from hermes_parsers._tool_call import ToolCall

__all__ = ["Llama3JsonParser", "Llama4JsonParser"]

PYTHON_TAG: Final = "<|python_tag|>"
PYTHON_START: Final = "<|python_start|>"
PYTHON_END: Final = "<|python_end|>"
_THINK_START: Final = "<think>"
_THINK_END: Final = "</think>"
_MARKERS: Final = (_THINK_START, PYTHON_TAG, PYTHON_START, PYTHON_END)
_LONGEST: Final = max(len(marker) for marker in _MARKERS)

# Content: the characters that can start something (an object or a marker); away from a
# call position, only a "{" that can open an object (a key or "}" next, or the text ends).
_CONTENT_STOP: Final = re.compile(r"[{<]")
_SOFT_STOP: Final = re.compile(r'<|\{(?=[ \t\n\r]*+(?:["}]|\Z))')
_NON_SPACE: Final = re.compile(r"[^ \t\n\r]")
_SPACE: Final = re.compile(r"[ \t\n\r]*+")
# Inside an object, outside strings: characters JSON allows there and whole string literals.
_SKIP: Final = re.compile(r'(?:[ \t\n\r:,0-9A-Za-z+.\-]++|"(?:[^"\\]++|\\[\s\S])*+")*+')
# Runs of brackets (deeply nested arrays), with the whitespace JSON allows between them.
_OPEN_RUN: Final = re.compile(r"[\[ \t\n\r]*+")
_CLOSE_RUN: Final = re.compile(r"[\] \t\n\r]*+")
# Inside a string: everything up to the closing quote (or a backslash ending the text).
_STRING_REST: Final = re.compile(r'(?:[^"\\]++|\\[\s\S])*+')
_NAME_FIRST: Final = re.compile(r'\{[ \t\n\r]*"name"')
# The object reader's steps in one match per bracket, for an object the C decoder refused
# (see ``_LlamaScanner._refused``): what ``_SKIP`` passes over, then an opening "{" with
# the whitespace after it (group 1), a bracket or "}" (group 2), anything else (group 3),
# or the end of the text (no group). ``[^"\\]`` is spelt as ranges, which the expression
# engine tests several times faster.
_STRUCTURE: Final = re.compile(
    r"[ \t\n\r:,0-9A-Za-z+.\-]*+"
    r'(?:"[\x00-!#-\[\]-\U0010ffff]*+(?:\\[\s\S][\x00-!#-\[\]-\U0010ffff]*+)*+"'
    r"[ \t\n\r:,0-9A-Za-z+.\-]*+)*+"
    r"(?:(\{)[ \t\n\r]*+|([\[\]}])|([\s\S]))?"
)
# The decoder's errors for one missing character that ``_object`` passes over.
_MISSING: Final = {"Expecting ':' delimiter": ":", "Expecting ',' delimiter": ","}

_TAG_REASON: Final = f"{PYTHON_TAG} is not followed by a JSON tool call"
_UNTERMINATED: Final = "tool call JSON is unterminated (the text ended inside it)"
_NO_ARGUMENTS: Final = 'tool call JSON has no "parameters" (or "arguments")'


# Scanner modes.
_CONTENT: Final = 0
_OBJECT: Final = 1
_TAG: Final = 2
_SEPARATOR: Final = 3
_THINK: Final = 4


def _end(pattern: re.Pattern[str], s: str, i: int) -> int:
    """Where ``pattern``'s match at ``s[i]`` ends (these patterns also match empty text)."""
    found = pattern.match(s, i)
    return found.end() if found else i


def _marker_prefix(text: str) -> bool:
    """Whether ``text`` is a proper prefix of a marker (it may still become one)."""
    return len(text) < _LONGEST and any(
        len(text) < len(marker) and marker.startswith(text) for marker in _MARKERS
    )


def _plain_angles(text: str) -> bool:
    """Whether every ``<`` in ``text`` is plain content: no marker in it, and its end is
    not the beginning of one. Every marker is ``<think>`` or starts with ``<|``, and
    holds no other ``<``, so only the last ``<`` can begin one at the end."""
    if "<|" in text or _THINK_START in text:
        return False
    last = text.rfind("<")
    return last < 0 or not _marker_prefix(text[last:])


class _LlamaScanner:
    """The incremental scanner behind both parsers (see the module docstring).

    ``feed`` consumes each character once in content and a bounded number of times inside
    an object (a rejected object's last character is read again as content), and never
    rescans text it has already settled.
    """

    def __init__(
        self,
        *,
        think_prefilled: bool,
        whole: bool = False,
        refusal: tuple[str, int, json.JSONDecodeError] | None = None,
    ) -> None:
        # A lenient parse of the whole text (one feed, then finish): malformed markup is
        # content, so a refused object that no markup follows is content to the end, and
        # where it ends need not be found (``_refused``).
        self._whole = whole
        # What the C decoder raised for the object at ``text[j]`` (``(text, j, error)``),
        # already known to the caller: ``_open`` takes it instead of decoding again.
        self._refusal = refusal
        self._mode = _THINK if think_prefilled else _CONTENT
        self._carry = ""  # content: text that may begin a marker
        self._pos = 0  # absolute offset of the start of ``_carry``
        self._at_call = True  # a "{" here is tool-call markup
        self._after_call = False  # only whitespace since the last call
        # A <|python_tag|> or ";" (plus whitespace) waiting for what follows.
        self._hold: list[str] = []
        self._hold_offset = 0
        # The object being read.
        self._parts: list[str] = []
        self._prefix = 0  # length of the tag or separator at the start of ``_parts``
        self._tagged = False  # that prefix is a <|python_tag|>
        self._budget = 0  # fast-path decoding this feed may still spend on failures
        self._offset = 0  # absolute offset of ``_parts[0]``
        self._hard = False  # the object is at a call position
        self._closers: list[str] = []
        self._in_string = False
        self._escape = False
        self._expect_key = False
        # The reasoning block being read.
        self._think: list[str] = []
        self._think_tail = ""

    # protocol ---------------------------------------------------------------------
    def feed(self, text: str) -> list[Segment]:
        out: list[Segment] = []
        if (
            self._mode == _CONTENT
            and not self._carry
            and not self._after_call
            and "{" not in text
            and ("<" not in text or _plain_angles(text))
        ):
            # In content, only "{" (an object) and "<" (a marker) start anything.
            self._emit(text, out)
            self._pos += len(text)
            return out
        s = self._carry + text
        self._carry = ""
        self._budget = 4 * len(s) + 64
        base = self._pos
        i, n = 0, len(s)
        while i < n:
            mode = self._mode
            if mode == _CONTENT:
                i = self._content(s, i, base, out)
            elif mode == _OBJECT:
                i = self._object(s, i, base, out)
            elif mode == _THINK:
                i = self._reasoning(s, i, out)
            else:
                i = self._held(s, i, out)
        self._pos = base + n - len(self._carry)
        return out

    def finish(self) -> list[Segment]:
        out: list[Segment] = []
        mode = self._mode
        if mode == _CONTENT:
            self._emit(self._carry, out)
            self._carry = ""
        elif mode == _OBJECT:
            out.extend(self._settle("".join(self._parts), _UNTERMINATED, complete=False))
        elif mode == _TAG:
            out.append(Malformed("".join(self._hold), _TAG_REASON, self._hold_offset))
        elif mode == _THINK:
            out.append(Reasoning("".join(self._think)))
        # _SEPARATOR: a ";" after the last call at the end of the text is call markup.
        self._mode = _CONTENT
        self._parts, self._hold, self._think = [], [], []
        return out

    # content ----------------------------------------------------------------------
    def _emit(self, text: str, out: list[Segment]) -> None:
        if text:
            out.append(Content(text))
            if self._at_call and not text.isspace():
                self._at_call = False

    def _content(self, s: str, i: int, base: int, out: list[Segment]) -> int:
        n = len(s)
        if self._after_call:
            found = _NON_SPACE.search(s, i)
            j = found.start() if found else n
            self._emit(s[i:j], out)
            if found is None:
                return n
            self._after_call = False
            if s[j] == ";":
                self._mode = _SEPARATOR
                self._hold = [";"]
                self._hold_offset = base + j
                return j + 1
            i = j
        start = i
        while True:
            hard = self._at_call
            found = (_CONTENT_STOP if hard else _SOFT_STOP).search(s, i)
            if found is None:
                self._emit(s[start:], out)
                return n
            j = found.start()
            if s[j] == "{":
                self._emit(s[start:j], out)
                start = j
                # _SOFT_STOP found only a "{" that can open an object; a "{" found at a
                # call position that the content before it has just left is checked here.
                if hard and not self._at_call:
                    k = _SPACE.match(s, j + 1).end()  # type: ignore[union-attr]
                    if k < n and s[k] != '"' and s[k] != "}":
                        # Cannot open an object (``{x}``, ``{ to``): ordinary text, as
                        # the object reader would conclude at ``s[k]``.
                        i = k
                        continue
                return self._open(s, j, "", base + j, self._at_call, out)
            marker = next((m for m in _MARKERS if s.startswith(m, j)), None)
            if marker is None:
                # A marker start at the end of the text is held back until it is certain.
                if n - j < _LONGEST and _marker_prefix(s[j:]):
                    self._emit(s[start:j], out)
                    self._carry = s[j:]
                    return n
                i = j + 1
                continue
            self._emit(s[start:j], out)
            if marker == _THINK_START:
                self._mode = _THINK
            elif marker == PYTHON_TAG:
                self._mode = _TAG
                self._hold = [marker]
                self._hold_offset = base + j
            else:  # <|python_start|> / <|python_end|>: structure only, dropped
                self._at_call = True
            return j + len(marker)

    def _held(self, s: str, i: int, out: list[Segment]) -> int:
        """After ``<|python_tag|>`` or a ``;`` separator: wait for the next non-space."""
        found = _NON_SPACE.search(s, i)
        j = found.start() if found else len(s)
        if j > i:
            self._hold.append(s[i:j])
        if found is None:
            return j
        held = "".join(self._hold)
        self._hold = []
        if s[j] == "{":
            return self._open(s, j, held, self._hold_offset, True, out)
        if self._mode == _TAG:
            out.append(Malformed(held, _TAG_REASON, self._hold_offset))
            self._at_call = False
        else:
            self._emit(held, out)
        self._mode = _CONTENT
        return j

    # objects ----------------------------------------------------------------------
    def _open(
        self, s: str, j: int, prefix: str, offset: int, hard: bool, out: list[Segment]
    ) -> int:
        """Read the object whose ``{`` is ``s[j]``; return where to continue in ``s``.

        ``prefix`` is the held ``<|python_tag|>`` or ``;`` (and whitespace) before it,
        starting at ``offset``. When the object is complete and valid in ``s``, the C
        decoder reads it at once; the scanner would end it at the same ``}`` (it accepts
        everything JSON accepts), so the result does not depend on how the text arrived.
        A failed attempt costs up to ``j`` (the decoder's error counts lines from the
        start of ``s``), and ``_refused`` may decode the rest of ``s`` once more, so
        failures draw on a budget of four times the text per feed.
        """
        self._prefix = len(prefix)
        self._tagged = prefix.startswith(PYTHON_TAG)
        self._offset = offset
        self._hard = hard
        refusal = self._refusal
        if self._budget > 0 and refusal is not None and refusal[0] is s and refusal[1] == j:
            # The decoder's error here is known (not raised again: the traceback would
            # then hold this frame, and this frame the error).
            self._refusal = None
            self._budget -= refusal[2].pos + 1
            ended = self._refused(s, j, prefix, refusal[2], out)
            if ended >= 0:
                return ended
        elif self._budget > 0:
            try:
                value, end = decode_json_prefix(s, j, control_characters=True)
            except json.JSONDecodeError as exc:
                self._budget -= exc.pos + 1
                ended = self._refused(s, j, prefix, exc, out)
                if ended >= 0:
                    return ended
            except ValueError:  # NaN, 1e999, a lone surrogate, too deep
                self._budget -= j + 1
            else:
                if isinstance(value, dict):
                    self._mode = _CONTENT
                    out.extend(self._settle(prefix + s[j:end], "", complete=True, value=value))
                    return end
        self._mode = _OBJECT
        self._parts = [prefix + "{"]
        self._closers = ["}"]
        self._in_string = False
        self._escape = False
        self._expect_key = True
        return j + 1

    def _refused(
        self, s: str, j: int, prefix: str, error: json.JSONDecodeError, out: list[Segment]
    ) -> int:
        """Settle the object at ``s[j]`` that the C decoder refused with ``error`` where
        ``_object`` would end it, and return where to continue in ``s``; -1 when ``s``
        ends inside the object (``_object`` then reads it as the text arrives).

        Where it ends: when the decoder missed only a ``:`` or ``,`` at the error, the
        text with that character put there decodes, and ends where ``_object`` ends the
        object (which reads every JSON text as the decoder does and passes over that
        character with no decision); otherwise ``_STRUCTURE`` takes ``_object``'s steps.
        """
        at = error.pos
        missing = _MISSING.get(error.msg)
        if (
            self._whole
            and missing is not None
            and at < len(s)
            and s.find("{", at) < 0
            and s.find("<", at) < 0
        ):
            # A wrong character at ``at`` (not the end of the text), and no object or
            # marker can start after it (the object reader passes over the valid JSON
            # before it): from the object on, the text is content whatever the reader
            # would decide.
            self._mode = _CONTENT
            self._parts = []
            self._at_call = self._after_call = False
            out.append(Content(prefix + s[j:]))
            return len(s)
        cost = len(s) - j  # the copy, and at most as much decoding
        if missing is not None and self._budget > 2 * cost:
            self._budget -= 2 * cost
            end = json_end(s[j:at] + missing + s[at:], control_characters=True)
            if end > 0:
                return self._invalid(s, j, j + end - 1, prefix, error, out)
        closers: list[str] = []
        n = len(s)
        for found in _STRUCTURE.finditer(s, j):
            group = found.lastindex
            i = found.end()
            if group == 1:  # "{": a key or "}" must follow
                if i < n and (s[i] == '"' or s[i] == "}"):
                    closers.append("}")
                    continue
                if i >= n:
                    return -1
            elif group == 2:
                char = s[i - 1]
                if char == "[":
                    closers.append("]")
                    continue
                if char == closers[-1]:
                    closers.pop()
                    if closers:
                        continue
                    return self._invalid(s, j, i, prefix, error, out)
                i -= 1
            elif group == 3:
                i -= 1
                if s[i] == '"':  # a string the text ends inside
                    return -1
            else:  # the text ends
                return -1
            self._mode = _CONTENT
            reason = f"tool call is not valid JSON (unexpected {s[i]!r})"
            out.extend(self._settle(prefix + s[j:i], reason, complete=False))
            return i
        return -1  # pragma: no cover - the expression matches at the end of the text

    def _invalid(
        self, s: str, j: int, i: int, prefix: str, error: json.JSONDecodeError, out: list[Segment]
    ) -> int:
        """Settle the complete object ``s[j:i]``, which the C decoder refused with
        ``error`` (read from ``s``), and return ``i``. The decoder stopped inside the
        object, having read nothing past its closing bracket, so decoding the object
        alone stops at the same place with the same message: the reason is ``error``'s,
        counted from the object's start (``_settle`` would decode it again to say so)."""
        self._mode = _CONTENT
        at = error.pos
        if at >= i:  # pragma: no cover - the decoder stops inside the object
            out.extend(self._settle(prefix + s[j:i], "", complete=True))
            return i
        if j == 0:
            reason = f"tool call is not valid JSON ({error})"
        else:  # as ``json.JSONDecodeError`` words it (printf-style costs less here)
            line = s.rfind("\n", j, at)
            reason = "tool call is not valid JSON (%s: line %d column %d (char %d))" % (  # noqa: UP031
                error.msg,
                s.count("\n", j, at) + 1 if line >= 0 else 1,
                at - line if line >= 0 else at - j + 1,
                at - j,
            )
        out.extend(self._settle(prefix + s[j:i], reason, complete=False))
        return i

    def _object(self, s: str, i: int, base: int, out: list[Segment]) -> int:
        n = len(s)
        start = i
        closers = self._closers
        while True:
            if self._in_string:
                if self._escape:
                    i += 1  # the escaped character (i < n: feed never passes empty text)
                    self._escape = False
                i = _end(_STRING_REST, s, i)
                if i >= n:
                    break
                if s[i] == "\\":  # a backslash ending the text escapes what comes next
                    self._escape = True
                    i = n
                    break
                i += 1  # the closing quote
                self._in_string = False
                continue
            if self._expect_key:
                i = _end(_SPACE, s, i)
                if i >= n:
                    break
                if s[i] != '"' and s[i] != "}":
                    return self._reject(s, start, i, out)
                self._expect_key = False
            i = _end(_SKIP, s, i)
            if i >= n:
                break
            char = s[i]
            if char == '"':  # a string the text ends inside
                self._in_string = True
                i += 1
            elif char == "{":
                closers.append("}")
                self._expect_key = True
                i += 1
            elif char == "[":  # a run of "[" at once (deeply nested arrays)
                end = _end(_OPEN_RUN, s, i)
                closers.extend("]" * s.count("[", i, end))
                i = end
            elif char == "]" and closers[-1] == "]":
                i = self._close_arrays(s, i)
            elif char == closers[-1]:
                closers.pop()
                i += 1
                if not closers:
                    self._parts.append(s[start:i])
                    self._mode = _CONTENT
                    out.extend(self._settle("".join(self._parts), "", complete=True))
                    return i
            else:
                return self._reject(s, start, i, out)
        self._parts.append(s[start:n])
        return n

    def _close_arrays(self, s: str, i: int) -> int:
        """Consume the run of ``]`` at ``s[i]`` while each closes an open array."""
        closers = self._closers
        end = _end(_CLOSE_RUN, s, i)
        count = s.count("]", i, end)
        if closers[-count:] == ["]"] * count:
            del closers[-count:]
            return end
        while s[i] != "]" or closers[-1] == "]":  # stop at the first mismatched "]"
            if s[i] == "]":
                closers.pop()
            i += 1
        return i

    def _reject(self, s: str, start: int, i: int, out: list[Segment]) -> int:
        """The object cannot continue with ``s[i]``: settle it; ``s[i]`` is read again."""
        self._parts.append(s[start:i])
        self._mode = _CONTENT
        reason = f"tool call is not valid JSON (unexpected {s[i]!r})"
        out.extend(self._settle("".join(self._parts), reason, complete=False))
        return i

    def _settle(self, raw: str, reason: str, *, complete: bool, value: Any = None) -> list[Segment]:
        """Decide what a finished object is (``value``: already decoded, if not ``None``);
        ``reason`` says why an incomplete one failed."""
        self._parts = []
        text = raw[self._prefix :]
        head: list[Segment] = []
        offset = self._offset
        if not self._tagged:
            # A ";" separator belongs to the call after it; otherwise it is content.
            if self._prefix:
                head.append(Content(raw[: self._prefix]))
            raw, offset = text, offset + self._prefix
        self._at_call = self._after_call = False
        if complete:
            try:
                if value is None:
                    value = load_json(text, control_characters=True)
            except ValueError as exc:
                reason = f"tool call is not valid JSON ({exc})"
            else:
                segment = self._read(value, raw, offset)
                return [segment] if isinstance(segment, RawCall) else [*head, segment]
        if self._hard or text.startswith('{"name"') or _NAME_FIRST.match(text):
            return [*head, Malformed(raw, reason, offset)]
        return [*head, Content(raw)]

    def _read(self, value: dict[str, Any], raw: str, offset: int) -> Segment:
        if "name" in value:
            if "arguments" in value:
                arguments = value["arguments"]
            elif "parameters" in value:
                arguments = value["parameters"]
            elif self._hard:
                return Malformed(raw, _NO_ARGUMENTS, offset)
            else:
                return Content(raw)
            self._at_call = self._after_call = True
            return RawCall(value["name"], arguments, raw, offset)
        if self._hard:
            return Malformed(raw, 'tool call JSON has no "name"', offset)
        return Content(raw)

    # reasoning --------------------------------------------------------------------
    def _reasoning(self, s: str, i: int, out: list[Segment]) -> int:
        size = len(_THINK_END)
        end = -1
        tail = self._think_tail
        if tail:  # the closing tag may have begun in the previous chunk
            joint = (tail + s[i : i + size - 1]).find(_THINK_END)
            if joint >= 0:
                end = i + joint + size - len(tail)
        if end < 0:
            found = s.find(_THINK_END, i)
            if found >= 0:
                end = found + size
        if end < 0:
            self._think.append(s[i:])
            rest = len(s) - i
            self._think_tail = s[-(size - 1) :] if rest >= size - 1 else (tail + s[i:])[1 - size :]
            return len(s)
        self._think.append(s[i:end])
        out.append(Reasoning("".join(self._think)[:-size]))
        self._think = []
        self._think_tail = ""
        self._mode = _CONTENT
        self._at_call = True
        self._after_call = False
        return end


def _call_object(call: ToolCall) -> str:
    """``{"name": ..., "parameters": {...}}`` as the Llama templates write it."""
    name = json.dumps(call.function.name, ensure_ascii=False)
    arguments = json.dumps(json.loads(call.function.arguments), ensure_ascii=False)
    return f'{{"name": {name}, "parameters": {arguments}}}'


def _json_equal(left: str, right: str) -> bool:
    try:
        return bool(json.loads(left) == json.loads(right))
    except ValueError:
        return False


class _LlamaJsonParser(ToolCallParser):
    """Shared parsing and render checking of the two Llama JSON formats."""

    #: A call is bare JSON: its keys and separator are this format's markup.
    vocabulary = (*_MARKERS, _THINK_END, '{"name": ', '"parameters": ', "; ")

    def _openers(self) -> tuple[str, ...]:
        # A call is a bare JSON object: every "{" may open one.
        return ("{", *_MARKERS)

    def _scanner(self) -> Scanner:
        return _LlamaScanner(think_prefilled=self.think_prefilled)

    def _parse_quick(self, text: str) -> ParseResult | None:
        """Calls as the templates write them, read as ``_LlamaScanner`` reads them but
        without its steps: content holding no ``<`` (so no marker) up to the first ``{``;
        then objects the C decoder reads whole (no ``\\u`` escape of a surrogate in them),
        each a call, each followed by whitespace, a ``;`` and whitespace (markup when an
        object follows it or the text ends: dropped), or nothing; then content holding no
        ``{`` or ``<``. The scanner ends each object where the decoder does, and keeps the
        whitespace before a ``;`` as content. Anything else (or an object that is not a
        call with an object of arguments) is left to the scanner."""
        if self.think_prefilled:
            return None
        j = text.find("{")
        if j < 0 or text.find("<", 0, j) >= 0:
            return None
        content = [text[:j]]
        calls: list[ToolCall] = []
        while True:
            try:
                value, end = _LAX_SCAN(text, j)
            except json.JSONDecodeError as error:
                # The scanner decodes this object the same way, to the same error: in
                # lenient mode it is handed over rather than found a second time.
                return None if self.strict else self._parse_refused(text, j, error)
            except (StopIteration, ValueError, RecursionError):
                return None
            if type(value) is not dict or "name" not in value:
                return None
            if "arguments" in value:
                arguments = value["arguments"]
            elif "parameters" in value:
                arguments = value["parameters"]
            else:
                return None
            if type(arguments) is not dict or _SURROGATE_ESCAPE.search(text, j, end):
                return None
            call = quick_named_call(len(calls), value["name"], arguments, text[j:end])
            if call is None:
                return None
            calls.append(call)
            if text.startswith("; {", end):  # the separator the llama3 template writes
                j = end + 2
                continue
            found = _NON_SPACE.search(text, end)
            if found is None:
                content.append(text[end:])
                break
            k = found.start()
            content.append(text[end:k])
            if text[k] == "{":
                j = k
                continue
            if text[k] == ";":
                found = _NON_SPACE.search(text, k + 1)
                if found is None:  # a ";" ending the text: markup, with what follows it
                    break
                if text[found.start()] == "{":
                    j = found.start()
                    continue
            rest = text[k:]
            if "{" in rest or "<" in rest:
                return None
            content.append(rest)
            break
        return quick_calls_result("".join(content), calls)

    def _parse_refused(self, text: str, j: int, error: json.JSONDecodeError) -> ParseResult:
        """``_parse_markup(text)`` in lenient mode, given ``error``: what the C decoder
        raises for the JSON value at ``text[j]`` (with control characters allowed)."""
        scanner = _LlamaScanner(
            think_prefilled=self.think_prefilled, whole=True, refusal=(text, j, error)
        )
        return self._parse_with(scanner, text)

    def _whole_text_scanner(self) -> Scanner:
        return _LlamaScanner(think_prefilled=self.think_prefilled, whole=not self.strict)

    def _check_rendered(
        self, rendered: str, content: str, calls: list[ToolCall], reasoning: str | None
    ) -> None:
        """Refuse a turn that would not parse back to the same content, calls and reasoning.

        Raises:
            RenderError: for content holding a call-shaped JSON object or a Llama special
                token, or arguments that are not plain JSON.
        """
        back = type(self)(think_prefilled=self.think_prefilled).parse(rendered)
        parsed = back.tool_calls or []
        same = (
            back.content == ((content or "").strip() or None)
            and back.reasoning == ((reasoning or "").strip() or None)
            and len(parsed) == len(calls)
            and all(
                p.function.name == c.function.name
                and _json_equal(p.function.arguments, c.function.arguments)
                for p, c in zip(parsed, calls, strict=False)
            )
        )
        if not same:
            raise RenderError(
                f"{self.name}: the rendered text would not parse back to the same content, "
                "calls and reasoning (content holding a JSON tool call object, or a value "
                "that JSON cannot spell)",
                kind="call",
            )


@register_parser("llama3_json")
class Llama3JsonParser(_LlamaJsonParser):
    """Llama 3.1 / 3.2 / 3.3: ``{"name": ..., "parameters": {...}}``, optionally after
    ``<|python_tag|>``; several calls joined by ``;``."""

    markers = (PYTHON_TAG, PYTHON_START, PYTHON_END)
    content_with_calls = False

    def _render_calls(self, calls: list[ToolCall]) -> str:
        return "; ".join(_call_object(call) for call in calls)


@register_parser("llama4_json")
class Llama4JsonParser(_LlamaJsonParser):
    """Llama 4: content followed by one ``{"name": ..., "parameters": {...}}`` per call,
    optionally wrapped in ``<|python_start|>...<|python_end|>``."""

    markers = (PYTHON_START, PYTHON_END, PYTHON_TAG)

    def _render_calls(self, calls: list[ToolCall]) -> str:
        return "".join(_call_object(call) for call in calls)

    def _render_body(self, content: str, calls: list[ToolCall]) -> str:
        return content + self._render_calls(calls)
