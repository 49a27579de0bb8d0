"""Sandbox tools (terminal, read_file, write_file, search_files, patch) over the local backend."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from hermes_sandbox import SandboxPool
from hermes_sandbox.tools import (
    TOOLSETS,
    ChromiumBrowser,
    Invocation,
    SandboxTool,
    read_lines,
    sandbox_tools,
    search_files,
)


@pytest.fixture
async def pool() -> AsyncIterator[SandboxPool]:
    async with SandboxPool("local", terminal_timeout=20) as made:
        yield made


@pytest.fixture
def tools(pool: SandboxPool) -> dict[str, SandboxTool]:
    return {tool.name: tool for tool in sandbox_tools(pool)}


async def call(tools: dict[str, SandboxTool], name: str, task: str = "t1", **args: Any) -> Any:
    return await tools[name].handler(args, Invocation(task))


# --- the tool list ------------------------------------------------------------------------


def test_default_toolsets_and_schemas(pool: SandboxPool) -> None:
    tools = sandbox_tools(pool)
    assert [t.name for t in tools] == [
        "terminal",
        "read_file",
        "write_file",
        "search_files",
        "patch",
        "web_search",
        "web_extract",
    ]
    assert {t.toolset for t in tools} == {"terminal", "file", "web"}
    for tool in tools:
        schema = tool.schema()
        assert schema["type"] == "function"
        assert schema["function"]["name"] == tool.name
        Draft202012Validator.check_schema(schema["function"]["parameters"])
        assert schema["function"]["parameters"]["type"] == "object"
        json.dumps(schema)


def test_toolset_selection(pool: SandboxPool) -> None:
    assert [t.name for t in sandbox_tools(pool, toolsets=["terminal"])] == ["terminal"]
    names = [t.name for t in sandbox_tools(pool, toolsets=["file"])]
    assert names == ["read_file", "write_file", "search_files", "patch"]
    browser = ChromiumBrowser()  # never started: building tools does not launch it
    names = [t.name for t in sandbox_tools(pool, browser=browser)]
    assert names[-2:] == ["browser_navigate", "browser_snapshot"]
    assert set(TOOLSETS) == {"terminal", "file", "web", "browser"}


def test_toolset_errors(pool: SandboxPool) -> None:
    with pytest.raises(ValueError, match=r"unknown toolset\(s\) 'shell'.*known toolsets"):
        sandbox_tools(pool, toolsets=["terminal", "shell"])
    with pytest.raises(ValueError, match="browser toolset needs a browser"):
        sandbox_tools(pool, toolsets=["browser"])


def test_the_loop_takes_sandbox_tools_as_they_are(pool: SandboxPool) -> None:
    # One tool shape: hermes-loop accepts any ToolLike, and a SandboxTool is one (mypy
    # checks the protocol here), so nothing converts between the two packages.
    from hermes_loop import ToolLike, ToolRegistry, ToolSet

    tools = sandbox_tools(pool)
    shaped: list[ToolLike] = list(tools)
    toolset = ToolSet(tools)
    assert [toolset.get(tool.name) for tool in tools] == shaped
    assert all(toolset.get(tool.name) is tool for tool in tools)
    assert toolset.schemas() == [tool.schema() for tool in tools]
    registry = ToolRegistry()
    for tool in tools:
        added: SandboxTool = registry.add(tool)  # filed under the tool's own toolset
        assert added is tool
    assert registry.select(["file"]).names == ["read_file", "write_file", "search_files", "patch"]
    assert {tool.name: tool.toolset for tool in tools} == {
        "terminal": "terminal",
        "read_file": "file",
        "write_file": "file",
        "search_files": "file",
        "patch": "file",
        "web_search": "web",
        "web_extract": "web",
    }
    assert {tool.timeout for tool in tools} == {None}  # the loop's default applies


async def test_the_loop_runs_a_sandbox_tool_and_checks_its_arguments(pool: SandboxPool) -> None:
    from hermes_loop import AgentLoop, OpenAIChatServer
    from hermes_loop.server import Call, ModelServer, Script, Turn

    calls = [Call("terminal", {"command": "echo from-the-loop"}), Call("terminal", {"cmd": 1})]
    script = Script([Turn(tool_calls=calls), Turn("done")])
    async with ModelServer(script) as server:
        endpoint = OpenAIChatServer(
            base_url=server.base_url, model="scripted", max_retries=0, timeout=30
        )
        try:
            async with AgentLoop(endpoint, sandbox_tools(pool, toolsets=["terminal"])) as loop:
                result = await loop.run([{"role": "user", "content": "go"}], task_id="looped")
        finally:
            await endpoint.aclose()
    assert result.final_response == "done"
    assert "from-the-loop" in json.loads(result.messages[2]["content"])["output"]
    # The loop checked the SandboxTool's arguments against its parameters schema.
    assert [error.kind for error in result.tool_errors] == ["invalid_arguments"]
    assert "do not match its schema" in result.messages[3]["content"]


def test_hermes_sandbox_does_not_depend_on_hermes_loop() -> None:
    import importlib.metadata
    import pathlib
    import re

    import hermes_sandbox

    imports_loop = re.compile(r"^\s*(from|import)\s+hermes_loop\b", re.MULTILINE)
    root = pathlib.Path(hermes_sandbox.__file__).parent
    for source in root.rglob("*.py"):
        assert not imports_loop.search(source.read_text()), source
    # Nor on anything else: every requirement belongs to an extra.
    requires = importlib.metadata.requires("hermes-sandbox") or []
    assert requires
    assert [r for r in requires if "extra ==" not in r] == []


# --- terminal -------------------------------------------------------------------------------


async def test_terminal_runs_and_keeps_the_session(tools: dict[str, SandboxTool]) -> None:
    answer = await call(tools, "terminal", command="echo out; echo err >&2; exit 3")
    assert answer == {"output": "out\nerr\n", "exit_code": 3}
    await call(tools, "terminal", command="mkdir -p sub && cd sub && export GREETING=hi")
    answer = await call(tools, "terminal", command='basename "$PWD"; echo $GREETING')
    assert answer["output"] == "sub\nhi\n"


async def test_terminal_tasks_have_separate_sandboxes(
    tools: dict[str, SandboxTool], pool: SandboxPool
) -> None:
    await call(tools, "terminal", task="a", command="echo a > mine.txt")
    answer = await call(tools, "terminal", task="b", command="cat mine.txt")
    assert answer["exit_code"] != 0
    assert sorted(pool.task_ids) == ["a", "b"]


async def test_terminal_timeout_kills_and_says_so(tools: dict[str, SandboxTool]) -> None:
    answer = await call(tools, "terminal", command="echo start; sleep 30", timeout=0.5)
    assert answer["exit_code"] == 124
    assert "start" in answer["output"]
    assert "timed out after 0.5s" in answer["error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"command": "  "}, "'command' must be a non-empty string"),
        ({"command": "ls", "timeout": 0}, "'timeout' must be a positive number"),
        ({"command": "ls", "timeout": "5"}, "'timeout' must be a positive number"),
    ],
)
async def test_terminal_bad_arguments(
    tools: dict[str, SandboxTool], args: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        await tools["terminal"].handler(args, Invocation("t1"))


# --- read_file / write_file -------------------------------------------------------------


async def test_write_then_read_with_line_numbers(tools: dict[str, SandboxTool]) -> None:
    written = await call(tools, "write_file", path="deep/er/notes.txt", content="a\nb\nc\n")
    assert written["bytes_written"] == 6
    assert written["path"].endswith("/deep/er/notes.txt")
    answer = await call(tools, "read_file", path="deep/er/notes.txt")
    assert answer["content"] == "     1|a\n     2|b\n     3|c"
    assert answer["total_lines"] == 3
    assert (answer["start_line"], answer["end_line"]) == (1, 3)
    assert "next_offset" not in answer
    assert "note" not in answer
    # The same file through an absolute path.
    same = await call(tools, "read_file", path=written["path"])
    assert same["content"] == answer["content"]


async def test_read_offset_limit_and_paging(tools: dict[str, SandboxTool]) -> None:
    await call(
        tools, "write_file", path="n.txt", content="".join(f"line {i}\n" for i in range(1, 21))
    )
    answer = await call(tools, "read_file", path="n.txt", offset=5, limit=3)
    assert answer["content"] == "     5|line 5\n     6|line 6\n     7|line 7"
    assert answer["next_offset"] == 8
    assert "offset=8" in answer["note"]
    tail = await call(tools, "read_file", path="n.txt", offset=19)
    assert tail["content"].splitlines() == ["    19|line 19", "    20|line 20"]
    past = await call(tools, "read_file", path="n.txt", offset=50)
    assert past["content"] == ""
    assert "past the end: the file has 20 lines" in past["note"]


async def test_read_edge_cases(tools: dict[str, SandboxTool]) -> None:
    await call(tools, "write_file", path="empty.txt", content="")
    empty = await call(tools, "read_file", path="empty.txt")
    assert (empty["content"], empty["total_lines"]) == ("", 0)
    await call(tools, "write_file", path="noeol.txt", content="x\ny")
    noeol = await call(tools, "read_file", path="noeol.txt")
    assert noeol["content"] == "     1|x\n     2|y"
    assert noeol["total_lines"] == 2
    await call(tools, "write_file", path="uni.txt", content="héllo ✓\n\ttab  spaces \n")
    uni = await call(tools, "read_file", path="uni.txt")
    assert uni["content"] == "     1|héllo ✓\n     2|\ttab  spaces "


async def test_read_cuts_long_lines_and_big_answers(tools: dict[str, SandboxTool]) -> None:
    await call(tools, "write_file", path="long.txt", content="x" * 5000 + "\nshort\n")
    answer = await call(tools, "read_file", path="long.txt")
    first, second = answer["content"].split("\n")
    assert first.startswith("     1|" + "x" * 2000)
    assert first.endswith("… [line cut]")
    assert second == "     2|short"
    assert "1 line(s) longer than 2000 characters were cut" in answer["note"]
    # 2,000 lines of 100 characters: one answer stops at the size limit and says where to go on.
    await call(tools, "write_file", path="big.txt", content=("y" * 99 + "\n") * 2000)
    big = await call(tools, "read_file", path="big.txt", limit=2000)
    assert 0 < len(big["content"]) <= 60_000
    assert big["end_line"] < 2000
    assert big["next_offset"] == big["end_line"] + 1
    assert "answer size limit reached" in big["note"]


async def test_read_huge_file_stays_in_the_sandbox(pool: SandboxPool) -> None:
    sandbox = await pool.get("huge")
    # 200 MB of lines: only the requested slice crosses into this process.
    made = await sandbox.exec("yes 'abcdefghij' | head -c 200000000 > huge.txt", timeout=60)
    assert made.exit_code == 0
    answer = await read_lines(sandbox, "huge.txt", offset=1000, limit=2)
    assert answer["content"] == "  1000|abcdefghij\n  1001|abcdefghij"
    assert answer["total_lines"] == 200_000_000 // 11 + 1
    assert answer["size_bytes"] == 200_000_000


async def test_read_errors(tools: dict[str, SandboxTool], pool: SandboxPool) -> None:
    with pytest.raises(FileNotFoundError, match=r"no such file or directory: .*/missing\.txt"):
        await call(tools, "read_file", path="missing.txt")
    await call(tools, "terminal", command="mkdir adir")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        await call(tools, "read_file", path="adir")
    sandbox = await pool.get("t1")
    await sandbox.write_file("blob.bin", b"\x7fELF\x00\x01\x02" * 100)
    with pytest.raises(ValueError, match=r"binary file \(700 bytes\)"):
        await call(tools, "read_file", path="blob.bin")
    with pytest.raises(ValueError, match="'offset' must be a line number"):
        await call(tools, "read_file", path="blob.bin", offset=0)
    with pytest.raises(ValueError, match="'limit' must be a number of lines"):
        await call(tools, "read_file", path="blob.bin", limit=-1)


async def test_read_survives_a_broken_session(tools: dict[str, SandboxTool]) -> None:
    await call(tools, "write_file", path="f.txt", content="fine\n")
    await call(tools, "terminal", command="export PATH=/nowhere LC_ALL=xx_XX")
    answer = await call(tools, "read_file", path="f.txt")
    assert answer["content"] == "     1|fine"
    # ...and the helper scripts leave the session as it was.
    echoed = await call(tools, "terminal", command="echo $PATH")
    assert echoed["output"] == "/nowhere\n"


async def test_write_file_argument_checks(tools: dict[str, SandboxTool]) -> None:
    with pytest.raises(ValueError, match="'content' must be a string"):
        await call(tools, "write_file", path="x.txt", content=None)
    with pytest.raises(ValueError, match="'path' must be a non-empty string"):
        await call(tools, "write_file", path="", content="x")


# --- search_files ---------------------------------------------------------------------------


async def _make_tree(tools: dict[str, SandboxTool]) -> None:
    await call(
        tools, "write_file", path="src/app.py", content="import os\ndef main():\n    return 42\n"
    )
    await call(
        tools, "write_file", path="src/util.py", content="def helper():\n    return 'Main'\n"
    )
    await call(tools, "write_file", path="docs/readme.md", content="call main() to start\n")


ENGINES = ["grep", pytest.param("rg", marks=pytest.mark.skipif(
    shutil.which("rg") is None, reason="ripgrep is not installed here (apt-get install ripgrep)"
))]  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
async def test_search_both_engines(
    tools: dict[str, SandboxTool], pool: SandboxPool, engine: Any
) -> None:
    await _make_tree(tools)
    sandbox = await pool.get("t1")
    found = await search_files(sandbox, r"def [a-z]+\(", ".", engine=engine)
    assert found.engine == engine
    assert sorted((m.path.rsplit("/", 2)[-2:], m.line, m.text) for m in found.matches) == [
        (["src", "app.py"], 2, "def main():"),
        (["src", "util.py"], 1, "def helper():"),
    ]
    assert not found.truncated
    only_md = await search_files(sandbox, "main", ".", file_glob="*.md", engine=engine)
    assert [m.path.rsplit("/", 1)[-1] for m in only_md.matches] == ["readme.md"]
    nocase = await search_files(sandbox, "MAIN", "src", ignore_case=True, engine=engine)
    assert len(nocase.matches) == 2
    fixed = await search_files(sandbox, "main()", ".", fixed_strings=True, engine=engine)
    assert sorted(m.line for m in fixed.matches) == [1, 2]
    with pytest.raises(ValueError, match="search failed"):
        await search_files(sandbox, "(unclosed", ".", engine=engine)


async def test_search_tool_answer_and_cap(tools: dict[str, SandboxTool]) -> None:
    await call(tools, "write_file", path="many.txt", content="hit\n" * 50)
    answer = await call(tools, "search_files", pattern="hit", path="many.txt", max_results=10)
    assert answer["count"] == 10
    assert answer["truncated"] is True
    assert "more than 10 matches" in answer["note"]
    first = answer["matches"].splitlines()[0]
    assert first.endswith("/many.txt:1:hit")
    none = await call(tools, "search_files", pattern="absent-word")
    assert none == {"matches": "", "count": 0, "note": "no matches"}
    with pytest.raises(FileNotFoundError, match="no such file or directory"):
        await call(tools, "search_files", pattern="x", path="no/such/dir")


async def test_search_long_lines_are_cut(tools: dict[str, SandboxTool]) -> None:
    await call(tools, "write_file", path="min.js", content="var a=1;" * 10_000 + "\n")
    answer = await call(tools, "search_files", pattern="var", path="min.js")
    assert answer["count"] == 1
    assert len(answer["matches"]) <= 500


# --- patch ---------------------------------------------------------------------------------


async def test_patch_replaces_once_and_shows_a_diff(tools: dict[str, SandboxTool]) -> None:
    await call(tools, "write_file", path="p.py", content="a = 1\nb = 2\nc = 3\n")
    answer = await call(tools, "patch", path="p.py", old_string="b = 2", new_string="b = 20")
    assert answer["replacements"] == 1
    assert "-b = 2\n+b = 20\n" in answer["diff"]
    read = await call(tools, "read_file", path="p.py")
    assert read["content"] == "     1|a = 1\n     2|b = 20\n     3|c = 3"


async def test_patch_missing_and_ambiguous(tools: dict[str, SandboxTool]) -> None:
    await call(tools, "write_file", path="q.py", content="x = 1\ny = 1\n    x = 1\n")
    with pytest.raises(ValueError, match=r"occurs 2 times .* lines 1, 3.*replace_all"):
        await call(tools, "patch", path="q.py", old_string="x = 1", new_string="x = 2")
    with pytest.raises(ValueError, match=r"not found in .*q\.py.*exactly.*line\(s\) 1, 3"):
        await call(tools, "patch", path="q.py", old_string="x = 1\n  y = 1", new_string="")
    with pytest.raises(ValueError, match="nothing to change"):
        await call(tools, "patch", path="q.py", old_string="y", new_string="y")
    with pytest.raises(ValueError, match="'old_string' must be the non-empty text"):
        await call(tools, "patch", path="q.py", old_string="", new_string="z")
    with pytest.raises(FileNotFoundError):
        await call(tools, "patch", path="nope.py", old_string="a", new_string="b")
    all_of_them = await call(
        tools, "patch", path="q.py", old_string="x = 1", new_string="x = 9", replace_all=True
    )
    assert all_of_them["replacements"] == 2
    read = await call(tools, "read_file", path="q.py")
    assert read["content"] == "     1|x = 9\n     2|y = 1\n     3|    x = 9"


async def test_patch_refuses_non_utf8(tools: dict[str, SandboxTool], pool: SandboxPool) -> None:
    sandbox = await pool.get("t1")
    await sandbox.write_file("latin.txt", "café".encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8 text"):
        await call(tools, "patch", path="latin.txt", old_string="caf", new_string="cof")


async def test_search_answer_stays_under_the_output_limit() -> None:
    async with SandboxPool("local", max_output_chars=4000) as small:
        tools = {t.name: t for t in sandbox_tools(small)}
        line = "match " + "m" * 200 + "\n"
        await call(tools, "write_file", path="wide.txt", content=line * 100)
        answer = await call(tools, "search_files", pattern="match", max_results=100)
        assert 0 < answer["count"] < 100
        assert answer["truncated"] is True
        assert all(m.endswith("m" * 200) for m in answer["matches"].splitlines())
