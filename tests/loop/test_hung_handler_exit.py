"""A blocking handler that hangs for ever does not keep the interpreter from exiting."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import asyncio
import json
import threading

from hermes_loop import AgentLoop, OpenAIChatServer, Tool
from hermes_loop.server import Call, ModelServer, Script, Turn


def hang(arguments, call):
    threading.Event().wait()  # never returns, and ignores call.cancelled


async def main():
    script = Script([Turn(tool_calls=[Call("hang", {})]), Turn("I gave up.")])
    tools = [Tool("hang", "Hang.", {"type": "object"}, hang)]
    async with ModelServer(script) as server:
        endpoint = OpenAIChatServer(base_url=server.base_url, model="scripted", max_retries=0)
        async with AgentLoop(endpoint, tools, tool_timeout=1.0) as loop:
            result = await loop.run([{"role": "user", "content": "go"}])
        await endpoint.aclose()
    print(json.dumps([result.stop_reason, [e.kind for e in result.tool_errors]]), flush=True)


asyncio.run(main())
"""


def test_the_process_exits_while_an_abandoned_handler_still_hangs() -> None:
    # Before: the pool's worker threads were joined at exit, so this child never ended
    # (subprocess.run then kills it and raises TimeoutExpired).
    child = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr
    assert json.loads(child.stdout.splitlines()[-1]) == ["natural", ["timeout"]]
    assert "still running after 1s" in child.stderr  # the abandonment is logged
