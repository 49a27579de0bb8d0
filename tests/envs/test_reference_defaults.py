"""The reference's defaults that cannot work here each stop a migrated environment in one
line naming the setting, before any rollout: a hosted endpoint without a key, a hub
tokenizer out of reach, the modal backend without credentials, wandb not logged in."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_loop.server import ModelServerThread, Policy

SCRIPT = Path(__file__).parent / "fixtures" / "reference_style" / "reference_defaults_env.py"
#: Replaced by the URL of a scripted server serving the env's model (the model check
#: before the first rollout needs one that answers).
SERVED = "<served>"
LOCAL = ["--openai.base_url", SERVED]


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    with ModelServerThread(Policy(lambda request: "done", name="some/hosted-model")) as model:
        yield model.base_url


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "DOCKER_HOST")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    # A user's machine without keys, logins or a reachable hub: HOME is empty.
    env.update(HOME=str(tmp_path), HF_HUB_OFFLINE="1")
    return subprocess.run(
        [sys.executable, str(SCRIPT), "evaluate", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ((), "openai.base_url is https://router.example/api/v1"),
        ((*LOCAL,), "--env.tokenizer_name"),
        ((*LOCAL, "--env.tokenizer_name", "none"), "env.terminal_backend is 'modal'"),
        (
            (*LOCAL, "--env.tokenizer_name", "none", "--env.terminal_backend", "local"),
            "env.use_wandb is true",
        ),
    ],
)
def test_each_reference_default_fails_in_one_line_naming_it(
    tmp_path: Path, args: tuple[str, ...], named: str, served_url: str
) -> None:
    done = _run(tmp_path, *(served_url if arg == SERVED else arg for arg in args))
    assert done.returncode == 1, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert named in errors[0]
    assert "Traceback" not in done.stderr
    assert "infra failure" not in done.stdout.replace("0 infra failure(s)", "")
