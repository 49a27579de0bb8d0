"""Running the tool calls of one turn: validation, concurrency, timeouts, errors."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any

from hermes_loop._errors import HermesLoopError, ToolInfrastructureError
from hermes_loop._handler_pool import HandlerThreadPool
from hermes_loop._output import cap_output, to_text
from hermes_loop._result import ToolError, ToolErrorKind
from hermes_loop._tools import ToolCheck, ToolInvocation, ToolLike, tool_check
from hermes_loop._toolsets import ToolSet

__all__ = ["ToolInfrastructureError", "ToolNotStartedError", "ToolOutcome", "ToolRunner"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The tool message for one call, and what went wrong if anything did.

    ``error`` is a failure the model answers for (it reads it in ``message``);
    ``not_run`` says why a call never started (no handler thread became free in time),
    and ``infra_failure`` why a handler failed for a reason that is not the model's (it
    raised ``ToolInfrastructureError`` or one of the runner's ``infra_exceptions``, e.g.
    the sandbox died): either way the loop ends the rollout with
    ``stop_reason="infra_error"``.
    """

    message: dict[str, Any]
    error: ToolError | None
    not_run: str | None = None
    infra_failure: str | None = None


class ToolNotStartedError(HermesLoopError):
    """A blocking handler did not get a thread within its call's timeout."""


class ToolRunner:
    """Runs calls against a ``ToolSet``; every failure becomes a readable tool message.

    Several calls of one turn run concurrently (at most ``concurrency`` at once) and
    come back in the order of the calls. Blocking handlers run in ``executor``: a call
    waits at most its timeout for a thread, then runs at most its timeout. A handler
    still running at its timeout is abandoned (its ``invocation.cancelled`` is set; the
    thread is busy until the handler returns) and ``abandoned`` counts it meanwhile.
    """

    def __init__(
        self,
        tools: ToolSet,
        *,
        executor: Executor,
        concurrency: int = 8,
        timeout: float = 120.0,
        max_output_chars: int = 100_000,
        infra_exceptions: tuple[type[BaseException], ...] = (),
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._infra: tuple[type[BaseException], ...] = (
            ToolInfrastructureError,
            *infra_exceptions,
        )
        self._tools = tools
        self._checks: dict[str, ToolCheck] = {}  # by tool name, made at its first call
        self._executor = executor
        self._concurrency = concurrency
        self._timeout = timeout
        self._max_output = max_output_chars
        self._abandoned = 0
        self._abandoned_lock = threading.Lock()

    @property
    def abandoned(self) -> int:
        """Blocking handlers abandoned at their timeout that have not returned yet."""
        return self._abandoned

    async def run(
        self, calls: Sequence[dict[str, Any]], *, turn: int, task_id: str
    ) -> list[ToolOutcome]:
        """Run ``calls`` (OpenAI ``tool_calls`` entries); one outcome per call, in order.

        Whatever a handler raises, ``SystemExit`` and ``KeyboardInterrupt`` included,
        becomes a tool error. Cancellation propagates to every call still running.
        """
        if len(calls) == 1:
            return [await self._run_one(calls[0], turn, task_id)]
        gate = asyncio.Semaphore(self._concurrency)

        async def bounded(call: dict[str, Any]) -> ToolOutcome:
            async with gate:
                return await self._run_one(call, turn, task_id)

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(bounded(call)) for call in calls]
        return [task.result() for task in tasks]

    async def _run_one(self, call: dict[str, Any], turn: int, task_id: str) -> ToolOutcome:
        call_id = str(call.get("id") or "")
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        raw_arguments = function.get("arguments")
        raw_text = (
            raw_arguments
            if isinstance(raw_arguments, str)
            else json.dumps(raw_arguments, ensure_ascii=False, default=str)
        )

        def failed(kind: ToolErrorKind, error: str) -> ToolOutcome:
            text = f"Error: {error}"
            return ToolOutcome(
                self._message(call_id, name, text),
                ToolError(turn, name, raw_text, error, kind, call_id, text),
            )

        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools.names) or "none"
            return failed("unknown_tool", f"unknown tool {name!r}; available tools: {known}")
        arguments = _decode_arguments(raw_arguments)
        if not isinstance(arguments, dict):
            return failed(
                "invalid_arguments",
                f"arguments to {name!r} are not a JSON object: {raw_text[:200]!r}",
            )
        check = self._checks.get(name)
        if check is None:
            check = self._checks[name] = tool_check(tool)
        problems = check.argument_errors(arguments)
        if problems:
            return failed(
                "invalid_arguments",
                f"arguments to {name!r} do not match its schema: " + "; ".join(problems),
            )
        invocation = ToolInvocation(task_id, turn, call_id)
        timeout = tool.timeout if tool.timeout is not None else self._timeout
        try:
            if check.is_async:
                async with asyncio.timeout(timeout):
                    value = await tool.handler(arguments, invocation)
            else:
                value = await self._call_blocking(tool, arguments, invocation, timeout)
        except TimeoutError:
            invocation.cancelled.set()
            return failed("timeout", f"tool {name!r} timed out after {timeout:g}s")
        except ToolNotStartedError as exc:
            _log.warning("task %s turn %d: %s", task_id, turn, exc)
            text = f"Error: tool {name!r} was not run (infrastructure failure): {exc}"
            return ToolOutcome(self._message(call_id, name, text), None, str(exc))
        except (asyncio.CancelledError, GeneratorExit):
            invocation.cancelled.set()
            raise
        except self._infra as exc:
            reason = f"tool {name!r} failed (infrastructure): {type(exc).__name__}: {exc}"
            _log.warning("task %s turn %d: %s", task_id, turn, reason)
            text = f"Error: {reason}"
            return ToolOutcome(self._message(call_id, name, text), None, infra_failure=reason)
        except BaseException as exc:  # any other failure of the handler is the model's
            return failed("exception", f"tool {name!r} failed: {type(exc).__name__}: {exc}")
        text = cap_output(to_text(value), self._max_output)
        return ToolOutcome(self._message(call_id, name, text), None)

    async def _call_blocking(
        self,
        tool: ToolLike,
        arguments: dict[str, Any],
        invocation: ToolInvocation,
        timeout: float,
    ) -> Any:
        """Run a plain-function handler in the executor: wait for a thread, then run.

        Raises:
            ToolNotStartedError: no thread took the call within ``timeout``.
            TimeoutError: the handler ran past ``timeout`` (it is abandoned).
        """
        loop = asyncio.get_running_loop()
        began: asyncio.Future[None] = loop.create_future()
        start = _StartGate()
        context = contextvars.copy_context()

        def work() -> Any:
            if not start.begin():
                return None  # abandoned while queued: never run it
            with contextlib.suppress(RuntimeError):  # the event loop is gone
                loop.call_soon_threadsafe(_settle, began)
            return context.run(tool.handler, arguments, invocation)

        try:
            submitted = self._executor.submit(work)
        except RuntimeError as exc:  # the executor is shut down
            raise ToolNotStartedError(f"the handler thread pool refused the call: {exc}") from exc
        done = asyncio.wrap_future(submitted)
        try:
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.wait((began, done), return_when=asyncio.FIRST_COMPLETED)
            except TimeoutError:
                if start.abandon():
                    raise ToolNotStartedError(self._not_started(tool.name, timeout)) from None
            if done.cancelled():  # the executor dropped it: shut down with the call queued
                raise ToolNotStartedError("the handler thread pool was shut down")
            async with asyncio.timeout(timeout):
                result = await done
        except BaseException:
            start.abandon()  # a call still queued never starts
            done.cancel()  # drops it from the executor's queue, if it is there
            if start.started and not submitted.done():
                self._note_abandoned(tool.name, timeout, submitted)
            raise
        finally:
            began.cancel()
        if asyncio.iscoroutine(result):  # a plain function that returned a coroutine
            async with asyncio.timeout(timeout):
                result = await result
        return result

    def _not_started(self, name: str, timeout: float) -> str:
        counts = f"{self._abandoned} handlers abandoned past their timeout still running"
        if isinstance(self._executor, HandlerThreadPool):
            pool = self._executor
            counts = f"{pool.busy} of {pool.max_workers} handler threads busy; {counts}"
        return f"no thread took the call to {name!r} within {timeout:g}s ({counts})"

    def _note_abandoned(self, name: str, timeout: float, submitted: Future[Any]) -> None:
        with self._abandoned_lock:
            self._abandoned += 1
            count = self._abandoned
        _log.warning(
            "tool %r is still running after %gs; its thread stays busy until it returns "
            "(%d abandoned handlers running)",
            name,
            timeout,
            count,
        )
        submitted.add_done_callback(self._returned)

    def _returned(self, submitted: Future[Any]) -> None:
        with self._abandoned_lock:
            self._abandoned -= 1

    @staticmethod
    def _message(call_id: str, name: str, text: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call_id, "name": name, "content": text}


class _StartGate:
    """Decides, once, whether a queued call starts or is abandoned."""

    __slots__ = ("_lock", "_state")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "queued"

    @property
    def started(self) -> bool:
        """Whether the call began running."""
        return self._state == "running"

    def begin(self) -> bool:
        """Called by the worker thread: may the call start?"""
        return self._leave_queue("running")

    def abandon(self) -> bool:
        """Called by the caller: give up on a call that has not started (True if it had not)."""
        return self._leave_queue("abandoned")

    def _leave_queue(self, state: str) -> bool:
        with self._lock:
            if self._state != "queued":
                return False
            self._state = state
            return True


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _decode_arguments(raw: Any) -> Any:
    if isinstance(raw, dict):
        return raw
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if not isinstance(raw, str):
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None
