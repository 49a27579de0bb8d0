"""What JSON a script may hold: bounded nesting, valid Unicode text, JSON types only.

A script's tool-call arguments end up rendered, tokenized and sent as JSON. Three kinds
of value break that far from where they were written, so a script is checked for them
when it is built:

- nesting deeper than ``MAX_DEPTH`` levels (Python's ``json`` recurses, so 100 000
  levels would be a ``RecursionError`` deep inside rendering, or already in
  ``json.loads`` of the script file);
- a lone surrogate such as ``"\\ud800"`` (valid in a JSON string escape, but not text a
  tokenizer or UTF-8 can carry);
- a Python value JSON has no form for (a set, an object, ``NaN``), or a key that is not
  a string.

``load_json`` reads a script file's text with no depth limit of its own: a value nested
past ``MAX_FILE_DEPTH`` becomes a ``TooDeep`` marker in place, so the schema check that
follows names the script, turn and field holding it.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_DEPTH",
    "JsonProblem",
    "TooDeep",
    "json_problem",
    "load_json",
    "text_problem",
]

#: How deeply a tool call's arguments may nest (the arguments object is level 1).
MAX_DEPTH = 100
#: Containers of a script file nested deeper than this are read as a ``TooDeep`` marker.
#: It leaves room for the schema's own levels above the arguments of a call.
MAX_FILE_DEPTH = MAX_DEPTH + 28

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class TooDeep:
    """Stands for a value of a script file nested past ``MAX_FILE_DEPTH`` levels."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<a value nested more than {MAX_DEPTH} levels deep>"


class JsonProblem(NamedTuple):
    """Where a value JSON cannot carry is (``path``), and what is wrong with it."""

    path: str
    problem: str
    too_deep: bool = False


def text_problem(text: str) -> str | None:
    """What makes ``text`` unusable as model text (a lone surrogate), or ``None``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"holds a lone surrogate {text[exc.start]!r} at index {exc.start}; "
            "text must be valid Unicode"
        )
    return None


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


def json_problem(value: Any, *, max_depth: int = MAX_DEPTH) -> JsonProblem | None:
    """The first part of ``value`` JSON cannot carry, or ``None``.

    ``path`` is relative to ``value`` (``""`` for the value itself, ``".a[0]"`` inside
    it). Accepted: mappings with string keys, lists and tuples, strings without lone
    surrogates, integers, finite floats, booleans and ``None``, nested at most
    ``max_depth`` levels (a container is one level). The walk is iterative, so any depth
    is safe to check.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                return JsonProblem(path, problem)
        elif item is None or isinstance(item, bool | int):
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                return JsonProblem(path, f"{item!r} is not a JSON number")
        elif isinstance(item, TooDeep):
            return JsonProblem(path, f"nested more than {max_depth} levels deep", too_deep=True)
        elif isinstance(item, Mapping | list | tuple):
            if depth > max_depth:
                return JsonProblem(path, f"nested more than {max_depth} levels deep", too_deep=True)
            if isinstance(item, Mapping):
                for key, inner in item.items():
                    if not isinstance(key, str):
                        return JsonProblem(path, f"has a key {key!r} that is not a string")
                    problem = text_problem(key)
                    if problem is not None:
                        return JsonProblem(path, f"a key {problem}")
                    stack.append((inner, _key(path, key), depth + 1))
            else:
                stack.extend((inner, f"{path}[{i}]", depth + 1) for i, inner in enumerate(item))
        else:
            return JsonProblem(path, f"a {type(item).__name__} is not a JSON value")
    return None


def _cut_deep(text: str, marker: str) -> str:
    """``text`` with every container opened past ``MAX_FILE_DEPTH`` replaced by ``marker``
    (a JSON string literal).

    Raises:
        json.JSONDecodeError: if a cut container is never closed.
    """
    pieces: list[str] = []
    depth = 0
    kept = 0
    cut_at: int | None = None
    for token in _TOKEN.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth == MAX_FILE_DEPTH + 1 and cut_at is None:
                cut_at = token.start()
        elif char in "]}":
            depth -= 1
            if depth == MAX_FILE_DEPTH and cut_at is not None:
                pieces += [text[kept:cut_at], marker]
                kept, cut_at = token.end(), None
    if cut_at is not None:
        raise json.JSONDecodeError("unclosed '[' or '{'", text, cut_at)
    pieces.append(text[kept:])
    return "".join(pieces)


def _mark(data: Any, marker: str) -> Any:
    """``data`` with every string equal to ``marker`` replaced by a ``TooDeep``."""
    found = TooDeep()
    if data == marker:
        return found
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if inner == marker:
                    item[key] = found
                elif isinstance(inner, dict | list):
                    stack.append(inner)
        elif isinstance(item, list):
            for index, inner in enumerate(item):
                if inner == marker:
                    item[index] = found
                elif isinstance(inner, dict | list):
                    stack.append(inner)
    return data


def load_json(text: str) -> Any:
    """Decode a JSON document of any depth; containers past ``MAX_FILE_DEPTH`` are ``TooDeep``.

    Raises:
        json.JSONDecodeError: if ``text`` is not valid JSON.
    """
    try:
        return json.loads(text)
    except RecursionError:
        pass
    marker = f"\x00too-deep-{secrets.token_hex(8)}"
    return _mark(json.loads(_cut_deep(text, json.dumps(marker))), marker)
