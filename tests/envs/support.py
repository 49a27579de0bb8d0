"""Helpers of the hermes-envs tests: envs built on the scripted model server."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from atroposlib.envs.server_handling.server_manager import APIServerConfig

from hermes_envs import HermesAgentEnvConfig, TerminalTestEnv
from hermes_envs.envs.terminal_test import shipped_tokenizer_dir
from hermes_envs.scoring._token_worker import TokenWorker

TOKENIZER = shipped_tokenizer_dir()


def env_config(**overrides: Any) -> HermesAgentEnvConfig:
    """TerminalTestEnv's config_init values with ``overrides``."""
    base, _ = TerminalTestEnv.config_init()
    values = base.model_dump()
    values.update(overrides)
    return HermesAgentEnvConfig(**values)


def process_config(out: Path, **overrides: Any) -> HermesAgentEnvConfig:
    """``env_config`` for a ``process`` run writing its groups to ``out``: messages kept,
    tied scores written, 2 groups at once (``overrides`` win)."""
    values: dict[str, Any] = {
        "data_path_to_save_groups": str(out),
        "include_messages": True,
        "ensure_scores_are_not_same": False,
        "max_num_workers_per_node": 2,
    }
    values.update(overrides)
    return env_config(**values)


def server(url: str, server_type: str = "openai") -> APIServerConfig:
    """A server config for the model server at ``url`` (``base_url`` or root)."""
    return APIServerConfig(
        base_url=url, model_name="scripted", server_type=server_type, health_check=False
    )


def child_env() -> dict[str, str]:
    """The environment of a child env process: the hub and wandb off (anything that tries
    the hub fails fast instead of retrying for ~50 s)."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}


def run_command(
    argv: Sequence[str], *, cwd: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """``argv`` in ``cwd`` with ``child_env()``, run to its end; output captured as text."""
    return subprocess.run(
        list(argv),
        cwd=cwd,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_script(
    script: Path, *args: str, cwd: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """``python script *args`` in ``cwd`` with ``child_env()``; output captured as text."""
    return run_command([sys.executable, str(script), *args], cwd=cwd, timeout=timeout)


def _line_count(file: Path) -> int:
    return len(file.read_text().splitlines()) if file.exists() else 0


async def kill_9_half_way(argv: Sequence[str], *, cwd: Path, out: Path) -> int:
    """Start ``argv`` in ``cwd`` with ``child_env()`` (output dropped) and kill -9 it once
    ``out`` holds two lines (or after 180 s); the child's pid, once it is gone."""
    child = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if await asyncio.to_thread(_line_count, out) >= 2:
            break
        await asyncio.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    await child.wait()
    return child.pid


async def until_ready(worker: TokenWorker, seconds: float = 60.0) -> None:
    """Wait until ``worker`` is ready or gone, at most ``seconds``."""
    for _ in range(round(seconds / 0.05)):
        if worker.ready or worker.gone:
            return
        await asyncio.sleep(0.05)


class WorkerFirst(TerminalTestEnv):
    """A ``TerminalTestEnv`` whose first item waits for its token worker to be ready (the
    worker starts after setup), so that every group's line is made there."""

    async def get_next_item(self) -> dict[str, str]:
        worker = self.token_worker
        if self.next_index == 0 and worker is not None:
            await until_ready(worker)
        return await super().get_next_item()
