"""Per-rollout records of ``process`` and ``evaluate``: what explains each score, for the
viewer (``hermes-envs view``).

Where they go:

- ``process``: ``<stem>.records.jsonl`` beside the group file ``<stem>.jsonl``; its line
  *i* holds the rollouts of the group file's line *i*: ``{"group": i, "item": ...,
  "rollouts": [...]}``. The group file itself is written exactly as before (Atropos reads
  it); the records line is appended after the group line and its ``.items`` entry. A
  run continued after a kill first cuts a torn last records line and records lines of
  groups the group file no longer holds, and rebuilds the record of a group written just
  before the kill from its group line (``"from_group_line": true``: its messages, tokens
  and score, without per-turn timings): no group is recorded twice or lost. (A group
  made by an environment's own ``collect_trajectories``, without the base class's
  rollouts, is recorded from its group line the same way.)
- ``evaluate``: ``records.jsonl`` in ``data_dir_to_save_evals``, one line per item as it
  is scored (``group`` is the item's position), started afresh by each evaluation.

A rollout's record: ``task_id``, ``status`` (``scored``, ``infra_failure`` or
``reward_error``), ``score``, ``error_kind`` and ``error``, ``stop_reason``,
``turns_used``, ``messages`` (tool calls and tool outputs included), ``reasoning``
(per turn), ``tool_errors``, ``turns`` (per model call: start, model and tool seconds,
usage), ``seconds``; in ``process``, ``tokens`` of a scored rollout: ``pieces`` (each
token's text), ``trained`` (``"1"`` where the mask is not -100) and ``score``. A
retried infrastructure failure of the same item is kept beside the rollouts of its group
(in ``evaluate`` marked ``"retried": true``, after the item's last try).

Every configured secret is replaced (``hermes_envs._redaction``) and each rollout's record
is cut to :data:`RECORD_CAP` bytes (long texts cut in the middle, then tokens beyond the
cap dropped, then the middle of a very long conversation, each cut said).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, BinaryIO, Final, Protocol, TextIO

from hermes_envs._env_config import HermesAgentEnvConfig
from hermes_envs._files import write_whole
from hermes_envs._record_files import EVAL_RECORDS, cut_strings, records_path
from hermes_envs._redaction import Redactor
from hermes_envs._resume import GroupLog
from hermes_envs._rollout import RolloutOutcome
from hermes_envs.scoring._group import wire_messages
from hermes_envs.scoring._record_tokens import Decoder, PieceDecoder, record_tokens

__all__ = [
    "EVAL_RECORDS",
    "RECORD_CAP",
    "RecordedEnv",
    "RolloutRecords",
    "outcome_record",
    "records_path",
]

#: Bytes of one rollout's record at most (JSON, UTF-8).
RECORD_CAP: Final = 1_000_000
#: Items whose attempts are held until their group is written, per group or item that
#: can run at once (``process`` runs twice ``max_num_workers_per_node``): the oldest are
#: dropped beyond it (e.g. in ``serve``, which writes no records).
_HELD_PER_WORKER: Final = 4
#: Tries ``attempt`` takes before it files them by item (``_take`` files them first).
_UNSORTED_AT_MOST: Final = 256
#: Characters of one string of a record before the cap tightens it.
_STRING_CAP: Final = 100_000

logger = logging.getLogger(__name__)


def capped(record: dict[str, Any], cap: int = RECORD_CAP) -> dict[str, Any]:
    """``record`` made to fit ``cap`` bytes of JSON: its strings cut shorter and shorter
    (head and tail kept, the cut said), then its tokens cut to the first ones that fit
    (``tokens.cut`` says how many were dropped), then (a very long conversation) its
    middle messages replaced by one note saying how many were cut."""

    def size(value: Any) -> int:
        return len(json.dumps(value, ensure_ascii=False, default=str).encode())

    if size(record) <= cap:
        return record
    tokens = record.get("tokens")
    limit = _STRING_CAP
    made = record
    while limit >= 256:
        made = {k: (v if k == "tokens" else cut_strings(v, limit)) for k, v in record.items()}
        if size(made) <= cap:
            return made
        limit //= 4
    if isinstance(tokens, dict) and tokens.get("pieces"):
        pieces, trained = tokens["pieces"], tokens["trained"]
        room = max(0, cap - size({**made, "tokens": None}) - 200)
        keep, used = 0, 0
        for piece in pieces:
            # The piece, its separator and its mark in ``trained``.
            used += len(json.dumps(piece, ensure_ascii=False).encode()) + 3
            if used > room:
                break
            keep += 1
        made["tokens"] = {
            **tokens,
            "pieces": pieces[:keep],
            "trained": trained[:keep],
            "cut": len(pieces) - keep,
        }
    # Still too long (a very long conversation): its middle entries go, a note says so.
    for name in ("messages", "turns", "reasoning", "tool_errors"):
        excess = size(made) - cap
        items = made.get(name)
        if excess <= 0 or not isinstance(items, list) or len(items) <= 2:
            continue
        weights = [size(item) + 2 for item in items]
        start = stop = len(items) // 2
        removed = 0
        while removed < excess + 200 and (start > 1 or stop < len(items) - 1):
            if stop < len(items) - 1:
                removed += weights[stop]
                stop += 1
            if removed < excess + 200 and start > 1:
                start -= 1
                removed += weights[start]
        note = {"role": "note", "content": f"[{stop - start} entries cut by the record's cap]"}
        made[name] = [*items[:start], {**note, "cut_items": stop - start}, *items[stop:]]
    return made


def outcome_record(
    outcome: RolloutOutcome, wire: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The record of one rollout (not yet redacted nor capped); ``wire``: its messages
    as ``wire_messages`` gives them, when already made."""
    result = outcome.result
    record: dict[str, Any] = {"task_id": outcome.task_id}
    if outcome.failure is not None:
        record.update(
            status="infra_failure",
            score=None,
            error_kind=outcome.failure.stage,
            error=outcome.failure.message,
        )
    elif outcome.reward_error is not None:
        error = outcome.reward_error
        record.update(
            status="reward_error",
            score=None,
            error_kind="reward_error",
            error=error.message,
        )
    else:
        record.update(status="scored", score=outcome.score, error_kind=None, error=None)
    if result is None:
        record.update(messages=[], turns=[], seconds=0.0, turns_used=0)
        return record
    turns = [
        {
            "started_at": turn.started_at,
            "model_seconds": turn.model_seconds,
            "tools_seconds": turn.tools_seconds,
            "usage": dict(turn.usage),
        }
        for turn in result.turns
    ]
    record.update(
        stop_reason=result.stop_reason,
        turns_used=result.turns_used,
        finished_naturally=result.finished_naturally,
        messages=wire_messages(result.messages) if wire is None else wire,
        reasoning=list(result.reasoning_per_turn),
        tool_errors=[
            {"turn": e.turn, "tool": e.tool_name, "kind": e.kind, "error": e.error}
            for e in result.tool_errors
        ],
        usage=dict(result.usage),
        turns=turns,
        seconds=round(sum(t.model_seconds + t.tools_seconds for t in result.turns), 3),
    )
    if result.infra_error is not None:
        record["infra_error"] = {
            "kind": result.infra_error.kind,
            "message": result.infra_error.message,
            "turn": result.infra_error.turn,
            "status": result.infra_error.status,
        }
    return record


def _row(group: dict[str, Any], name: str, index: int) -> Any:
    rows = group.get(name)
    return rows[index] if isinstance(rows, list) and index < len(rows) else None


def group_records(
    group: dict[str, Any],
    outcomes: Sequence[RolloutOutcome],
    decode: Decoder | None,
) -> list[dict[str, Any]]:
    """The records of a written group's rows, each matched to the held outcome with the
    same messages (a row with none: recorded from the group line alone), then the held
    outcomes that failed (infrastructure, reward code)."""
    scores = group.get("scores") or []
    free = [o for o in outcomes if o.ok and o.result is not None]
    records = []
    for index in range(len(scores)):
        messages = _row(group, "messages", index)
        match = None
        for at, outcome in enumerate(free):
            assert outcome.result is not None
            if messages is None or wire_messages(outcome.result.messages) == messages:
                match = free.pop(at)
                break
        if match is not None:
            record = outcome_record(match)
        else:
            record = {
                "task_id": None,
                "status": "scored",
                "score": scores[index],
                "error_kind": None,
                "error": None,
                "messages": messages or [],
                "turns": [],
                "seconds": None,
                "from_group_line": True,
            }
        record["score"] = scores[index]
        made = record_tokens(
            _row(group, "tokens", index), _row(group, "masks", index), scores[index], decode
        )
        if made is not None:
            record["tokens"] = made
        records.append(record)
    records += [outcome_record(o) for o in outcomes if not o.ok]
    return records


def _offset_after(path: Path, lines: int) -> int:
    """The byte offset just after the first ``lines`` newlines of ``path``."""
    at = 0
    with path.open("rb") as file:
        while lines > 0:
            chunk = file.read(1 << 20)
            if not chunk:
                break
            found = -1
            while lines > 0:
                found = chunk.find(b"\n", found + 1)
                if found < 0:
                    break
                lines -= 1
            if lines == 0:
                return at + found + 1
            at += len(chunk)
    return at


def _count_from(file: BinaryIO, start: int) -> tuple[int, int]:
    """``(newlines, end)``: the newlines of ``file`` from byte ``start`` to its end."""
    count = 0
    file.seek(start)
    while chunk := file.read(1 << 20):
        count += chunk.count(b"\n")
        start += len(chunk)
    return count, start


def _count_lines(path: Path, start: int) -> tuple[int, int]:
    """``(newlines, end)``: the newlines of ``path`` from byte ``start`` to its end."""
    with path.open("rb") as file:
        return _count_from(file, start)


def _texts(records: Iterable[dict[str, Any]]) -> list[str]:
    """Each record's JSON text (before redaction and cap)."""
    return [json.dumps(record, ensure_ascii=False, default=str) for record in records]


def _plain(value: Any) -> bool:
    """Whether ``value`` comes back from JSON as it is (equal, of the same types): only
    dicts with string keys, lists, strings, integers, booleans, ``None`` and floats
    other than NaN (which equals nothing, not even itself)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return bool(value == value)
    if kind is list:
        return all(_plain(entry) for entry in value)
    if kind is dict:
        return all(type(key) is str and _plain(entry) for key, entry in value.items())
    return False


def rows_with_tokens(
    outcomes: Sequence[RolloutOutcome],
    rows: Sequence[RolloutOutcome],
    record_tokens: Sequence[str],
) -> list[str] | None:
    """The record texts ``group_records`` makes (``_texts``) for a group line whose rows
    are the outcomes ``rows`` (in order), each row's ``tokens`` entry given as JSON text
    (``record_tokens``), and ``outcomes`` the held outcomes of its item; without the
    line. ``None`` when that cannot be known without it: the good held outcomes are not
    exactly ``rows``, or a conversation would not come back from JSON as it is (then
    matching outcomes to rows by their messages needs the line's own)."""
    free = [o for o in outcomes if o.ok and o.result is not None]
    if len(free) != len(rows) or len(record_tokens) != len(rows):
        return None
    held = {id(outcome) for outcome in free}
    if len(held) != len(free) or any(id(row) not in held for row in rows):
        return None
    wires: dict[int, list[dict[str, Any]]] = {}
    for outcome in free:
        assert outcome.result is not None
        wire = wire_messages(outcome.result.messages)
        if not _plain(wire):
            return None
        wires[id(outcome)] = wire
    texts = []
    for row, tokens in zip(rows, record_tokens, strict=True):
        # As group_records: the first held outcome with the row's messages.
        wanted = wires[id(row)]
        at = next((n for n, outcome in enumerate(free) if wires[id(outcome)] == wanted), None)
        if at is None:
            return None
        record = outcome_record(free.pop(at), wanted)
        record["score"] = row.score
        text = json.dumps(record, ensure_ascii=False, default=str)
        texts.append(f'{text[:-1]}, "tokens": {tokens}}}')
    return texts + _texts(outcome_record(o) for o in outcomes if not o.ok)


class RecordedEnv(Protocol):
    """What the records writer uses of its environment (a ``HermesAgentBaseEnv``)."""

    config: HermesAgentEnvConfig
    tokenizer: Any
    token_executor: Executor
    redactor: Redactor
    group_log: GroupLog | None
    item_seeds: Callable[[Any], str]


class RolloutRecords:
    """The records writer of one environment (see the module docstring).

    The environment calls :meth:`attempt` for every rollout it runs, :meth:`group_written`
    after each group line of ``process``, :meth:`evaluated` for each item of
    ``evaluate``. Nothing is kept while neither a group file nor an evaluation folder is
    set. The file work runs off the event loop (token text on the environment's tokenizer
    thread).
    """

    def __init__(self, env: RecordedEnv) -> None:
        self._env = env
        self._held: OrderedDict[str, list[RolloutOutcome]] = OrderedDict()
        self._unsorted: list[tuple[Any, RolloutOutcome]] = []  # tries not yet in _held
        self._groups_path: Path | None = None
        self._records_target = Path()  # records_path(_groups_path), once that is set
        self._group_reader: BinaryIO | None = None  # the group file, to count its lines
        self._records_file: TextIO | None = None  # the records file, appended to
        self._lines = 0  # complete lines of the group file, counted up to byte _counted
        self._counted = 0
        self._eval_path: Path | None = None
        self._lock = threading.Lock()
        self._pieces: PieceDecoder | None = None  # token texts by id (a vocabulary at most)
        self._warned = False
        #: Whether the token worker's record tokens are used (``None``: not checked yet).
        self._worker_tokens: bool | None = None

    def _failed(self, error: Exception) -> None:
        if not self._warned:
            self._warned = True
            logger.warning(
                "cannot keep rollout records: %s (the run goes on; later failures unlogged)",
                error,
            )

    @property
    def _keeping(self) -> bool:
        config = self._env.config
        return bool(config.data_path_to_save_groups or config.data_dir_to_save_evals)

    def attempt(self, item: Any, outcome: RolloutOutcome) -> None:
        """Hold ``outcome`` (one try of a rollout of ``item``) until its group or item is
        recorded. Cheap: the item's seed is computed when the held tries are next
        sorted (``_take``), not between one rollout and the next."""
        if self._keeping:
            self._unsorted.append((item, outcome))
            if len(self._unsorted) >= _UNSORTED_AT_MOST:
                self._sort_held()

    def _sort_held(self) -> None:
        """File the tries ``attempt`` took by their item's seed, dropping the oldest items
        beyond what can run at once."""
        config = self._env.config
        limit = _HELD_PER_WORKER * max(config.max_num_workers_per_node, config.max_eval_workers, 1)
        held = self._held
        for item, outcome in self._unsorted:
            seed = self._env.item_seeds(item)
            held.setdefault(seed, []).append(outcome)
            held.move_to_end(seed)
            while len(held) > limit:
                held.popitem(last=False)
        self._unsorted.clear()

    def _take(self, item: Any) -> list[RolloutOutcome]:
        if self._unsorted:
            self._sort_held()
        return self._held.pop(self._env.item_seeds(item), [])

    async def group_written(
        self,
        item: Any,
        group: Any,
        *,
        rows: Sequence[RolloutOutcome] | None = None,
        record_tokens: Sequence[str] | None = None,
    ) -> None:
        """Append the records of ``item``'s group, just written to the group file
        (``group``: its scored data, or its line's text). A line made by the token worker
        may come with ``rows`` (the outcomes of its rows, in order) and ``record_tokens``
        (each row's ``tokens`` entry as JSON text, made there): the records are then made
        without reading the line back, the first time checked against those made from it.

        The work runs on the environment's tokenizer thread, except once the records
        file is set up and the worker's record tokens were checked: then a group whose
        records need no more than its ``rows`` and ``record_tokens`` (``rows_with_tokens``)
        is appended here, on the event loop (tens of microseconds, a line's append as
        the group file's own; a hand-off to the thread and back costs more than that).

        A records file that cannot be written (or a group file line that cannot be read
        back) is logged (once) and the run goes on.
        """
        path = self._env.config.data_path_to_save_groups
        if path is None:
            return
        outcomes = self._take(item)
        target = Path(path)
        if (
            self._worker_tokens
            and self._groups_path == target
            and isinstance(group, str)
            and rows is not None
            and record_tokens is not None
        ):
            texts = rows_with_tokens(outcomes, rows, record_tokens)
            if texts is not None:
                try:
                    with self._lock:
                        self._append_texts(target, item, texts)
                except OSError as error:
                    self._failed(error)
                return
        loop = asyncio.get_running_loop()
        write = functools.partial(
            self._write_group, target, item, group, outcomes, rows, record_tokens
        )
        try:
            await loop.run_in_executor(self._env.token_executor, write)
        except (OSError, ValueError) as error:  # ValueError: a group line that is not JSON
            self._failed(error)

    def _decoder(self) -> Decoder | None:
        """Each token's text, remembered by id (``PieceDecoder``). Tokenizer thread only."""
        tokenizer = self._env.tokenizer
        if tokenizer is None:
            return None
        if self._pieces is None:
            self._pieces = PieceDecoder(tokenizer.batch_decode)
        return self._pieces

    def _write_group(
        self,
        path: Path,
        item: Any,
        group: Any,
        outcomes: list[RolloutOutcome],
        rows: Sequence[RolloutOutcome] | None = None,
        record_tokens: Sequence[str] | None = None,
    ) -> None:
        with self._lock:
            if self._groups_path != path:
                self._close_files()
                self._groups_path = path
                self._records_target = records_path(path)
                log = self._env.group_log
                if log is not None:  # the lines the run started with
                    self._lines = log.done
                else:
                    self._lines = max(0, _count_lines(path, 0)[0] - 1)
                self._counted = _offset_after(path, self._lines)
                self._reconcile(path, self._lines)
            if not self._new_lines(path):  # the writer skipped the group: nothing to record
                return
            texts = None
            if isinstance(group, str) and rows is not None and record_tokens is not None:
                texts = self._worker_texts(group, outcomes, rows, record_tokens)
            if texts is None:
                if isinstance(group, str):
                    group = json.loads(group)
                if not isinstance(group, dict):
                    return
                texts = _texts(group_records(group, outcomes, self._decoder()))
            self._append_line(self._line_of(self._lines - 1, item, texts))

    def _new_lines(self, path: Path) -> bool:
        """Count the group file's lines written since the last call, read through one
        handle kept open; whether there were any (none: the writer skipped the group).
        Holding ``_lock``."""
        reader = self._group_reader
        if reader is None:
            reader = self._group_reader = path.open("rb")
        more, self._counted = _count_from(reader, self._counted)
        self._lines += more
        return more > 0

    def _append_line(self, line: str) -> None:
        """Append ``line`` to the records file through one handle kept open, flushed (a
        kill keeps every complete line, as when the file was opened per line). Holding
        ``_lock``."""
        records = self._records_file
        if records is None:
            records = self._records_file = self._records_target.open(
                "a", encoding="utf-8", errors="backslashreplace"
            )
        records.write(line + "\n")
        records.flush()

    def _append_texts(self, path: Path, item: Any, texts: Sequence[str]) -> None:
        """Append the records line, made of the records' JSON ``texts``, of the group line
        just written to ``path`` (set up by ``_write_group``); nothing when no line was
        written. Holding ``_lock``."""
        if self._new_lines(path):
            self._append_line(self._line_of(self._lines - 1, item, texts))

    def _close_files(self) -> None:
        """Close the group file's reader and the records file's writer. Holding ``_lock``."""
        for handle in (self._group_reader, self._records_file):
            if handle is not None:
                handle.close()
        self._group_reader = None
        self._records_file = None

    def close(self) -> None:
        """Close the files held open for ``process``'s records (idempotent; a group
        written afterwards opens them again)."""
        with self._lock:
            self._close_files()

    def _worker_texts(
        self,
        line: str,
        outcomes: list[RolloutOutcome],
        rows: Sequence[RolloutOutcome],
        record_tokens: Sequence[str],
    ) -> list[str] | None:
        """The record texts of a group line made by the token worker, from its ``rows``
        and their ``record_tokens`` (``rows_with_tokens``), the first time checked
        against those made from ``line``; ``None`` where they cannot be made so (then
        the line is read back)."""
        if self._worker_tokens is False:
            return None
        texts = rows_with_tokens(outcomes, rows, record_tokens)
        if texts is not None and self._worker_tokens is None:
            own = _texts(group_records(json.loads(line), outcomes, self._decoder()))
            self._worker_tokens = texts == own
            if not self._worker_tokens:
                logger.warning(
                    "the token worker's record tokens differ from the environment's own; "
                    "records are made from the group lines from now on"
                )
                return own
        return texts

    def _reconcile(self, path: Path, written: int) -> None:
        """Make the records file hold the first ``written`` groups of the group file (the
        lines before the one this run just wrote): records of lines it lacks are dropped,
        a missing record is rebuilt from its group line."""
        target = records_path(path)
        kept: list[bytes] = []
        before = target.read_bytes() if target.exists() else b""
        if before:
            for raw in before.split(b"\n"):
                try:
                    value = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(value, dict) and value.get("group") == len(kept) < written:
                    kept.append(raw + b"\n")
        missing = range(len(kept), written)
        if missing:
            decode = self._decoder()
            with path.open("rb") as file:
                for index, raw in enumerate(file):
                    if index in missing:
                        group = json.loads(raw)
                        rows = group_records(group, [], decode)
                        kept.append(self._line(index, None, rows).encode() + b"\n")
        after = b"".join(kept)
        if after != before:
            write_whole(target, after)  # a kill now leaves the old file or the new one

    def _line(self, index: int, item: Any, rollouts: list[dict[str, Any]]) -> str:
        """The records line of ``rollouts`` (``_line_of`` their JSON texts)."""
        return self._line_of(index, item, _texts(rollouts))

    def _line_of(self, index: int, item: Any, texts: Sequence[str]) -> str:
        """The records line: ``group``, ``item``, ``recorded_at``, ``rollouts`` (the
        records' JSON ``texts``, each redacted and capped: decoded again only when it
        needs cutting)."""
        redact = self._env.redactor
        head = {"group": index, "item": cut_strings(item, 2000), "recorded_at": time.time()}
        kept = []
        for made in texts:
            text = redact(made)
            # (At most 4 bytes a character: a short text needs no encoding to know.)
            if len(text) > RECORD_CAP // 4 and len(text.encode()) > RECORD_CAP:
                text = json.dumps(capped(json.loads(text)), ensure_ascii=False)
            kept.append(text)
        start = redact(json.dumps(head, ensure_ascii=False, default=str))
        return f'{start[:-1]}, "rollouts": [{", ".join(kept)}]}}'

    @staticmethod
    def _append(target: Path, line: str) -> None:
        with target.open("a", encoding="utf-8", errors="backslashreplace") as file:
            file.write(line + "\n")

    async def evaluated(self, index: int, item: Any, outcome: RolloutOutcome) -> None:
        """Append the record of ``item`` (position ``index``) of an evaluation: its last
        ``outcome`` and the infrastructure failures retried before it.

        A records file that cannot be written is logged (once) and the run goes on.
        """
        where = self._env.config.data_dir_to_save_evals
        if where is None:
            return
        held = [o for o in self._take(item) if o is not outcome and not o.ok]
        rollouts = [outcome_record(outcome)]
        rollouts += [{**outcome_record(o), "retried": True} for o in held]
        try:
            await asyncio.to_thread(self._write_eval, Path(where), index, item, rollouts)
        except OSError as error:
            self._failed(error)

    def _write_eval(
        self, where: Path, index: int, item: Any, rollouts: list[dict[str, Any]]
    ) -> None:
        target = where / EVAL_RECORDS
        line = self._line(index, item, rollouts)
        with self._lock:
            if self._eval_path != target:
                where.mkdir(parents=True, exist_ok=True)
                target.write_bytes(b"")
                self._eval_path = target
            self._append(target, line)
