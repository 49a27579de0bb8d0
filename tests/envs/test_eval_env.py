"""``HermesAgentEvalEnv``: the base of an evaluation-only environment holds only what
evaluation uses, runs ``evaluate`` with an agent loop on its endpoint, and refuses the
training commands in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_envs import EnvSetupError, HermesAgentBaseEnv
from hermes_envs._eval_env import HermesAgentEvalEnv
from hermes_loop import ToolSet
from hermes_loop.server import ModelRequest, ModelServer, Policy, Turn

from .support import TOKENIZER, env_config, server


class Quiz(HermesAgentEvalEnv[str]):
    """Asks the model each question once, scores 1.0 when it answers "yes"."""

    name = "quiz"

    async def setup(self) -> None:
        self.questions = ["is the sky blue?", "is water wet?"]

    def format_prompt(self, item: str) -> str:
        return item

    async def evaluate(self, *args: Any, **kwargs: Any) -> None:
        samples: list[dict[str, Any]] = []
        scores: list[float] = []
        for question in self.questions:
            async with self.agent_loop(ToolSet()) as loop:
                result = await loop.run(self.build_messages(question), task_id=question)
            answer = str(result.messages[-1]["content"])
            scores.append(float(answer == "yes"))
            samples.append({"question": question, "score": scores[-1]})
            self.stats.groups_done += 1
        await self.log_evaluation(
            {"eval/accuracy": sum(scores) / len(scores)}, samples, start_time=0.0
        )


def yes(request: ModelRequest) -> Turn:
    return Turn("yes")


async def test_evaluate_runs_the_agent_loop_and_logs_the_results(tmp_path: Path) -> None:
    config = env_config(data_dir_to_save_evals=str(tmp_path / "eval"), tokenizer_name=TOKENIZER)
    async with ModelServer(Policy(yes)) as model:
        env = Quiz(config, [server(model.base_url)])
        await env.run_evaluate()
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert metrics["results"]["all"]["eval/accuracy"] == 1.0
    samples = [json.loads(line) for line in (tmp_path / "eval" / "samples.jsonl").open()]
    assert [sample["question"] for sample in samples] == env.questions
    assert env.stats.groups_done == 2


async def test_it_holds_no_tokenizer_pool_tools_or_group_file(tmp_path: Path) -> None:
    # A tokenizer named in the config is not loaded: evaluation never tokenizes.
    config = env_config(
        tokenizer_name=TOKENIZER, data_path_to_save_groups=str(tmp_path / "groups.jsonl")
    )
    env = Quiz(config, [server("http://127.0.0.1:9/v1")])
    try:
        assert env.tokenizer is None
        assert env.config.tokenizer_name is None
        for part in ("pool", "tool_registry", "group_log", "group_writer", "token_executor"):
            assert not hasattr(env, part), part
        assert not isinstance(env, HermesAgentBaseEnv)
        assert await env.collect_trajectories("x") == (None, [])
    finally:
        await env.close()
    assert not (tmp_path / "groups.jsonl").exists()


@pytest.mark.parametrize("command", ["process", "serve"])
async def test_the_training_commands_stop_in_one_line(command: str) -> None:
    env = Quiz(env_config(), [server("http://127.0.0.1:9/v1")])
    run = env.process_manager if command == "process" else env.env_manager
    try:
        with pytest.raises(EnvSetupError, match=f"^{command} needs a tokenizer and Quiz only"):
            await run()
    finally:
        await env.close()


def test_a_generate_endpoint_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match=r"only evaluates.*--openai\.server_type openai"):
        Quiz(env_config(tokenizer_name=TOKENIZER), [server("http://127.0.0.1:9", "vllm")])
