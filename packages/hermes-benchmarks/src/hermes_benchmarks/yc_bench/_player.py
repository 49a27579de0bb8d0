"""A scripted YC-Bench player for the scripted model server (``Policy``).

It plays real ``yc-bench`` commands through the ``terminal`` tool, reading each answer
back from the conversation, one command per turn: list the employees; then, up to
``max_tasks`` times, take the best-paid market task open at prestige ``prestige``,
accept it, assign every employee to it, dispatch it, and ``sim resume`` until it
finishes; then it says it is done (the
harness finishes the simulation) or, if a resume ends the simulation first, it reports
the ``terminal_reason``. Any command that fails ends its turn with the failure.

It keeps no state: each answer is worked out from the request's messages, so one server
plays any number of runs at once. ``hermes-bench yc-bench check`` and the end-to-end
test drive the whole harness with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from hermes_benchmarks.yc_bench._sim import last_json
from hermes_loop.server import Call, ModelRequest, Turn

__all__ = ["PLAYER_MODEL", "greedy_player", "terminal_steps"]

#: The model name the scripted player answers to.
PLAYER_MODEL = "yc-bench-player"

#: One terminal call in a conversation: the command, its output and exit code.
Step = tuple[str, str, int]


def _tool_answer(content: Any) -> tuple[str, int]:
    try:
        data = json.loads(content) if isinstance(content, str) else content
    except ValueError:
        return str(content), 0
    if isinstance(data, dict):
        return str(data.get("output", "")), int(data.get("exit_code", 0) or 0)
    return str(content), 0


def terminal_steps(messages: Sequence[dict[str, Any]]) -> list[Step]:
    """Every ``terminal`` call in ``messages`` with its answer, in order."""
    commands: dict[str, str] = {}
    steps: list[Step] = []
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                arguments = function.get("arguments") or "{}"
                try:
                    parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
                except ValueError:
                    parsed = {}
                commands[str(call.get("id"))] = str(parsed.get("command", ""))
        elif message.get("role") == "tool":
            command = commands.get(str(message.get("tool_call_id")), "")
            output, code = _tool_answer(message.get("content"))
            steps.append((command, output, code))
    return steps


def _run(command: str) -> Turn:
    return Turn(tool_calls=[Call("terminal", {"command": command})])


def greedy_player(*, max_tasks: int = 2, prestige: int = 1) -> Callable[[ModelRequest], Turn]:
    """The player's ``Policy`` function (see the module's docstring).

    Raises:
        ValueError: ``max_tasks`` is below 0 or ``prestige`` below 1.
    """
    if max_tasks < 0 or prestige < 1:
        raise ValueError(f"need max_tasks >= 0 and prestige >= 1, got {max_tasks}, {prestige}")
    browse = f"yc-bench market browse --required-prestige-lte {prestige} --limit 1"

    def next_task(steps: list[Step]) -> Turn:
        dispatched = sum(1 for command, _, _ in steps if "yc-bench task dispatch" in command)
        if dispatched >= max_tasks:
            return Turn(f"I finished {dispatched} task(s) and stop here.")
        return _run(browse)

    def respond(request: ModelRequest) -> Turn:
        steps = terminal_steps(request.messages)
        if not steps:
            return _run("yc-bench employee list")
        command, output, code = steps[-1]
        if code != 0:
            lines = output.strip().splitlines() or ["no output"]
            return Turn(f"`{command}` failed (exit {code}): {lines[-1]}")
        data = last_json(output) or {}
        if command == "yc-bench employee list":
            return next_task(steps)
        if command == browse:
            tasks = data.get("tasks") or []
            if not tasks:
                return _run("yc-bench sim resume")
            return _run(f"yc-bench task accept --task-id {tasks[0]['task_id']}")
        words = command.split()
        if command.startswith(("yc-bench task accept ", "yc-bench task assign ")):
            task = words[words.index("--task-id") + 1]
            listed = (last_json(steps[0][1]) or {}).get("employees") or []
            staff = [str(employee["employee_id"]) for employee in listed]
            assigned = {
                step.split()[-1]
                for step, _, _ in steps
                if step.startswith(f"yc-bench task assign --task-id {task} ")
            }
            waiting = [employee for employee in staff if employee not in assigned]
            if waiting:
                return _run(f"yc-bench task assign --task-id {task} --employee-id {waiting[0]}")
            return _run(f"yc-bench task dispatch --task-id {task}")
        if command == "yc-bench sim resume":
            if data.get("terminal_reason"):
                return Turn(f"The simulation ended: {data['terminal_reason']}.")
            events = data.get("wake_events") or []
            if any(event.get("type") == "task_completed" for event in events):
                return next_task(steps)
        return _run("yc-bench sim resume")

    return respond
