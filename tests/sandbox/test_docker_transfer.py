"""Transfers into a docker sandbox's missing folders: the folders are made by entries of
the archive itself, as ``mkdir -p`` by root makes them (no command runs in the
container), whoever the sandbox's user is."""

from __future__ import annotations

import io
import tarfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from hermes_sandbox import Sandbox, create_sandbox
from hermes_sandbox.backends.docker._archive import FOLDER_MODE, prefixed_tar
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
