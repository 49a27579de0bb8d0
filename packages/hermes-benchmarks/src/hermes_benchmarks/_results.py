"""Trial results and the crash-safe ``results.jsonl`` they stream to.

One line per finished trial, written with a single ``write`` on a file opened for
appending and then ``fsync``-ed, so a run killed at any moment (``kill -9`` included)
leaves every earlier line whole. At most the line being written is cut short; resuming
drops that tail and runs the trial again. A trial is "finished" once its line is on disk:
resuming skips exactly those, so no result is lost or written twice.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar, cast, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hermes_benchmarks._errors import OutputFolderError, ResultsFileError
from hermes_sandbox import finish

__all__ = [
    "LOCK_FILE",
    "Attempt",
    "ErrorKind",
    "FolderLock",
    "ResultT",
    "ResultsLog",
    "TrialKey",
    "TrialResult",
    "TrialStatus",
    "failed_attempt",
    "infra_attempt",
]

#: How a trial ended: the tests passed, they failed, or infrastructure stopped it.
TrialStatus = Literal["pass", "fail", "infra_error"]

#: Why a trial has no passing verdict. The scored kinds
#: (:data:`~hermes_benchmarks.verdicts.SCORED_KINDS`: ``reward_missing``,
#: ``reward_unreadable``, ``reward_tampered``, ``sandbox_died``, ``verifier_timeout``,
#: ``tests_blocked``) go with status ``fail`` and reward 0; the others with
#: ``infra_error`` (no reward, retried, never the model's 0).
ErrorKind = Literal[
    "image_build",
    "sandbox_start",
    "daemon",
    "model_endpoint",
    "agent_crash",
    "agent_timeout",
    "verifier_crash",
    "verifier_timeout",
    "reward_missing",
    "reward_unreadable",
    "reward_tampered",
    "sandbox_died",
    "tests_blocked",
    "interrupted",
]

#: A trial's identity in a run: (task name, trial number from 0).
TrialKey = tuple[str, int]


class Attempt(BaseModel):
    """One try at a trial; a trial retried after infrastructure failures has several.

    ``system_changes``: in shared mode on docker, the agent's changes to the system
    outside its work directory (``"A /path"``, ``"C /path"``, ``"D /path"``; at most
    200, ``system_changes_total`` counts them all), None where they were not looked at;
    ``suspect_reasons``: the changes that can alter what the tests run (see
    :mod:`hermes_benchmarks.changes`).
    """

    model_config = ConfigDict(frozen=True)

    status: TrialStatus
    reward: float | None = None
    error_kind: ErrorKind | None = None
    error: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    system_changes: list[str] | None = None
    system_changes_total: int = 0
    suspect_reasons: list[str] = Field(default_factory=list)


def infra_attempt(kind: str, message: str, timings: Mapping[str, float]) -> Attempt:
    """An attempt that infrastructure stopped: status ``infra_error``, no reward.

    Raises:
        pydantic.ValidationError: ``kind`` is not an :data:`ErrorKind`.
    """
    return Attempt(
        status="infra_error", error_kind=cast(ErrorKind, kind), error=message, timings=dict(timings)
    )


def failed_attempt(kind: str, message: str) -> Attempt:
    """A scored failure: status ``fail``, reward 0, ``kind`` says how it failed.

    Raises:
        pydantic.ValidationError: ``kind`` is not an :data:`ErrorKind`.
    """
    return Attempt(status="fail", reward=0.0, error_kind=cast(ErrorKind, kind), error=message)


class TrialResult(BaseModel):
    """A finished trial: its final status and every attempt that led to it.

    ``status``/``reward``/``error_kind`` are those of the last attempt; ``attempts`` holds
    them all (the infrastructure failures before it included). ``reward`` is None exactly
    when ``status`` is ``"infra_error"``. ``artifacts``: the folder, relative to the run's
    ``output_dir``, holding what the trial kept from the agent's sandbox (see
    :mod:`hermes_benchmarks.artifacts`), or None when nothing was kept. ``suspect``:
    the last attempt's agent changed the system in a way that can alter what the tests
    run (its ``suspect_reasons`` say how); a suspect pass is counted apart.
    """

    model_config = ConfigDict(frozen=True)

    #: What a line of ``results.jsonl`` holding one is called in error messages.
    line_name: ClassVar[str] = "trial result"

    task: str
    trial: int = Field(ge=0)
    status: TrialStatus
    reward: float | None = None
    error_kind: ErrorKind | None = None
    error: str | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    difficulty: str | None = None
    agent: str | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    artifacts: str | None = None
    suspect: bool = False
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def key(self) -> TrialKey:
        """``(task, trial)``."""
        return (self.task, self.trial)

    @classmethod
    def from_attempts(
        cls,
        task: str,
        trial: int,
        attempts: list[Attempt],
        **fields: Any,
    ) -> TrialResult:
        """The result whose verdict is the last of ``attempts``.

        Raises:
            ValueError: ``attempts`` is empty.
        """
        if not attempts:
            raise ValueError("a trial result needs at least one attempt")
        last = attempts[-1]
        return cls(
            task=task,
            trial=trial,
            status=last.status,
            reward=last.reward,
            error_kind=last.error_kind,
            error=last.error,
            attempts=list(attempts),
            timings=dict(last.timings),
            suspect=bool(last.suspect_reasons),
            **fields,
        )


#: The kind of result a :class:`ResultsLog` holds (:class:`TrialResult` or a subclass).
ResultT = TypeVar("ResultT", bound=TrialResult)


#: The lock file of an output folder: held (``flock``) by the run writing into it.
LOCK_FILE = ".hermes-bench.lock"


class FolderLock:
    """The exclusive lock of an output folder: one run writes into it at a time.

    An ``flock`` on ``LOCK_FILE``, which holds the owner's pid for the message. The
    kernel drops it when the owner's process ends (a crash or ``kill -9`` included), so
    a lock left by a dead run never stops the next one.
    """

    def __init__(self, fd: int, path: Path) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def acquire(cls, folder: Path) -> FolderLock:
        """Take ``folder``'s lock (blocking call; never waits for it).

        Raises:
            OutputFolderError: another run holds it (the message names its pid), or the
                lock file cannot be made (the folder is read-only, say).
        """
        path = folder / LOCK_FILE
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise OutputFolderError(
                f"output folder {folder} cannot be written ({error.strerror}): make it "
                "writable or choose another output_dir"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise OutputFolderError(
                f"output folder {folder} is in use by another hermes-bench run (pid {owner}): "
                "wait for it to end or choose another output_dir"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:  # a full disk: the lock holds all the same
            pass
        return cls(fd, path)

    def release(self) -> None:
        """Let the folder go (idempotent)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


class ResultsLog(Generic[ResultT]):
    """``results.jsonl`` of one run: what is already finished, and appends as trials end.

    Use :meth:`open`. Appends are thread-safe; call :meth:`append` from a worker thread
    (``asyncio.to_thread``) in async code, as it waits for the disk.
    """

    def __init__(self, path: Path, finished: dict[TrialKey, ResultT], dropped: int) -> None:
        self.path = path
        self._finished = finished
        self._dropped_tail = dropped
        self._lock = threading.Lock()
        self.folder_lock: FolderLock | None = None

    def close(self) -> None:
        """Release the output folder's lock, if this log holds it (idempotent)."""
        if self.folder_lock is not None:
            self.folder_lock.release()

    @overload
    @classmethod
    def open(cls, path: str | os.PathLike[str], *, resume: bool) -> ResultsLog[TrialResult]: ...

    @overload
    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, resume: bool, model: type[ResultT]
    ) -> ResultsLog[ResultT]: ...

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        resume: bool,
        model: type[TrialResult] = TrialResult,
    ) -> ResultsLog[Any]:
        """Open the results file of a run, creating its folder.

        With ``resume``, the finished trials already in the file are read back, each as a
        ``model`` (:class:`TrialResult` or a subclass with more fields); a last line cut
        short by a kill is removed from the file (its trial runs again).

        Raises:
            ResultsFileError: the file exists and holds results but ``resume`` is false
                (the message says to pass ``--resume`` or choose another output_dir), a
                line other than the last is not a ``model`` (the message names the line),
                or a trial has two lines (two runs wrote to the file).
        """
        file = Path(path)
        file.parent.mkdir(parents=True, exist_ok=True)
        if not file.exists() or file.stat().st_size == 0:
            file.touch()
            return ResultsLog(file, {}, 0)
        if not resume:
            raise ResultsFileError(
                f"{file} already holds results: pass --resume to finish that run, or "
                "choose another output_dir"
            )
        finished, keep, dropped = _read(file, model)
        if keep != file.stat().st_size:
            with open(file, "r+b") as handle:
                handle.truncate(keep)
                handle.flush()
                os.fsync(handle.fileno())
        return ResultsLog(file, finished, dropped)

    @staticmethod
    def read(path: str | os.PathLike[str]) -> dict[TrialKey, TrialResult]:
        """The finished trials in a results file, read only (a cut-short last line, left
        by a kill, is skipped and left in place).

        Raises:
            FileNotFoundError: there is no such file.
            ResultsFileError: a line other than the last is not a trial result.
        """
        finished, _keep, _dropped = _read(Path(path), TrialResult)
        return finished

    @property
    def finished(self) -> dict[TrialKey, ResultT]:
        """The trials already on disk, by ``(task, trial)``."""
        return dict(self._finished)

    @property
    def dropped_tail(self) -> int:
        """Bytes of a cut-short last line removed when the file was opened (0 if none)."""
        return self._dropped_tail

    def is_finished(self, task: str, trial: int) -> bool:
        """Whether ``(task, trial)`` already has its line."""
        return (task, trial) in self._finished

    def __iter__(self) -> Iterator[ResultT]:
        return iter(list(self._finished.values()))

    def __len__(self) -> int:
        return len(self._finished)

    async def append_async(self, result: ResultT) -> bool:
        """:meth:`append` in a thread, run to its end: a caller cancelled meanwhile
        waits for the line to be written and kept, then sees the cancellation, so a run
        summarized after a Ctrl-C counts exactly the lines in the file.

        Raises:
            OSError: as :meth:`append`.
            asyncio.CancelledError: after the line is written, if the caller was
                cancelled meanwhile.
        """
        return await finish(asyncio.to_thread(self.append, result))

    def append(self, result: ResultT) -> bool:
        """Write ``result`` as one line, flushed and fsynced; False if it was already there.

        Raises:
            OSError: the disk refused the write (the line is then not counted as finished).
        """
        line = (result.model_dump_json(exclude_none=False) + "\n").encode("utf-8")
        with self._lock:
            if result.key in self._finished:
                return False
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(line)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
            self._finished[result.key] = result
            return True


def _read(file: Path, model: type[ResultT]) -> tuple[dict[TrialKey, ResultT], int, int]:
    """Parse the file: finished trials, bytes to keep, bytes of a cut-short tail dropped."""
    data = file.read_bytes()
    finished: dict[TrialKey, ResultT] = {}
    offset = 0
    number = 0
    while offset < len(data):
        end = data.find(b"\n", offset)
        number += 1
        last = end == -1
        chunk = data[offset:] if last else data[offset:end]
        try:
            result = model.model_validate(json.loads(chunk))
        except (ValueError, ValidationError) as error:
            if last:
                return finished, offset, len(data) - offset
            raise ResultsFileError(
                f"{file} line {number} is not a {model.line_name} ({_brief(error)}); it was not "
                "written by a hermes-bench run: move the file away or choose another output_dir"
            ) from None
        if last:
            # A complete JSON object without its newline: the write was cut just before
            # the newline, so the line never counted as finished. Run the trial again.
            return finished, offset, len(data) - offset
        if result.key in finished:
            task, trial = result.key
            raise ResultsFileError(
                f"{file} line {number} is a second line for trial {trial} of {task}: two runs "
                "wrote to this folder; keep one line per trial (or move the file away), "
                "then resume"
            )
        finished[result.key] = result
        offset = end + 1
    return finished, offset, 0


def _brief(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(error).splitlines()[0]
