"""``TokenWorker``: the environment's side of the token worker process.

``process`` sends each finished Phase 1 group there (the conversations, scores and
tools as JSON) and gets back the group's line of the group file, so that the render,
the token ids and the JSON text never hold the event loop's GIL. The worker starts in
the background; until it is ready, and whenever it is gone or answers with an error,
the environment makes the line on its own tokenizer thread instead (nothing is lost:
the group is still in hand). See ``hermes_envs.scoring.worker`` for the protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from hermes_envs._tokenizer import ChatTemplateSpec

__all__ = ["TokenWorker", "TokenWorkerUnavailable", "WorkerAnswer"]

#: The longest answer line read (a group of long conversations makes megabytes).
_LINE_LIMIT = 1 << 30

#: ``(header, line, record_tokens)``: the header names the drift (``[task_id, turns]``)
#: and, when the group is not written, why (``skip``); ``line`` is the group file's line;
#: ``record_tokens`` the JSON text of each row's ``tokens`` entry of its rollout record,
#: when asked for and made (else empty).
WorkerAnswer = tuple[dict[str, Any], str, list[str]]


class TokenWorkerUnavailable(Exception):
    """The worker cannot make this line (not ready, gone, or it failed on it): make it
    in the environment instead. The message says why."""


class TokenWorker:
    """A running token worker process.

    Args:
        setup: the worker's set-up (``TokenWorker.setup_for``).
    """

    def __init__(self, setup: Mapping[str, Any]) -> None:
        self._setup = setup
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: dict[int, asyncio.Future[WorkerAnswer]] = {}
        self._next_id = 0
        self._ready = False
        self._gone: str | None = None

    @staticmethod
    def setup_for(
        tokenizer: Any, *, eos_token: str, group_size: int, ensure_scores_are_not_same: bool
    ) -> dict[str, Any] | None:
        """The set-up for ``tokenizer``, or ``None`` when the worker cannot stand in for
        it: not a fast (Rust-backed) tokenizer, or no chat template. ``record_tokens``
        (the worker may make the records' token texts) is set when the tokenizer's
        ``batch_decode`` of single ids is its backend's ``decode`` (``_decodes_plainly``).
        Blocking (the tokenizer is written out as JSON): call it on a thread.
        """
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None or not getattr(tokenizer, "is_fast", False):
            return None
        if not getattr(tokenizer, "chat_template", None):
            return None
        return {
            "tokenizer": backend.to_str(),
            "encode_special_tokens": bool(getattr(backend, "encode_special_tokens", False)),
            "chat_template": asdict(ChatTemplateSpec.of(tokenizer)),
            "eos_token": eos_token,
            "group_size": group_size,
            "ensure_scores_are_not_same": ensure_scores_are_not_same,
            "record_tokens": _decodes_plainly(tokenizer),
        }

    @property
    def pid(self) -> int | None:
        """The process id of the worker, while it runs."""
        process = self._process
        return None if process is None or process.returncode is not None else process.pid

    @property
    def ready(self) -> bool:
        """Whether the worker is up and taking requests."""
        return self._ready and self._gone is None

    async def start(self) -> None:
        """Start the process (``SCHED_BATCH`` on Linux: ``_batch_scheduled``) and send the
        set-up; returns without waiting for it to be ready (``ready`` says when).

        Raises:
            OSError: if the process cannot be started.
        """
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "hermes_envs.scoring.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=_LINE_LIMIT,
        )
        _batch_scheduled(self._process.pid)
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(self._setup).encode() + b"\n")
        self._reader = asyncio.create_task(self._read(), name="hermes-envs-token-worker")

    @property
    def makes_record_tokens(self) -> bool:
        """Whether the worker makes the records' token texts when asked (its set-up's
        ``record_tokens``)."""
        return bool(self._setup.get("record_tokens"))

    async def make_line(
        self,
        tools: Sequence[Mapping[str, Any]] | None,
        rollouts: Sequence[Mapping[str, Any]],
        *,
        record_tokens: bool = False,
    ) -> WorkerAnswer:
        """The header, line and (with ``record_tokens``, where ``makes_record_tokens``)
        the rows' record token texts of a group of ``rollouts`` (``task_id``,
        ``messages``, ``score`` each) offered ``tools``.

        Raises:
            TokenWorkerUnavailable: if the worker is not ready or is gone, the request
                is not JSON, or the worker failed on it.
        """
        if not self.ready:
            raise TokenWorkerUnavailable(self._gone or "the token worker is not ready yet")
        process = self._process
        assert process is not None
        assert process.stdin is not None
        self._next_id += 1
        number = self._next_id
        try:
            fields: dict[str, Any] = {"id": number, "tools": tools, "rollouts": rollouts}
            if record_tokens:
                fields["record_tokens"] = True
            request = json.dumps(fields)
        except (TypeError, ValueError) as exc:
            raise TokenWorkerUnavailable(f"the group is not JSON: {exc}") from exc
        answer: asyncio.Future[WorkerAnswer] = asyncio.get_running_loop().create_future()
        self._waiting[number] = answer
        try:
            process.stdin.write(request.encode() + b"\n")
            await process.stdin.drain()
            made = await answer
        except (ConnectionError, RuntimeError) as exc:
            raise TokenWorkerUnavailable(f"the token worker is gone: {exc}") from exc
        finally:
            self._waiting.pop(number, None)
        if "error" in made[0]:
            raise TokenWorkerUnavailable(f"the token worker failed: {made[0]['error']}")
        return made

    async def _read(self) -> None:
        process = self._process
        assert process is not None
        assert process.stdout is not None
        reason = "the token worker ended"
        try:
            while True:
                raw = await process.stdout.readline()
                if not raw:
                    break
                text = raw.decode("utf-8", "surrogatepass").rstrip("\n")
                if not self._ready:
                    self._ready = text == "ready"
                    if not self._ready:
                        reason = f"the token worker did not start: {text[:200]!r}"
                        break
                    continue
                head, line, *texts = text.split("\t")
                header = json.loads(head)
                waiting = self._waiting.pop(header.get("id"), None)
                if waiting is not None and not waiting.done():
                    waiting.set_result((header, line, texts))
        except (ValueError, OSError) as exc:
            reason = f"the token worker's answer could not be read: {exc}"
        finally:
            code = process.returncode
            if self._gone is None:
                self._gone = f"{reason} (exit status {code})" if code is not None else reason
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_exception(TokenWorkerUnavailable(self._gone or reason))
            self._waiting.clear()

    @property
    def gone(self) -> str | None:
        """Why the worker stopped taking requests, or ``None`` while it takes them."""
        return self._gone

    async def aclose(self) -> None:
        """End the worker at once (it holds nothing worth waiting for: every answer it
        gave is in hand, and a request still waiting fails with
        ``TokenWorkerUnavailable``). Idempotent."""
        process = self._process
        if process is None:
            return
        self._process = None
        if self._gone is None:
            self._gone = "the token worker was closed"
        try:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            await process.wait()
        finally:
            if process.stdin is not None:
                process.stdin.close()
            if self._reader is not None:
                self._reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._reader


def _batch_scheduled(pid: int) -> None:
    """Put process ``pid`` under Linux's ``SCHED_BATCH`` policy (same share of the CPU,
    but its wake-ups do not preempt a running process): the worker's work is never
    waited on at once, while the event loop, the model server and the sandboxes' commands
    are. Nothing where the policy is unknown or refused."""
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_BATCH"):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0))


def _decodes_plainly(tokenizer: Any) -> bool:
    """Whether ``tokenizer.batch_decode([[id], ...])`` is its backend's ``decode([id])``
    for each id: a ``transformers`` fast tokenizer whose class keeps the decoding methods
    of ``PreTrainedTokenizerFast`` and which does not clean up tokenization spaces."""
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        return False
    if not isinstance(tokenizer, PreTrainedTokenizerFast):
        return False
    kind = type(tokenizer)
    return not getattr(tokenizer, "clean_up_tokenization_spaces", True) and all(
        getattr(kind, name) is getattr(PreTrainedTokenizerFast, name)
        for name in ("batch_decode", "decode", "_decode")
    )
