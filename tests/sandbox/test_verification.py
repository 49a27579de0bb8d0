async def test_the_job_ledger_stops_what_ran_and_forgets_only_the_groups_it_killed() -> None:
    ledger = JobLedger()
    scripts: list[str] = []

    async def run(script: str) -> tuple[int, bytes, bytes]:
        scripts.append(script)
        return 0, b"", b""

    await ledger.stop(run)
    assert scripts == []  # nothing ran: nothing to kill
    ledger.next_marker()
    ledger.groups.add((101, 100))
    await ledger.stop(run)
    assert len(scripts) == 1
    assert " 101:100 " in scripts[0] and ledger.mark in scripts[0]
    assert ledger.groups == set()

    async def failing(script: str) -> tuple[int, bytes, bytes]:
        ledger.groups.add((202, 200))  # a command started meanwhile
        return 2, b"", b"grep: boom"

    ledger.groups.add((101, 100))
    with pytest.raises(SandboxError, match=r"failed \(exit 2\): grep: boom"):
        await ledger.stop(failing)
    assert ledger.groups == {(101, 100), (202, 200)}  # nothing forgotten after a failure
