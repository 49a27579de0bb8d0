"""What a trial keeps to explain its verdict, beside its artifacts (harbor's trial layout).

In a trial's folder (``output_dir/artifacts/<task>/<trial>/``):

- ``agent/trajectory.json``: the agent's conversation as harbor's ATIF trajectory
  (every message, tool call and output, reasoning, per-turn usage and timings), and
  ``agent/messages.json``: the same rollout as our own ``AgentResult`` (replayable with
  the model server's ``Replay``); written by :class:`~hermes_benchmarks._agents.HermesAgent`
  (and so by the oracle, whose ``solve.sh`` output is the first tool output) and by any
  agent that calls :func:`current_record`;
- ``agent/output.txt``: what a ``module:Class`` agent wrote there itself;
- ``verifier/test-stdout.txt`` (the tests' output; their stderr is joined to it) and
  ``verifier/result.json`` (exit code, timed out, the reward read);
- the agent's changes outside its work directory are in the result line's attempts
  (``system_changes``).

Each file is cut to :data:`RECORD_CAP` bytes (head and tail kept, the cut said; a JSON
file keeps its shape, its long strings cut) and every secret the run holds (the API key
of the endpoint) is replaced by ``[redacted]`` before anything is written, whatever the
model or a tool printed. Files are written whole or not at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

from hermes_envs import cut_strings, write_whole

__all__ = [
    "RECORD_CAP",
    "REDACTED",
    "TrialRecord",
    "agent_secrets",
    "current_record",
    "recording",
]

#: Bytes of one record file at most.
RECORD_CAP: Final = 1_000_000
#: What a secret is replaced with.
REDACTED: Final = "[redacted]"
#: Secrets shorter than this are not looked for (they would match ordinary text).
_MIN_SECRET: Final = 8
#: Characters of one string inside a JSON record at most.
_STRING_CAP: Final = 100_000

_CURRENT: contextvars.ContextVar[TrialRecord | None] = contextvars.ContextVar(
    "hermes_benchmarks_trial_record", default=None
)


class TrialRecord:
    """Writes a trial's record files under ``folder`` (made on first write).

    Args:
        folder: the trial attempt's folder.
        secrets: values never to write (shorter than 8 characters: ignored).
        cap: bytes per file at most.
    """

    def __init__(self, folder: Path, *, secrets: Iterable[str] = (), cap: int = RECORD_CAP) -> None:
        self.folder = folder
        self.cap = cap
        self._secrets = sorted(
            {s for s in secrets if isinstance(s, str) and len(s) >= _MIN_SECRET},
            key=len,
            reverse=True,
        )

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by :data:`REDACTED`."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def write_text(self, name: str, text: str) -> Path:
        """Write ``text`` (redacted, cut to the cap) as ``name`` under the folder.

        Raises:
            ValueError: ``name`` leaves the folder.
            OSError: the file cannot be written (nothing is left half-written).
        """
        data = self.redact(text).encode("utf-8", errors="backslashreplace")
        if len(data) > self.cap:
            half = self.cap // 2
            note = f"\n[... {len(data) - 2 * half} bytes cut by the record's cap ...]\n"
            data = data[:half] + note.encode() + data[-half:]
        return self._write(name, data)

    def write_json(self, name: str, value: Any) -> Path:
        """Write ``value`` as JSON (redacted; strings cut so the file stays under the cap).

        Raises:
            ValueError: ``name`` leaves the folder.
            OSError: the file cannot be written.
        """
        limit = _STRING_CAP
        while True:
            text = self.redact(json.dumps(cut_strings(value, limit), ensure_ascii=False, indent=1))
            data = text.encode("utf-8", errors="backslashreplace")
            if len(data) <= self.cap or limit <= 256:
                return self._write(name, data)
            limit //= 4

    async def awrite_text(self, name: str, text: str) -> Path:
        """:meth:`write_text` on a thread."""
        return await asyncio.to_thread(self.write_text, name, text)

    async def awrite_json(self, name: str, value: Any) -> Path:
        """:meth:`write_json` on a thread."""
        return await asyncio.to_thread(self.write_json, name, value)

    def _write(self, name: str, data: bytes) -> Path:
        target = (self.folder / name).resolve()
        if not target.is_relative_to(self.folder.resolve()):
            raise ValueError(f"record file {name!r} leaves the trial's folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        return write_whole(target, data)


def agent_secrets(agent: object) -> list[str]:
    """The secrets an agent holds (its ``secrets()``, when it has one; e.g. the API key
    :class:`~hermes_benchmarks._agents.HermesAgent` sends), never to be written."""
    method = getattr(agent, "secrets", None)
    if not callable(method):
        return []
    try:
        found = method()
    except Exception:  # a user's agent: a broken method must not stop the trial
        return []
    return [value for value in found if isinstance(value, str)] if found else []


def current_record() -> TrialRecord | None:
    """The record of the trial the calling code runs in (an agent's ``run``), or None
    when nothing is kept (no ``output_dir``)."""
    return _CURRENT.get()


@contextlib.contextmanager
def recording(record: TrialRecord | None) -> Iterator[None]:
    """Make ``record`` the :func:`current_record` inside the block (tasks started in it
    inherit it)."""
    token = _CURRENT.set(record)
    try:
        yield
    finally:
        _CURRENT.reset(token)
