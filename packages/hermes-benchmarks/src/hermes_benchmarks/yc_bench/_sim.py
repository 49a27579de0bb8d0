"""One simulation in a sandbox: its environment, its start, and its finish.

Each run has its own folder (``sim_dir``): the agent's working directory and the home of
the simulation's SQLite database (``yc_bench.db``). Every command in the sandbox sees
``DATABASE_URL`` (that database), ``YC_BENCH_EXPERIMENT`` (the preset) and yc-bench's
folder first on ``PATH``, so the agent just types ``yc-bench ...``.

The harness's own commands run outside the agent's shell session
(``exec(session=False)``): nothing the agent exported or defined reaches them.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_benchmarks._errors import TrialInfraError
from hermes_benchmarks.yc_bench._install import YCBenchInstall
from hermes_benchmarks.yc_bench._score import SimOutcome, read_outcome
from hermes_sandbox import DEFAULT_PATH, Sandbox

__all__ = [
    "DB_FILE",
    "SimStart",
    "finish_simulation",
    "last_json",
    "sandbox_env",
    "start_simulation",
]

#: The simulation's database, in the run's folder.
DB_FILE = "yc_bench.db"

# Seeds the world exactly as yc-bench's own runner does for a preset (the whole world
# config of the preset, its horizon), creating the tables first: yc-bench 0.1.0's
# ``sim init`` neither creates them nor applies the preset's world settings.
_START_SCRIPT = """
import json, sys
from datetime import datetime, timezone
from yc_bench.config import load_config
from yc_bench.core.events import insert_event
from yc_bench.db.models.event import EventType
from yc_bench.db.models.sim_state import SimState
from yc_bench.db.session import build_engine, build_session_factory, init_db, session_scope
from yc_bench.services.seed_world import SeedWorldRequest, seed_world_transactional

preset, seed, company, start, horizon = sys.argv[1:6]
config = load_config(preset)
years = int(horizon) if horizon else config.sim.horizon_years
begin = datetime.strptime(start, "%Y-%m-%d").replace(hour=9, tzinfo=timezone.utc)
end = begin.replace(year=begin.year + years)
engine = build_engine()
init_db(engine)
world = config.world
with session_scope(build_session_factory(engine)) as db:
    if db.query(SimState).first() is not None:
        sys.exit("a simulation already exists in this database")
    made = seed_world_transactional(db, SeedWorldRequest(
        run_seed=int(seed), company_name=company, horizon_years=years,
        employee_count=world.num_employees, market_task_count=world.num_market_tasks,
        start_date=begin, cfg=world))
    insert_event(db=db, company_id=made.company_id, event_type=EventType.HORIZON_END,
                 scheduled_at=end, payload={"reason": "horizon_end"}, dedupe_key="horizon_end")
    db.add(SimState(company_id=made.company_id, sim_time=begin, run_seed=int(seed),
                    horizon_end=end, replenish_counter=0))
    db.flush()
print(json.dumps({"initial_funds_cents": world.initial_funds_cents, "horizon_years": years,
                  "horizon_end": end.isoformat()}))
"""


def sandbox_env(install: YCBenchInstall, sim_dir: Path, preset: str) -> dict[str, str]:
    """The environment every command of the run sees."""
    return {
        "PATH": f"{install.bin_dir}:{DEFAULT_PATH}",
        "DATABASE_URL": f"sqlite:///{sim_dir / DB_FILE}",
        "YC_BENCH_EXPERIMENT": preset,
    }


@dataclass(frozen=True)
class SimStart:
    """A freshly seeded simulation."""

    initial_funds_cents: int
    horizon_years: int
    horizon_end: str


def last_json(output: str) -> dict[str, Any] | None:
    """The last JSON object printed on a line of its own (or spanning lines)."""
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    index = output.find("{")
    while index != -1:
        try:
            value, end = decoder.raw_decode(output, index)
        except ValueError:
            index = output.find("{", index + 1)
            continue
        if isinstance(value, dict):
            found = value
        index = output.find("{", end)
    return found


def _tail(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


async def start_simulation(
    sandbox: Sandbox,
    *,
    preset: str,
    seed: int,
    company_name: str,
    start_date: str,
    horizon_years: int | None,
    timeout: float = 300.0,
) -> SimStart:
    """Seed ``preset``'s world with ``seed`` in the sandbox's database.

    Raises:
        TrialInfraError: kind ``sandbox_start`` when yc-bench failed (an unknown preset
            among the reasons: the message is yc-bench's last line).
    """
    argv = [preset, str(seed), company_name, start_date, str(horizon_years or "")]
    command = "python -c " + shlex.quote(_START_SCRIPT) + " " + shlex.join(argv)
    result = await sandbox.exec(command, timeout=timeout, session=False)
    data = last_json(result.output) if result.exit_code == 0 else None
    if data is None or "initial_funds_cents" not in data:
        raise TrialInfraError(
            "sandbox_start",
            f"yc-bench could not start preset {preset!r} seed {seed} "
            f"(exit {result.exit_code}): {_tail(result.output)}",
        )
    return SimStart(
        initial_funds_cents=int(data["initial_funds_cents"]),
        horizon_years=int(data["horizon_years"]),
        horizon_end=str(data["horizon_end"]),
    )


async def finish_simulation(
    sandbox: Sandbox, db_path: Path, *, max_resumes: int, timeout: float = 300.0
) -> tuple[SimOutcome, int]:
    """Run ``yc-bench sim resume`` until the simulation ends (as yc-bench's own loop
    advances an idle agent); the final outcome and the resumes it took.

    Raises:
        TrialInfraError: kind ``reward_missing`` (no database), ``verifier_crash``
            (yc-bench failed, the database cannot be read, or the simulation had not
            ended after ``max_resumes`` resumes).
    """
    resumes = 0
    while True:
        try:
            outcome = await asyncio.to_thread(read_outcome, db_path)
        except FileNotFoundError as error:
            raise TrialInfraError("reward_missing", str(error)) from None
        except ValueError as error:
            raise TrialInfraError("verifier_crash", str(error)) from None
        if outcome.ended:
            return outcome, resumes
        if resumes >= max_resumes:
            raise TrialInfraError(
                "verifier_crash",
                f"the simulation had not ended after {max_resumes} `yc-bench sim resume` "
                "calls by the harness (raise max_auto_resumes)",
            )
        result = await sandbox.exec("yc-bench sim resume", timeout=timeout, session=False)
        resumes += 1
        if result.exit_code != 0:
            raise TrialInfraError(
                "verifier_crash",
                f"`yc-bench sim resume` failed (exit {result.exit_code}): {_tail(result.output)}",
            )
