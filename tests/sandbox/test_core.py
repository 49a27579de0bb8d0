"""Unit tests of the committed sandbox core (options, output, shell wrapper, pool, registry)
and of the local backend's own choices (its lean wrapper, option checks, cleanup)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import (
    ExecResult,
    SandboxClosedError,
    SandboxOptions,
    SandboxPool,
    SandboxStartError,
    UnknownBackendError,
    create_sandbox,
    default_backends,
    register_backend,
)
from hermes_sandbox._output import OutputCollector
from hermes_sandbox._registry import ENTRY_POINT_GROUP, BackendRegistry
from hermes_sandbox._shell import wrap_command
from hermes_sandbox.backends.local import MARKER_VARIABLE, LocalSandbox
from tests.sandbox.support import FakeSandbox, Maker, fake


# options ------------------------------------------------------------------------------
def test_options_defaults_and_unknown_keys_go_to_extra() -> None:
    options = SandboxOptions.from_kwargs(image="img", runtime="runc", extra={"a": 1})
    assert options.image == "img"
    assert options.extra == {"a": 1, "runtime": "runc"}
    assert options.terminal_timeout == 120.0
    assert options.terminal_lifetime == 3600.0
    assert options.network is False
    assert dict(options.env) == {}


@pytest.mark.parametrize("name", ["terminal_timeout", "terminal_lifetime", "max_output_chars"])
@pytest.mark.parametrize("value", [0, -1])
def test_options_reject_non_positive_limits(name: str, value: int) -> None:
    with pytest.raises(ValueError, match=f"{name} must be positive, got {value}"):
        SandboxOptions.from_kwargs(**{name: value})


# output -------------------------------------------------------------------------------
def test_output_under_the_limit_is_kept_whole() -> None:
    collector = OutputCollector(100)
    for piece in (b"hello ", b"w\xc3", b"\xb6rld"):  # a character split across pieces
        collector.feed(piece)
    assert collector.text() == "hello wörld"
    assert not collector.truncated


@pytest.mark.parametrize(
    ("chunk", "lines"), [(1, 5_000), (7, 20_000), (4096, 1_100_000), (10 << 20, 1_100_000)]
)
def test_output_over_the_limit_keeps_head_and_tail_in_bounded_memory(
    chunk: int, lines: int
) -> None:
    data = b"".join(b"%08d\n" % i for i in range(lines))  # up to ~10 MB
    collector = OutputCollector(1000)
    for start in range(0, len(data), chunk):
        collector.feed(data[start : start + chunk])
        assert len(collector._head) + len(collector._tail) <= 1000
    text = collector.text()
    assert collector.truncated
    assert text.startswith(data[:500].decode())
    assert text.endswith(data[-500:].decode())
    assert f"[... {len(data) - 1000} bytes truncated ...]" in text


def test_output_limit_of_one() -> None:
    collector = OutputCollector(1)
    collector.feed(b"abc")
    assert collector.truncated
    assert collector.text().startswith("a")
    assert collector.text().endswith("c")


def test_output_with_bad_bytes_is_replaced() -> None:
    collector = OutputCollector(100)
    collector.feed(b"ok\xff\xfe")
    assert collector.text() == "ok\ufffd\ufffd"


def test_output_dropped_upstream_is_reported_as_truncated() -> None:
    collector = OutputCollector(10)
    collector.feed(b"01234")
    collector.skip(0)
    assert not collector.truncated
    collector.skip(1234)
    collector.feed(b"56789")
    assert collector.truncated
    assert collector.text() == "01234\n\n[... 1234 bytes truncated ...]\n\n56789"
    collector.feed(b"ab")  # the collector's own drops add to the count
    assert collector.text() == "01234\n\n[... 1236 bytes truncated ...]\n\n789ab"
    with pytest.raises(ValueError, match="negative"):
        collector.skip(-1)


# the shell wrapper --------------------------------------------------------------------
Wrapper = Callable[..., str]
#: Every backend's commands go through the one wrapper: with the direct run of stateless
#: commands, and without it (an env with BASH_FUNC_* turns it off).
WRAPPERS = {
    "direct": wrap_command,
    "always-eval": lambda command, **kw: wrap_command(command, direct=False, **kw),
}


class Session:
    """Runs commands through a wrapper with ``bash -c``, as a backend does."""

    def __init__(self, wrap: Wrapper, tmp_path: Path) -> None:
        self.wrap = wrap
        self.workdir = tmp_path / "work"
        self.workdir.mkdir(exist_ok=True)
        self.state = tmp_path / f"state-{uuid.uuid4().hex[:6]}"

    def run(self, command: str) -> tuple[str, int]:
        script = self.wrap(command, state_dir=str(self.state), workdir=str(self.workdir))
        done = subprocess.run(
            ["bash", "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={"PATH": os.defpath + ":/usr/local/bin", "LANG": "C.UTF-8"},
            check=False,
        )
        return done.stdout.decode(), done.returncode


@pytest.fixture(params=list(WRAPPERS))
def session(request: pytest.FixtureRequest, tmp_path: Path) -> Session:
    return Session(WRAPPERS[request.param], tmp_path)


def test_wrapper_starts_in_the_workdir(session: Session) -> None:
    assert session.run("pwd") == (f"{session.workdir}\n", 0)


def test_wrapper_persists_cwd_and_exports(session: Session) -> None:
    assert session.run("mkdir -p a/b && cd a/b && export FOO='x y' BAR=1")[1] == 0
    assert session.run('pwd; echo "$FOO|$BAR"') == (f"{session.workdir}/a/b\nx y|1\n", 0)
    session.run("unset FOO; cd ..")
    assert session.run('pwd; echo "${FOO-unset}"') == (f"{session.workdir}/a\nunset\n", 0)


def test_wrapper_saves_state_when_the_command_exits(session: Session) -> None:
    assert session.run("mkdir d && cd d && export LEVEL=3 && exit 4") == ("", 4)
    assert session.run('pwd; echo "$LEVEL"') == (f"{session.workdir}/d\n3\n", 0)
    output, code = session.run("set -e; cd ..; export AFTER=yes; false; echo unreachable")
    assert (output, code) == ("", 1)
    assert session.run('pwd; echo "$AFTER"') == (f"{session.workdir}\nyes\n", 0)


def test_wrapper_keeps_awkward_directory_names(session: Session) -> None:
    name = 'it\'s a "dir" $HOME `x` \\ ünï'
    assert session.run(f"mkdir -p {_sq(name)} && cd {_sq(name)}")[1] == 0
    assert session.run("pwd") == (f"{session.workdir}/{name}\n", 0)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo 'single' \"double\" \\$HOME", "single double $HOME\n"),
        ("printf '%s\\n' \"it's\" 'say \"hi\"'", 'it\'s\nsay "hi"\n'),
        ("echo a; echo b\necho c", "a\nb\nc\n"),
        ("cat <<'EOF'\n$NOT `expanded` \\n\nEOF", "$NOT `expanded` \\n\n"),
        ("x='a  b'; echo \"$x\" $x", "a  b a b\n"),
        ('echo "\'"\'"\'"\'"', "'\"'\n"),
        ("echo 日本語 🚀", "日本語 🚀\n"),
        ('f() { echo "in f: $1"; }; f arg', "in f: arg\n"),
        ("echo trailing \\\\", "trailing \\\n"),
    ],
)
def test_wrapper_runs_awkward_commands_verbatim(
    session: Session, command: str, expected: str
) -> None:
    assert session.run(command) == (expected, 0)


def test_wrapper_sessions_are_separate(tmp_path: Path) -> None:
    for wrap in WRAPPERS.values():
        first, second = Session(wrap, tmp_path), Session(wrap, tmp_path)
        first.run("export ONLY_FIRST=1; mkdir -p x; cd x")
        assert second.run('pwd; echo "${ONLY_FIRST-no}"') == (f"{second.workdir}\nno\n", 0)


def test_wrapper_recreates_a_deleted_workdir(tmp_path: Path) -> None:
    session = Session(wrap_command, tmp_path)
    session.run("cd sub 2>/dev/null; true")
    session.workdir.rmdir()
    assert session.run("pwd") == (f"{session.workdir}\n", 0)


def test_wrapper_leaves_unsaved_variables_to_each_command(tmp_path: Path) -> None:
    state, work = tmp_path / "s", tmp_path / "w"

    def run(command: str, mark: str) -> str:
        script = wrap_command(command, state_dir=str(state), workdir=str(work), unsaved=["MARK"])
        env = {"PATH": os.defpath, "MARK": mark}
        return subprocess.run(
            ["bash", "-c", script], env=env, capture_output=True, text=True
        ).stdout

    assert run("export KEPT=yes; export MARK=changed", "first") == ""
    assert run('echo "$MARK $KEPT"', "second") == "second yes\n"


def test_wrapper_rejects_a_bad_unsaved_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a shell variable name"):
        wrap_command("true", state_dir=str(tmp_path), workdir=str(tmp_path), unsaved=["A; rm"])


def _sq(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


# the Sandbox base class ---------------------------------------------------------------
async def test_sandbox_start_is_idempotent_and_close_before_start_is_free() -> None:
    sandbox = fake()
    await sandbox.close()
    assert sandbox.closes == 0
    with pytest.raises(SandboxClosedError):
        await sandbox.start()
    sandbox = fake()
    await sandbox.start()
    await sandbox.start()
    assert sandbox.starts == 1
    async with sandbox:
        assert sandbox.resolve("rel/p") == "/workspace/rel/p"
        assert sandbox.resolve("/abs") == "/abs"
        await sandbox.write_file("f", "text")
        assert await sandbox.read_file("/workspace/f") == b"text"
        with pytest.raises(ValueError, match="positive"):
            await sandbox.exec("true", timeout=0)
    assert sandbox.closes == 1


async def test_sandbox_lifetime_expiry_closes_it() -> None:
    sandbox = fake(terminal_lifetime=0.05)
    await sandbox.start()
    await asyncio.sleep(0.1)
    with pytest.raises(SandboxClosedError, match="lifetime"):
        await sandbox.exec("true")
    assert sandbox.closed
    assert sandbox.closes == 1


# the pool -----------------------------------------------------------------------------
async def test_pool_shares_one_sandbox_per_task_under_concurrency() -> None:
    gate = asyncio.Event()
    maker = Maker(gate=gate)
    pool = SandboxPool(factory=maker)
    waiting = [asyncio.ensure_future(pool.get(t)) for t in ["a", "b"] * 25]
    await asyncio.sleep(0.01)
    gate.set()
    got = await asyncio.gather(*waiting)
    assert len(maker.made) == 2
    assert {id(s) for s in got[0::2]} == {id(maker.made[0])}
    assert {id(s) for s in got[1::2]} == {id(maker.made[1])}
    assert all(s.starts == 1 for s in maker.made)
    assert sorted(pool.task_ids) == ["a", "b"]
    assert len(pool) == 2
    assert "a" in pool
    await pool.close_all()


async def test_pool_release_closes_and_forgets() -> None:
    maker = Maker()
    pool = SandboxPool(factory=maker)
    first = await pool.get("a")
    await pool.release("a")
    await pool.release("never-made")
    assert first.closed
    assert "a" not in pool
    second = await pool.get("a")
    assert second is not first
    await pool.close_all()


async def test_pool_replaces_a_sandbox_that_was_closed_elsewhere() -> None:
    pool = SandboxPool(factory=Maker())
    first = await pool.get("a")
    await first.close()
    assert await pool.get("a") is not first
    await pool.close_all()


async def test_pool_reports_a_closed_sandbox_when_told_not_to_recreate() -> None:
    pool = SandboxPool(factory=Maker())
    first = await pool.get("a")
    assert await pool.get("a", recreate=False) is first
    await first.close()
    with pytest.raises(SandboxClosedError, match="'a' was closed"):
        await pool.get("a", recreate=False)
    assert await pool.get("b", recreate=False) is not first  # never made: made now
    await pool.release("a")
    assert not (await pool.get("a", recreate=False)).closed  # released: a new one
    await pool.close_all()


async def test_pool_close_all_closes_running_and_starting_sandboxes() -> None:
    ready, stuck = Maker(), Maker(gate=asyncio.Event())
    pool = SandboxPool(factory=lambda t: (ready if t == "ready" else stuck)(t))
    running = await pool.get("ready")
    starting = asyncio.ensure_future(pool.get("stuck"))
    await asyncio.sleep(0.01)
    assert len(stuck.made) == 1
    await pool.close_all()
    assert running.closed
    assert stuck.made[0].closed
    results = await asyncio.gather(starting, return_exceptions=True)
    assert isinstance(results[0], BaseException)
    assert len(pool) == 0
    with pytest.raises(RuntimeError, match="closed"):
        await pool.get("ready")


async def test_pool_start_failure_is_raised_and_not_kept() -> None:
    maker = Maker(fail=True)
    pool = SandboxPool(factory=maker)
    with pytest.raises(SandboxStartError, match="refusing"):
        await pool.get("a")
    assert maker.made[0].closed
    assert "a" not in pool
    with pytest.raises(SandboxStartError):
        await pool.get("a")
    assert len(maker.made) == 2
    await pool.close_all()


async def test_pool_as_context_manager_with_the_local_backend() -> None:
    async with SandboxPool("local", terminal_timeout=30) as pool:
        sandbox = await pool.get("task-1")
        assert isinstance(sandbox, LocalSandbox)
        assert sandbox.task_id == "task-1"
        assert sandbox.options.terminal_timeout == 30
        assert (await sandbox.exec("echo hi")).output == "hi\n"
        workdir = sandbox.workdir
    assert sandbox.closed
    assert not await asyncio.to_thread(os.path.exists, workdir)


# the registry -------------------------------------------------------------------------
def test_unknown_backend_error_lists_the_known_ones() -> None:
    with pytest.raises(UnknownBackendError) as caught:
        create_sandbox("no-such-backend")
    assert isinstance(caught.value, KeyError)
    message = str(caught.value)
    assert "no-such-backend" in message
    for name in ("daytona", "docker", "local", "modal", "singularity", "ssh"):
        assert name in message
    assert set(default_backends.names()) >= {
        "daytona", "docker", "local", "modal", "singularity", "ssh",
    }  # fmt: skip


def test_registry_register_and_get() -> None:
    registry = BackendRegistry({"lazy": "hermes_sandbox.backends.local:LocalSandbox"})
    registry.register("fake")(FakeSandbox)
    assert registry.get("fake") is FakeSandbox
    assert FakeSandbox.backend == "fake"
    assert registry.get("lazy") is LocalSandbox
    assert registry.names() == ["fake", "lazy"]
    with pytest.raises(UnknownBackendError, match="known backends: fake, lazy"):
        registry.get("other")
    with pytest.raises(TypeError, match="Sandbox subclass"):
        registry.register("bad")(dict)  # type: ignore[type-var]


def test_register_backend_makes_create_sandbox_find_it() -> None:
    name = f"test-core-{uuid.uuid4().hex[:8]}"

    @register_backend(name)
    class Registered(FakeSandbox):
        pass

    sandbox = create_sandbox(name, task_id="t1", custom_option=5)
    assert type(sandbox) is Registered
    assert sandbox.task_id == "t1"
    assert sandbox.options.extra == {"custom_option": 5}
    assert name in default_backends.names()


def _child_python(code: str, tmp_path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_backends_load_from_the_entry_point_group(tmp_path: Path) -> None:
    (tmp_path / "hermes_probe_plugin.py").write_text(
        textwrap.dedent(
            """
            from hermes_sandbox import ExecResult, Sandbox

            class ProbeSandbox(Sandbox):
                async def _start(self): pass
                async def _close(self): pass
                async def _run(self, script, *, timeout): return ExecResult("probe", 0)
                async def _read_bytes(self, path): return b""
                async def _write_bytes(self, path, data): pass
            """
        )
    )
    info = tmp_path / "hermes_probe_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: hermes-probe-plugin\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nprobe = hermes_probe_plugin:ProbeSandbox\n"
    )
    output = _child_python(
        """
        import asyncio
        from hermes_sandbox import create_sandbox, default_backends
        print("probe" in default_backends.names())
        sandbox = create_sandbox("probe", task_id="x")
        print(type(sandbox).__name__)
        print(asyncio.run(sandbox.exec("anything")).output)
        """,
        tmp_path,
    )
    assert output.split() == ["True", "ProbeSandbox", "probe"]


def test_importing_the_package_loads_no_backend_sdk(tmp_path: Path) -> None:
    output = _child_python(
        """
        import sys
        import hermes_sandbox
        print(sorted(m for m in ("docker", "asyncssh", "modal", "daytona") if m in sys.modules))
        print("hermes_sandbox.backends.local" in sys.modules)
        """,
        tmp_path,
    )
    assert output.split("\n")[:2] == ["[]", "False"]


# the local backend's own choices ------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"pids_limit": 0}, "pids_limit must be a positive integer, got 0"),
        ({"pids_limit": "64"}, "pids_limit must be a positive integer"),
        ({"cpus": 1, "memory_mb": 512}, "cannot enforce cpus"),
        ({"memory_mb": 0}, "memory_mb must be a positive integer, got 0"),
        ({"tmp_size_mb": "1G"}, "tmp_size_mb must be a positive integer"),
        ({"host_dirs": "/srv"}, "host_dirs must be a list of absolute host directory paths"),
        ({"host_dirs": ["rel"]}, "host_dirs must be a list of absolute"),
        ({"isolation": "docker"}, "isolation must be one of none, bwrap, auto, got 'docker'"),
        ({"runtime": "runc", "zzz": 1}, "unknown option.*runtime, zzz"),
        ({"workdir": "relative/dir"}, "workdir must be absolute"),
        ({"env": {"A": 1}}, "env\\['A'\\] must be a string"),
        ({"env": {"A=B": "x"}}, "invalid variable name"),
        ({"env": {MARKER_VARIABLE: "x"}}, "reserved"),
    ],
)
def test_local_rejects_what_it_cannot_honour(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        create_sandbox("local", **options)


async def test_local_environment_is_minimal_and_home_is_private() -> None:
    async with create_sandbox("local", env={"EXTRA": "1", "LANG": "C"}) as sandbox:
        assert isinstance(sandbox, LocalSandbox)
        assert sandbox.workdir == sandbox.root
        result = await sandbox.exec("env | sort")
        names = {line.split("=", 1)[0] for line in result.output.splitlines()}
        assert names <= {"PATH", "HOME", "LANG", "EXTRA", MARKER_VARIABLE, "PWD", "OLDPWD",
                         "SHLVL", "_"}  # fmt: skip
        home = await sandbox.exec('echo "$HOME|$LANG|$EXTRA"')
        assert home.output == f"{sandbox.root}|C|1\n"


async def test_local_given_workdir_is_kept_and_the_temp_dir_removed(tmp_path: Path) -> None:
    workdir = tmp_path / "kept"
    sandbox = create_sandbox("local", workdir=str(workdir), isolation="none")
    assert isinstance(sandbox, LocalSandbox)
    async with sandbox:
        await sandbox.exec("echo data > file.txt; export X=1")
        state_dir = sandbox._state_dir
        assert await asyncio.to_thread(os.path.isdir, state_dir)
        assert (await sandbox.exec("echo $HOME")).output.strip() == sandbox.root
    assert (workdir / "file.txt").read_text() == "data\n"
    assert not await asyncio.to_thread(os.path.exists, sandbox.root)
    assert not await asyncio.to_thread(os.path.exists, state_dir)


async def test_local_close_removes_read_only_trees() -> None:
    sandbox = create_sandbox("local")
    async with sandbox:
        await sandbox.exec("mkdir -p ro/inner && touch ro/inner/f && chmod -R a-w ro")
    assert not await asyncio.to_thread(os.path.exists, sandbox.workdir)


async def test_local_start_failure_says_what_to_do_and_leaves_nothing() -> None:
    sandbox = create_sandbox("local", workdir="/proc/hermes-cannot-exist/work")
    assert isinstance(sandbox, LocalSandbox)
    with pytest.raises(SandboxStartError, match="writable directory"):
        await sandbox.start()
    assert not await asyncio.to_thread(os.path.exists, sandbox.root)
    assert not await asyncio.to_thread(os.path.exists, sandbox._state_dir)
    await sandbox.close()


async def test_local_concurrent_commands_in_one_sandbox() -> None:
    async with create_sandbox("local") as sandbox:
        results = await asyncio.gather(*(sandbox.exec(f"sleep 0.2; echo {i}") for i in range(8)))
        assert [r.output for r in results] == [f"{i}\n" for i in range(8)]


async def test_local_close_while_a_command_runs() -> None:
    sandbox = await create_sandbox("local").start()
    running = asyncio.ensure_future(sandbox.exec("sleep 300"))
    await asyncio.sleep(0.2)
    await sandbox.close()
    result = await asyncio.wait_for(running, 10)
    assert result.exit_code == 137


def test_local_sandbox_moves_between_event_loops() -> None:
    # ToolContext's blocking methods may reach a sandbox from a loop of their own.
    sandbox = create_sandbox("local")

    async def first() -> ExecResult:
        await sandbox.start()
        return await sandbox.exec("export A=1; sleep 30 & echo background")

    async def second() -> ExecResult:
        try:
            return await sandbox.exec('echo "$A"')
        finally:
            await sandbox.close()

    assert asyncio.run(first()).output == "background\n"
    assert asyncio.run(second()).output == "1\n"
    assert not os.path.exists(sandbox.workdir)


async def test_local_commands_get_only_stdin_stdout_and_stderr() -> None:
    async with create_sandbox("local") as sandbox:
        result = await sandbox.exec("ls /proc/$$/fd")
        assert result.output.split() == ["0", "1", "2"]
        assert (await sandbox.exec("readlink /proc/$$/fd/0")).output == "/dev/null\n"


def test_local_popen_fallback_spawns_like_posix_spawn() -> None:
    from hermes_sandbox.backends import local
    from hermes_sandbox.backends.local import _process as process

    read_end, write_end = os.pipe()
    try:
        pid = process._spawn_with_popen(
            ["bash", "-c", "echo fallback; ps -o sid= -p $$"],
            {"PATH": local.DEFAULT_PATH},
            write_end,
        )
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as output:
        text = output.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    lines = text.split()
    assert lines[0] == "fallback"
    assert int(lines[1]) == pid  # a session of its own


@pytest.mark.parametrize(
    ("command", "stateless"),
    [
        ("ls -la", True),
        ("python3 -c 'import os; print(os.getcwd())'", True),
        ('pytest -k "not slow" tests/', True),
        ("./run.sh --flag=1 *.txt", True),
        ("echo hi", True),
        ("cd /tmp", False),
        ("export A=1", False),
        ("A=1 ls", False),
        ("source venv/bin/activate", False),
        (". venv/bin/activate", False),
        ("printf -v PATH x", False),
        ("ls; rm x", False),
        ("ls && cd x", False),
        ("ls > out", False),
        ("ls | wc -l", False),
        ("sleep 1 &", False),
        ("ls $HOME", False),
        ('echo "$(id)"', False),
        ("ls\nrm x", False),
        ("ls # comment", False),
        ("ls {a,b}", False),
        ("echo a\\ b", False),
        ("(cd x)", False),
        ("exit 3", False),
        ("ls " + "x" * 5000, False),
    ],
)
def test_local_stateless_commands_are_recognised(command: str, stateless: bool) -> None:
    from hermes_sandbox._shell import is_stateless

    assert is_stateless(command) is stateless


async def test_local_stateless_commands_replace_the_shell_and_see_the_state() -> None:
    async with create_sandbox("local", isolation="none") as sandbox:
        await sandbox.exec("mkdir -p sub && cd sub && export FOO=bar")
        # One program with plain arguments: bash execs it in place (its parent is us).
        result = await sandbox.exec("sh -c 'echo $PPID; pwd; echo $FOO'")
        assert result.output.split() == [str(os.getpid()), f"{sandbox.workdir}/sub", "bar"]
        assert (await sandbox.exec("printenv FOO")).output == "bar\n"
        missing = await sandbox.exec("hermes-no-such-program --x")
        assert missing.exit_code == 127
        # A function exported through options.env may shadow a program: no shortcut then.
    functions = {"BASH_FUNC_ls%%": "() { cd /; echo shadowed; }"}
    async with create_sandbox("local", env=functions, isolation="none") as sandbox:
        assert (await sandbox.exec("ls")).output == "shadowed\n"
        assert (await sandbox.exec("pwd")).output == "/\n"
