"""``GroupLog``: what ``process`` has written, so a killed run continues where it stopped.

Beside the group file ``<path>`` lives ``<path>.items``: one line per group line, the seed
of the group's item (``item_seed``), appended after its group line, and ``#finished`` once
the run reached its count. At start, an existing group file is

- continued when its run did not finish (killed, or stopped on an error): the same
  command appends until ``total_steps`` groups, skipping the items already written (as
  many times as they were written: an environment that cycles through its items gets
  each occurrence once); a partial last line (a kill mid-write) and a last group line
  whose item was not recorded yet are cut off first (that group is made again); more
  unrecorded lines are never cut: the file is refused;
- continued too when finished, with ``resume`` set (to add groups up to a larger count);
- refused otherwise, in one line naming the choices. Atropos instead started a new file
  beside it (``<stem>_1.jsonl``) without a word.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hermes_envs._errors import GroupFileExistsError

__all__ = ["FINISHED", "GroupLog", "ItemSeeds", "item_seed"]

logger = logging.getLogger(__name__)

#: The last line of ``<path>.items`` once the run reached its count.
FINISHED = "#finished"


def item_seed(item: Any) -> str:
    """A stable seed for ``item`` (same item, same seed, across processes)."""
    text = json.dumps(item, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class ItemSeeds:
    """``item_seed`` of an item, made once per item object: a group's tools, its held
    tries, its line's record in ``<path>.items`` all ask for the seed of the same item.

    The last ``size`` items asked about are remembered (and kept alive: an item is known
    by its identity). An item changed after its seed was made keeps that seed: the one
    its group started with, which is also what ``GroupLog.skip`` makes of the same item
    coming again from ``get_next_item``.

    Args:
        size: how many items to remember.
    """

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._known: dict[int, tuple[Any, str]] = {}

    def __call__(self, item: Any) -> str:
        """The seed of ``item`` (``item_seed``)."""
        known = self._known.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        seed = item_seed(item)
        self._known[id(item)] = (item, seed)
        if len(self._known) > self._size:
            del self._known[next(iter(self._known))]  # the oldest
        return seed


def _complete_lines(path: Path) -> tuple[int, int]:
    """``(lines, bytes)`` of the complete (newline-ended) lines at the start of ``path``."""
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    return data[:end].count(b"\n"), end


def _cut(path: Path, keep_lines: int) -> None:
    """Keep the first ``keep_lines`` complete lines of ``path``."""
    data = path.read_bytes()
    at = 0
    for _ in range(keep_lines):
        at = data.index(b"\n", at) + 1
    with path.open("r+b") as file:
        file.truncate(at)


class GroupLog:
    """The record of ``path``'s groups (see the module docstring).

    Attributes:
        done: groups already in the file when the run started.
        to_skip: item seeds already written, with how many times.

    Args:
        path: the group file.
        resume: continue a finished run too (to add groups up to a larger count).
        seed_of: an item's seed (``item_seed``, or an ``ItemSeeds`` that remembers them).

    Raises:
        GroupFileExistsError: (a ``ValueError``) at construction, when the file holds a
            finished run and ``resume`` is false, or groups with no record of their items.
        OSError: if the files cannot be read or written.
    """

    def __init__(
        self, path: str | Path, *, resume: bool, seed_of: Callable[[Any], str] = item_seed
    ) -> None:
        self.path = Path(path)
        self._seeds = seed_of
        self.items_path = self.path.with_name(self.path.name + ".items")
        self.done = 0
        self.to_skip: Counter[str] = Counter()
        self._skipped_in_a_row = 0
        lines = _complete_lines(self.path)[0] if self.path.exists() else 0
        if lines == 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(b"")
            self.items_path.write_text("")
            self._items = self.items_path.open("a", encoding="utf-8")
            return
        if not self.items_path.exists():
            raise GroupFileExistsError(
                f"{self.path} already holds {lines} group(s) and no record of their items "
                f"({self.items_path.name}): set --env.data_path_to_save_groups to a new file, "
                "or remove it"
            )
        seeds = self.items_path.read_text().splitlines()
        finished = bool(seeds) and seeds[-1] == FINISHED
        seeds = [seed for seed in seeds if seed and not seed.startswith("#")]
        if finished and not resume:
            raise GroupFileExistsError(
                f"{self.path} already holds the {lines} group(s) of a finished run: pass "
                "--env.resume true to add groups up to --env.total_steps, set "
                "--env.data_path_to_save_groups to a new file, or remove it"
            )
        if lines > len(seeds) + 1:
            # Only the one line a kill can leave between a group and its record is cut;
            # more unrecorded lines were written by something else (e.g. serve): kept.
            raise GroupFileExistsError(
                f"{self.path} holds {lines} group(s) but {self.items_path.name} records only "
                f"{len(seeds)}: it was not written by process alone; set "
                "--env.data_path_to_save_groups to a new file"
            )
        keep = min(lines, len(seeds))
        _cut(self.path, keep)
        self.items_path.write_text("".join(f"{seed}\n" for seed in seeds[:keep]))
        self.done = keep
        self.to_skip = Counter(seeds[:keep])
        self._items = self.items_path.open("a", encoding="utf-8")
        logger.warning(
            "continuing %s: %d group(s) already written%s",
            self.path,
            keep,
            f" ({lines - keep} unrecorded line(s) cut off)" if lines > keep else "",
        )

    def skip(self, item: Any) -> bool:
        """Whether ``item`` was already written (one written occurrence is used up)."""
        if not self.to_skip:  # a fresh file: nothing to skip, no seed to make
            self._skipped_in_a_row = 0
            return False
        seed = self._seeds(item)
        if self.to_skip[seed] > 0:
            self.to_skip[seed] -= 1
            self._skipped_in_a_row += 1
            return True
        self._skipped_in_a_row = 0
        return False

    @property
    def exhausted(self) -> bool:
        """More items in a row were skipped than were ever written: the item source only
        repeats written items (e.g. it cycles and every occurrence is done)."""
        return self._skipped_in_a_row > self.done

    def record(self, item: Any) -> None:
        """Note that ``item``'s group line was just written (and flushed)."""
        self._items.write(self._seeds(item) + "\n")
        self._items.flush()

    def finish(self) -> None:
        """Mark the run finished (it reached its count)."""
        self._items.write(FINISHED + "\n")
        self._items.flush()

    def close(self) -> None:
        """Close the record (idempotent)."""
        self._items.close()
