"""Tools, toolsets and seeded distributions."""

from __future__ import annotations

from typing import Any

import pytest

from hermes_loop import Tool, ToolInvocation, ToolRegistry, ToolSet, UnknownToolsetError

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


def test_an_invocation_outside_a_loop_needs_only_a_task_id() -> None:
    call = ToolInvocation("task-1")
    assert (call.task_id, call.turn, call.call_id, call.cancelled.is_set()) == (
        "task-1",
        0,
        "",
        False,
    )
