"""Atropos' trainer API (``run-api``) in a child process on a loopback port.

For local ``serve`` runs, tests and benchmarks: start the API, register a trainer, pull
batches the way a trainer does, and stop it::

    with RunApiProcess() as api:
        api.register_trainer(batch_size=4, checkpoint_dir=tmp / "ckpt")
        # start `python my_env.py serve --env.rollout_server_url {api.url} ...`
        batch = api.pull_batch()  # None until batch_size rollouts are queued
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["RunApiProcess", "child_environment", "free_port", "stop_process"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[Any], timeout: float = 30.0) -> None:
    """SIGTERM ``process`` (if still running), then SIGKILL after ``timeout`` seconds."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class RunApiProcess:
    """``run-api --host 127.0.0.1 --port <free port>`` of the running interpreter's
    environment, its output discarded; a context manager (started on enter, stopped on
    exit).

    Args:
        start_timeout: seconds to wait for the API to answer.
        env: the child's environment (default: this process's, with ``HF_HUB_OFFLINE=1``
            and ``WANDB_MODE=disabled``).
    """

    def __init__(self, *, start_timeout: float = 60.0, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.start_timeout = start_timeout
        self.env = env if env is not None else child_environment()
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> RunApiProcess:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start the API and wait until it answers.

        Raises:
            RuntimeError: if ``run-api`` is not installed beside this interpreter, exits,
                or does not answer within ``start_timeout`` seconds.
        """
        program = Path(sys.executable).parent / "run-api"
        if not program.exists():
            raise RuntimeError(f"{program} not found: install atroposlib in this environment")
        self.process = subprocess.Popen(
            [str(program), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=self.env,
        )
        deadline = time.monotonic() + self.start_timeout
        while True:
            try:
                self.call("/")
                return
            except OSError as exc:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"run-api exited with status {self.process.returncode}"
                    ) from exc
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(
                        f"run-api did not answer within {self.start_timeout:g} s"
                    ) from exc
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop the API (idempotent)."""
        if self.process is not None:
            stop_process(self.process)

    def call(self, path: str, body: dict[str, Any] | None = None) -> Any:
        """``GET`` (or ``POST`` ``body`` as JSON to) ``path``; the JSON answer.

        Raises:
            OSError: if the API cannot be reached or answers with an HTTP error.
        """
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            headers={"Content-Type": "application/json"},
            method="POST" if data else "GET",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def register_trainer(
        self,
        *,
        batch_size: int,
        checkpoint_dir: Path,
        max_token_len: int = 16384,
        num_steps: int = 1_000_000,
    ) -> Any:
        """Register as the trainer (what envs wait for before they start).

        Raises:
            OSError: if the API refuses.
        """
        return self.call(
            "/register",
            {
                "wandb_group": "local",
                "wandb_project": "local",
                "batch_size": batch_size,
                "max_token_len": max_token_len,
                "checkpoint_dir": str(checkpoint_dir),
                "save_checkpoint_interval": -1,
                "starting_step": 0,
                "num_steps": num_steps,
            },
        )

    def pull_batch(self) -> list[dict[str, Any]] | None:
        """The next batch of scored groups, or ``None`` while fewer than ``batch_size``
        rollouts are queued.

        Raises:
            OSError: if the API cannot be reached.
        """
        batch = self.call("/batch").get("batch")
        return None if batch is None else list(batch)


def child_environment() -> dict[str, str]:
    """This process's environment for a child, with the hub offline and wandb disabled."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
