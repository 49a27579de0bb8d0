"""The agent's system changes read from the container's overlay upper directory: the same
files the daemon's ``docker diff`` lists, overlay's own marks read as docker reads them,
and the daemon asked instead whenever the upper directory cannot be read so."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from hermes_benchmarks.changes import overlay_changes, system_changes
from hermes_sandbox import create_sandbox
from hermes_sandbox.backends.docker import DockerDaemon
from tests.benchmarks.docker_support import docker_skip_reason

ROOT = os.geteuid() == 0
KINDS = {0: "C", 1: "A", 2: "D"}


def _overlay(upper: Path, *lowers: Path) -> dict[str, object]:
    return {
        "Name": "overlay2",
        "Data": {"UpperDir": str(upper), "LowerDir": ":".join(str(d) for d in lowers)},
    }


@pytest.mark.skipif(not ROOT, reason="overlay's trusted. marks are read as root only")
def test_whiteouts_opaque_folders_and_lower_files_are_read_as_docker_reads_them(
    tmp_path: Path,
) -> None:
    lower, upper = tmp_path / "lower", tmp_path / "upper"
    for folder in ("usr/bin", "etc", "opt/old"):
        (lower / folder).mkdir(parents=True)
    (lower / "usr/bin/grep").write_text("grep")
    (lower / "etc/motd").write_text("hi")
    (lower / "opt/old/file").write_text("x")
    (upper / "usr/bin").mkdir(parents=True)
    (upper / "usr/bin/grep").write_text("evil")
    (upper / "usr/bin/new").write_text("new")
    (upper / "etc").mkdir()
    os.mknod(upper / "etc/motd", 0o600 | 0o020000, os.makedev(0, 0))  # a whiteout
    (upper / "opt/old").mkdir(parents=True)
    os.setxattr(upper / "opt/old", "trusted.overlay.opaque", b"y")
    (upper / "opt/old/file").write_text("y")
    changes = overlay_changes(_overlay(upper, lower))
    assert changes is not None
    assert sorted(changes) == sorted(
        [
            ("C", "/usr"),  # its time differs from the lower one's
            ("C", "/usr/bin"),
            ("C", "/usr/bin/grep"),
            ("A", "/usr/bin/new"),
            ("C", "/etc"),
            ("D", "/etc/motd"),
            ("C", "/opt"),
            ("D", "/opt/old"),
            ("C", "/opt/old/file"),
        ]
    )


@pytest.mark.skipif(not ROOT, reason="overlay's trusted. marks are read as root only")
def test_a_renamed_folder_or_a_missing_directory_leaves_it_to_the_daemon(tmp_path: Path) -> None:
    lower, upper = tmp_path / "lower", tmp_path / "upper"
    (lower / "usr/lib").mkdir(parents=True)
    (upper / "usr/local/bin").mkdir(parents=True)
    assert overlay_changes(_overlay(upper, lower)) is not None
    # A folder renamed with overlay's redirect_dir: its files stay in the lower layer,
    # where the walk does not see them.
    os.setxattr(upper / "usr/local/bin", "trusted.overlay.redirect", b"/usr/lib")
    assert overlay_changes(_overlay(upper, lower)) is None
    assert overlay_changes(_overlay(tmp_path / "gone", lower)) is None
    assert overlay_changes({**_overlay(upper, lower), "Name": "vfs"}) is None


SCRIPT = (
    "echo x > /usr/local/bin/mytool && echo y >> /usr/bin/grep && rm /etc/motd && "
    "rm -rf /usr/share/doc/bash && mkdir -p /opt/a/b && touch /opt/a/b/c && "
    "ln -s /etc/passwd /usr/local/bin/pw && echo 'import os' > /etc/sitecustomize.py"
)


@pytest.mark.skipif(not ROOT, reason="the upper directory is read as root only")
@pytest.mark.skipif(docker_skip_reason() is not None, reason=docker_skip_reason() or "")
async def test_the_upper_directory_lists_the_files_docker_diff_lists() -> None:
    sandbox = create_sandbox("docker", task_id="changes-parity")
    await sandbox.start()
    try:
        done = await sandbox.exec(SCRIPT, user="0", session=False)
        assert done.exit_code == 0, done.output
        container = getattr(sandbox, "container_id", "")
        daemon = await DockerDaemon.connect()
        try:
            info = await daemon.call(daemon.api.inspect_container, container)
            diff = await daemon.call(daemon.api.diff, container)
        finally:
            daemon.close()
        mine = await asyncio.to_thread(overlay_changes, info["GraphDriver"])
        assert mine is not None, info["GraphDriver"]
        theirs = {(KINDS[e["Kind"]], e["Path"]) for e in diff}
        # Folders listed as changed because something in them changed are told apart
        # differently by the daemon's whole-tree comparison; every file is the same.
        files = {"/usr/local/bin/mytool", "/usr/bin/grep", "/etc/motd", "/opt/a/b/c"}
        files |= {"/usr/share/doc/bash", "/usr/local/bin/pw", "/etc/sitecustomize.py"}
        assert {c for c in mine if c[1] in files} == {c for c in theirs if c[1] in files}
        assert {("A", "/usr/local/bin/mytool"), ("C", "/usr/bin/grep"), ("D", "/etc/motd")} <= (
            set(mine)
        )
        found = await system_changes(sandbox)
        assert found is not None
        assert "A /etc/sitecustomize.py" in found.changes
        assert any(r.startswith("/etc/sitecustomize.py: runs in every") for r in found.reasons)
        assert any(r.startswith("/usr/bin/grep: an executable") for r in found.reasons)
    finally:
        await sandbox.close()
