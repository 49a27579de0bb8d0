"""What the exported-members tests of every package check (httpx's
``tests/test_exported_members.py``: the exported members are a tested contract).

A package's public surface is the ``__all__`` of its root and of each public subpackage
(a folder whose dotted name has no part starting with ``_``); it is all another package
may import (``tests/test_import_graph.py``). Each package's
``tests/<package>/test_exported_members.py`` pins its public subpackages and their
``__all__`` (the root's ``__all__`` is pinned by its ``test_api.py`` /
``test_package.py``) with the checks below.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import types
from pathlib import Path

__all__ = ["export_problems", "exported_errors", "public_subpackages"]


def public_subpackages(package: str) -> list[str]:
    """The dotted names of ``package``'s public subpackages, sorted (read from its
    folders; nothing imported but the package)."""
    spec = importlib.util.find_spec(package)
    assert spec is not None, f"{package} is not installed"
    assert spec.origin is not None, f"{package} has no source file"
    root = Path(spec.origin).parent
    found = []
    for init in root.rglob("__init__.py"):
        parts = init.parent.relative_to(root).parts
        if parts and not any(part.startswith("_") for part in parts):
            found.append(".".join([package, *parts]))
    return sorted(found)


def export_problems(module_name: str) -> list[str]:
    """What is wrong with ``module_name``'s exports, one line each: no ``__all__``, a
    listed name that does not resolve or that ``dir()`` leaves out, or a class or
    function of the package reachable as a public attribute but not listed (a name
    imported for use that leaked into the surface)."""
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        return [f"{module_name} has no __all__"]
    problems = []
    listed = dir(module)
    for name in exported:
        if not hasattr(module, name):
            problems.append(f"{module_name}.{name} is listed but does not resolve")
        elif name not in listed:
            problems.append(f"{module_name}.{name} is listed but dir() leaves it out")
    package = module_name.split(".")[0]
    for name, value in sorted(vars(module).items()):
        if name.startswith("_") or name in exported or isinstance(value, types.ModuleType):
            continue
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        if getattr(value, "__module__", "").split(".")[0] == package:
            problems.append(f"{module_name}.{name} is public but not in __all__")
    return problems


def exported_errors(module_name: str) -> list[type[BaseException]]:
    """The exception classes ``module_name`` exports that its own package defines."""
    module = importlib.import_module(module_name)
    package = module_name.split(".")[0]
    values = [getattr(module, name) for name in module.__all__]
    return [
        value
        for value in values
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__.split(".")[0] == package
    ]
