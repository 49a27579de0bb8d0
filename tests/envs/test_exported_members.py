"""hermes-envs's public surface: its public subpackages and what each exports, pinned.

Changing a list here is a deliberate change of the package's API; other packages import
only these names and the root's (``tests/test_import_graph.py``), and the root's
``__all__`` is pinned in ``test_package.py``. Checks in ``tests/exported_members.py``.
"""

from __future__ import annotations

import importlib

import pytest

from hermes_envs import HermesEnvsError
from tests.exported_members import export_problems, exported_errors, public_subpackages

#: Every public subpackage (no part of its name starts with ``_``) and its ``__all__``.
SUBPACKAGES: dict[str, list[str]] = {
    "hermes_envs.envs": [
        "TASKS",
        "HermesSweEnv",
        "HermesSweEnvConfig",
        "TerminalTestEnv",
        "swe_oracle",
        "terminal_test_oracle",
    ],
    "hermes_envs.scoring": [
        "TextEncoder",
        "TokenizedRollout",
        "chat_template_tokens",
        "managed_tokens",
    ],
    "hermes_envs.view": [
        "VIEW_USAGE",
        "Output",
        "RunServer",
        "ViewArgs",
        "ViewData",
        "fill_template",
        "find_output",
        "load_output",
        "page_template",
        "parse_view_args",
        "publish",
        "render_page",
        "view_main",
        "write_page_text",
    ],
}


def test_the_public_subpackages_are_pinned() -> None:
    assert public_subpackages("hermes_envs") == sorted(SUBPACKAGES)


@pytest.mark.parametrize("module", sorted(SUBPACKAGES))
def test_each_subpackage_exports_its_pinned_names(module: str) -> None:
    assert importlib.import_module(module).__all__ == SUBPACKAGES[module]


@pytest.mark.parametrize("module", ["hermes_envs", *sorted(SUBPACKAGES)])
def test_exports_resolve_and_nothing_public_is_left_out(module: str) -> None:
    assert export_problems(module) == []


@pytest.mark.parametrize("module", ["hermes_envs", *sorted(SUBPACKAGES)])
def test_every_exported_error_is_under_the_package_root(module: str) -> None:
    for error in exported_errors(module):
        assert issubclass(error, HermesEnvsError), f"{module}.{error.__name__}"
