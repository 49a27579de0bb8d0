"""The module-level functions: ``get_parser``, ``list_parsers``, ``register_parser``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_parsers._base import ToolCallParser
from hermes_parsers._registry import P, default_registry

__all__ = ["get_parser", "list_parsers", "register_parser"]


def get_parser(name: str, **options: Any) -> ToolCallParser:
    """A parser for the format ``name`` (e.g. ``"hermes"``, ``"qwen3_coder"``).

    ``options`` go to the parser: ``strict``, ``tools``, ``think_prefilled``.

    Raises:
        UnknownParserError: a ``KeyError`` whose message lists the known names.
        TypeError: if an option is not one the parser takes.
    """
    return default_registry.get(name, **options)


def list_parsers(*, include_aliases: bool = False) -> list[str]:
    """The sorted names of all registered parsers (built-in and plug-in)."""
    return default_registry.names(include_aliases=include_aliases)


def register_parser(name: str, *aliases: str) -> Callable[[P], P]:
    """Class decorator adding a ``ToolCallParser`` subclass to the default registry.

    Raises:
        RegistrationError: (a ValueError and a TypeError) if the decorated object is not
            a ``ToolCallParser`` subclass, or a name is empty or already taken.
    """
    return default_registry.register(name, *aliases)
