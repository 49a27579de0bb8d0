"""The ``hermes-parsers`` command and ``python -m hermes_parsers``, run for real."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hermes_parsers import list_parsers
from hermes_parsers.cli import main

SCRIPT = Path(sys.executable).parent / "hermes-parsers"
COMMANDS = {"script": [str(SCRIPT)], "module": [sys.executable, "-m", "hermes_parsers"]}
CALL = 'Hi<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'


def _run(how: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMANDS[how], *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed run (checked: exit 2, no traceback, no output)."""
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("how", COMMANDS)
def test_parse_reads_a_file_or_stdin(how: str, tmp_path: Path) -> None:
    source = tmp_path / "out.txt"
    source.write_text(CALL, encoding="utf-8")
    for done in (
        _run(how, "parse", "-f", "hermes", str(source)),
        _run(how, "parse", "-f", "hermes", stdin=CALL),
    ):
        assert done.returncode == 0, done.stderr
        message = json.loads(done.stdout)
        assert message["content"] == "Hi"
        assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'}


def test_tools_file_types_values(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    schema = {"type": "object", "properties": {"n": {"type": "string"}}}
    tools.write_text(
        json.dumps([{"type": "function", "function": {"name": "f", "parameters": schema}}])
    )
    text = "<tool_call>\n<function=f>\n<parameter=n>\n42\n</parameter>\n</function>\n</tool_call>"
    done = _run("script", "parse", "-f", "qwen3_coder", "--tools", str(tools), stdin=text)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tool_calls"][0]["function"]["arguments"] == '{"n": "42"}'


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "--tools file '{path}' does not exist"),
        ("[{oops", "--tools file '{path}' is not valid JSON (Expecting property name"),
        ('{"type": "function"}', "--tools file '{path}' holds a JSON object, not a list of tools"),
        ("[1]", "--tools file '{path}': entry 0 is not a JSON object"),
        (b"\xff\xfe[]", "--tools file '{path}' is not UTF-8 text"),
    ],
    ids=["missing", "invalid-json", "object", "entry-not-object", "not-utf8"],
)
@pytest.mark.parametrize("how", COMMANDS)
def test_bad_tools_file_is_one_line(
    how: str, content: str | bytes | None, expected: str, tmp_path: Path
) -> None:
    path = tmp_path / "tools.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    line = _one_line_error(_run(how, "parse", "-f", "hermes", "--tools", str(path), stdin=CALL))
    assert expected.format(path=path) in line


@pytest.mark.parametrize("how", COMMANDS)
def test_strict_error_suggests_dropping_strict(how: str) -> None:
    line = _one_line_error(
        _run(how, "parse", "-f", "hermes", "--strict", stdin="<tool_call>{oops\n</tool_call>")
    )
    assert "hermes: tool call is not valid JSON" in line
    assert "drop --strict" in line
    assert "strict=False" not in line


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["parse", "-f", "nope"], "no tool-call parser named 'nope'; known parsers: "),
        (["parse"], "the following arguments are required: --format/-f"),
        (["parse", "-f", "hermes", "/no/such/file"], "input file '/no/such/file' does not exist"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
    ids=["unknown-format", "no-format", "missing-input", "bad-command"],
)
def test_usage_errors_are_one_line(args: list[str], expected: str) -> None:
    for how in COMMANDS:
        assert expected in _one_line_error(_run(how, *args, stdin=CALL))


def test_input_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    source = tmp_path / "bad.txt"
    source.write_bytes(b"ok \xff")
    line = _one_line_error(_run("script", "parse", "-f", "hermes", str(source)))
    assert f"input file '{source}' is not UTF-8 text (byte 3 cannot be decoded)" in line


def test_help_has_no_markup() -> None:
    for args in (["--help"], ["parse", "--help"]):
        done = _run("script", *args)
        assert done.returncode == 0
        assert "``" not in done.stdout
        assert "usage: hermes-parsers" in done.stdout
    assert "usage: python -m hermes_parsers" in _run("module", "--help").stdout


def test_demo_round_trips_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    count = len(list_parsers())
    assert f"{count} of {count} formats round-tripped" in out


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    assert capsys.readouterr().out.split() == list_parsers(include_aliases=True)


def test_main_takes_streams(capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    assert main(["parse", "-f", "hermes"], stdin=io.StringIO(CALL), out=out) == 0
    assert json.loads(out.getvalue())["content"] == "Hi"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_stop_it_quietly(signum: int) -> None:
    # The command waits on stdin; Ctrl-C ends it with 130, SIGTERM with 143 (the project's
    # signal policy), and no traceback.
    child = subprocess.Popen(
        [sys.executable, "-m", "hermes_parsers", "parse", "-f", "hermes"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None
    child.stdin.write("<tool_call>")  # keeps stdin open: the command is mid-read
    child.stdin.flush()
    time.sleep(1.5)  # let the interpreter reach the read (no wall time is asserted)
    child.send_signal(signum)
    _out, err = child.communicate(timeout=60)
    assert child.returncode == 128 + signum
    assert "Traceback" not in err


def test_demo_into_a_pipe_closed_early_ends_quietly() -> None:
    # `hermes-parsers demo | head -2`: the reader goes away before the output ends.
    import subprocess
    import sys

    demo = subprocess.Popen(
        [sys.executable, "-m", "hermes_parsers", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert demo.stdout is not None
    demo.stdout.close()  # gone before the first write: every write meets a closed pipe
    _, err = demo.communicate(timeout=60)
    assert demo.returncode == 0
    assert b"Traceback" not in err
    assert err == b""
