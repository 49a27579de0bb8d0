"""Agent-loop overhead, as a ratio against a bare ``openai.AsyncOpenAI`` loop in the same run.

Both sides run the same rollouts against the scripted model server in a child process on
loopback: three model calls per rollout (two tool-call turns, then an answer), with the
same messages, the same tool results and the same client settings. The bare side
appends the assistant message and the tool results itself; the loop side is
``AgentLoop`` with ``OpenAIChatServer`` and an async tool. Each level of concurrency
runs both sides in alternation and keeps each side's best rate.

Prints, per level (1, 64, 256 concurrent rollouts): requests/s of each side, the ratio
loop/bare (bar: >= 0.90) and the CPU microseconds per turn the loop spends beyond the
bare client (negative: it spends less, as it skips the SDK's request transforms). Exits 1
if a bar is missed. Run: ``./dev bench`` or ``uv run python benchmarks/loop.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import openai
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionMessageToolCallUnion,
    ChatCompletionToolMessageParam,
)

from hermes_loop import AgentLoop, OpenAIChatServer, Tool, ToolInvocation
from hermes_loop.server import ModelServerProcess

BAR = 0.90
TOOL_RESULT = "total 12\ndrwxr-xr-x 2 root root 4096 .\n-rw-r--r-- 1 root root 120 notes.txt"
SCRIPT = [
    {"content": "Listing.", "tool_calls": [{"name": "terminal", "arguments": {"command": "ls"}}]},
    {"tool_calls": [{"name": "terminal", "arguments": {"command": "cat notes.txt"}}]},
    {"content": "The notes say hello."},
]
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
TURNS = len(SCRIPT)


class NamedToolMessage(ChatCompletionToolMessageParam):
    """A tool result carrying the tool's name too, as ``AgentLoop`` sends it."""

    name: str


async def terminal(arguments: dict[str, Any], call: ToolInvocation) -> str:
    return TOOL_RESULT


def client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0, timeout=60)


def function_call(
    call: ChatCompletionMessageToolCallUnion,
) -> ChatCompletionMessageFunctionToolCall:
    """``call`` as a function tool call (the scripted server sends no other kind).

    Raises:
        RuntimeError: ``call`` is a custom tool call.
    """
    if not isinstance(call, ChatCompletionMessageFunctionToolCall):
        raise RuntimeError(f"unexpected non-function tool call: {call!r}")
    return call


async def bare_rollout(
    api: openai.AsyncOpenAI, tools: list[ChatCompletionFunctionToolParam], i: int
) -> None:
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": f"task {i}"}]
    while True:
        response = await api.chat.completions.create(
            model="scripted", messages=messages, tools=tools, temperature=1.0
        )
        message = response.choices[0].message
        calls = [function_call(c) for c in message.tool_calls or ()]
        entry: ChatCompletionAssistantMessageParam = {
            "role": "assistant",
            "content": message.content,
        }
        if calls:
            entry["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in calls
            ]
        messages.append(entry)
        if not calls:
            return
        for c in calls:
            messages.append(
                NamedToolMessage(
                    role="tool", tool_call_id=c.id, name="terminal", content=TOOL_RESULT
                )
            )


async def run_side(
    side: str, base_url: str, concurrency: int, rollouts: int
) -> tuple[float, float]:
    """(requests per second, CPU seconds) for ``rollouts`` rollouts, ``concurrency`` at once."""
    api = client(base_url)
    gate = asyncio.Semaphore(concurrency)
    tool = Tool("terminal", "Run a shell command.", SCHEMA, terminal)
    loop = AgentLoop(OpenAIChatServer(model="scripted", client=api), [tool], max_turns=TURNS + 1)
    # Tool.schema() builds exactly an OpenAI function-tool entry.
    schemas = [cast(ChatCompletionFunctionToolParam, tool.schema())]

    async def one(i: int) -> None:
        async with gate:
            if side == "bare":
                await bare_rollout(api, schemas, i)
            else:
                result = await loop.run([{"role": "user", "content": f"task {i}"}])
                if result.turns_used != TURNS or not result.finished_naturally:
                    raise RuntimeError(f"unexpected rollout: {result.stop_reason}")

    await one(-1)  # warm the connection
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(rollouts)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await loop.aclose()
    await api.close()
    return rollouts * TURNS / wall, cpu


async def measure(
    base_url: str, levels: list[int], rounds: int, scale: int
) -> list[dict[str, float]]:
    rows = []
    for level in levels:
        rollouts = max(level * 2, scale)
        best = {"bare": (0.0, 0.0), "loop": (0.0, 0.0)}
        for _ in range(rounds):
            for side in ("bare", "loop"):
                rate, cpu = await run_side(side, base_url, level, rollouts)
                if rate > best[side][0]:
                    best[side] = (rate, cpu)
        turns = rollouts * TURNS
        rows.append(
            {
                "level": level,
                "bare": best["bare"][0],
                "loop": best["loop"][0],
                "ratio": best["loop"][0] / best["bare"][0],
                "cpu_us": (best["loop"][1] - best["bare"][1]) / turns * 1e6,
            }
        )
    return rows


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cli.add_argument("--quick", action="store_true", help="fewer rollouts and rounds")
    args = cli.parse_args()
    rounds, scale = (2, 32) if args.quick else (3, 128)
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "bench.json"
        script.write_text(json.dumps({"model": "scripted", "turns": SCRIPT}))
        with ModelServerProcess(script) as server:
            rows = asyncio.run(measure(server.base_url, [1, 64, 256], rounds, scale))
    header = ("rollouts at once", "bare req/s", "loop req/s", "loop/bare", "CPU us/turn vs bare")
    print("".join(f"{h:>{w}}" for h, w in zip(header, (16, 12, 12, 11, 21), strict=True)))
    missed = []
    for row in rows:
        print(
            f"{row['level']:>16}{row['bare']:>12.0f}{row['loop']:>12.0f}"
            f"{row['ratio']:>11.2f}{row['cpu_us']:>21.0f}"
        )
        if row["ratio"] < BAR:
            missed.append(
                f"{row['level']} at once: loop reaches {row['ratio']:.2f} of bare (bar {BAR})"
            )
    print()
    print("\n".join(missed) if missed else "all bars met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
