"""A YC-Bench run's score: ``survival_weight x survival + funds_weight x normalised_funds``.

The final state is read from the simulation's own SQLite database (yc-bench 0.1.0's
tables ``companies``, ``sim_state``, ``sim_events``, ``ledger_entries``):

- the run *ended* when the company went bankrupt (a ``bankruptcy`` event exists: payroll
  left the funds below zero; what happens after that does not count) or the clock
  reached the horizon;
- *survival* is 1 when it reached the horizon without ever going bankrupt, else 0;
- *normalised funds* is ``min(log1p(funds / initial_funds) / log1p(100), 1)`` for a
  company that survived with funds above zero (its starting capital scores about 0.15,
  ten times it about 0.52, a hundred times it 1.0), and 0 otherwise;
- the funds must equal the starting capital plus the sum of the ledger: a database whose
  funds were edited by hand does not add up, and is reported as tampered (scored 0).
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

__all__ = [
    "MAX_FUNDS_RATIO",
    "SimOutcome",
    "composite_score",
    "normalised_funds",
    "read_outcome",
]

#: Final funds this many times the starting capital score a full 1.0.
MAX_FUNDS_RATIO = 100.0


def normalised_funds(funds_cents: int, initial_funds_cents: int) -> float:
    """``min(log1p(funds / initial) / log1p(MAX_FUNDS_RATIO), 1)``; 0 for funds <= 0.

    Raises:
        ValueError: ``initial_funds_cents`` is not positive.
    """
    if initial_funds_cents <= 0:
        raise ValueError(f"initial funds must be positive, got {initial_funds_cents}")
    if funds_cents <= 0:
        return 0.0
    ratio = funds_cents / initial_funds_cents
    return min(math.log1p(ratio) / math.log1p(MAX_FUNDS_RATIO), 1.0)


def composite_score(
    survival: float, funds_score: float, *, survival_weight: float, funds_weight: float
) -> float:
    """``survival_weight x survival + funds_weight x funds_score``."""
    return survival_weight * survival + funds_weight * funds_score


@dataclass(frozen=True)
class SimOutcome:
    """Where a simulation stands, read from its database."""

    funds_cents: int
    ledger_cents: int
    sim_time: datetime
    horizon_end: datetime
    went_bankrupt: bool

    @property
    def horizon_reached(self) -> bool:
        """The clock reached the end of the simulated period."""
        return self.sim_time >= self.horizon_end

    @property
    def ended(self) -> bool:
        """The company went bankrupt or the horizon was reached."""
        return self.went_bankrupt or self.horizon_reached

    @property
    def terminal_reason(self) -> str | None:
        """``bankruptcy``, ``horizon_end``, or None while the simulation goes on."""
        if self.went_bankrupt:
            return "bankruptcy"
        return "horizon_end" if self.horizon_reached else None

    @property
    def survived(self) -> bool:
        """Reached the horizon without going bankrupt."""
        return self.horizon_reached and not self.went_bankrupt and self.funds_cents >= 0

    def tampered(self, initial_funds_cents: int) -> bool:
        """The funds are not the starting capital plus the ledger (edited by hand)."""
        return self.funds_cents != initial_funds_cents + self.ledger_cents


def _time(value: object) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def read_outcome(db_path: str | Path) -> SimOutcome:
    """The simulation's state from yc-bench's SQLite database at ``db_path``. Blocking.

    Raises:
        FileNotFoundError: there is no database at ``db_path``.
        ValueError: the database holds no simulation (or not yc-bench's tables).
    """
    path = Path(db_path)
    if not path.is_file():
        raise FileNotFoundError(f"no yc-bench database at {path}")
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        state = connection.execute(
            "SELECT company_id, sim_time, horizon_end FROM sim_state LIMIT 1"
        ).fetchone()
        if state is None:
            raise ValueError(f"{path} holds no simulation (sim_state is empty)")
        company_id, sim_time, horizon_end = state
        funds = connection.execute(
            "SELECT funds_cents FROM companies WHERE id = ?", (company_id,)
        ).fetchone()
        if funds is None:
            raise ValueError(f"{path}: the simulation's company is missing")
        (ledger,) = connection.execute(
            "SELECT COALESCE(SUM(amount_cents), 0) FROM ledger_entries WHERE company_id = ?",
            (company_id,),
        ).fetchone()
        (bankruptcies,) = connection.execute(
            "SELECT COUNT(*) FROM sim_events WHERE company_id = ? AND event_type = 'bankruptcy'",
            (company_id,),
        ).fetchone()
    except sqlite3.Error as error:
        raise ValueError(f"{path} is not a readable yc-bench database: {error}") from None
    finally:
        connection.close()
    return SimOutcome(
        funds_cents=int(funds[0]),
        ledger_cents=int(ledger),
        sim_time=_time(sim_time),
        horizon_end=_time(horizon_end),
        went_bankrupt=bool(bankruptcies) or int(funds[0]) < 0,
    )
