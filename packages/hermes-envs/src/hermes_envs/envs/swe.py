"""``HermesSweEnv``: coding tasks from a dataset, solved with tools, scored by their tests.

Items come through ``datasets.load_dataset`` (``dataset_name``: a hub name such as
``bigcode/humanevalpack`` with ``dataset_config: python``, or a local JSONL/parquet file)
in the shape of HumanEvalPack: ``task_id``, ``prompt`` (imports, signature, docstring),
``canonical_solution`` (the body), ``test`` (a ``check(candidate)`` function),
``entry_point`` (the function's name). The agent gets the terminal and file tools (and
web, when enabled) and must write the complete program to ``solution_file`` in its
sandbox. The reward runs, in that same sandbox through the ``ToolContext``, the program
followed by the item's tests and ``check(entry_point)``: 1.0 when they pass, else 0.0.

``swe_oracle(items)`` plays a model that writes each item's canonical solution (for the
scripted model server's ``Policy``).

Run: ``python -m hermes_envs.envs.swe process --env.dataset_name tasks.jsonl ...``.
"""

from __future__ import annotations

import asyncio
import random
import re
import secrets
from collections.abc import Callable, Sequence
from typing import Any

from atroposlib.envs.server_handling.server_manager import APIServerConfig
from pydantic import Field, field_validator

from hermes_envs._base_env import HermesAgentBaseEnv
from hermes_envs._config import HermesAgentEnvConfig, local_endpoint
from hermes_envs._dataset import load_items
from hermes_envs._errors import DatasetLoadError
from hermes_envs.envs.terminal_test import shipped_tokenizer_dir
from hermes_loop import AgentResult
from hermes_loop.server import Call, ModelRequest, Turn
from hermes_sandbox import ToolContext

__all__ = [
    "REQUIRED_FIELDS",
    "HermesSweEnv",
    "HermesSweEnvConfig",
    "swe_oracle",
    "swe_prompt",
    "test_program",
]

#: Fields every dataset row needs.
REQUIRED_FIELDS = ("task_id", "prompt", "test", "entry_point")

_PROMPT = (
    "Complete the Python function `{entry_point}` below. Write the whole program (imports, "
    "signature and body) to `{solution_file}` in your working directory: the tests will "
    "run that file. You may run it to check your work.\n\n```python\n{prompt}\n```"
)


def swe_prompt(item: dict[str, Any], solution_file: str = "solution.py") -> str:
    """The user message of ``item``."""
    return _PROMPT.format(
        entry_point=item["entry_point"],
        solution_file=solution_file,
        prompt=str(item["prompt"]).rstrip("\n"),
    )


def test_program(solution: str, item: dict[str, Any], token: str) -> str:
    """The program the reward runs: the solution, the item's tests, ``check(entry_point)``
    (unless the tests call it themselves), then ``token`` printed once everything passed.
    """
    entry = str(item["entry_point"])
    test = str(item["test"]).rstrip("\n")
    calls_check = re.search(rf"^check\(\s*{re.escape(entry)}\s*\)", test, re.MULTILINE)
    parts = [solution.rstrip("\n"), "", "", test, ""]
    if not calls_check:
        parts += [f"check({entry})", ""]
    parts += [f"print({token!r})", ""]
    return "\n".join(parts)


def swe_oracle(
    items: Sequence[dict[str, Any]],
    *,
    solution_field: str = "canonical_solution",
    solution_file: str = "solution.py",
) -> Callable[[ModelRequest], Turn]:
    """A model that writes each item's ``prompt`` + ``solution_field`` to
    ``solution_file`` with the ``write_file`` tool, runs it with ``terminal``, then stops.
    ``solution_field="buggy_solution"`` (HumanEvalPack's) plays a wrong model.

    The returned responder raises ``ValueError`` for a conversation with no item's prompt.
    """
    by_prompt = {swe_prompt(item, solution_file): item for item in items}

    def respond(request: ModelRequest) -> Turn:
        users = [m for m in request.messages if m.get("role") == "user"]
        item = by_prompt.get(str(users[-1].get("content") if users else ""))
        if item is None:
            raise ValueError("no HermesSweEnv item has this conversation's prompt")
        done = sum(1 for m in request.messages if m.get("role") == "tool")
        if done == 0:
            program = str(item["prompt"]) + str(item[solution_field])
            call = Call("write_file", {"path": solution_file, "content": program})
            return Turn("I'll write the solution.", tool_calls=[call])
        if done == 1:
            return Turn(tool_calls=[Call("terminal", {"command": f"python3 {solution_file}"})])
        return Turn(f"{solution_file} holds {item['entry_point']}.")

    return respond


class HermesSweEnvConfig(HermesAgentEnvConfig):
    """``HermesAgentEnvConfig`` plus where the tasks come from and how they are tested."""

    dataset_config: str | None = Field(
        default=None, description="The dataset's config (e.g. python for humanevalpack)."
    )
    dataset_split: str = Field(default="test", description="The split the items come from.")
    solution_file: str = Field(
        default="solution.py", description="The file the agent writes its program to."
    )
    test_timeout: int = Field(default=60, description="Seconds the item's tests may run.")
    eval_limit: int | None = Field(
        default=None, description="Items evaluate() runs (None: every item)."
    )
    shuffle_seed: int | None = Field(
        default=0, description="Seed of the item order (None: the dataset's order)."
    )

    @field_validator("test_timeout")
    @classmethod
    def _positive_timeout(cls, value: int) -> int:
        if value <= 0:
            raise ValueError(f"must be a positive whole number, got {value}")
        return value

    @field_validator("solution_file")
    @classmethod
    def _relative_file(cls, value: str) -> str:
        if not value or value.startswith("/") or ".." in value.split("/"):
            raise ValueError(f"must be a path inside the working directory, got {value!r}")
        return value


class HermesSweEnv(HermesAgentBaseEnv):
    """Coding tasks from a dataset; the reward runs each item's tests in its sandbox."""

    name = "hermes-swe"
    local_isolation = "auto"  # the reward awaits the ToolContext
    env_config_cls = HermesSweEnvConfig
    config: HermesSweEnvConfig

    @classmethod
    def config_init(cls) -> tuple[HermesSweEnvConfig, list[APIServerConfig]]:
        """HumanEvalPack (python) from the hub, terminal and file tools, local sandboxes,
        the shipped tokenizer, a local endpoint."""
        env_config = HermesSweEnvConfig(
            dataset_name="bigcode/humanevalpack",
            dataset_config="python",
            enabled_toolsets=["terminal", "file"],
            terminal_backend="local",
            terminal_timeout=60,
            max_agent_turns=20,
            group_size=4,
            total_steps=100,
            tokenizer_name=shipped_tokenizer_dir(),
            max_token_length=16384,
            steps_per_eval=0,
        )
        return env_config, [local_endpoint("hermes-swe")]

    async def setup(self) -> None:
        """Load the items (in a thread) and shuffle them with ``shuffle_seed``.

        Raises:
            DatasetLoadError: if ``dataset_name`` cannot be loaded or a row lacks a field.
        """
        cfg = self.config
        if not cfg.dataset_name:
            raise DatasetLoadError(
                "no dataset: set --env.dataset_name to a hub name or a local JSONL/parquet file"
            )
        self.items = await asyncio.to_thread(
            load_items,
            cfg.dataset_name,
            split=cfg.dataset_split,
            config=cfg.dataset_config,
            required=REQUIRED_FIELDS,
        )
        self.order = list(range(len(self.items)))
        if cfg.shuffle_seed is not None:
            random.Random(cfg.shuffle_seed).shuffle(self.order)
        self.next_index = 0

    async def get_next_item(self) -> dict[str, Any]:
        """The items in (shuffled) order, round and round."""
        item = self.items[self.order[self.next_index % len(self.order)]]
        self.next_index += 1
        return item

    def format_prompt(self, item: dict[str, Any]) -> str:
        """The task: the function's prompt and where to write the program."""
        return swe_prompt(item, self.config.solution_file)

    async def compute_reward(
        self, item: dict[str, Any], result: AgentResult, ctx: ToolContext
    ) -> float:
        """1.0 if the program in ``solution_file`` passes the item's tests, else 0.0.

        The tests run in the rollout's sandbox as one program (the solution, then the
        tests), which must exit 0 and print a token drawn here, so a program that exits
        early cannot pass.
        """
        found = await ctx.aread_file(self.config.solution_file)
        solution = found.get("content")
        if not isinstance(solution, str):
            return 0.0
        token = f"hermes-swe-passed-{secrets.token_hex(8)}"
        script = f".hermes_swe_test_{secrets.token_hex(4)}.py"
        written = await ctx.awrite_file(script, test_program(solution, item, token))
        if "error" in written:
            raise RuntimeError(f"cannot write the test program: {written['error']}")
        run = await ctx.aterminal(
            f"python3 {script}; status=$?; rm -f {script}; exit $status",
            timeout=self.config.test_timeout,
        )
        lines = str(run["output"]).splitlines()
        return 1.0 if run["exit_code"] == 0 and token in lines else 0.0

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        """Each item once (at most ``eval_limit``): pass rate over scored items."""
        limit = self.config.eval_limit
        await self.evaluate_and_log(
            self.items if limit is None else self.items[:limit], "pass_rate"
        )


if __name__ == "__main__":
    HermesSweEnv.cli()
