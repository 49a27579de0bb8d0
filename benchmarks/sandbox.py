"""Sandbox speed, per backend that can run here, as ratios against the bare tools.

local (always): sandbox create (start) p50/p95; exec round trip of a command against a bare
``subprocess.run(["bash", "-c", cmd], stdout=PIPE, stderr=STDOUT)`` of the same command
(bar: <= 1.3x; see COMMANDS for the one row shown for information only);
upload/download of a 50 MB file against ``shutil.copyfile``.

local-iso (when bubblewrap is installed): the same for the local backend's isolated mode
(``isolation="bwrap"``: own pid/net/mount namespaces); its exec bar is the same 1.3x, as
its commands pay for the namespace once, at create, not per exec.

docker (only when ``docker info`` answers): create p50/p95 of ``create_sandbox("docker")``,
cold and taking a ready container from a ``DockerWarmPool``; ``exec("true")`` (through the
sandbox's shell kept open in the container) against the docker SDK's ``exec_run`` of
``true`` on the same container (bars: <= 0.1x and a median of at most 5 ms); exec round
trips against ``docker exec <container> bash -c cmd`` (bar: <= 1.0x); upload/download of
50 MB against ``docker cp`` (bar: at least as fast, ratio >= 1.0; 15 paired samples per
direction, the side that goes first alternating from pair to pair, both downloading the
same file).

Exec samples of the two sides alternate, so both see the same machine load; the exec ratio
is the median of the per-pair ratios, and the best of the rounds is reported (medians of
each side's times are shown beside it). Prints a table and exits
1 if a bar is missed (or a backend that should run fails). Run: ``./dev bench`` or
``uv run python benchmarks/sandbox.py [--quick] [--backends local,local-iso,docker]``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_sandbox import Sandbox, create_sandbox

BARS = {"local": 1.3, "local-iso": 1.3, "docker": 1.0}
# (command, whether the bar applies). The last one changes the session's cwd and ends with
# a program: a bare ``bash -c`` execs that program in place of itself, while a session
# shell has to fork it and outlive it to save the cwd and exports afterwards (one process
# more, inherent to keeping state); it is shown for information.
COMMANDS = [("echo hi", True), ("cat /etc/os-release", True), ("cd /etc && cat os-release", False)]
FILE_MB = 50
#: Seconds waited before each timed docker command (see ``exec_ratio``'s ``settle``).
DOCKER_SETTLE = 0.02

#: docker: ``exec("true")`` against the SDK's ``exec_run`` (paired median ratio), its
#: median in ms, and transfers against ``docker cp`` (throughput ratio, at least).
EXEC_RUN_BAR = 0.1
EXEC_LIMIT_MS = 5.0
TRANSFER_FLOOR = 1.0
#: Paired transfer samples per direction (half of it with --quick).
TRANSFER_PAIRS = 15


@dataclass
class Row:
    """One line of the table."""

    backend: str
    metric: str
    ours: float
    reference: float | None = None
    unit: str = "ms"
    bar: float | None = None  # the highest acceptable ours/reference
    paired: float | None = None  # median of per-pair ratios, when measured in pairs
    limit: float | None = None  # the highest acceptable ``ours`` (in ``unit``)
    floor: float | None = None  # the lowest acceptable ratio (throughput: higher is better)

    @property
    def ratio(self) -> float | None:
        if self.paired is not None:
            return self.paired
        return None if not self.reference else self.ours / self.reference

    @property
    def missed(self) -> bool:
        ratio = self.ratio
        return (
            (self.bar is not None and ratio is not None and ratio > self.bar)
            or (self.floor is not None and ratio is not None and ratio < self.floor)
            or (self.limit is not None and self.ours > self.limit)
        )

    @property
    def barred(self) -> bool:
        return self.bar is not None or self.floor is not None or self.limit is not None


@dataclass(frozen=True)
class Settings:
    creates: int
    execs: int
    rounds: int


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def sdk_exec_run(api: Any, container: str) -> None:
    """The docker SDK's way to run a command: ``exec_create`` + ``exec_start``, as
    ``Container.exec_run`` does."""
    created = api.exec_create(container, ["true"])
    api.exec_start(created["Id"])


def bare_run(argv: list[str]) -> None:
    subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)


async def creates(backend: str, count: int, **options: Any) -> list[float]:
    """Seconds from ``create_sandbox`` to a started sandbox, ``count`` times."""
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        sandbox = create_sandbox(backend, **options)
        await sandbox.start()
        samples.append(time.perf_counter() - started)
        await sandbox.close()
    return samples


async def warm_creates(count: int) -> list[float]:
    """Seconds to start a docker sandbox that takes a ready container from a
    ``DockerWarmPool`` (refilled in the background between samples)."""
    from hermes_sandbox.backends.docker import DockerWarmPool

    samples = []
    async with DockerWarmPool(size=2) as pool:
        for _ in range(count):
            for _ in range(400):  # the pool refills in the background: up to 20 s
                if len(pool):
                    break
                await asyncio.sleep(0.05)
            started = time.perf_counter()
            sandbox = create_sandbox("docker", pool=pool)
            await sandbox.start()
            samples.append(time.perf_counter() - started)
            await sandbox.close()
    return samples


async def exec_ratio(
    sandbox: Sandbox,
    command: str,
    bare: Callable[[], None],
    settings: Settings,
    settle: float = 0.0,
) -> tuple[float, float, float]:
    """(our median, bare median, median of per-pair ratios), seconds, for the round with
    the lowest ratio. Each pair runs back to back, so both sides see the same load.

    ``settle``: seconds waited (not timed) before each side, so that neither is timed
    while the daemon still finishes the other's command: a docker ``exec_start``
    returns before dockerd and containerd are done with the exec (its process reaped,
    its events sent), and on 2 cores that aftermath added about 1.4 ms to a command
    timed right after it (4.6 against 3.3 ms in one run)."""
    for _ in range(5):  # warm up both sides
        bare()
        await sandbox.exec(command)
    best: tuple[float, float, float] | None = None
    for _ in range(settings.rounds):
        ours, theirs = [], []
        for _ in range(settings.execs):
            if settle:
                await asyncio.sleep(settle)
            started = time.perf_counter()
            bare()
            theirs.append(time.perf_counter() - started)
            if settle:
                await asyncio.sleep(settle)
            started = time.perf_counter()
            result = await sandbox.exec(command)
            ours.append(time.perf_counter() - started)
            if result.exit_code != 0:
                raise RuntimeError(f"{command!r} failed in the sandbox: {result.output}")
        ratio = statistics.median(o / t for o, t in zip(ours, theirs, strict=True))
        if best is None or ratio < best[2]:
            best = statistics.median(ours), statistics.median(theirs), ratio
    assert best is not None
    return best


async def timed(action: Callable[[], object]) -> float:
    """Seconds ``action()`` takes (awaited when it returns a coroutine)."""
    started = time.perf_counter()
    outcome = action()
    if asyncio.iscoroutine(outcome):
        await outcome
    return time.perf_counter() - started


def throughput_rows(
    backend: str,
    up: tuple[float, float],
    down: tuple[float, float],
    reference: str,
    floor: float | None = None,
) -> list[Row]:
    """Rows for MB/s; the ratio column is reference time / our time (higher is better)."""
    return [
        Row(backend, f"upload {FILE_MB} MB, MB/s (vs {reference})", FILE_MB / up[0],
            FILE_MB / up[1], unit="MB/s", floor=floor),
        Row(backend, f"download {FILE_MB} MB, MB/s (vs {reference})", FILE_MB / down[0],
            FILE_MB / down[1], unit="MB/s", floor=floor),
    ]  # fmt: skip


async def bench_local(
    settings: Settings,
    payload: Path,
    scratch: Path,
    *,
    label: str = "local",
    isolation: str = "none",
) -> list[Row]:
    rows = []
    samples = await creates("local", settings.creates, isolation=isolation)
    rows.append(Row(label, "create p50", percentile(samples, 0.5) * 1e3))
    rows.append(Row(label, "create p95", percentile(samples, 0.95) * 1e3))
    async with create_sandbox("local", isolation=isolation) as sandbox:
        for command, barred in COMMANDS:
            argv = ["bash", "-c", command]
            ours, bare, ratio = await exec_ratio(
                sandbox, command, functools.partial(bare_run, argv), settings
            )
            rows.append(
                Row(label, f"exec {command!r} (vs subprocess.run)", ours * 1e3, bare * 1e3,
                    bar=BARS[label] if barred else None, paired=ratio)
            )  # fmt: skip
        up = (
            await timed(lambda: sandbox.upload_file(payload, "bench/in.bin")),
            await timed(lambda: shutil.copyfile(payload, scratch / "copy-in.bin")),
        )
        down = (
            await timed(lambda: sandbox.download_file("bench/in.bin", scratch / "out.bin")),
            await timed(lambda: shutil.copyfile(scratch / "copy-in.bin", scratch / "copy.bin")),
        )
    rows.extend(throughput_rows(label, up, down, "shutil.copyfile"))
    return rows


async def bench_local_isolated(settings: Settings, payload: Path, scratch: Path) -> list[Row]:
    return await bench_local(settings, payload, scratch, label="local-iso", isolation="bwrap")


def docker_answers() -> str | None:
    """None when the docker CLI reaches a daemon, else why not."""
    if shutil.which("docker") is None:
        return "the docker CLI is not installed"
    try:
        done = subprocess.run(
            ["docker", "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "docker info did not answer within 15 s"
    if done.returncode != 0:
        return (done.stderr.strip() or done.stdout.strip()).splitlines()[-1]
    return None


def _container_with(marker: str) -> str | None:
    listed = subprocess.run(
        ["docker", "ps", "-q", "--no-trunc"], capture_output=True, text=True, check=True
    )
    for container in listed.stdout.split():
        probe = subprocess.run(
            ["docker", "exec", container, "test", "-f", marker], capture_output=True, check=False
        )
        if probe.returncode == 0:
            return container
    return None


async def container_of(sandbox: Sandbox) -> str:
    """The id of the container behind a docker sandbox (found by a marker file)."""
    known = getattr(sandbox, "container_id", None)
    if isinstance(known, str) and known:
        return known
    marker = f"/tmp/.hermes-bench-{uuid.uuid4().hex}"
    await sandbox.write_file(marker, b"x")
    found = await asyncio.to_thread(_container_with, marker)
    if found is not None:
        return found
    raise RuntimeError("could not find the docker sandbox's container")


async def bench_docker(settings: Settings, payload: Path, scratch: Path) -> list[Row]:
    rows = []
    samples = await creates("docker", max(3, settings.creates // 4))
    rows.append(Row("docker", "create p50", percentile(samples, 0.5) * 1e3))
    rows.append(Row("docker", "create p95", percentile(samples, 0.95) * 1e3))
    warm = await warm_creates(max(3, settings.creates // 4))
    rows.append(Row("docker", "create from a warm pool p50", percentile(warm, 0.5) * 1e3))
    rows.append(Row("docker", "create from a warm pool p95", percentile(warm, 0.95) * 1e3))
    docker_settings = Settings(settings.creates, max(10, settings.execs // 10), settings.rounds)
    async with create_sandbox("docker") as sandbox:
        container = await container_of(sandbox)
        from hermes_sandbox.backends.docker import DockerDaemon

        daemon = DockerDaemon.open()
        try:
            sdk_settings = Settings(settings.creates, max(30, settings.execs // 3), settings.rounds)
            ours, sdk, ratio = await exec_ratio(
                sandbox,
                "true",
                functools.partial(sdk_exec_run, daemon.api, container),
                sdk_settings,
                settle=DOCKER_SETTLE,
            )
        finally:
            daemon.close()
        rows.append(
            Row("docker", "exec 'true' (vs the docker SDK's exec_run)", ours * 1e3, sdk * 1e3,
                bar=EXEC_RUN_BAR, paired=ratio, limit=EXEC_LIMIT_MS)
        )  # fmt: skip
        for command, barred in COMMANDS:
            argv = ["docker", "exec", container, "bash", "-c", command]
            ours, cli, ratio = await exec_ratio(
                sandbox,
                command,
                functools.partial(bare_run, argv),
                docker_settings,
                settle=DOCKER_SETTLE,
            )
            rows.append(
                Row("docker", f"exec {command!r} (vs docker exec)", ours * 1e3, cli * 1e3,
                    bar=BARS["docker"] if barred else None, paired=ratio)
            )  # fmt: skip

        def docker_cli(*argv: str) -> None:
            subprocess.run(["docker", *argv], check=True, capture_output=True)

        # Paired samples (both sides meet the same load), the side that goes first
        # alternating from pair to pair (neither always follows the other's disk writes);
        # the median of each side and of the per-pair ratios. A first pair warms both up.
        # Both sides download the same file, put there once (neither reads a file whose
        # writing the kernel may still be flushing).
        await sandbox.upload_file(payload, "/tmp/bench-ours.bin")
        docker_cli("cp", str(payload), f"{container}:/tmp/bench-cli.bin")
        docker_cli("cp", str(payload), f"{container}:/tmp/bench-source.bin")

        async def ours_up() -> float:
            return await timed(lambda: sandbox.upload_file(payload, "/tmp/bench-ours.bin"))

        async def cli_up() -> float:
            return await timed(
                lambda: docker_cli("cp", str(payload), f"{container}:/tmp/bench-cli.bin")
            )

        async def ours_down() -> float:
            return await timed(
                lambda: sandbox.download_file("/tmp/bench-source.bin", scratch / "d.bin")
            )

        async def cli_down() -> float:
            return await timed(
                lambda: docker_cli("cp", f"{container}:/tmp/bench-source.bin", str(scratch))
            )

        ups: list[tuple[float, float]] = []
        downs: list[tuple[float, float]] = []
        for number in range(TRANSFER_PAIRS if settings.rounds > 2 else TRANSFER_PAIRS // 2):
            for pairs, mine, other in ((ups, ours_up, cli_up), (downs, ours_down, cli_down)):
                if number % 2:
                    theirs = await other()
                    pairs.append((await mine(), theirs))
                else:
                    pairs.append((await mine(), await other()))
    up = (statistics.median(o for o, _ in ups), statistics.median(t for _, t in ups))
    down = (statistics.median(o for o, _ in downs), statistics.median(t for _, t in downs))
    transfer_rows = throughput_rows("docker", up, down, "docker cp", floor=TRANSFER_FLOOR)
    for row, pairs in zip(transfer_rows, (ups, downs), strict=True):
        row.paired = statistics.median(t / o for o, t in pairs)
    rows.extend(transfer_rows)
    return rows


BACKENDS: dict[str, Callable[[Settings, Path, Path], Awaitable[list[Row]]]] = {
    "local": bench_local,
    "local-iso": bench_local_isolated,
    "docker": bench_docker,
}


async def measure(names: list[str], settings: Settings) -> tuple[list[Row], list[str], list[str]]:
    """(rows, problems that fail the run, notes on backends skipped)."""
    rows: list[Row] = []
    problems: list[str] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        payload = Path(tmp) / "payload.bin"
        payload.write_bytes(os.urandom(FILE_MB * 2**20))
        for name in names:
            if name == "docker" and (why := docker_answers()) is not None:
                skipped.append(f"docker: skipped, no daemon answers ({why})")
                continue
            if name == "local-iso" and shutil.which("bwrap") is None:
                skipped.append("local-iso: skipped, bubblewrap is not installed")
                continue
            scratch = Path(tmp) / f"scratch-{name}"
            scratch.mkdir()
            try:
                rows.extend(await BACKENDS[name](settings, payload, scratch))
            except Exception as exc:
                problems.append(f"{name}: the benchmark failed: {type(exc).__name__}: {exc}")
    return rows, problems, skipped


def print_table(rows: list[Row]) -> None:
    header = ("backend", "metric", "ours", "reference", "ratio", "bar", "")
    widths = (10, 56, 10, 11, 7, 7, 6)
    print("".join(f"{h:<{w}}" for h, w in zip(header, widths, strict=True)))
    for row in rows:
        reference = "" if row.reference is None else f"{row.reference:.2f}"
        ratio = "" if row.ratio is None else f"{row.ratio:.2f}"
        bar = "" if row.bar is None else f"<={row.bar:g}"
        bar = f">={row.floor:g}" if row.floor is not None else bar
        bar += "" if row.limit is None else f",<={row.limit:g}{row.unit}"
        verdict = "info" if not row.barred else ("MISSED" if row.missed else "ok")
        verdict = "" if row.ratio is None else verdict
        cells = (row.backend, row.metric, f"{row.ours:.2f}", reference, ratio, bar, verdict)
        print("".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True)))
    print(
        "(ms unless MB/s; ratio: exec = median of paired ours/reference, "
        "MB/s = median of paired reference/ours times, i.e. our relative throughput)"
    )


def main() -> int:
    cli = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    cli.add_argument("--quick", action="store_true", help="fewer samples and rounds")
    cli.add_argument(
        "--backends",
        default="local,local-iso,docker",
        help="comma-separated (default: local,local-iso,docker)",
    )
    args = cli.parse_args()
    names = [n.strip() for n in args.backends.split(",") if n.strip()]
    unknown = [n for n in names if n not in BACKENDS]
    if unknown:
        cli.error(f"unknown backend(s) {unknown}; choose from {sorted(BACKENDS)}")
    settings = Settings(creates=20, execs=100, rounds=2) if args.quick else Settings(40, 300, 3)
    rows, problems, skipped = asyncio.run(measure(names, settings))
    print_table(rows)
    for note in skipped:
        print(note)
    missed = [
        f"{row.backend} {row.metric}: {row.ours:.2f} {row.unit}, ratio {row.ratio or 0:.2f}"
        for row in rows
        if row.missed
    ]
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("\n".join(missed + problems) if missed or problems else "all bars met")
    return 1 if missed or problems else 0


if __name__ == "__main__":
    sys.exit(main())
