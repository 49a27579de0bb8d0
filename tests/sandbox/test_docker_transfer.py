"""Transfers into a docker sandbox's missing folders: the folders are made by entries of
the archive itself, as ``mkdir -p`` by root makes them (no command runs in the
container), whoever the sandbox's user is. Downloads read the daemon's HTTP/1.0 answer
whole, whatever pieces it comes in; small regular files are read, and small archives
unpacked, in a root command session instead of through the daemon's archive endpoint."""

from __future__ import annotations

import asyncio
import io
import os
import socket
import tarfile
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import Sandbox, SandboxError, create_sandbox
from hermes_sandbox.backends.docker import DockerDaemon
from hermes_sandbox.backends.docker._archive import FOLDER_MODE, prefixed_tar
from hermes_sandbox.backends.docker._transfer import _Answer, _copy_first_file
from tests.sandbox.providers.docker import DockerSetup


@asynccontextmanager
async def sandbox(setup: DockerSetup, **options: Any) -> AsyncIterator[Sandbox]:
    async with create_sandbox("docker", **{"image": setup.image, **options}) as started:
        yield started


def _tar(*members: tuple[str, bytes | None]) -> bytes:
    """A tar of regular files (bytes) and hard links (None: to the first member)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.linkname = tarfile.LNKTYPE, members[0][0]
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_prefixed_tar_moves_a_member_named_by_a_pax_header() -> None:
    buffer = io.BytesIO()
    long = "ü-" + "n" * 120  # needs a pax header's path
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo(long)
        info.size = 1
        archive.addfile(info, io.BytesIO(b"x"))
        link = tarfile.TarInfo("l-" + "n" * 120)
        link.type, link.linkname = tarfile.LNKTYPE, long
        archive.addfile(link)
    moved = prefixed_tar(buffer.getvalue(), ["a", "b"])
    with tarfile.open(fileobj=io.BytesIO(moved)) as read:
        members = read.getmembers()
    assert [m.name for m in members] == ["a", "a/b", f"a/b/{long}", "a/b/l-" + "n" * 120]
    assert members[-1].linkname == f"a/b/{long}"


def test_a_prefixed_tar_makes_the_folders_and_moves_every_member() -> None:
    moved = prefixed_tar(_tar(("x.txt", b"x"), ("sub/y.txt", b"yy"), ("z", None)), ["a", "b"])
    with tarfile.open(fileobj=io.BytesIO(moved)) as archive:
        members = archive.getmembers()
        assert [m.name for m in members] == ["a", "a/b", "a/b/x.txt", "a/b/sub/y.txt", "a/b/z"]
        assert [(m.isdir(), m.mode, m.uid) for m in members[:2]] == [(True, FOLDER_MODE, 0)] * 2
        assert members[-1].islnk()
        assert members[-1].linkname == "a/b/x.txt"
        read = archive.extractfile(members[3])
        assert read is not None
        assert read.read() == b"yy"


async def test_uploads_into_missing_folders_make_them_as_mkdir_p_by_root(
    setup: DockerSetup, tmp_path: Path
) -> None:
    (tmp_path / "tree" / "in").mkdir(parents=True)
    (tmp_path / "tree" / "in" / "f.txt").write_text("f")
    (tmp_path / "one.bin").write_bytes(b"\0" * 1000)
    async with sandbox(setup, user="nobody") as sb:
        await sb.upload_dir(tmp_path / "tree", "/srv/a/b")
        await sb.upload_file(tmp_path / "one.bin", "/srv/c/d/one.bin")
        await sb.write_file("/srv/e/f/note.txt", "note")
        made = await sb.exec(
            "mkdir -p /srv/ref && stat -c '%a %U %G' /srv/ref /srv/a /srv/a/b /srv/c/d /srv/e/f",
            session=False,
            user="0",
        )
        lines = made.output.split()
        assert made.exit_code == 0, made.output
        assert [lines[i : i + 3] for i in range(0, 15, 3)] == [["755", "root", "root"]] * 5
        assert await sb.read_file("/srv/a/b/in/f.txt") == b"f"
        assert await sb.read_file("/srv/c/d/one.bin") == b"\0" * 1000
        assert await sb.read_file("/srv/e/f/note.txt") == b"note"
        await sb.write_file("/srv/file", "x")
        with pytest.raises(NotADirectoryError):
            await sb.upload_dir(tmp_path / "tree", "/srv/file/below/here")
        with pytest.raises(NotADirectoryError):
            await sb.upload_file(tmp_path / "one.bin", "/srv/file/below/one.bin")


def _answer_with(payload: bytes, name: str) -> bytes:
    """An HTTP/1.0 answer of the archive endpoint: a pax-headed tar of one file."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo(name)
        info.size = len(payload)
        archive.addfile(info, io.BytesIO(payload))
    head = b"HTTP/1.0 200 OK\r\nContent-Type: application/x-tar\r\n\r\n"
    return head + buffer.getvalue()


def _serve(sock: socket.socket, answer: bytes, pieces: int) -> None:
    sock.recv(65536)  # the request
    step = max(1, len(answer) // pieces)
    for at in range(0, len(answer), step):
        sock.sendall(answer[at : at + step])
    sock.close()


@pytest.mark.parametrize(("size", "pieces"), [(3 << 20 | 7, 5), (0, 1), (9, 1)])
def test_a_download_answer_is_copied_whole_across_its_buffered_and_spliced_parts(
    tmp_path: Path, size: int, pieces: int
) -> None:
    payload = os.urandom(size)
    ours, theirs = socket.socketpair()
    ours.settimeout(10.0)  # non-blocking underneath, as the daemon's connections are
    answer = _answer_with(payload, "ü-" + "n" * 120)  # a pax header comes first
    server = threading.Thread(target=_serve, args=(theirs, answer, pieces))
    server.start()
    try:
        reader = _Answer(ours)
        status, headers = reader.request("/archive")
        assert (status, headers["content-type"]) == (200, "application/x-tar")
        _copy_first_file(reader, "/f", tmp_path / "out" / "f")
    finally:
        server.join()
        ours.close()
    assert (tmp_path / "out" / "f").read_bytes() == payload


def test_a_download_answer_that_ends_early_says_so(tmp_path: Path) -> None:
    ours, theirs = socket.socketpair()
    ours.settimeout(10.0)
    answer = _answer_with(os.urandom(1 << 20), "f")[: -(600 << 10)]
    server = threading.Thread(target=_serve, args=(theirs, answer, 3))
    server.start()
    try:
        reader = _Answer(ours)
        reader.request("/archive")
        with pytest.raises(SandboxError, match="ended early"):
            _copy_first_file(reader, "/f", tmp_path / "f")
    finally:
        server.join()
        ours.close()


def _events(container: str, since: float, event: str) -> int:
    """How many ``event`` events the daemon had for ``container`` since ``since``."""
    daemon = DockerDaemon.open()
    try:
        events = daemon.api.events(
            since=int(since), until=time.time(), decode=True,
            filters={"container": container, "event": event},
        )  # fmt: skip
        return sum(1 for _ in events)
    finally:
        daemon.close()


def _archive_reads(container: str, since: float) -> int:
    """How many times the daemon archived a path of ``container`` since ``since``."""
    return _events(container, since, "archive-path")


def _extractions(container: str, since: float) -> int:
    """How many archives the daemon unpacked into ``container`` since ``since``."""
    return _events(container, since, "extract-to-dir")


async def test_small_files_are_read_in_a_session_and_others_through_the_daemon(
    setup: DockerSetup,
) -> None:
    payload = bytes(range(256)) * 4 + b"\0end"
    async with sandbox(setup, user="nobody") as sb:
        await sb.write_file("/srv/small.bin", payload)
        await sb.exec("chmod 600 /srv/small.bin", user="0", session=False)  # root's only
        await sb.exec("mkfifo /srv/pipe", user="0", session=False)
        container = getattr(sb, "container_id", "")
        since = time.time()
        assert await sb.read_file("/srv/small.bin") == payload
        assert await asyncio.to_thread(_archive_reads, container, since - 1) == 0
        # A named pipe is not opened by a session (it would wait for a writer).
        with pytest.raises((FileNotFoundError, SandboxError)):
            await asyncio.wait_for(sb.read_file("/srv/pipe"), 20)
        assert await asyncio.to_thread(_archive_reads, container, since - 1) >= 1


async def test_small_archives_are_unpacked_in_a_session_and_others_by_the_daemon(
    setup: DockerSetup, tmp_path: Path
) -> None:
    small = tmp_path / "small"
    (small / "in").mkdir(parents=True)
    (small / "in" / "run.sh").write_text("echo hi\n")
    (small / "in" / "run.sh").chmod(0o750)
    (small / "data.bin").write_bytes(b"\0\xff")
    named = tmp_path / "named"  # a name that needs a pax header
    named.mkdir()
    (named / ("ü-" + "n" * 120)).write_bytes(b"pax")
    large = tmp_path / "large"
    large.mkdir()
    (large / "big.bin").write_bytes(os.urandom(200_000))
    async with sandbox(setup, user="nobody") as sb:
        container = getattr(sb, "container_id", "")
        since = time.time()
        await sb.upload_dir(small, "/srv/up")  # into missing folders
        await sb.write_file("/srv/up/note.txt", "note")
        await sb.upload_dir(named, "/srv/named/here")
        assert await asyncio.to_thread(_extractions, container, since - 1) == 0
        made = await sb.exec(
            "stat -c '%a %u %g' /srv/up /srv/up/in/run.sh && /srv/up/in/run.sh",
            session=False, user="0",
        )  # fmt: skip
        assert made.output.split("\n")[:3] == ["755 0 0", f"750 {os.getuid()} {os.getgid()}", "hi"]
        assert await sb.read_file("/srv/up/data.bin") == b"\0\xff"
        assert await sb.read_file("/srv/up/note.txt") == b"note"
        assert await sb.read_file("/srv/named/here/" + "ü-" + "n" * 120) == b"pax"
        await sb.upload_dir(large, "/srv/large")
        assert await asyncio.to_thread(_extractions, container, since - 1) == 1
        assert (await sb.exec("wc -c < /srv/large/big.bin")).output.strip() == "200000"
