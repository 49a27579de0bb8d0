"""The endpoint classes load ``openai`` on first use, not on ``import hermes_loop``."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = (
    "import sys, {module}\n"
    "print('openai' in sys.modules)\n"
    "from hermes_loop import OpenAIChatServer, GenerateChatServer\n"
    "from hermes_loop.endpoints import OpenAIChatServer as O2\n"
    "assert OpenAIChatServer is O2\n"
    "print('openai' in sys.modules)\n"
)


def _printed(code: str) -> list[str]:
    """The words ``code`` prints in a fresh interpreter (asserted to end with status 0)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize(
    "module", ["hermes_loop", "hermes_loop.server.cli", "hermes_loop.endpoints"]
)
def test_openai_is_imported_only_when_an_endpoint_is_used(module: str) -> None:
    assert _printed(PROBE.format(module=module)) == ["False", "True"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    import hermes_loop
    import hermes_loop.endpoints

    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = hermes_loop.Nope
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = hermes_loop.endpoints.Nope


def test_dir_lists_the_lazy_names_before_they_are_imported() -> None:
    probe = (
        "import sys, hermes_loop.endpoints as e\n"
        "print('OpenAIChatServer' in dir(e), 'OpenAIChatServer' in vars(e))\n"
        "e.OpenAIChatServer\n"
        "print('OpenAIChatServer' in vars(e))\n"
    )
    assert _printed(probe) == ["True", "False", "True"]


def test_the_parsers_load_when_a_chat_template_writes_a_tool_call() -> None:
    # The token worker renders a tokenizer's own template only: importing the templates
    # (and the worker) must not load every parser format; writing a call loads them.
    probe = (
        "import sys, hermes_loop.templates, hermes_envs.scoring.worker\n"
        "print('hermes_parsers' in sys.modules)\n"
        "from hermes_loop.templates import render_prompt\n"
        "call = {'type': 'function', 'function': {'name': 'f', 'arguments': '{}'}}\n"
        "said = [{'role': 'assistant', 'content': '', 'tool_calls': [call]}]\n"
        "print('<tool_call>' in render_prompt(said, parser='hermes'))\n"
        "print('hermes_parsers' in sys.modules)\n"
    )
    assert _printed(probe) == ["False", "True", "True"]
