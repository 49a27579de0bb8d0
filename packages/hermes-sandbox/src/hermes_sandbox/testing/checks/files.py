"""Conformance checks of files and transfers: binary round trips, big files, trees,
missing paths."""

from __future__ import annotations

import asyncio
import hashlib
import os

from hermes_sandbox.testing.bench import Bench
from hermes_sandbox.testing.probes import expect, expect_equal, expect_raises

__all__ = ["CHECKS"]


async def binary_file_round_trip(bench: Bench) -> None:
    """Every byte value survives ``write_file``/``read_file``; writes replace."""
    payload = bytes(range(256)) * 4
    async with bench.sandbox() as sandbox:
        await sandbox.write_file("bin/all-bytes.bin", payload)
        expect_equal(await sandbox.read_file("bin/all-bytes.bin"), payload, "bytes read back")
        expect_equal(
            (await sandbox.exec("wc -c < bin/all-bytes.bin")).output.strip(), "1024", "size"
        )
        await sandbox.write_file("text.txt", "héllo\n")
        expect_equal(
            await sandbox.read_file(f"{sandbox.workdir}/text.txt"),
            "héllo\n".encode(),
            "text read back by absolute path",
        )
        await sandbox.write_file("text.txt", "replaced")
        expect_equal(await sandbox.read_file("text.txt"), b"replaced", "a replaced file")


async def fifty_megabyte_file_round_trip(bench: Bench) -> None:
    """A 50 MB file goes up and comes back intact (``upload_file``/``download_file``)."""
    payload = os.urandom(50 * 2**20)
    digest = hashlib.sha256(payload).hexdigest()
    source = bench.directory / "big.bin"
    await asyncio.to_thread(source.write_bytes, payload)
    async with bench.sandbox() as sandbox:
        await sandbox.upload_file(source, "data/big.bin")
        expect_equal(
            (await sandbox.exec("wc -c < data/big.bin")).output.strip(),
            str(len(payload)),
            "size in the sandbox",
        )
        target = bench.directory / "back" / "big.bin"
        await sandbox.download_file("data/big.bin", target)
        back = await asyncio.to_thread(target.read_bytes)
        expect(hashlib.sha256(back).hexdigest() == digest, "the downloaded file differs")
        read = await sandbox.read_file("data/big.bin")
        expect(hashlib.sha256(read).hexdigest() == digest, "read_file of the upload differs")


async def nested_directory_round_trip(bench: Bench) -> None:
    """A tree (nested, binary, unicode and spaced names, an empty directory) goes up and
    comes back intact (``upload_dir``/``download_dir``)."""
    tree = {
        "top.txt": b"top",
        "a/b/c/deep.bin": bytes(range(256)),
        "a/b/sibling.txt": "ünïcode".encode(),
        "with space/file name.txt": b"spaces",
    }
    source = bench.directory / "tree"
    for relative, data in tree.items():
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        (source / relative).write_bytes(data)
    (source / "empty-dir").mkdir()
    async with bench.sandbox() as sandbox:
        await sandbox.upload_dir(source, "project")
        listing = await sandbox.exec("cd project && find . -type f | LC_ALL=C sort")
        expect_equal(
            listing.output.splitlines(),
            sorted(f"./{relative}" for relative in tree),
            "files of the uploaded tree",
        )
        expect_equal(
            await sandbox.read_file("project/a/b/c/deep.bin"), bytes(range(256)), "a deep file"
        )
        back = bench.directory / "back"
        await sandbox.download_dir("project", back)
        for relative, data in tree.items():
            expect_equal((back / relative).read_bytes(), data, f"downloaded {relative}")
        expect((back / "empty-dir").is_dir(), "the empty directory came back")


async def missing_files_raise_file_not_found(bench: Bench) -> None:
    """Missing files and directories raise ``FileNotFoundError``, on both sides."""
    async with bench.sandbox() as sandbox:
        with expect_raises(FileNotFoundError, "read_file of a missing file"):
            await sandbox.read_file("no/such/file.txt")
        with expect_raises(FileNotFoundError, "download_dir of a missing directory"):
            await sandbox.download_dir("no-such-dir", bench.directory / "out")
        with expect_raises(FileNotFoundError, "upload_file of a missing host file"):
            await sandbox.upload_file(bench.directory / "no-such-host-file", "x")


CHECKS = [
    binary_file_round_trip,
    fifty_megabyte_file_round_trip,
    nested_directory_round_trip,
    missing_files_raise_file_not_found,
]
