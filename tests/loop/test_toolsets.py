"""Tools, toolsets and seeded distributions."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_loop import (
    Tool,
    ToolInvocation,
    ToolLike,
    ToolRegistry,
    ToolSet,
    UnknownToolsetError,
)

from .tool_likes import OwnTool

OBJ: dict[str, Any] = {"type": "object", "properties": {}}


def _noop(arguments: dict[str, Any], call: ToolInvocation) -> str:
    return "ok"


def make(name: str) -> Tool:
    return Tool(name, f"the {name} tool", OBJ, _noop)


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.add(make("terminal"), toolset="terminal")
    reg.add(make("read_file"), toolset="file")
    reg.add(make("write_file"), toolset="file")
    reg.add(make("web_search"), toolset="web")
    return reg


def test_tool_validates_name_and_schema() -> None:
    with pytest.raises(ValueError, match="tool name 'bad name' is invalid"):
        make("bad name")
    with pytest.raises(ValueError, match="type object"):
        Tool("x", "", {"type": "string"}, _noop)
    with pytest.raises(ValueError, match="invalid parameters schema"):
        Tool("x", "", {"type": "object", "properties": {"a": {"type": 5}}}, _noop)
    schema = make("terminal").schema()
    assert schema == {
        "type": "function",
        "function": {"name": "terminal", "description": "the terminal tool", "parameters": OBJ},
    }


def test_select_enabled_and_disabled() -> None:
    reg = registry()
    assert reg.select().names == ["terminal", "read_file", "write_file", "web_search"]
    assert reg.select(enabled=["file"]).names == ["read_file", "write_file"]
    assert reg.select(disabled=["file", "web"]).names == ["terminal"]
    assert reg.select(enabled=["file", "web"], disabled=["web"]).names == [
        "read_file",
        "write_file",
    ]
    with pytest.raises(UnknownToolsetError, match="unknown toolset 'nope'; known: file"):
        reg.select(enabled=["nope"])


def test_distribution_is_seeded_and_never_empty() -> None:
    reg = registry()
    reg.add_distribution("mostly_terminal", {"terminal": 90, "file": 50, "web": 0})
    draws = {tuple(reg.select(distribution="mostly_terminal", seed=s).names) for s in range(40)}
    assert all("web_search" not in names for names in draws)
    assert len(draws) > 1  # it really is random across seeds
    for seed in range(10):
        first = reg.select(distribution="mostly_terminal", seed=seed).names
        assert first == reg.select(distribution="mostly_terminal", seed=seed).names
        assert first
    reg.add_distribution("rare", {"web": 0.0001})
    assert reg.select(distribution="rare", seed=1).names == ["web_search"]
    with pytest.raises(UnknownToolsetError, match="unknown distribution 'x'"):
        reg.select(distribution="x")
    with pytest.raises(UnknownToolsetError):
        reg.add_distribution("bad", {"gpu": 1.0})
    with pytest.raises(ValueError, match="0-100"):
        reg.add_distribution("bad", {"web": -1})


def test_registry_rejects_two_tools_of_one_name() -> None:
    reg = registry()
    with pytest.raises(ValueError, match="different tool named 'terminal'"):
        reg.add(make("terminal"), toolset="other")
    with pytest.raises(ValueError, match="two tools are named"):
        ToolSet([make("a"), make("a")])
    assert [t.name for t in ToolSet([make("a"), make("b")])] == ["a", "b"]


def test_a_tool_is_filed_under_its_own_toolset_unless_told_otherwise() -> None:
    reg = ToolRegistry()
    shell = Tool("shell", "", OBJ, _noop, toolset="terminal")
    reg.add(shell)
    reg.add(make("notes"), toolset="file")
    reg.add(Tool("grep", "", OBJ, _noop, toolset="terminal"), toolset="file")  # the argument wins
    assert reg.toolsets == ["file", "terminal"]
    assert reg.select(["terminal"]).names == ["shell"]
    assert reg.select(["file"]).names == ["notes", "grep"]
    assert shell.schema()["function"]["name"] == "shell"  # the toolset is not in the schema
    with pytest.raises(ValueError, match="tool 'loose' names no toolset: pass add"):
        reg.add(make("loose"))


def test_any_tool_like_object_is_kept_as_it_is() -> None:
    own = OwnTool("own", OBJ)
    shaped: ToolLike = own  # mypy: the protocol is met without importing anything
    toolset = ToolSet([shaped, make("made")])
    assert toolset.get("own") is own
    assert toolset.schemas()[0] == own.schema()  # the tool's own schema() is sent
    reg = ToolRegistry()
    added: OwnTool = reg.add(own)  # the type given comes back
    assert added is own
    assert reg.select(["own"]).get("own") is own


def test_a_tool_like_object_is_checked_when_a_toolset_or_registry_takes_it() -> None:
    for bad, error in [
        (OwnTool("bad name", OBJ), "tool name 'bad name' is invalid"),
        (OwnTool("x", {"type": "string"}), "parameters must be a JSON schema of type object"),
        (OwnTool("x", {"type": "object", "properties": {"a": {"type": 5}}}), "invalid param"),
    ]:
        with pytest.raises(ValueError, match=error):
            ToolSet([bad])
        with pytest.raises(ValueError, match=error):
            ToolRegistry().add(bad)


def test_a_registry_does_not_check_its_tools_again_for_each_selection() -> None:
    reg = ToolRegistry()
    own = reg.add(OwnTool("own", OBJ))
    own.parameters = {"type": "string"}  # spoiled after the check, to see none is redone
    assert reg.select().get("own") is own
    with pytest.raises(ValueError, match="type object"):
        ToolSet([own])
