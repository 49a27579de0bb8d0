"""The ``hermes-parsers`` command (also ``python -m hermes_parsers``).

    hermes-parsers parse -f hermes completion.txt     # JSON assistant message out
    hermes-parsers parse -f qwen3_coder < out.txt     # stdin when no file is given
    hermes-parsers demo                               # every format, end to end
    hermes-parsers list                               # registered names

Every failure is one line on stderr naming what was wrong, and exit status 2 (1 when the
demo finds a format that does not round-trip); never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from types import FrameType
from typing import Any, NoReturn, TextIO

from hermes_parsers._api import get_parser, list_parsers
from hermes_parsers._errors import ParseError, UnknownParserError
from hermes_parsers._tool_call import FunctionCall, ToolCall

__all__ = ["main"]

_SUMMARY = "Parse raw model text into OpenAI-shaped tool calls, in any of twelve formats."
_SAMPLE_CALLS = [
    ToolCall("call_1", FunctionCall("terminal", json.dumps({"command": "ls -la /workspace"}))),
    ToolCall(
        "call_2",
        FunctionCall(
            "write_file",
            json.dumps({"path": "notes/été.txt", "content": "a\nb"}, ensure_ascii=False),
        ),
    ),
]


_JSON_TYPES = {"dict": "object", "list": "array", "str": "string", "int": "number"}
_JSON_TYPES |= {"float": "number", "bool": "boolean", "NoneType": "null"}


class _UsageFailure(Exception):
    """A command-line input was wrong; the message is the one line to print (never
    raised out of ``main``)."""


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (no usage block)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _demo(out: TextIO) -> int:
    """Render a sample turn in every format, parse it back, and print both."""
    failures = 0
    for name in list_parsers():
        parser = get_parser(name)
        content = "I'll inspect the workspace first." if parser.content_with_calls else None
        calls = [
            ToolCall(f"functions.{c.function.name}:{i}", c.function) if parser.carries_ids else c
            for i, c in enumerate(_SAMPLE_CALLS)
        ]
        raw = parser.render(content, calls)
        result = parser.parse(raw)
        same = [c.function for c in result.tool_calls or []] == [c.function for c in calls]
        ok = same and result.content == content
        failures += not ok
        out.write(f"== {name} {'ok' if ok else 'MISMATCH'}\n--- raw model text\n{raw}\n")
        out.write("--- parsed\n" + json.dumps(result.to_message(), ensure_ascii=False, indent=2))
        out.write("\n\n")
    out.write(f"{len(list_parsers()) - failures} of {len(list_parsers())} formats round-tripped\n")
    return 1 if failures else 0


def _read_text(path: str, what: str) -> str:
    """The UTF-8 text of the file at ``path``.

    Raises:
        _UsageFailure: if it cannot be read or is not UTF-8.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        raise _UsageFailure(f"{what} {path!r} does not exist") from None
    except IsADirectoryError:
        raise _UsageFailure(f"{what} {path!r} is a directory, not a file") from None
    except PermissionError:
        raise _UsageFailure(f"{what} {path!r} cannot be read (permission denied)") from None
    except UnicodeDecodeError as exc:
        raise _UsageFailure(
            f"{what} {path!r} is not UTF-8 text (byte {exc.start} cannot be decoded)"
        ) from None
    except OSError as exc:
        raise _UsageFailure(f"{what} {path!r} cannot be read ({exc.strerror})") from None


def _read_tools(path: str) -> list[Mapping[str, Any]]:
    """The tool schemas in the JSON file at ``path``: a list of OpenAI tool entries.

    Raises:
        _UsageFailure: if the file cannot be read, is not JSON, or is not a list of objects.
    """
    text = _read_text(path, "--tools file")
    try:
        tools = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _UsageFailure(
            f"--tools file {path!r} is not valid JSON ({exc.msg} at line {exc.lineno}, "
            f"column {exc.colno})"
        ) from None
    if not isinstance(tools, list):
        raise _UsageFailure(
            f"--tools file {path!r} holds a JSON {_JSON_TYPES[type(tools).__name__]}, not a "
            'list of tools; write [{"type": "function", "function": {...}}, ...]'
        )
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _UsageFailure(
                f"--tools file {path!r}: entry {index} is not a JSON object (an OpenAI tool "
                'entry such as {"type": "function", "function": {"name": ...}})'
            )
    return tools


def _input(file: str | None, stdin: TextIO) -> str:
    """The model text: the file's, or standard input's when no file is given."""
    if file is None or file == "-":
        try:
            return stdin.read()
        except UnicodeDecodeError as exc:
            raise _UsageFailure(
                f"standard input is not UTF-8 text (byte {exc.start} cannot be decoded)"
            ) from None
    return _read_text(file, "input file")


def _command_line(prog: str) -> argparse.ArgumentParser:
    cli = _OneLineParser(prog=prog, description=_SUMMARY)
    commands = cli.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parse = commands.add_parser(
        "parse",
        help="parse model text (a file, or standard input) into an assistant message",
        description="Parse model text into an OpenAI assistant message, printed as JSON.",
    )
    parse.add_argument("file", nargs="?", metavar="FILE", help="model text (default: stdin)")
    parse.add_argument("--format", "-f", required=True, help="parser name, see 'list'")
    parse.add_argument(
        "--strict", action="store_true", help="fail on malformed markup instead of keeping it"
    )
    parse.add_argument(
        "--tools", metavar="FILE", help="JSON file with the list of OpenAI tools offered"
    )
    commands.add_parser("demo", help="render and parse a sample turn in every format")
    commands.add_parser("list", help="print the registered parser names")
    return cli


def main(
    argv: Sequence[str] | None = None,
    stdin: TextIO | None = None,
    out: TextIO | None = None,
    *,
    prog: str = "hermes-parsers",
) -> int:
    """Run the command line; return the exit status: 0, 1 when the demo finds a format
    that does not round-trip, 2 on any error (bad usage, unreadable or invalid input,
    unknown format, malformed markup with ``--strict``), with one line on stderr.

    ``stdin`` and ``out`` default to the process's standard streams. Ctrl-C, and SIGTERM
    when called from the main thread, stop it quietly: exit status 130 after Ctrl-C, 143
    after SIGTERM (the project's signal policy; nothing already written is lost)."""
    with _sigterm_as_interrupt() as stop:
        try:
            return _main(argv, stdin, out, prog)
        except KeyboardInterrupt:
            return stop.exit_status
        except BrokenPipeError:
            # The reader went away (``hermes-parsers demo | head``): it has what it wanted.
            # What is still buffered for the process's stdout goes nowhere, so the
            # interpreter's last flush cannot fail either.
            if out is None:
                _drop_stdout()
            return 0


def _drop_stdout() -> None:
    """Point the process's stdout at ``/dev/null`` (after its reader closed the pipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


class _Stop:
    """Which signal stopped the command. The project's signal policy (its home:
    ``hermes_sandbox.signals``, which this package may not import: it has no
    dependencies) is 130 after Ctrl-C and 143 after SIGTERM, SIGTERM taking Ctrl-C's path."""

    __slots__ = ("terminated",)

    def __init__(self) -> None:
        self.terminated = False

    @property
    def exit_status(self) -> int:
        """143 once SIGTERM arrived, else 130 (Ctrl-C)."""
        return 128 + (signal.SIGTERM if self.terminated else signal.SIGINT)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[_Stop]:
    """While inside, SIGTERM raises ``KeyboardInterrupt`` as Ctrl-C does and is recorded
    in the yielded :class:`_Stop` (main thread only; the previous handler comes back on
    the way out)."""
    stop = _Stop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        stop.terminated = True
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None, stdin: TextIO | None, out: TextIO | None, prog: str) -> int:
    args = _command_line(prog).parse_args(argv)  # usage errors: one line, exit 2
    out = out or sys.stdout
    stdin = stdin or sys.stdin
    if args.command == "list":
        out.write("\n".join(list_parsers(include_aliases=True)) + "\n")
        return 0
    if args.command == "demo":
        return _demo(out)
    try:
        tools = _read_tools(args.tools) if args.tools else None
        parser = get_parser(args.format, strict=args.strict, tools=tools)
        result = parser.parse(_input(args.file, stdin))
    except _UsageFailure as exc:
        return _fail(prog, str(exc))
    except UnknownParserError as exc:
        return _fail(prog, str(exc))
    except ParseError as exc:
        return _fail(prog, f"{exc.where()} (drop --strict to keep malformed markup as content)")
    out.write(json.dumps(result.to_message(), ensure_ascii=False, indent=2) + "\n")
    return 0


def _fail(prog: str, message: str) -> int:
    """Print ``prog: error: message`` as one line on stderr; return the exit status 2."""
    line = " ".join(message.split())  # one line, whatever the message held
    sys.stderr.write(f"{prog}: error: {line}\n")
    return 2
