"""Script files and script data: what ``hermes-model-server --script`` reads into responders.

Script files (``load_script_file``) are JSON, or YAML when PyYAML is installed
(``.yaml``/``.yml``). Accepted top-level shapes::

    [turn, ...]                                   # one script, named after the file stem
    {"model": "name", "turns": [turn, ...]}       # one script, named ("model" optional)
    {"messages": [openai message, ...], ...}      # replay; e.g. a saved AgentResult (its
                                                  # other fields are ignored)
    [openai message, ...]                         # replay: every item has a "role"
    {"scripts": {"name": <any of the above>, ...}}  # several named scripts

A turn is a string (content only) or an object::

    {
      "content": "text or null",
      "reasoning": "optional; also accepted as reasoning_content",
      "tool_calls": [{"name": "terminal", "arguments": {"command": "ls"}, "id": "optional"}],
      "finish_reason": "optional: stop | length | tool_calls | content_filter",
      "faults": [                          # optional phases, applied to the first attempts
        {"status": 429, "retry_after": 0.1, "times": 2},
        {"status": 500, "message": "boom", "times": 1},
        {"delay": 0.5, "times": 1},
        {"hang": true, "times": 1},
        {"truncate": true, "times": 1},
        {"disconnect": true}               # no "times" (or null): every remaining attempt
      ]
    }

``tool_calls`` entries may also be OpenAI-shaped (``{"id", "type", "function": {"name",
"arguments"}}``); ``arguments`` is an object, or a string sent verbatim. ``fault`` (one
object) may stand for ``faults``. Unknown fields are errors.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_loop.server._json_limits import load_json, text_problem
from hermes_loop.server._responders import Replay, Script
from hermes_loop.server._turns import ScriptError

__all__ = ["load_script_file", "responders_from_data"]


def responders_from_data(data: Any, *, default_name: str) -> dict[str, Script]:
    """Build named responders from decoded script data (the schema of the module docstring).

    Raises:
        ScriptError: naming the script, the turn and the field.
    """
    if isinstance(data, Mapping) and "scripts" in data:
        extra = set(data) - {"scripts"}
        if extra:
            raise ScriptError(
                f"unknown top-level field(s) beside 'scripts': {', '.join(sorted(extra))}"
            )
        scripts = data["scripts"]
        if not isinstance(scripts, Mapping) or not scripts:
            raise ScriptError("'scripts' must be a non-empty object of name -> script")
        found: dict[str, Script] = {}
        for name, value in scripts.items():
            _check_name(str(name))
            try:
                found[str(name)] = _one_script(value, str(name))
            except ScriptError as exc:
                raise exc.at(f"script {name!r}") from None
        return found
    name = _name_of(data, default_name)
    return {name: _one_script(data, name)}


def _check_name(name: str) -> None:
    problem = text_problem(name)
    if problem is not None:
        raise ScriptError(f"the model name {problem}")


def _name_of(data: Any, default: str) -> str:
    name = default
    if isinstance(data, Mapping) and isinstance(data.get("model"), str) and data["model"]:
        name = str(data["model"])
    _check_name(name)
    return name


def _one_script(data: Any, name: str) -> Script:
    if isinstance(data, Mapping):
        if "turns" in data and "messages" in data:
            raise ScriptError("a script has 'turns' or 'messages' (a replay), not both")
        if "turns" in data:
            extra = set(data) - {"turns", "model", "description"}
            if extra:
                raise ScriptError(f"unknown field(s) {', '.join(sorted(extra))} beside 'turns'")
            turns = data["turns"]
            if not isinstance(turns, list):
                raise ScriptError("must be a list of turns", field="turns")
            return Script(turns, name=name)
        if "messages" in data:
            messages = data["messages"]
            if not isinstance(messages, list):
                raise ScriptError("must be a list of OpenAI messages", field="messages")
            return Replay(messages, name=name)
        raise ScriptError(
            "a script object needs 'turns', 'messages' (a replay) or 'scripts' (named scripts)"
        )
    if isinstance(data, list):
        if data and all(isinstance(item, Mapping) and "role" in item for item in data):
            return Replay(data, name=name)
        return Script(data, name=name)
    raise ScriptError(f"a script must be a list of turns or an object, got {type(data).__name__}")


def load_script_file(path: str | Path) -> dict[str, Script]:
    """Read a JSON (or YAML) script file into named responders.

    The name of a single script is its ``"model"`` field, else the file's stem.

    Raises:
        FileNotFoundError: if the file does not exist.
        ScriptError: if it is not valid JSON/YAML, YAML is asked for without PyYAML
            installed, or it breaks the schema; the message starts with the file name
            and names the script, the turn and the field.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ScriptError(f"not UTF-8 text ({exc})", where=str(file)) from None
    if file.suffix.lower() in (".yaml", ".yml"):
        try:
            yaml: Any = importlib.import_module("yaml")
        except ImportError:
            raise ScriptError(
                "is YAML, but PyYAML is not installed (pip install pyyaml), "
                "or write the script as JSON",
                where=str(file),
            ) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ScriptError(f"not valid YAML: {exc}", where=str(file)) from None
        except RecursionError:
            raise ScriptError(
                "nested too deeply to read as YAML; write deep values as JSON", where=str(file)
            ) from None
    else:
        try:
            data = load_json(text)
        except json.JSONDecodeError as exc:
            raise ScriptError(f"not valid JSON: {exc}", where=str(file)) from None
    try:
        return responders_from_data(data, default_name=file.stem)
    except ScriptError as exc:
        raise exc.at(str(file)) from None
