"""The sandbox conformance suite: the same checks over every backend that can run here.

Each ``providers/<backend>.py`` (loaded with ``runpy``, as the parser case files are)
defines::

    NAME = "docker"                       # backend name for create_sandbox
    CAPS = {"process_limit", ...}         # optional capabilities (see CAPABILITIES)
    def unavailable() -> str | None: ...  # None if it can run here, else why not
    @contextlib.asynccontextmanager
    async def provide(tmp_path) -> AsyncIterator[Callable[..., Sandbox]]: ...

and may define ``leaked() -> list[str]``: what the backend left behind (containers,
directories) once every sandbox is closed; the suite asserts it is empty after each test.

Every test runs once per provider. A provider whose ``unavailable()`` gives a reason is
skipped with that reason; a check that needs a capability the provider does not declare
is skipped with a message naming the capability. Processes are looked for on this host
through ``/proc`` by a unique token in their command line (``exec -a``), which also finds
the processes of local containers; backends whose commands run elsewhere pass trivially.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import runpy
import socket
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import Sandbox, SandboxClosedError, SandboxPool

PROVIDER_DIR = Path(__file__).parent / "providers"

Factory = Callable[..., Sandbox]

#: Optional capabilities a provider may declare in ``CAPS``.
CAPABILITIES = {
    "concurrency_64": "64 sandboxes at once",
    "process_limit": "pids_limit contains a fork bomb",
    "network_off": "network=False leaves only loopback and cannot reach the host",
    "host_paths": "sandbox paths are host paths (close removes the default workdir)",
    "session_escape": "a process that left the session with setsid dies at the timeout",
}

#: Environment variables a backend or image may set on its own (not leaks when equal).
SYSTEM_VARIABLES = {
    "PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "PWD", "OLDPWD", "SHLVL", "_", "TERM",
    "HOSTNAME", "USER", "LOGNAME", "SHELL", "MAIL", "TZ", "DEBIAN_FRONTEND", "container",
}  # fmt: skip


@dataclass(frozen=True)
class Provider:
    """One ``providers/*.py`` file."""

    file: str
    name: str = ""
    caps: frozenset[str] = frozenset()
    unavailable: Callable[[], str | None] = field(default=lambda: None)
    provide: Callable[[Path], AbstractAsyncContextManager[Factory]] | None = None
    leaked: Callable[[], list[str]] | None = None
    error: str | None = None


def load_providers() -> list[Provider]:
    """Every provider file, in name order; a broken one is kept with its ``error``."""
    found = []
    for path in sorted(PROVIDER_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        try:
            namespace = runpy.run_path(str(path), run_name=f"sandbox_provider_{path.stem}")
            found.append(
                Provider(
                    file=path.name,
                    name=str(namespace["NAME"]),
                    caps=frozenset(namespace.get("CAPS", ())),
                    unavailable=namespace["unavailable"],
                    provide=namespace["provide"],
                    leaked=namespace.get("leaked"),
                )
            )
        except Exception as exc:
            found.append(Provider(file=path.name, name=path.stem, error=f"{exc!r}"))
    return found


PROVIDERS = load_providers()


@pytest.fixture(params=PROVIDERS, ids=[p.name for p in PROVIDERS])
def provider(request: pytest.FixtureRequest) -> Provider:
    """The provider under test; skipped (with its reason) where it cannot run."""
    chosen: Provider = request.param
    if chosen.error is not None:
        pytest.fail(f"providers/{chosen.file} is broken: {chosen.error}")
    reason = chosen.unavailable()
    if reason is not None:
        pytest.skip(f"{chosen.name} backend unavailable here: {reason}")
    unknown = chosen.caps - CAPABILITIES.keys()
    if unknown:
        pytest.fail(f"providers/{chosen.file} declares unknown capabilities {sorted(unknown)}")
    return chosen


@pytest.fixture
async def factory(provider: Provider, tmp_path: Path) -> AsyncIterator[Factory]:
    """``factory(**options)`` makes sandboxes; all are closed after the test, and the
    provider's ``leaked()`` must then be empty."""
    assert provider.provide is not None
    made: list[Sandbox] = []
    async with provider.provide(tmp_path) as make:

        def tracked(**options: Any) -> Sandbox:
            sandbox = make(**options)
            made.append(sandbox)
            return sandbox

        try:
            yield tracked
        finally:
            outcomes = await asyncio.gather(*(s.close() for s in made), return_exceptions=True)
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    if errors:
        raise AssertionError(f"close() raised for {len(errors)} sandbox(es)") from errors[0]
    if provider.leaked is not None:
        assert provider.leaked() == [], f"{provider.name} left resources behind"


def needs(provider: Provider, capability: str) -> None:
    """Skip unless the provider declares ``capability``."""
    if capability not in provider.caps:
        pytest.skip(
            f"{provider.name} does not declare {capability!r} "
            f"({CAPABILITIES[capability]}); see the provider's docstring for why"
        )


def token() -> str:
    """A unique process name to find on this host."""
    return f"hermes-probe-{uuid.uuid4().hex[:12]}"


def host_processes(name: str) -> list[int]:
    """Live processes (not zombies) whose command line contains ``name``."""
    needle = name.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            if needle in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
    return found


async def gone(name: str, within: float = 10.0) -> list[int]:
    """Wait until no process carries ``name``; what is still there after ``within``."""
    deadline = time.monotonic() + within
    for _ in range(100_000):
        left = host_processes(name)
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.05)
    return host_processes(name)


async def appeared(name: str, count: int, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    for _ in range(100_000):
        if len(host_processes(name)) >= count or time.monotonic() > deadline:
            return
        await asyncio.sleep(0.05)


async def started(factory: Factory, **options: Any) -> Sandbox:
    """A started sandbox (options may be rejected at creation or at start)."""
    return await factory(**options).start()


def sleeper(name: str, seconds: int = 300) -> str:
    """A bash fragment starting a process named ``name`` that sleeps."""
    return f"(exec -a {name} sleep {seconds})"


# commands ---------------------------------------------------------------------------
async def test_exit_codes(factory: Factory) -> None:
    async with factory() as sandbox:
        assert (await sandbox.exec("true")).exit_code == 0
        assert (await sandbox.exec("false")).exit_code == 1
        assert (await sandbox.exec("exit 3")).exit_code == 3
        assert (await sandbox.exec("(exit 42)")).exit_code == 42
        missing = await sandbox.exec("hermes-no-such-command-xyz")
        assert missing.exit_code == 127
        assert "hermes-no-such-command-xyz" in missing.output
        killed = await sandbox.exec("kill -9 $$")
        assert killed.exit_code == 137
        assert not killed.timed_out
        result = await sandbox.exec("echo done")
        assert result.to_dict() == {"output": "done\n", "exit_code": 0}
        assert result.duration > 0


async def test_a_closed_pipe_ends_the_writer_quietly(factory: Factory) -> None:
    # SIGPIPE has its default action in commands (Python itself ignores it).
    async with factory() as sandbox:
        result = await sandbox.exec('yes | head -n 2; echo "status ${PIPESTATUS[0]}"')
        assert result.output == "y\ny\nstatus 141\n"


async def test_stdout_and_stderr_interleave_in_order(factory: Factory) -> None:
    async with factory() as sandbox:
        result = await sandbox.exec(
            "echo out1; echo err1 >&2; sleep 0.05; echo out2; echo err2 >&2"
        )
        assert result.output == "out1\nerr1\nout2\nerr2\n"


async def test_commands_with_awkward_quoting_run_verbatim(factory: Factory) -> None:
    async with factory() as sandbox:
        command = (
            "printf '%s|' \"it's\" 'a \"quoted\" word' '$HOME' 'back\\slash' '`tick`'\n"
            "cat <<'EOF'\nheredoc $NOT_EXPANDED\nEOF"
        )
        result = await sandbox.exec(command)
        assert result.output == (
            'it\'s|a "quoted" word|$HOME|back\\slash|`tick`|heredoc $NOT_EXPANDED\n'
        )
        assert result.exit_code == 0


async def test_stdin_is_empty(factory: Factory) -> None:
    async with factory() as sandbox:
        result = await sandbox.exec("cat; echo rc=$?", timeout=10)
        assert result.output == "rc=0\n"
        assert not result.timed_out


async def test_unicode_output(factory: Factory) -> None:
    async with factory() as sandbox:
        text = "héllo wörld ✓ 日本語 🚀 ĳ"
        result = await sandbox.exec(f"printf '%s\\n' '{text}'")
        assert result.output == text + "\n"


async def test_binary_output_is_decoded_with_replacement(factory: Factory) -> None:
    async with factory() as sandbox:
        result = await sandbox.exec(r"printf 'a\377\376b\000c\n'; echo tail")
        assert result.exit_code == 0
        assert result.output.startswith("a\ufffd\ufffdb")
        assert result.output.endswith("c\ntail\n")


async def test_output_over_the_limit_keeps_head_and_tail(factory: Factory) -> None:
    async with factory(max_output_chars=1000) as sandbox:
        result = await sandbox.exec("seq 1 100000")
        assert result.exit_code == 0
        assert result.truncated
        assert result.output.startswith("1\n2\n3\n")
        assert result.output.endswith("99999\n100000\n")
        assert "truncated" in result.output
        assert len(result.output) < 1200


async def test_a_gigabyte_of_output_is_cut_and_memory_stays_bounded(factory: Factory) -> None:
    async with factory(max_output_chars=10_000) as sandbox:
        tracemalloc.start()
        try:
            result = await sandbox.exec(
                "yes hermes-output | head -c 1000000000; echo; echo END-OF-OUTPUT", timeout=600
            )
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert result.exit_code == 0, result.output[-500:]
        assert result.truncated
        assert result.output.startswith("hermes-output\nhermes-output\n")
        assert result.output.endswith("END-OF-OUTPUT\n")
        assert len(result.output) < 10_200
        assert peak < 64 * 2**20, f"peak traced memory {peak / 2**20:.0f} MiB for 1 GB of output"


async def test_timeout_kills_the_whole_process_tree(factory: Factory) -> None:
    name = token()
    async with factory() as sandbox:
        started = time.monotonic()
        result = await sandbox.exec(
            f"{sleeper(name)} & bash -c '{sleeper(name)} & wait' & sleep 300", timeout=1.5
        )
        assert time.monotonic() - started < 15
        assert result.timed_out
        assert result.exit_code == 124
        assert await gone(name) == []
        # The sandbox is still usable afterwards.
        assert (await sandbox.exec("echo alive")).output == "alive\n"


async def test_timeout_keeps_the_output_so_far(factory: Factory) -> None:
    async with factory() as sandbox:
        result = await sandbox.exec("echo before; sleep 300", timeout=1)
        assert result.timed_out
        assert result.output.startswith("before\n")


async def test_timeout_kills_a_process_that_left_the_session(
    provider: Provider, factory: Factory
) -> None:
    needs(provider, "session_escape")
    name = token()
    async with factory() as sandbox:
        result = await sandbox.exec(
            f"setsid bash -c '{sleeper(name)}' </dev/null >/dev/null 2>&1 & "
            f"nohup bash -c '{sleeper(name)} & {sleeper(name)}' >/dev/null 2>&1 & sleep 300",
            timeout=1.5,
        )
        assert result.timed_out
        assert await gone(name) == []


async def test_background_jobs_outlive_their_command_until_close(factory: Factory) -> None:
    name = token()
    async with factory() as sandbox:
        started = time.monotonic()
        result = await sandbox.exec(f"{sleeper(name)} & echo started", timeout=20)
        # The command returns without waiting for the job that still holds its output.
        assert time.monotonic() - started < 10
        assert not result.timed_out
        assert result.output == "started\n"
        assert result.exit_code == 0
        await appeared(name, 1)
        await sandbox.close()
        assert await gone(name) == []


async def test_cancelling_an_exec_kills_its_tree(factory: Factory) -> None:
    name = token()
    async with factory() as sandbox:
        task = asyncio.ensure_future(
            sandbox.exec(f"{sleeper(name)} & bash -c '{sleeper(name)}' & sleep 300")
        )
        await appeared(name, 2, within=5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await gone(name) == []
        assert (await sandbox.exec("echo alive")).output == "alive\n"


# shell session ----------------------------------------------------------------------
async def test_cwd_and_exports_persist_between_commands(factory: Factory) -> None:
    async with factory() as sandbox:
        home = (await sandbox.exec("pwd")).output.strip()
        assert home == sandbox.workdir
        await sandbox.exec("mkdir -p 'sub dir/inner' && cd 'sub dir/inner'")
        assert (await sandbox.exec("pwd")).output.strip() == f"{home}/sub dir/inner"
        await sandbox.exec("export GREETING='hello world'; export EMPTY=")
        result = await sandbox.exec('echo "$GREETING|${EMPTY-unset}"')
        assert result.output == "hello world|\n"
        # State is saved even when the command exits early with a failure.
        result = await sandbox.exec("cd ..; export LEVEL=2; exit 7")
        assert result.exit_code == 7
        assert (await sandbox.exec('pwd; echo "$LEVEL"')).output == f"{home}/sub dir\n2\n"
        await sandbox.exec("unset GREETING")
        assert (await sandbox.exec('echo "${GREETING-gone}"')).output == "gone\n"
        # Relative paths of the file API stay relative to the workdir, not the cwd.
        await sandbox.write_file("note.txt", "from the api")
        assert (await sandbox.exec("cat ../note.txt")).output == "from the api"
    async with factory() as other:
        assert (await other.exec('echo "${LEVEL-fresh}"')).output == "fresh\n"


async def test_a_deleted_cwd_falls_back_to_the_workdir(factory: Factory) -> None:
    async with factory() as sandbox:
        await sandbox.exec("mkdir gone-soon && cd gone-soon")
        await sandbox.exec("rmdir ../gone-soon")
        result = await sandbox.exec("pwd")
        assert result.output.strip() == sandbox.workdir
        assert result.exit_code == 0


async def test_a_given_workdir_is_created_and_used(factory: Factory) -> None:
    workdir = f"/tmp/hermes-conformance-{uuid.uuid4().hex}"
    async with factory(workdir=workdir) as sandbox:
        try:
            assert (await sandbox.exec("pwd")).output.strip() == workdir
            await sandbox.write_file("inside.txt", "x")
            assert (await sandbox.exec("ls")).output == "inside.txt\n"
        finally:
            await sandbox.exec(f"rm -rf '{workdir}'")


# files ------------------------------------------------------------------------------
async def test_binary_file_round_trip(factory: Factory) -> None:
    payload = bytes(range(256)) * 4
    async with factory() as sandbox:
        await sandbox.write_file("bin/all-bytes.bin", payload)
        assert await sandbox.read_file("bin/all-bytes.bin") == payload
        assert (await sandbox.exec("wc -c < bin/all-bytes.bin")).output.strip() == "1024"
        await sandbox.write_file("text.txt", "héllo\n")
        assert await sandbox.read_file(f"{sandbox.workdir}/text.txt") == "héllo\n".encode()
        await sandbox.write_file("text.txt", "replaced")
        assert await sandbox.read_file("text.txt") == b"replaced"


async def test_fifty_megabyte_file_round_trip(factory: Factory, tmp_path: Path) -> None:
    payload = os.urandom(50 * 2**20)
    digest = hashlib.sha256(payload).hexdigest()
    source = tmp_path / "big.bin"
    source.write_bytes(payload)
    async with factory() as sandbox:
        await sandbox.upload_file(source, "data/big.bin")
        assert (await sandbox.exec("wc -c < data/big.bin")).output.strip() == str(len(payload))
        target = tmp_path / "back" / "big.bin"
        await sandbox.download_file("data/big.bin", target)
        assert hashlib.sha256(target.read_bytes()).hexdigest() == digest
        assert hashlib.sha256(await sandbox.read_file("data/big.bin")).hexdigest() == digest


async def test_nested_directory_round_trip(factory: Factory, tmp_path: Path) -> None:
    tree = {
        "top.txt": b"top",
        "a/b/c/deep.bin": bytes(range(256)),
        "a/b/sibling.txt": "ünïcode".encode(),
        "with space/file name.txt": b"spaces",
    }
    source = tmp_path / "tree"
    for relative, data in tree.items():
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        (source / relative).write_bytes(data)
    (source / "empty-dir").mkdir()
    async with factory() as sandbox:
        await sandbox.upload_dir(source, "project")
        listing = await sandbox.exec("cd project && find . -type f | LC_ALL=C sort")
        assert listing.output.splitlines() == sorted(f"./{relative}" for relative in tree)
        assert await sandbox.read_file("project/a/b/c/deep.bin") == bytes(range(256))
        back = tmp_path / "back"
        await sandbox.download_dir("project", back)
        for relative, data in tree.items():
            assert (back / relative).read_bytes() == data
        assert (back / "empty-dir").is_dir()


async def test_missing_files_raise_file_not_found(factory: Factory, tmp_path: Path) -> None:
    async with factory() as sandbox:
        with pytest.raises(FileNotFoundError):
            await sandbox.read_file("no/such/file.txt")
        with pytest.raises(FileNotFoundError):
            await sandbox.download_dir("no-such-dir", tmp_path / "out")
        with pytest.raises(FileNotFoundError):
            await sandbox.upload_file(tmp_path / "no-such-host-file", "x")


# isolation and lifecycle --------------------------------------------------------------
async def test_host_environment_is_invisible(factory: Factory) -> None:
    # pytest sets PYTEST_CURRENT_TEST in this process's environment: a canary that must
    # never reach a sandbox, like every other host variable (API keys included).
    assert "PYTEST_CURRENT_TEST" in os.environ
    async with factory(env={"HERMES_VISIBLE": "given on purpose"}) as sandbox:
        result = await sandbox.exec("env")
        seen = dict(line.split("=", 1) for line in result.output.splitlines() if "=" in line)
        assert seen.get("HERMES_VISIBLE") == "given on purpose"
        assert "PYTEST_CURRENT_TEST" not in seen
        leaked = sorted(
            name
            for name, value in os.environ.items()
            if name not in SYSTEM_VARIABLES
            and not name.startswith("LC_")
            and seen.get(name) == value
        )
        assert leaked == []


async def test_close_is_idempotent_and_final(factory: Factory) -> None:
    sandbox = factory()
    await sandbox.close()  # never started: nothing to do
    sandbox = factory()
    async with sandbox:
        assert (await sandbox.exec("echo hi")).output == "hi\n"
    assert sandbox.closed
    await sandbox.close()
    with pytest.raises(SandboxClosedError):
        await sandbox.exec("echo again")
    with pytest.raises(SandboxClosedError):
        await sandbox.read_file("anything")


async def test_close_kills_everything_and_removes_the_workdir(
    provider: Provider, factory: Factory
) -> None:
    name = token()
    sandbox = await factory().start()
    await sandbox.write_file("leftover.txt", "x")
    await sandbox.exec(f"{sleeper(name)} & nohup bash -c '{sleeper(name)}' >/dev/null 2>&1 &")
    await appeared(name, 2, within=5)
    await sandbox.close()
    assert await gone(name) == []
    if "host_paths" in provider.caps:
        assert not await asyncio.to_thread(os.path.exists, sandbox.workdir)


async def _pool_with_sleepers(factory: Factory, name: str, count: int = 3) -> SandboxPool:
    """A pool of ``count`` started sandboxes, each with a background process ``name``."""
    pool = SandboxPool(factory=lambda task_id: factory(task_id=task_id))
    boxes = await asyncio.gather(*(pool.get(f"task-{i}") for i in range(count)))
    await asyncio.gather(*(box.exec(f"{sleeper(name)} &") for box in boxes))
    await appeared(name, count, within=10)
    return pool


def _nothing_left(provider: Provider, workdirs: list[str], name: str) -> list[str]:
    """What a torn-down pool left: processes, host workdirs, the provider's leftovers."""
    left = [f"process {pid}" for pid in host_processes(name)]
    if "host_paths" in provider.caps:
        left += [path for path in workdirs if os.path.exists(path)]
    if provider.leaked is not None:
        left += provider.leaked()
    return left


async def test_cancelling_a_run_closes_its_pool(provider: Provider, factory: Factory) -> None:
    # What Ctrl-C under asyncio.run does: cancel the main task while commands run.
    name = token()
    running = asyncio.Event()
    workdirs: list[str] = []

    async def run() -> None:
        pool = await _pool_with_sleepers(factory, name)
        async with pool:
            boxes = [await pool.get(task_id) for task_id in pool.task_ids]
            workdirs.extend(box.workdir for box in boxes)
            foreground = [asyncio.ensure_future(b.exec(sleeper(name), timeout=600)) for b in boxes]
            await appeared(name, 2 * len(boxes), within=10)
            running.set()
            await asyncio.gather(*foreground)

    task = asyncio.ensure_future(run())
    await asyncio.wait_for(running.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(name) == []
    assert await asyncio.to_thread(_nothing_left, provider, workdirs, name) == []


def _abandon_pool(factory: Factory, name: str) -> tuple[SandboxPool, list[str]]:
    """On a private event loop (as a program that ends without closing its pool): a
    pool with running sandboxes, the loop then closed."""

    async def make() -> tuple[SandboxPool, list[str]]:
        pool = await _pool_with_sleepers(factory, name)
        return pool, [(await pool.get(task_id)).workdir for task_id in pool.task_ids]

    return asyncio.run(make())


async def test_a_pool_left_open_is_torn_down_without_an_event_loop(
    provider: Provider, factory: Factory
) -> None:
    # What the interpreter-exit hook does for a pool nobody closed: ``close_now()`` after
    # the pool's event loop has ended.
    name = token()
    pool, workdirs = await asyncio.to_thread(_abandon_pool, factory, name)
    assert len(host_processes(name)) >= 3
    await asyncio.to_thread(pool.close_now)
    assert await gone(name) == []
    assert await asyncio.to_thread(_nothing_left, provider, workdirs, name) == []
    with pytest.raises(RuntimeError, match="closed"):
        await pool.get("task-0")


async def test_lifetime_expiry_closes_the_sandbox(factory: Factory) -> None:
    async with factory(terminal_lifetime=2) as sandbox:
        assert (await sandbox.exec("true")).exit_code == 0
        await asyncio.sleep(max(0.0, sandbox.remaining_lifetime) + 0.1)
        with pytest.raises(SandboxClosedError, match="lifetime"):
            await sandbox.exec("true")
        assert sandbox.closed


async def test_bad_options_are_rejected_clearly(factory: Factory) -> None:
    with pytest.raises(ValueError, match="hermes_no_such_option"):
        await started(factory, hermes_no_such_option=1)
    with pytest.raises(ValueError, match="terminal_timeout"):
        factory(terminal_timeout=0)
    async with factory() as sandbox:
        with pytest.raises(ValueError, match="timeout"):
            await sandbox.exec("true", timeout=0)


# capabilities -----------------------------------------------------------------------
async def test_64_sandboxes_at_once(provider: Provider, factory: Factory) -> None:
    needs(provider, "concurrency_64")
    sandboxes = [factory() for _ in range(64)]
    try:
        await asyncio.gather(*(s.start() for s in sandboxes))
        results = await asyncio.gather(
            *(s.exec(f"echo {i}; export N={i}") for i, s in enumerate(sandboxes))
        )
        assert [r.output for r in results] == [f"{i}\n" for i in range(64)]
        again = await asyncio.gather(*(s.exec('echo "$N"') for s in sandboxes))
        assert [r.output for r in again] == [f"{i}\n" for i in range(64)]
    finally:
        await asyncio.gather(*(s.close() for s in sandboxes))


async def test_fork_bomb_is_contained_by_the_process_limit(
    provider: Provider, factory: Factory
) -> None:
    needs(provider, "process_limit")
    async with factory(pids_limit=64) as sandbox:
        started = time.monotonic()
        await sandbox.exec("bomb() { bomb | bomb & }; bomb; sleep 60", timeout=10)
        assert time.monotonic() - started < 60
        assert (await sandbox.exec("echo survived", timeout=30)).output == "survived\n"


async def test_network_off_leaves_only_loopback(provider: Provider, factory: Factory) -> None:
    needs(provider, "network_off")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        async with factory(network=False) as sandbox:
            interfaces = await sandbox.exec("ls /sys/class/net")
            assert interfaces.output.split() == ["lo"]
            probe = await sandbox.exec(
                f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; echo rc=$?", timeout=20
            )
            assert probe.output.strip() != "rc=0"
