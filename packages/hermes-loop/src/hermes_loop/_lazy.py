"""``lazy_exports``: a package's public names, each imported from its module on first use.

The packages of this workspace that export names whose modules are slow to import (the
loop's ``jsonschema``, the endpoints' ``openai``, Atropos and ``transformers`` behind the
environments) give their ``__init__`` a module ``__getattr__`` and ``__dir__`` made here,
so that importing the package, or one small piece of it, does not pay for the rest.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``, exporting ``table``'s names.

    ``table`` maps each name to the dotted name of the module that defines it. The first
    access to a name imports its module and keeps the value in the package's namespace,
    so later lookups skip ``__getattr__``; ``dir(package)`` lists the names before any of
    them is imported. Call it from the package's own ``__init__``::

        __getattr__, __dir__ = lazy_exports(__name__, {"Thing": "pkg.things"})

    The returned ``__getattr__`` raises ``AttributeError`` (the message names the package,
    the attribute and where the exported names are listed) for a name not in ``table``;
    an ``ImportError`` of a listed name's module propagates as it is.

    Raises:
        KeyError: if ``package`` is not being imported or already imported (not in
            ``sys.modules``): call it from the package's own ``__init__``.
    """
    namespace = vars(sys.modules[package])
    names = dict(table)

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}; "
                f"its public names are listed in {package}.__all__"
            )
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
