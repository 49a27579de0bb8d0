"""``TerminalTestEnv``: inline file-writing tasks that check the whole stack.

Each task asks the model to create a file with known content at a known path (relative
to the sandbox's working directory); the reward reads the file back through the
``ToolContext`` on the rollout's own sandbox: 1.0 when the content is exactly right
(a trailing newline forgiven), else 0.0. ``terminal_test_oracle`` plays a model that
solves every task (for the scripted model server's ``Policy``).

Run: ``python -m hermes_envs.envs.terminal_test process --openai.base_url URL ...``.
"""

from __future__ import annotations

import shlex
from pathlib import PurePosixPath
from typing import Any

from atroposlib.envs.server_handling.server_manager import APIServerConfig

from hermes_envs._base_env import HermesAgentBaseEnv
from hermes_envs._config import HermesAgentEnvConfig, local_endpoint
from hermes_envs._tokenizer import shipped_tokenizer_dir
from hermes_loop import AgentResult
from hermes_loop.server import Call, ModelRequest, Turn
from hermes_sandbox import ToolContext

__all__ = ["TASKS", "TerminalTestEnv", "shipped_tokenizer_dir", "terminal_test_oracle"]

#: The inline tasks: a file path and the exact content it must hold.
TASKS: tuple[dict[str, str], ...] = (
    {"id": "greeting", "path": "greeting.txt", "content": "hello world"},
    {"id": "answer", "path": "out/answer.txt", "content": "42"},
    {"id": "todo", "path": "notes/todo.txt", "content": "buy milk; call Ada"},
    {"id": "quote", "path": "quote.txt", "content": 'it\'s "quoted" text'},
)

_PROMPT = (
    "Create the file {path} (relative to your working directory) containing exactly "
    "this text, with nothing before or after it: {content}"
)


def task_prompt(task: dict[str, str]) -> str:
    """The user message of ``task``."""
    return _PROMPT.format(path=task["path"], content=task["content"])


def terminal_test_oracle(request: ModelRequest) -> Turn:
    """A model that solves every task: one ``terminal`` call, then a short answer.

    Raises:
        ValueError: if the conversation holds no task prompt.
    """
    users = [m for m in request.messages if m.get("role") == "user"]
    text = str(users[-1].get("content") if users else "")
    task = next((t for t in TASKS if task_prompt(t) == text), None)
    if task is None:
        raise ValueError(f"no TerminalTestEnv task has the prompt {text[:80]!r}")
    if any(m.get("role") == "tool" for m in request.messages):
        return Turn(f"Created {task['path']}.")
    parent = str(PurePosixPath(task["path"]).parent)
    command = f"printf %s {shlex.quote(task['content'])} > {shlex.quote(task['path'])}"
    if parent != ".":
        command = f"mkdir -p {shlex.quote(parent)} && {command}"
    return Turn(tool_calls=[Call("terminal", {"command": command})])


class TerminalTestEnv(HermesAgentBaseEnv):
    """Inline tasks, a terminal, a reward read through the ``ToolContext``."""

    name = "terminal-test"
    local_isolation = "auto"  # the reward awaits the ToolContext

    @classmethod
    def config_init(cls) -> tuple[HermesAgentEnvConfig, list[APIServerConfig]]:
        """Local sandboxes, terminal and file tools, the shipped tokenizer, a local endpoint."""
        env_config = HermesAgentEnvConfig(
            enabled_toolsets=["terminal", "file"],
            terminal_backend="local",
            terminal_timeout=30,
            max_agent_turns=6,
            group_size=2,
            total_steps=len(TASKS),
            tokenizer_name=shipped_tokenizer_dir(),
            max_token_length=8192,
            steps_per_eval=0,
        )
        return env_config, [local_endpoint("terminal-test")]

    async def setup(self) -> None:
        """Nothing to load: the tasks are inline."""
        self.next_index = 0

    async def get_next_item(self) -> dict[str, str]:
        """The tasks in order, round and round."""
        task = TASKS[self.next_index % len(TASKS)]
        self.next_index += 1
        return dict(task)

    def format_prompt(self, item: dict[str, str]) -> str:
        """The task's instruction."""
        return task_prompt(item)

    async def compute_reward(
        self, item: dict[str, str], result: AgentResult, ctx: ToolContext
    ) -> float:
        """1.0 if the file holds exactly the content (one trailing newline allowed)."""
        found = await ctx.aread_file(item["path"])
        content = found.get("content")
        if content is None:
            return 0.0
        return 1.0 if content.removesuffix("\n") == item["content"] else 0.0

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        """Every task once: accuracy over scored tasks, infra failures apart."""
        await self.evaluate_and_log([dict(task) for task in TASKS], "accuracy")


if __name__ == "__main__":
    TerminalTestEnv.cli()
