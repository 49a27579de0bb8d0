"""The README's custom environment runs as written, with the README's command line."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from hermes_loop.server import Call, ModelRequest, ModelServerThread, Policy, Turn

from .support import TOKENIZER

README = Path(__file__).parents[2] / "packages" / "hermes-envs" / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.DOTALL)


def _writer(request: ModelRequest) -> Turn:
    if any(m.get("role") == "tool" for m in request.messages):
        return Turn("Done.")
    word = str(request.messages[-1]["content"]).split()[3]
    return Turn(tool_calls=[Call("terminal", {"command": f"echo {word} > answer.txt"})])


def test_the_readme_environment_processes_groups(tmp_path: Path) -> None:
    (tmp_path / "echo_env.py").write_text(_blocks("python")[0])
    command = shlex.split(_blocks("bash")[0].replace("\\\n", " "))
    assert command[:3] == ["python", "echo_env.py", "process"]
    with ModelServerThread(Policy(_writer, name="m")) as model:
        args = [model.base_url if arg == "http://127.0.0.1:8000/v1" else arg for arg in command[2:]]
        args = [TOKENIZER if arg == "./my-tokenizer" else arg for arg in args]
        done = subprocess.run(
            [sys.executable, "echo_env.py", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    groups = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    # Groups run concurrently and are written as they finish: any order.
    assert sorted(g["messages"][0][0]["content"] for g in groups) == [
        f"Write the word {word} into answer.txt." for word in ("apple", "banana", "cherry")
    ]
    assert [g["scores"] for g in groups] == [[1.0, 1.0]] * 3
