"""What a trial keeps from the agent's sandbox: ``/logs/artifacts`` and the declared artifacts.

Once the agent's turn is over (the processes it started keep running: services the tests
probe), the harness copies out of its sandbox the convention folder ``/logs/artifacts``
and every path the task declares in ``artifacts`` (``task.toml``), into a trial folder on
the host::

    <folder>/
    ├── artifacts.json        the manifest (ArtifactManifest): what was kept, what was missing
    └── files/
        ├── logs/artifacts/   /logs/artifacts, when the sandbox had one
        └── app/answer.txt    /app/answer.txt (or the artifact's ``destination``)

A declared artifact that does not exist is recorded as missing, never an error: the
tests decide what its absence means. :func:`restore_artifacts` puts the kept files back
at their original absolute paths in another sandbox (a separate verifier, or a rescore).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import tarfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hermes_benchmarks._errors import ArtifactsError
from hermes_benchmarks._task import ArtifactSpec, Task
from hermes_sandbox import Sandbox, SandboxError

__all__ = [
    "FILES_DIR",
    "LOGS_ARTIFACTS",
    "MANIFEST_FILE",
    "ArtifactManifest",
    "KeptArtifact",
    "collect_artifacts",
    "promote_folder",
    "restore_artifacts",
]

#: The convention folder every trial keeps, declared or not.
LOGS_ARTIFACTS = "/logs/artifacts"
#: The manifest's name in a trial's artifact folder.
MANIFEST_FILE = "artifacts.json"
#: Where the kept files are, below a trial's artifact folder.
FILES_DIR = "files"
#: Seconds allowed for looking at what the declared paths are.
PROBE_TIMEOUT = 60.0


class KeptArtifact(BaseModel):
    """One path copied out of the agent's sandbox (or found missing there).

    ``kind``: ``file``, ``dir`` or ``missing``; ``stored``: its place below ``files/``;
    ``mode``: a file's permission bits (restored with it); ``declared``: whether the task
    names it (``/logs/artifacts`` is kept without being declared).
    """

    model_config = ConfigDict(frozen=True)

    source: str
    stored: str
    kind: Literal["file", "dir", "missing"]
    mode: int | None = None
    declared: bool = True


class ArtifactManifest(BaseModel):
    """``artifacts.json``: the task the artifacts belong to and each kept path.

    ``tests_hash``: :meth:`Task.tests_hash` when the artifacts were kept (a rescore says
    when the tests changed since).
    """

    model_config = ConfigDict(frozen=True)

    task: str
    task_path: str
    environment_mode: Literal["shared", "separate"]
    tests_hash: str | None = None
    artifacts: list[KeptArtifact] = Field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        """The declared artifacts the agent's sandbox did not have."""
        return [a.source for a in self.artifacts if a.declared and a.kind == "missing"]

    def save(self, folder: Path) -> None:
        """Write ``folder/artifacts.json`` (blocking)."""
        (folder / MANIFEST_FILE).write_text(self.model_dump_json(indent=2) + "\n")

    @classmethod
    def load(cls, folder: Path) -> ArtifactManifest:
        """Read ``folder/artifacts.json`` (blocking).

        Raises:
            ArtifactsError: the file is missing or is not a manifest (the message names it).
        """
        file = folder / MANIFEST_FILE
        try:
            return cls.model_validate_json(file.read_bytes())
        except FileNotFoundError:
            raise ArtifactsError(
                f"{file} is missing: {folder} is not an artifact folder a trial kept"
            ) from None
        except (ValidationError, ValueError) as error:
            raise ArtifactsError(f"{file} is not an artifact manifest ({error})") from None


def _probe_script(specs: list[ArtifactSpec]) -> str:
    lines = []
    for spec in specs:
        path = shlex.quote(spec.source)
        lines.append(
            f"if [ -d {path} ]; then echo dir; elif [ -f {path} ]; then "
            f'echo "file $(stat -Lc %a {path} 2>/dev/null || echo 644)"; else echo missing; fi'
        )
    return "\n".join(lines)


async def collect_artifacts(task: Task, sandbox: Sandbox, folder: Path) -> ArtifactManifest:
    """Copy ``/logs/artifacts`` and ``task``'s declared artifacts out of ``sandbox`` into
    ``folder`` (created), write its manifest there, and return it.

    Call it once the agent's processes are stopped. A path that is absent, that
    vanishes or changes kind while it is copied, or a folder holding a link that points
    out of it (absolute, or through ``..``) is recorded as missing and not kept.

    Raises:
        SandboxError: the sandbox failed while the artifacts were copied (also when the
            command that looks for the declared ones did not end well: its shell killed
            by a container stopping, say, is not a missing artifact).
        OSError: the host folder could not be written.
    """
    files = folder / FILES_DIR
    await asyncio.to_thread(files.mkdir, parents=True, exist_ok=True)
    kept: list[KeptArtifact] = []
    logs_stored = LOGS_ARTIFACTS.lstrip("/")
    try:
        await sandbox.download_dir(LOGS_ARTIFACTS, files / logs_stored)
        kept.append(KeptArtifact(source=LOGS_ARTIFACTS, stored=logs_stored, kind="dir"))
    except (FileNotFoundError, NotADirectoryError, tarfile.TarError):
        await asyncio.to_thread(_remove, files / logs_stored)
        kept.append(
            KeptArtifact(source=LOGS_ARTIFACTS, stored=logs_stored, kind="missing", declared=False)
        )
    specs = list(task.config.artifacts)
    if specs:
        probe = await sandbox.exec(_probe_script(specs), timeout=PROBE_TIMEOUT, session=False)
        kinds = probe.output.split("\n")
        if probe.exit_code != 0 or probe.timed_out or len(kinds) <= len(specs):
            # The probe prints a line per artifact and ends with status 0: anything else
            # is the sandbox failing (its shell killed as the container stops, say), not
            # artifacts that are missing.
            raise SandboxError(
                f"could not look for the artifacts in sandbox {sandbox.task_id}: the probe "
                f"ended with status {probe.exit_code}"
                f"{' (timed out)' if probe.timed_out else ''}: {probe.output.strip()[-200:]!r}"
            )
        for index, spec in enumerate(specs):
            found = kinds[index].split() if index < len(kinds) else []
            kept.append(await _copy_out(sandbox, spec, found, files))
    manifest = ArtifactManifest(
        task=task.name,
        task_path=str(task.path.resolve()),
        environment_mode=task.config.verifier.environment_mode,
        tests_hash=await asyncio.to_thread(task.tests_hash),
        artifacts=kept,
    )
    await asyncio.to_thread(manifest.save, folder)
    return manifest


async def _copy_out(
    sandbox: Sandbox, spec: ArtifactSpec, found: list[str], files: Path
) -> KeptArtifact:
    target = files / spec.stored_as
    missing = KeptArtifact(source=spec.source, stored=spec.stored_as, kind="missing")
    try:
        if found[:1] == ["dir"]:
            await sandbox.download_dir(spec.source, target)
            return KeptArtifact(source=spec.source, stored=spec.stored_as, kind="dir")
        if found[:1] == ["file"]:
            data = await sandbox.read_file(spec.source)
            mode = int(found[1], 8) & 0o7777 if len(found) > 1 and found[1].isdigit() else 0o644
            await asyncio.to_thread(_write_file, target, data)
            return KeptArtifact(source=spec.source, stored=spec.stored_as, kind="file", mode=mode)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, ValueError, tarfile.TarError):
        await asyncio.to_thread(_remove, target)
    return missing


def _write_file(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _remove(target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target, ignore_errors=True)
    else:
        target.unlink(missing_ok=True)


async def restore_artifacts(manifest: ArtifactManifest, folder: Path, sandbox: Sandbox) -> None:
    """Put the artifacts kept in ``folder`` back at their original paths in ``sandbox``
    (file permission bits included). Missing artifacts stay missing.

    Raises:
        ArtifactsError: a file the manifest lists is no longer in ``folder``.
        SandboxError: the sandbox failed while the artifacts were copied in.
    """
    files = folder / FILES_DIR
    chmods = []
    for artifact in manifest.artifacts:
        if artifact.kind == "missing":
            continue
        stored = files / artifact.stored
        try:
            if artifact.kind == "dir":
                await sandbox.upload_dir(stored, artifact.source)
            else:
                await sandbox.upload_file(stored, artifact.source)
        except (FileNotFoundError, NotADirectoryError):
            raise ArtifactsError(
                f"{stored} is gone: the artifact folder {folder} is incomplete"
            ) from None
        if artifact.mode is not None:
            chmods.append(f"chmod {artifact.mode:o} {shlex.quote(artifact.source)}")
    if chmods:
        await sandbox.exec(" && ".join(chmods), timeout=PROBE_TIMEOUT, session=False)


def promote_folder(staging: Path, final: Path) -> None:
    """Move the finished ``staging`` folder to ``final`` in one rename, replacing what a
    killed earlier run may have left there (blocking).

    Raises:
        OSError: the rename failed.
    """
    if final.exists():
        shutil.rmtree(final)
    os.replace(staging, final)
