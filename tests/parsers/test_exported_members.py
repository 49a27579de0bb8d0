"""hermes-parsers's public surface: its public subpackages and what each exports, pinned.

Changing a list here is a deliberate change of the package's API; other packages import
only these names and the root's (``tests/test_import_graph.py``), and the root's
``__all__`` is pinned in ``test_api.py``. Checks in ``tests/exported_members.py``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import hermes_parsers
from hermes_parsers import HermesParsersError
from tests.exported_members import export_problems, exported_errors, public_subpackages

#: Every public subpackage (no part of its name starts with ``_``) and its ``__all__``.
SUBPACKAGES: dict[str, list[str]] = {
    "hermes_parsers.formats": [
        "deepseek",
        "glm",
        "hermes",
        "kimi_k2",
        "llama",
        "longcat",
        "mistral",
        "qwen3_coder",
    ],
}


#: Every module public by its path (no part of its dotted name starts with ``_``) besides
#: the root and the subpackages: the command (``cli``; ``__main__`` runs it), the growth
#: helper the README documents, and the built-in formats. Every other module is private.
MODULES: list[str] = sorted(
    [
        "hermes_parsers.adversarial",
        "hermes_parsers.cli",
        *(f"hermes_parsers.formats.{name}" for name in SUBPACKAGES["hermes_parsers.formats"]),
    ]
)


def test_the_public_modules_are_pinned() -> None:
    root = Path(hermes_parsers.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if path.name != "__init__.py" and not any(part.startswith("_") for part in parts):
            found.append(".".join(["hermes_parsers", *parts]))
    assert sorted(found) == MODULES


def test_the_public_subpackages_are_pinned() -> None:
    assert public_subpackages("hermes_parsers") == sorted(SUBPACKAGES)


@pytest.mark.parametrize("module", sorted(SUBPACKAGES))
def test_each_subpackage_exports_its_pinned_names(module: str) -> None:
    assert importlib.import_module(module).__all__ == SUBPACKAGES[module]


@pytest.mark.parametrize("module", ["hermes_parsers", *sorted(SUBPACKAGES)])
def test_exports_resolve_and_nothing_public_is_left_out(module: str) -> None:
    assert export_problems(module) == []


@pytest.mark.parametrize("module", ["hermes_parsers", *sorted(SUBPACKAGES)])
def test_every_exported_error_is_under_the_package_root(module: str) -> None:
    for error in exported_errors(module):
        assert issubclass(error, HermesParsersError), f"{module}.{error.__name__}"
