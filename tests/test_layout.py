"""Test modules never import each other: shared helpers live in non-test modules."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def test_no_test_module_imports_another() -> None:
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for name in imported_modules(path):
            if name.rsplit(".", 1)[-1].startswith("test_"):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []
