"""docker backend: service containers beside a sandbox (``ServiceGroup``), against a real
dockerd: reached by name from the sandbox, started in dependency order and waited for,
failures named in one line, nothing left behind (containers or networks)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from hermes_sandbox import SandboxStartError, create_sandbox
from tests.sandbox.providers.docker import DockerSetup

#: A TCP server on port 5000 answering every connection with ``pong`` and the value of
#: $GREETING (perl: in the Debian image; no network needed).
SERVER = (
    "use IO::Socket::INET; my $s = IO::Socket::INET->new(LocalPort => 5000, Listen => 5, "
    'ReuseAddr => 1) or die "listen: $!"; print STDERR "listening\\n"; '
    'while (my $c = $s->accept) { print $c "pong $ENV{GREETING}\\n"; close $c; }'
)
PROBE = ("CMD", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/5000")


@pytest.fixture(autouse=True)
def no_leaks(api: Any, no_container_leaks: None) -> Iterator[None]:
    """Every test leaves no container (``no_container_leaks``) and no services network
    of this process."""
    from hermes_sandbox.backends.docker import RUN_ID, remove_networks

    yield
    networks = [n["Name"] for n in api.networks() if n["Name"].startswith("hermes-services-")]
    if networks:
        remove_networks(run_id=RUN_ID)
        pytest.fail(f"networks left behind: {networks}")


def server(setup: DockerSetup, **options: Any) -> Any:
    from hermes_sandbox.backends.docker import Healthcheck, ServiceSpec

    return ServiceSpec(
        name=options.pop("name", "api"),
        image=setup.image,
        command=("perl", "-e", SERVER),
        environment={"GREETING": "hello"},
        healthcheck=Healthcheck(PROBE, interval=0.2, timeout=2, retries=50),
        **options,
    )


async def test_the_sandbox_reaches_a_healthy_service_by_its_name(setup: DockerSetup) -> None:
    from hermes_sandbox.backends.docker import ServiceGroup, ServiceSpec

    marker = ServiceSpec(
        name="seed",
        image=setup.image,
        command=("bash", "-c", "echo seeded"),
    )
    group = ServiceGroup(
        [server(setup, depends_on={"seed": "service_completed_successfully"}), marker],
        wait_for={"api": "service_healthy"},
    )
    async with group:
        made = create_sandbox("docker", image=setup.image, network=True, network_mode=group.network)
        async with made as sandbox:
            result = await sandbox.exec("exec 3<>/dev/tcp/api/5000 && head -n 1 <&3", timeout=30)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "pong hello"


async def test_start_waits_for_the_service_to_be_healthy(setup: DockerSetup, api: Any) -> None:
    from hermes_sandbox.backends.docker import ServiceGroup

    # The server starts listening only after two seconds: healthy only then.
    slow = server(setup)
    delayed = type(slow)(
        **{
            **slow.__dict__,
            "command": ("bash", "-c", f"sleep 2; exec perl -e '{SERVER}'"),
        }
    )
    group = ServiceGroup([delayed], wait_for={"api": "service_healthy"})
    try:
        await group.start()
        state = api.inspect_container(group.container("api"))["State"]
        assert state["Health"]["Status"] == "healthy"
    finally:
        await group.close()


async def test_the_network_is_internal_unless_internet_is_asked(
    setup: DockerSetup, api: Any
) -> None:
    from hermes_sandbox.backends.docker import ServiceGroup

    for internet in (False, True):
        group = ServiceGroup([server(setup)], internet=internet)
        try:
            await group.start()
            assert api.inspect_network(group.network)["Internal"] is (not internet)
        finally:
            await group.close()
        assert not [n for n in api.networks() if n["Name"] == group.network]


async def test_a_service_that_exits_is_named_with_its_log_and_nothing_is_left(
    setup: DockerSetup, api: Any
) -> None:
    from hermes_sandbox.backends.docker import Healthcheck, ServiceGroup, ServiceSpec

    broken = ServiceSpec(
        name="db",
        image=setup.image,
        command=("bash", "-c", "echo 'db: config missing' >&2; exit 3"),
        healthcheck=Healthcheck(PROBE, interval=0.2),
    )
    group = ServiceGroup([broken], wait_for={"db": "service_healthy"})
    with pytest.raises(SandboxStartError) as caught:
        await group.start()
    message = str(caught.value)
    assert "\n" not in message
    assert "service 'db' exited with code 3" in message
    assert "db: config missing" in message
    assert not [n for n in api.networks() if n["Name"] == group.network]


async def test_waiting_for_health_without_a_healthcheck_says_so(setup: DockerSetup) -> None:
    from hermes_sandbox.backends.docker import ServiceGroup, ServiceSpec

    plain = ServiceSpec(name="cache", image=setup.image, command=("sleep", "60"))
    group = ServiceGroup([plain], wait_for={"cache": "service_healthy"})
    with pytest.raises(SandboxStartError, match="'cache' has no healthcheck"):
        await group.start()


async def test_a_service_not_ready_in_time_is_named(setup: DockerSetup) -> None:
    from hermes_sandbox.backends.docker import Healthcheck, ServiceGroup, ServiceSpec

    never = ServiceSpec(
        name="slow",
        image=setup.image,
        command=("sleep", "60"),
        healthcheck=Healthcheck(PROBE, interval=0.2, retries=1000),
    )
    group = ServiceGroup([never], wait_for={"slow": "service_healthy"}, ready_timeout=1.5)
    with pytest.raises(SandboxStartError, match=r"'slow' was not service_healthy within 1.5 s"):
        await group.start()


async def test_cancelling_start_removes_what_was_started(setup: DockerSetup, api: Any) -> None:
    from hermes_sandbox.backends.docker import ServiceGroup

    # Never healthy: start waits until cancelled.
    waiting = server(setup)
    stuck = type(waiting)(**{**waiting.__dict__, "command": ("sleep", "60")})
    group = ServiceGroup([stuck], wait_for={"api": "service_healthy"})
    task = asyncio.ensure_future(group.start())
    for _ in range(100):
        await asyncio.sleep(0.1)
        if [n for n in api.networks() if n["Name"] == group.network]:
            break
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not [n for n in api.networks() if n["Name"] == group.network]


def test_the_order_follows_depends_on_and_refuses_cycles_and_unknown_names() -> None:
    from hermes_sandbox.backends.docker import ServiceSpec, service_order

    web = ServiceSpec("web", "img", depends_on={"db": "service_healthy"})
    db = ServiceSpec("db", "img")
    assert [s.name for s in service_order([web, db])] == ["db", "web"]
    with pytest.raises(ValueError, match="cycle among a, b"):
        service_order(
            [
                ServiceSpec("a", "img", depends_on={"b": "service_started"}),
                ServiceSpec("b", "img", depends_on={"a": "service_started"}),
            ]
        )
    with pytest.raises(ValueError, match="'web' depends on 'db', which is not a service"):
        service_order([web])
    with pytest.raises(ValueError, match="given twice"):
        service_order([db, db])
    from hermes_sandbox.backends.docker import ServiceGroup

    with pytest.raises(ValueError, match="depends_on names 'cache', which is not a service"):
        ServiceGroup([db], wait_for={"cache": "service_started"})


async def test_a_group_starts_once(setup: DockerSetup) -> None:
    from hermes_sandbox.backends.docker import ServiceGroup

    group = ServiceGroup([server(setup)])
    async with group:
        with pytest.raises(RuntimeError, match="started already"):
            await group.start()


async def test_reaping_the_run_removes_a_killed_runs_services_and_network(
    setup: DockerSetup, api: Any
) -> None:
    from hermes_sandbox.backends.docker import RUN_ID, DockerSandbox, ServiceGroup

    group = ServiceGroup([server(setup)])
    await group.start()
    # As a killed run leaves them: nothing closed.
    container = group.container("api")
    removed = await DockerSandbox.reap_run(RUN_ID, {})
    assert removed >= 1
    assert not [c for c in api.containers(all=True) if c["Id"] == container]
    assert not [n for n in api.networks() if n["Name"] == group.network]
    await group.close()  # nothing left to remove: no error
