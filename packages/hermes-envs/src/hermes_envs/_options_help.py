"""Every option of a command with its type, default and one-line description, for ``--help``.

One formatter for every command line (the env scripts' ``--env.*``/``--openai.*`` and
``hermes-bench``'s): :func:`describe_options` reads a pydantic model's fields.
"""

from __future__ import annotations

import enum
import re
import types
from collections.abc import Mapping
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = ["describe_options", "type_name"]

_SENTENCE_END = re.compile(r"(?<=[a-z0-9)])\.\s+(?=[A-Z])")


def type_name(annotation: Any) -> str:
    """A short name of an option's type as a user types it (``INT``, ``yes/no``,
    ``a|b``, ``LIST``, ``JSON``, ``TEXT``; ``X or null`` for an optional one)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [arg for arg in get_args(annotation) if arg is not type(None)]
        named = " or ".join(type_name(arg) for arg in args)
        return f"{named} or null" if len(args) < len(get_args(annotation)) else named
    if origin is Literal:
        return "|".join(str(arg) for arg in get_args(annotation))
    if annotation is bool:
        return "yes/no"
    if annotation is int:
        return "INT"
    if annotation is float:
        return "NUMBER"
    if annotation is str:
        return "TEXT"
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple, set):
        return "LIST"
    if origin in (dict, Mapping) or annotation is dict:
        return "JSON"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "|".join(str(member.value) for member in annotation)
    return getattr(annotation, "__name__", str(annotation)).upper()


def _default(field: Any) -> str:
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:  # a factory that needs the validated data
            return "computed"
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def describe_options(model: type[BaseModel], prefix: str) -> list[str]:
    """One line per field of ``model``: ``--PREFIX.NAME TYPE (default D)  description``
    (the description's first sentence), sorted by name, aligned."""
    rows = []
    for name, field in sorted(model.model_fields.items()):
        flag = f"--{prefix}.{name} {type_name(field.annotation)}"
        description = " ".join((field.description or "").split())
        first = _SENTENCE_END.split(description, maxsplit=1)[0].rstrip(".")
        rows.append((flag, f"(default {_default(field)})", first))
    width = max((len(flag) for flag, _, _ in rows), default=0)
    return [f"  {flag.ljust(width)}  {default}  {text}".rstrip() for flag, default, text in rows]
