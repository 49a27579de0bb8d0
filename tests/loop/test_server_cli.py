"""The ``hermes-model-server`` console script, run for real in a subprocess.

Every command-line error is exactly one line on stderr naming what was wrong, never a
traceback, with a non-zero exit status; SIGTERM stops the server as Ctrl-C does.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import aiohttp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PROG = "hermes-model-server"


def console_script(bindir: Path) -> str:
    found = bindir / PROG
    if found.exists():
        return str(found)
    on_path = shutil.which(PROG)
    if on_path is None:
        pytest.skip(f"the {PROG} console script is not installed")
    return on_path


CLI = console_script(Path(sys.executable).parent)


def run(*args: str, binary: str = CLI) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def one_line_error(done: subprocess.CompletedProcess[str], status: int) -> str:
    """The single stderr line of a failed run (asserting there is exactly one)."""
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{PROG}: ")
    return lines[0]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(["hello"]), encoding="utf-8")
    return path


# Command-line errors -----------------------------------------------------------------


def test_a_port_out_of_range(script: Path) -> None:
    line = one_line_error(run(str(script), "--port", "99999"), 2)
    assert "argument --port: must be 0-65535 (0 picks a free port), got 99999" in line


def test_an_unknown_log_level(script: Path) -> None:
    line = one_line_error(run(str(script), "--log-level", "LOUD"), 2)
    assert "argument --log-level: must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL" in line
    assert "'LOUD'" in line


def test_argparse_errors_are_one_line_too(script: Path) -> None:
    line = one_line_error(run(str(script), "--max-requests", "0"), 2)
    assert "argument --max-requests: must be >= 1, got 0" in line


# Each run pays for importing openai (hermes_loop's own imports): one run per kind of error.


def test_a_bad_script_or_parser(tmp_path: Path, script: Path) -> None:
    deep = tmp_path / "deep.json"
    args = "[" * 100_000 + "]" * 100_000
    deep.write_text(
        '[{"tool_calls": [{"name": "t", "arguments": {"x": ' + args + "}}]}]", encoding="utf-8"
    )
    line = one_line_error(run(str(deep)), 2)
    assert line.endswith(f"{deep}: turn 0: field 'tool_calls[0].arguments': nested more than "
                         "100 levels deep")  # fmt: skip
    assert "no tool-call parser named 'nope'" in one_line_error(
        run(str(script), "--parser", "nope"), 2
    )


def test_a_multi_line_yaml_error_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = tmp_path / "bad.yaml"
    path.write_text("- content: [unclosed\n- other\n", encoding="utf-8")
    assert f"{path}: not valid YAML:" in one_line_error(run(str(path)), 2)


def test_a_busy_port_names_the_port(script: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_error(run(str(script), "--port", str(port)), 1)
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in line


def test_help_lists_the_schema_and_the_signals() -> None:
    done = run("--help")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith(f"usage: {PROG}")
    assert (
        "SIGINT and SIGTERM shut the server down cleanly (exit status 130 and 143)" in done.stdout
    )


# Stopping ----------------------------------------------------------------------------

LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
            probe.listen()
        except OSError:
            return False
    return True


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_stops_a_serving_server_cleanly(tmp_path: Path, signum: int) -> None:
    path = tmp_path / "hang.json"
    path.write_text(json.dumps(["one", {"content": "never", "fault": {"hang": True}}]), "utf-8")
    process = await asyncio.create_subprocess_exec(
        CLI,
        str(path),
        "--port",
        "0",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        found = LISTENING.search((await process.stdout.readline()).decode())
        assert found, "the server did not say where it listens"
        port = int(found.group(1))
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        user = {"role": "user", "content": "hi"}
        hung = {"model": "hang", "messages": [user, {"role": "assistant", "content": "one"}]}
        async with aiohttp.ClientSession() as http:
            async with http.post(url, json={"model": "hang", "messages": [user]}) as response:
                assert response.status == 200
            pending = asyncio.ensure_future(http.post(url, json=hung))
            await asyncio.sleep(0.2)  # the hung request is in flight (if not, it is refused)
            process.send_signal(signum)
            _, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
            with pytest.raises(aiohttp.ClientError):
                (await pending).raise_for_status()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 128 + signum  # the signal policy: 130 SIGINT, 143 SIGTERM
    assert stderr == b""
    assert port_is_free(port)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs a named pipe")
    path = tmp_path / "script.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_starting_stops_it_as_cleanly(fifo: Path, signum: int) -> None:
    # The script is a named pipe: the server blocks reading it, mid start-up, until the
    # test writes. Opening the pipe for writing returns once the server opened it.
    process = subprocess.Popen(
        [CLI, str(fifo)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    opened = threading.Event()

    def open_writer() -> None:
        with fifo.open("w", encoding="utf-8"):
            opened.set()
            process.wait(timeout=30)

    writer = threading.Thread(target=open_writer, daemon=True)
    writer.start()
    try:
        assert opened.wait(30), "the server never opened its script"
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        writer.join(timeout=30)
    assert process.returncode == 128 + signum, stderr  # 130 after SIGINT, 143 after SIGTERM
    assert (stdout, stderr) == ("", "")


# Without the server extra ------------------------------------------------------------


@pytest.fixture(scope="module")
def bare_cli(tmp_path_factory: pytest.TempPathFactory) -> str:
    """``hermes-model-server`` installed with hermes-loop alone (no aiohttp, no tokenizers).

    Built with ``uv sync --offline`` from the lock into a throwaway environment (the
    workspace's own packages are installed editable, so it runs this checkout's code).
    """
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        pytest.skip("uv is needed to build an environment without the server extra")
    venv = tmp_path_factory.mktemp("bare") / "venv"
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    env["UV_PROJECT_ENVIRONMENT"] = str(venv)
    done = subprocess.run(
        [uv, "sync", "--locked", "--offline", "--no-dev", "--package", "hermes-loop", "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot build an environment without the server extra: {done.stderr[-500:]}")
    python = venv / "bin" / "python"
    check = subprocess.run(
        [python, "-c", "import aiohttp"], capture_output=True, text=True, timeout=120
    )
    assert check.returncode != 0, "the bare environment has aiohttp"
    return console_script(venv / "bin")


def test_without_the_server_extra_help_works(bare_cli: str) -> None:
    done = run("--help", binary=bare_cli)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {PROG}")
    assert done.stderr == ""


def test_without_the_server_extra_serving_names_the_extra(bare_cli: str, script: Path) -> None:
    line = one_line_error(run(str(script), binary=bare_cli), 1)
    assert line == (
        f"{PROG}: the model server needs the 'server' extra (missing: aiohttp, tokenizers); "
        "install it with: pip install 'hermes-loop[server]'"
    )
    python = str(Path(bare_cli).parent / "python")
    code = (
        "from hermes_loop.server import ModelServerProcess, Script\n"
        "Script(['ok'])\n"
        "try:\n"
        "    from hermes_loop.server import ModelServer\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pip install 'hermes-loop[server]'" in done.stdout
