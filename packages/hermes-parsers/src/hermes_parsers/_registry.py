"""Finding parsers by name: a registry object, the decorator, and entry points.

The default registry holds the built-in formats and whatever third-party packages
declare in the ``hermes_parsers`` entry-point group (loaded the first time a name is
missing or the list is asked for). Build a ``ParserRegistry()`` of your own to keep a
set of parsers apart from the default one.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, TypeVar

from hermes_parsers._base import ToolCallParser
from hermes_parsers._errors import RegistrationError, UnknownParserError

__all__ = ["ENTRY_POINT_GROUP", "ParserRegistry", "default_registry"]

ENTRY_POINT_GROUP = "hermes_parsers"

P = TypeVar("P", bound=type[ToolCallParser])


class ParserRegistry:
    """Parser classes by name and alias."""

    def __init__(self, *, entry_point_group: str | None = None) -> None:
        """Create an empty registry; with ``entry_point_group`` it also loads plug-ins."""
        self._classes: dict[str, type[ToolCallParser]] = {}
        self._aliases: dict[str, str] = {}
        self._group = entry_point_group
        self._plugins_loaded = entry_point_group is None

    def register(self, name: str, *aliases: str) -> Callable[[P], P]:
        """Class decorator: register a ``ToolCallParser`` subclass under ``name`` and aliases.

        Raises:
            RegistrationError: (a ValueError and a TypeError) if the decorated object is
                not a ``ToolCallParser`` subclass, or a name is empty or already taken.
        """

        def decorator(cls: P) -> P:
            if not (isinstance(cls, type) and issubclass(cls, ToolCallParser)):
                raise RegistrationError(
                    f"@register_parser({name!r}) needs a ToolCallParser subclass",
                    kind="not_a_parser",
                )
            for key in (name, *aliases):
                if not key:
                    raise RegistrationError(
                        "parser names must be non-empty strings", kind="empty_name"
                    )
                taken = self._classes.get(self._aliases.get(key, key))
                if taken is not None and taken is not cls:
                    raise RegistrationError(
                        f"parser name {key!r} is already taken by {taken.__name__}",
                        kind="name_taken",
                    )
            if not cls.__dict__.get("name"):
                cls.name = name
            self._classes[name] = cls
            for alias in aliases:
                self._aliases[alias] = name
            return cls

        return decorator

    def get(self, name: str, **options: Any) -> ToolCallParser:
        """A new parser instance for ``name`` (or an alias), built with ``options``.

        Raises:
            UnknownParserError: (a ``KeyError``) naming the known parsers.
            TypeError: if ``options`` has a keyword the parser does not take.
        """
        cls = self.get_class(name)
        return cls(**options)

    def get_class(self, name: str) -> type[ToolCallParser]:
        """The class registered for ``name`` or an alias.

        Raises:
            UnknownParserError: (a ``KeyError``) naming the known parsers.
        """
        key = self._aliases.get(name, name)
        if key not in self._classes:
            self._load_plugins()
            key = self._aliases.get(name, name)
        try:
            return self._classes[key]
        except KeyError:
            raise UnknownParserError(name, self.names(include_aliases=True)) from None

    def names(self, *, include_aliases: bool = False) -> list[str]:
        """Sorted registered names (and aliases if asked)."""
        self._load_plugins()
        names = set(self._classes)
        if include_aliases:
            names |= set(self._aliases)
        return sorted(names)

    def _load_plugins(self) -> None:
        if self._plugins_loaded or self._group is None:
            return
        self._plugins_loaded = True
        for point in entry_points(group=self._group):
            try:
                loaded = point.load()
            except Exception as exc:  # a broken plug-in must not hide the built-ins
                warnings.warn(
                    f"hermes_parsers entry point {point.name!r} ({point.value}) failed to load: "
                    f"{exc!r}; fix or uninstall the package that declares it",
                    RuntimeWarning,
                    stacklevel=3,
                )
                continue
            is_parser = isinstance(loaded, type) and issubclass(loaded, ToolCallParser)
            if is_parser and point.name not in self._classes:
                self.register(point.name)(loaded)


#: The registry behind ``get_parser``, ``list_parsers`` and ``register_parser``.
default_registry = ParserRegistry(entry_point_group=ENTRY_POINT_GROUP)
