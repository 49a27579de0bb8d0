"""The sandbox conformance suite (``hermes_sandbox.testing``) over every backend that can
run here, and a check that the suite catches a backend that misbehaves.

Each ``providers/<backend>.py`` (loaded with ``runpy``, as the parser case files are)
defines::

    NAME = "docker"                       # backend name
    CAPS = {"process_limit", ...}         # optional capabilities (testing.CAPABILITIES)
    LIMITS = {"blocking_on_loop": "why"}  # known limits it has (testing.LIMITS), if any
    def unavailable() -> str | None: ...  # None if it can run here, else why not
    @contextlib.asynccontextmanager
    async def provide(tmp_path) -> AsyncIterator[Callable[..., Sandbox]]: ...

and may define ``leaked() -> list[str]``: what the backend left behind (containers,
directories) once every sandbox is closed. Each file becomes a
``hermes_sandbox.testing.Provider``, and ``conformance_tests`` makes one test per
(provider, check): exactly what a third-party backend's tests do.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import runpy
import signal
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import ConformanceError, ExecResult, Sandbox
from hermes_sandbox._options import SandboxOptions
from hermes_sandbox._registry import BackendRegistry
from hermes_sandbox.backends.local import LocalSandbox
from hermes_sandbox.testing import CHECKS, Factory, Provider, run_check, run_conformance
from hermes_sandbox.testing.pytest_adapter import conformance_tests
from tests.sandbox.support import OwnLoopCheckSandbox

PROVIDER_DIR = Path(__file__).parent / "providers"
#: The providers the suite must cover here (a provider file missing is a failure).
EXPECTED = {"daytona", "docker", "local", "local-bwrap", "modal", "singularity", "ssh"}


def load_providers() -> tuple[list[Provider], dict[str, str]]:
    """Every provider file as a ``Provider``, in name order; and the broken ones' errors."""
    found: list[Provider] = []
    broken: dict[str, str] = {}
    for path in sorted(PROVIDER_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        try:
            namespace = runpy.run_path(str(path), run_name=f"sandbox_provider_{path.stem}")
            found.append(
                Provider(
                    name=str(namespace["NAME"]),
                    provide=namespace["provide"],
                    caps=frozenset(namespace.get("CAPS", ())),
                    limits=dict(namespace.get("LIMITS", {})),
                    unavailable=namespace["unavailable"],
                    leaked=namespace.get("leaked"),
                    origin=f"providers/{path.name}",
                )
            )
        except Exception as exc:
            broken[path.name] = repr(exc)
    return found, broken


PROVIDERS, BROKEN = load_providers()

test_conformance = conformance_tests(*PROVIDERS)


def test_every_provider_file_loads_and_every_backend_is_covered() -> None:
    assert BROKEN == {}
    assert {p.name for p in PROVIDERS} == EXPECTED
    for provider in PROVIDERS:
        assert provider.unknown_caps() == [], provider.origin
        assert provider.unknown_limits() == [], provider.origin


# --- the suite catches misbehaving backends ------------------------------------------------


class WrongExitCodes(LocalSandbox):
    """Reports every command as successful."""

    async def _run(self, script: str, **options: Any) -> ExecResult:
        result = await super()._run(script, **options)
        return dataclasses.replace(result, exit_code=0)


class AcceptsAnything(LocalSandbox):
    """Swallows options it does not know instead of refusing them."""

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        super().__init__(dataclasses.replace(options, extra={}), task_id=task_id)


class NoKillAtTimeout(LocalSandbox):
    """Runs commands in a process group of their own that it leaves running at the
    timeout (``close()`` still kills them)."""

    def __init__(self, options: SandboxOptions, *, task_id: str | None = None) -> None:
        super().__init__(options, task_id=task_id)
        self.strays: list[asyncio.subprocess.Process] = []

    async def exec(
        self,
        command: str,
        *,
        timeout: float | None = None,
        session: bool = True,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        user: str | None = None,
    ) -> ExecResult:
        await self.start()
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            cwd=self.workdir,
            env={"PATH": "/usr/bin:/bin"},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        self.strays.append(process)
        try:
            code = await asyncio.wait_for(process.wait(), timeout or 10)
        except TimeoutError:
            return ExecResult("", 124, timed_out=True)
        return ExecResult("", code)

    async def _close(self) -> None:
        for process in self.strays:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        await super()._close()


class NoStop(LocalSandbox):
    """Leaves every process running at ``stop_processes()`` (``close()`` still kills them)."""

    async def _stop_processes(self) -> None:
        return None


def toy_provider(
    registry: BackendRegistry, name: str, limits: dict[str, str] | None = None, **caps: Any
) -> Provider:
    """A provider of backend ``name`` of ``registry`` (not the global default one)."""

    @contextlib.asynccontextmanager
    async def provide(directory: Path) -> AsyncIterator[Factory]:
        def factory(**options: Any) -> Sandbox:
            task_id = options.pop("task_id", None)
            cls = registry.get(name)
            return cls(SandboxOptions.from_kwargs(**options), task_id=task_id)

        yield factory

    return Provider(
        name=name, provide=provide, caps=frozenset(caps.get("caps", ())), limits=limits or {}
    )


@pytest.fixture
def registry() -> BackendRegistry:
    toys = BackendRegistry()
    toys.register("wrong-exit-codes")(WrongExitCodes)
    toys.register("accepts-anything")(AcceptsAnything)
    toys.register("no-kill-at-timeout")(NoKillAtTimeout)
    toys.register("no-stop")(NoStop)
    toys.register("honest")(LocalSandbox)
    toys.register("home-loop-only")(OwnLoopCheckSandbox)
    return toys


FAST_CHECKS = ["exit_codes", "stdin_is_empty", "bad_options_are_rejected_clearly"]


async def test_a_backend_with_wrong_exit_codes_fails_the_suite(registry: BackendRegistry) -> None:
    report = await run_conformance(toy_provider(registry, "wrong-exit-codes"), checks=FAST_CHECKS)
    assert not report.ok
    assert report.outcome("exit_codes") == "failed"
    assert report.outcome("stdin_is_empty") == "passed"
    assert "exit code of 'false': expected 1, got 0" in report.failures[0].detail
    with pytest.raises(ConformanceError, match="wrong-exit-codes failed 1 conformance") as caught:
        report.raise_for_failures()
    assert set(caught.value.failures) == {"exit_codes"}


async def test_a_backend_that_swallows_unknown_options_fails_the_suite(
    registry: BackendRegistry,
) -> None:
    report = await run_conformance(toy_provider(registry, "accepts-anything"), checks=FAST_CHECKS)
    assert [r.check for r in report.failures] == ["bad_options_are_rejected_clearly"]
    assert "an unknown option: expected ValueError, nothing was raised" in report.failures[0].detail


async def test_a_backend_that_leaves_processes_at_the_timeout_fails_the_suite(
    registry: BackendRegistry,
) -> None:
    result = await run_check(
        toy_provider(registry, "no-kill-at-timeout"), "timeout_kills_the_whole_process_tree"
    )
    assert result.outcome == "failed"
    assert "processes of the command left after its timeout" in result.detail


async def test_a_backend_whose_stop_processes_does_nothing_fails_the_suite(
    registry: BackendRegistry,
) -> None:
    check = "stop_processes_kills_everything_the_commands_left"
    result = await run_check(toy_provider(registry, "no-stop"), check)
    assert result.outcome == "failed"
    assert "processes left after stop_processes()" in result.detail
    assert (await run_check(toy_provider(registry, "honest"), check)).outcome == "passed"


async def test_an_honest_backend_passes_and_capability_checks_skip(
    registry: BackendRegistry,
) -> None:
    report = await run_conformance(
        toy_provider(registry, "honest"),
        checks=[*FAST_CHECKS, "fork_bomb_is_contained_by_the_process_limit"],
    )
    assert report.ok, report.summary()
    assert report.outcome("fork_bomb_is_contained_by_the_process_limit") == "skipped"
    report.raise_for_failures()


async def test_leftovers_and_unknown_capabilities_fail_the_check(
    registry: BackendRegistry,
) -> None:
    base = toy_provider(registry, "honest")
    leaky = dataclasses.replace(base, leaked=lambda: ["container hermes-toy-1"])
    result = await run_check(leaky, "stdin_is_empty")
    assert result.outcome == "failed"
    assert "container hermes-toy-1" in result.detail
    confused = dataclasses.replace(base, caps=frozenset({"teleport"}))
    result = await run_check(confused, "stdin_is_empty")
    assert result.outcome == "failed"
    assert "unknown capabilities ['teleport']" in result.detail
    away = dataclasses.replace(base, unavailable=lambda: "no such machine")
    assert (await run_check(away, "exit_codes")).outcome == "skipped"

    @contextlib.asynccontextmanager
    async def complaining(directory: Path) -> AsyncIterator[Factory]:
        async with base.provide(directory) as factory:
            yield factory
        raise AssertionError("instance hermes-toy-2 is still running")

    result = await run_check(dataclasses.replace(base, provide=complaining), "stdin_is_empty")
    assert result.outcome == "failed"
    assert "the provider failed after the check" in result.detail
    assert "instance hermes-toy-2 is still running" in result.detail


def test_the_pytest_adapter_fails_and_skips_like_the_report(
    registry: BackendRegistry, tmp_path: Path
) -> None:
    test = conformance_tests(toy_provider(registry, "wrong-exit-codes"), checks=["exit_codes"])
    with pytest.raises(pytest.fail.Exception, match="expected 1, got 0"):
        test(toy_provider(registry, "wrong-exit-codes"), "exit_codes", tmp_path)
    bomb = "fork_bomb_is_contained_by_the_process_limit"
    with pytest.raises(pytest.skip.Exception, match="process_limit"):
        test(toy_provider(registry, "honest"), bomb, tmp_path)
    with pytest.raises(KeyError, match="no_such_check"):
        conformance_tests(toy_provider(registry, "honest"), checks=["no_such_check"])


def test_every_check_has_a_description() -> None:
    # every check of the suite before it moved into the package, and 4 of verification
    assert len(CHECKS) == 37
    for check in CHECKS.values():
        assert check.description, check.name


async def test_a_provider_for_a_registered_backend_name() -> None:
    provider = Provider.for_backend("local", caps={"host_paths"}, terminal_timeout=30)
    report = await run_conformance(
        provider, checks=["exit_codes", "close_kills_everything_and_removes_the_workdir"]
    )
    assert report.ok, report.summary()
    assert [r.outcome for r in report.results] == ["passed", "passed"]
    with pytest.raises(KeyError, match="known checks: exit_codes"):
        await run_conformance(provider, checks=["no_such_check"])


BLOCKING = "blocking_tool_context_calls_on_the_sandboxs_loop"


async def test_a_loop_bound_backend_that_does_not_declare_it_fails_the_suite(
    registry: BackendRegistry,
) -> None:
    result = await run_check(toy_provider(registry, "home-loop-only"), BLOCKING)
    assert result.outcome == "failed"
    assert "use the awaitable twins" in result.detail


async def test_a_declared_limit_is_checked_and_reported(registry: BackendRegistry) -> None:
    reason = "its client belongs to one loop"
    provider = toy_provider(registry, "home-loop-only", {"blocking_on_loop": reason})
    result = await run_check(provider, BLOCKING)
    assert result.outcome == "passed"
    assert f"declared limit 'blocking_on_loop': {reason}" in result.detail


async def test_a_declared_limit_the_backend_does_not_have_fails(registry: BackendRegistry) -> None:
    provider = toy_provider(registry, "honest", {"blocking_on_loop": "it cannot, it says"})
    result = await run_check(provider, BLOCKING)
    assert result.outcome == "failed"
    assert "remove the declaration" in result.detail


async def test_an_unknown_limit_fails_every_check(registry: BackendRegistry) -> None:
    provider = toy_provider(registry, "honest", {"no_such_limit": "?"})
    result = await run_check(provider, "exit_codes")
    assert result.outcome == "failed"
    assert "unknown limits ['no_such_limit']" in result.detail
