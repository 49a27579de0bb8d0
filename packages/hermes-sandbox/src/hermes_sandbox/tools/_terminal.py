"""The ``terminal`` tool: run a shell command in the task's sandbox."""

from __future__ import annotations

from typing import Any

from hermes_sandbox._result import ExecResult
from hermes_sandbox.tools._spec import InvocationLike, SandboxSource, SandboxTool

__all__ = ["TERMINAL_PARAMETERS", "terminal_result", "terminal_tools"]

TERMINAL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "description": "The bash command to run (multi-line scripts are fine).",
        },
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": (
                "Seconds before the command and every process it started are killed "
                "(default: the sandbox's terminal timeout)."
            ),
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}

_DESCRIPTION = (
    "Run a bash command in your sandbox and get its combined stdout and stderr and its "
    "exit code. The working directory and exported variables carry over between calls, "
    "as in one shell session. Commands that wait for input or never end are killed at "
    "the timeout (exit code 124); run servers in the background with output redirected "
    "to a file. Very long output is cut in the middle."
)


def terminal_result(result: ExecResult, timeout: float | None) -> dict[str, Any]:
    """The tool's answer for ``result``: ``{"output", "exit_code"}`` plus ``"error"``
    when the command was killed at its timeout."""
    answer: dict[str, Any] = {"output": result.output, "exit_code": result.exit_code}
    if result.timed_out:
        limit = f" after {timeout:g}s" if timeout is not None else ""
        answer["error"] = (
            f"the command timed out{limit} and was killed with every process it started"
        )
    return answer


def terminal_tools(pool: SandboxSource) -> list[SandboxTool]:
    """The ``terminal`` toolset: one ``terminal`` tool over ``pool``'s sandboxes."""

    async def terminal(arguments: dict[str, Any], invocation: InvocationLike) -> dict[str, Any]:
        command = arguments.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ValueError("'command' must be a non-empty string")
        timeout = arguments.get("timeout")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ValueError(f"'timeout' must be a positive number of seconds, got {timeout!r}")
        sandbox = await pool.get(invocation.task_id)
        limit = float(timeout) if timeout is not None else sandbox.options.terminal_timeout
        result = await sandbox.exec(command, timeout=limit)
        return terminal_result(result, limit)

    return [
        SandboxTool("terminal", _DESCRIPTION, TERMINAL_PARAMETERS, terminal, toolset="terminal")
    ]
