"""``hermes-model-server``: serve script files over HTTP on the loopback interface.

Usage::

    hermes-model-server SCRIPT.json [MORE.json ...] [--port 8000] [--parser hermes]
        [--tokenizer DIR] [--max-requests N] [--default-model NAME]

Prints ``listening on http://127.0.0.1:PORT`` once it accepts connections, and runs
until SIGINT (Ctrl-C) or SIGTERM, ``--max-requests`` is reached, or (with
``--exit-on-stdin-eof``) its standard input closes. SIGTERM stops it exactly as Ctrl-C
does: it stops listening, drops hung answers, lets the others finish, releases the port
and exits with status 130 after Ctrl-C, 143 after SIGTERM (the project's signal policy,
as every console script of the project).

Every error is one line on stderr, ``hermes-model-server: ...``, naming what was wrong;
never a traceback. Exit status: 0 after a clean shutdown on ``--max-requests`` or stdin's
end, 130/143 after SIGINT/SIGTERM (also while starting), 1 when the server cannot start
(the port is taken, the ``server`` extra is missing), 2 for a bad command line, script
file, tokenizer or parser name (the error names the file, the script, the turn and the
field).

This module imports the HTTP server (``aiohttp``, ``tokenizers``) only once the command
line is read, so ``--help`` and argument errors work without the ``server`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import logging
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import NoReturn

from hermes_loop.server._responders import Responder
from hermes_loop.server._script_files import load_script_file
from hermes_loop.server._turns import ScriptError
from hermes_loop.templates._tokenizer import TokenizerUnavailableError

__all__ = ["PROG", "build_arg_parser", "main"]

PROG = "hermes-model-server"
#: The modules the ``hermes-loop[server]`` extra brings.
EXTRA_MODULES = ("aiohttp", "tokenizers")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

_SCHEMA = """\
script files (JSON; YAML when PyYAML is installed):
  [turn, ...]                          one script, named after the file
  {"model": NAME, "turns": [turn, ...]}
  {"messages": [openai messages]}      replay a recorded conversation
  {"scripts": {NAME: script, ...}}     several scripts; requests choose by "model"
turn: "text" or {"content", "reasoning", "tool_calls": [{"name", "arguments"}],
                 "finish_reason", "faults": [{"status", "retry_after", "delay", "hang",
                 "truncate", "disconnect", "times", "message"}]}
      a fault applies to the first "times" attempts at the turn (default: every attempt)
a request for a model not served is a 404 (unless --default-model names one)
SIGINT and SIGTERM shut the server down cleanly (exit status 130 and 143)
"""


def _one_line(message: object) -> str:
    return " ".join(str(message).split())


def _fail(message: object) -> None:
    print(f"{PROG}: {_one_line(message)}", file=sys.stderr, flush=True)


class _ArgumentParser(argparse.ArgumentParser):
    """``argparse`` with one-line errors: the problem and where to read more."""

    def error(self, message: str) -> NoReturn:
        _fail(f"error: {message} (see {PROG} --help)")
        raise SystemExit(2)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a port number, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0-65535 (0 picks a free port), got {port}")
    return port


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _log_level(text: str) -> str:
    level = text.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(LOG_LEVELS)}, got {text!r}")
    return level


def build_arg_parser() -> argparse.ArgumentParser:
    """The command line of ``hermes-model-server`` (its errors are one line each)."""
    parser = _ArgumentParser(
        prog=PROG,
        description="A scripted OpenAI-compatible model server (chat completions, the "
        "Responses API and /generate) for offline tests, demos and benchmarks.",
        epilog=_SCHEMA,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("scripts", nargs="+", help="script files (JSON or YAML)")
    parser.add_argument("--host", default="127.0.0.1", help="a loopback address")
    parser.add_argument("--port", type=_port, default=0, help="0 picks a free port (default)")
    parser.add_argument("--parser", default="hermes", help="raw completion format (hermes)")
    parser.add_argument("--tokenizer", default=None, help="tokenizer.json or its directory")
    parser.add_argument(
        "--max-requests", type=_positive, default=None, help="stop after N requests"
    )
    parser.add_argument("--default-model", default=None, help="model for unknown names")
    parser.add_argument(
        "--exit-on-stdin-eof", action="store_true", help="shut down when stdin closes"
    )
    parser.add_argument(
        "--log-level",
        type=_log_level,
        default="WARNING",
        metavar="LEVEL",
        help=f"logging level: {', '.join(LOG_LEVELS)} (WARNING)",
    )
    return parser


def _missing_extra() -> list[str]:
    """The modules of the ``server`` extra that are not installed."""
    return [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]


def _load(paths: Sequence[str]) -> dict[str, Responder]:
    found: dict[str, Responder] = {}
    origin: dict[str, str] = {}
    for path in paths:
        for name, responder in load_script_file(path).items():
            if name in found:
                raise ScriptError(
                    f"model name {name!r} is defined twice (also in {origin[name]})", where=path
                )
            found[name] = responder
            origin[name] = path
    return found


def _watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> bool:
    """Set ``stop`` when stdin reaches EOF; return False if stdin cannot be watched."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return False

    def readable() -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
            stop.set()

    try:
        loop.add_reader(fd, readable)
    except (NotImplementedError, OSError, ValueError):
        return False
    return True


class _Stop:
    """Which signal stopped the server. The project's signal policy (its home:
    ``hermes_sandbox.signals``, which hermes-loop may not import) is 130 after Ctrl-C and
    143 after SIGTERM (128 + the signal's number), SIGTERM taking Ctrl-C's path."""

    __slots__ = ("signum",)

    def __init__(self) -> None:
        self.signum: int | None = None

    def record(self, signum: int) -> None:
        """Keep the first signal that arrived."""
        if self.signum is None:
            self.signum = signum

    @property
    def exit_status(self) -> int:
        """128 + the signal's number; 130 (Ctrl-C) when none was recorded."""
        return 128 + (signal.SIGINT if self.signum is None else self.signum)


class _CannotStart(Exception):
    """The server could not start for a reason outside the command line (exit status 1)."""


async def _serve(responders: dict[str, Responder], args: argparse.Namespace, stopped: _Stop) -> int:
    from hermes_loop.server._app import ModelServer  # the server extra, checked by main()

    server = ModelServer(
        responders,
        tokenizer=args.tokenizer,
        parser=args.parser,
        host=args.host,
        port=args.port,
        max_requests=args.max_requests,
        default_model=args.default_model,
    )
    try:
        await server.start()
    except OSError as exc:
        raise _CannotStart(exc) from exc
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal(signum: int) -> None:
        stopped.record(signum)
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, on_signal, signum)
    if args.exit_on_stdin_eof and not _watch_stdin(loop, stop):
        print(f"{PROG}: cannot watch stdin; ignoring --exit-on-stdin-eof", flush=True)
    print(f"listening on {server.url}", flush=True)
    print(f"models: {', '.join(server.models)} (OpenAI base URL {server.base_url})", flush=True)
    waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(server.wait_closed())]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        await server.close()
    return 0 if stopped.signum is None else stopped.exit_status


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[_Stop]:
    """Until the server's own handlers take over, SIGTERM interrupts as Ctrl-C does; the
    yielded :class:`_Stop` records which signal stopped the server."""
    stopped = _Stop()

    def interrupt(signum: int, frame: FrameType | None) -> None:
        stopped.record(signum)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield stopped
        return
    try:
        yield stopped
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server; return the exit status (see the module docstring)."""
    args = build_arg_parser().parse_args(argv)
    missing = _missing_extra()
    if missing:
        _fail(
            f"the model server needs the 'server' extra (missing: {', '.join(missing)}); "
            "install it with: pip install 'hermes-loop[server]'"
        )
        return 1
    logging.basicConfig(level=args.log_level, format="%(levelname)s %(name)s: %(message)s")
    with _sigterm_as_interrupt() as stopped:
        try:
            responders = _load(args.scripts)
            return asyncio.run(_serve(responders, args, stopped))
        except KeyboardInterrupt:
            return stopped.exit_status
        except _CannotStart as exc:
            _fail(exc)
            return 1
        except TokenizerUnavailableError as exc:
            _fail(exc)
            return 1
        except (ScriptError, ValueError, KeyError, OSError) as exc:
            _fail(exc)
            return 2
