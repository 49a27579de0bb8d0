"""The main job, end to end, on the embedded defaults: no model, no network, no keys.

A scripted "oracle" model server (a real HTTP server on 127.0.0.1) plays the model.
An ``AgentLoop`` runs a rollout against it twice, once per phase:

- Phase 1: ``/v1/chat/completions``; the server returns structured tool calls.
- Phase 2: ``/generate``; the server returns raw text with token ids and logprobs, the
  loop parses the tool calls with ``hermes_parsers`` and records training tokens.

The model's ``terminal`` calls run in a ``local`` sandbox; a reward function then checks
the sandbox the rollout used, as a ``compute_reward`` would. Finally every tool-call format
is rendered and parsed back. Run: ``./dev demo`` (or ``uv run python examples/quickstart.py``).
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from typing import Any

from hermes_loop import AgentLoop, AgentResult, GenerateChatServer, OpenAIChatServer, Tool
from hermes_loop.server import Call, ModelRequest, ModelServer, Policy, Turn
from hermes_loop.tokenizer import load_tokenizer
from hermes_parsers.cli import main as parsers_cli
from hermes_sandbox import SandboxPool, stop_on_sigterm

TASK = "Write the word hello into greeting.txt in your working directory, then show it."
TERMINAL_SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string", "description": "a bash command"}},
    "required": ["command"],
}


def oracle(request: ModelRequest) -> Turn:
    """The reference solution, played as a model: act, then report what the tool said."""
    results = [m for m in request.messages if m.get("role") == "tool"]
    if not results:
        return Turn(
            "I'll create the file and print it.",
            tool_calls=[
                Call("terminal", {"command": "echo hello > greeting.txt && cat greeting.txt"})
            ],
            reasoning="The task needs one shell command.",
        )
    try:
        output = json.loads(results[-1]["content"])["output"].strip()
    except (KeyError, TypeError, ValueError):
        output = str(results[-1].get("content", "")).strip()
    return Turn(f"Done. The file says: {output}")


def terminal_tool(pool: SandboxPool) -> Tool:
    async def terminal(arguments: dict[str, Any], call: Any) -> str:
        sandbox = await pool.get(call.task_id)
        result = await sandbox.exec(arguments["command"])
        return json.dumps({"output": result.output, "exit_code": result.exit_code})

    return Tool("terminal", "Run a bash command in the task's sandbox.", TERMINAL_SCHEMA, terminal)


async def reward(pool: SandboxPool, task_id: str) -> float:
    """What a compute_reward does: look at the sandbox the rollout used."""
    sandbox = await pool.get(task_id)
    check = await sandbox.exec("cat greeting.txt")
    return 1.0 if check.exit_code == 0 and check.output.strip() == "hello" else 0.0


def show(title: str, result: AgentResult, score: float) -> None:
    print(f"== {title}: {result.turns_used} turns, stop={result.stop_reason}, reward={score}")
    for message in result.messages:
        text = message.get("content")
        calls = message.get("tool_calls") or []
        line = text if isinstance(text, str) else ""
        line += "".join(f" [{c['function']['name']}({c['function']['arguments']})]" for c in calls)
        print(f"   {message['role']:>9}: {line.strip()}")


async def run() -> int:
    failures = 0
    async with ModelServer(Policy(oracle, name="oracle")) as server, SandboxPool("local") as pool:
        tool = terminal_tool(pool)
        phase1 = OpenAIChatServer(base_url=server.base_url, model="oracle", max_retries=2)
        async with AgentLoop(phase1, [tool], max_turns=5) as loop:
            result = await loop.run([{"role": "user", "content": TASK}], task_id="phase1")
        score = await reward(pool, "phase1")
        show("Phase 1 (chat completions)", result, score)
        failures += score != 1.0 or not result.finished_naturally

        tokenizer = load_tokenizer()
        phase2 = GenerateChatServer(base_url=server.url, tokenizer=tokenizer, parser="hermes")
        async with AgentLoop(phase2, [tool], max_turns=5) as loop:
            result = await loop.run([{"role": "user", "content": TASK}], task_id="phase2")
        score = await reward(pool, "phase2")
        show("Phase 2 (/generate, parsed client-side)", result, score)
        state = result.managed_state or {"nodes": []}
        for node in state["nodes"]:
            trained = sum(1 for m in node["masked_tokens"] if m != -100)
            print(f"   training sequence: {len(node['tokens'])} tokens, {trained} trained on")
        failures += score != 1.0 or not result.finished_naturally
        await phase1.aclose()
        await phase2.aclose()

    buffer = io.StringIO()
    status = parsers_cli(["demo"], stdin=io.StringIO(), out=buffer)
    print("== Tool-call formats: " + buffer.getvalue().strip().splitlines()[-1])
    failures += status != 0
    print("ok" if not failures else f"{failures} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    with stop_on_sigterm():  # SIGTERM (kill, timeout) cleans up exactly as Ctrl-C does
        sys.exit(asyncio.run(run()))
