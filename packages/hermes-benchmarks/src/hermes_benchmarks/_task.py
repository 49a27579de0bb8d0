"""A benchmark task in the Terminal-Bench 2 / harbor folder layout.

A task is a folder::

    my-task/
    ├── instruction.md          what the agent is asked to do
    ├── task.toml               metadata, timeouts, resources (see TaskConfig)
    ├── environment/Dockerfile  the image the agent works in (and its build context)
    ├── environment/docker-compose.yaml  (optional) services beside the agent's container
    ├── solution/solve.sh       the reference solution, run by the oracle agent (optional)
    └── tests/test.sh           the verifier; it writes /logs/verifier/reward.txt or reward.json
        tests/Dockerfile        (optional) a separate verifier's own image (context tests/)

``environment/Dockerfile`` may be left out when ``[environment] docker_image`` names a
prebuilt image. :func:`load_task` reads and checks one folder, :func:`load_tasks` every
task folder below a directory, with an optional filter.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from hermes_benchmarks._compose import ComposeFile, read_compose
from hermes_benchmarks._errors import TaskError
from hermes_sandbox import default_backends

log = logging.getLogger(__name__)

__all__ = [
    "AgentSection",
    "ArtifactSpec",
    "EnvironmentSection",
    "SolutionSection",
    "Task",
    "TaskConfig",
    "TaskMetadata",
    "VerifierSection",
    "load_task",
    "load_tasks",
    "select_tasks",
    "user_option",
]


class _Section(BaseModel):
    # Unknown keys are kept (harbor adds fields over time); known ones are checked.
    model_config = ConfigDict(extra="allow", frozen=True)


class TaskMetadata(_Section):
    """``[metadata]``: free-form, with the fields the reports group by."""

    difficulty: str | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)


class AgentSection(_Section):
    """``[agent]``: how long the agent may work, and as whom (``user``: a name or uid;
    None: the image's ``USER``)."""

    timeout_sec: float = Field(default=600.0, gt=0)
    user: str | int | None = None


class SolutionSection(_Section):
    """``[solution]``: ``env``, variables the oracle's ``solve.sh`` runs with."""

    env: dict[str, str] = Field(default_factory=dict)


class EnvironmentSection(_Section):
    """``[environment]`` (and ``[verifier.environment]``): image build and resources."""

    build_timeout_sec: float = Field(default=600.0, gt=0)
    cpus: float = Field(default=1.0, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    storage_mb: int | None = Field(default=None, gt=0)
    docker_image: str | None = None
    network_mode: str | None = None
    allow_internet: bool = True
    env: dict[str, str] = Field(default_factory=dict)
    workdir: str | None = None

    @field_validator("workdir")
    @classmethod
    def _absolute_workdir(cls, path: str | None) -> str | None:
        if path is not None and not PurePosixPath(path).is_absolute():
            raise ValueError(f"workdir must be an absolute path, got {path!r}")
        return path


class VerifierSection(_Section):
    """``[verifier]``: how the tests run.

    ``environment_mode``: ``"shared"`` runs the tests in the agent's sandbox once the agent
    is stopped; ``"separate"`` runs them in a fresh sandbox that receives only
    ``/logs/artifacts`` and the task's declared ``artifacts``. Left out, it is
    ``"separate"`` when ``[verifier.environment]`` is given and ``"shared"`` otherwise
    (harbor's rule); ``"shared"`` together with ``[verifier.environment]`` is an error.
    """

    timeout_sec: float = Field(default=600.0, gt=0)
    environment_mode: Literal["shared", "separate"] = "shared"
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    environment: EnvironmentSection | None = None

    @model_validator(mode="before")
    @classmethod
    def _implied_mode(cls, data: object) -> object:
        if not isinstance(data, dict) or data.get("environment") is None:
            return data
        if data.get("environment_mode", "separate") == "shared":
            raise ValueError(
                'environment_mode = "shared" runs the tests in the agent\'s sandbox, so '
                '[verifier.environment] cannot apply: set environment_mode = "separate" '
                "or remove [verifier.environment]"
            )
        return {"environment_mode": "separate", **data}


class ArtifactSpec(_Section):
    """One declared artifact: a path in the agent's sandbox kept after the agent's turn.

    ``source`` is absolute; it is where the artifact is restored in a separate verifier.
    ``destination`` (optional, relative) is where it is kept in the trial's artifact
    folder; by default the source path mirrored (``/app/out.txt`` -> ``app/out.txt``).
    A plain string in ``task.toml`` is a ``source``.
    """

    source: str
    destination: str | None = None
    service: str | None = None

    @field_validator("source")
    @classmethod
    def _absolute_source(cls, path: str) -> str:
        pure = PurePosixPath(path)
        if not pure.is_absolute() or ".." in pure.parts or pure == PurePosixPath("/"):
            raise ValueError(f"artifact paths must be absolute and below /, got {path!r}")
        return str(pure)

    @field_validator("destination")
    @classmethod
    def _relative_destination(cls, path: str | None) -> str | None:
        if path is None:
            return None
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or not pure.parts:
            raise ValueError(f"artifact destinations must be relative paths, got {path!r}")
        return str(pure)

    @field_validator("service")
    @classmethod
    def _main_service(cls, service: str | None) -> str | None:
        if service not in (None, "main"):
            raise ValueError(
                f"artifact service {service!r}: only the task's own container (main) is "
                "supported; drop service or collect the file into /logs/artifacts"
            )
        return service

    @property
    def stored_as(self) -> str:
        """Where the artifact is kept, relative to the trial's ``files/`` folder."""
        return self.destination or self.source.lstrip("/")


class TaskConfig(_Section):
    """The whole of ``task.toml``."""

    version: str = "1.0"
    metadata: TaskMetadata = Field(default_factory=TaskMetadata)
    agent: AgentSection = Field(default_factory=AgentSection)
    verifier: VerifierSection = Field(default_factory=VerifierSection)
    environment: EnvironmentSection = Field(default_factory=EnvironmentSection)
    solution: SolutionSection = Field(default_factory=SolutionSection)
    artifacts: list[ArtifactSpec] = Field(default_factory=list)

    @field_validator("artifacts", mode="before")
    @classmethod
    def _plain_paths(cls, entries: object) -> object:
        if isinstance(entries, list):
            return [{"source": e} if isinstance(e, str) else e for e in entries]
        return entries


@dataclass(frozen=True)
class Task:
    """One task folder, read and checked. ``name`` is the folder's name; ``compose``:
    its ``environment/docker-compose.yaml`` when that declares services beside the
    agent's container (run on the docker backend only)."""

    name: str
    path: Path
    instruction: str
    config: TaskConfig
    compose: ComposeFile | None = None

    @property
    def difficulty(self) -> str | None:
        """``[metadata] difficulty``, lower-cased, or None."""
        value = self.config.metadata.difficulty
        return value.lower() if value else None

    @property
    def environment_dir(self) -> Path:
        """The image's build context: ``environment/``."""
        return self.path / "environment"

    @property
    def dockerfile(self) -> Path | None:
        """``environment/Dockerfile`` when the task has one."""
        candidate = self.environment_dir / "Dockerfile"
        return candidate if candidate.is_file() else None

    @property
    def solution_script(self) -> Path | None:
        """``solution/solve.sh`` when the task ships a reference solution."""
        candidate = self.path / "solution" / "solve.sh"
        return candidate if candidate.is_file() else None

    @property
    def tests_dir(self) -> Path:
        """``tests/``: copied into the sandbox only when the verifier runs."""
        return self.path / "tests"

    @property
    def verifier_dockerfile(self) -> Path | None:
        """``tests/Dockerfile``: in separate mode, the verifier's own image (its build
        context is ``tests/``, and the image owns ``/tests``)."""
        candidate = self.tests_dir / "Dockerfile"
        return candidate if candidate.is_file() else None

    def environment_hash(self) -> str:
        """A hash of everything the task's image is built from.

        It covers every file of ``environment/`` (relative path, executable bit, bytes)
        and the prebuilt ``docker_image`` name, so an image cached under this hash is
        rebuilt exactly when its inputs change.
        """
        return _tree_hash(self.environment_dir, self.config.environment.docker_image)

    def resolved_env(
        self,
        section: Literal["environment", "solution", "verifier"],
        environ: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """A section's ``env`` with harbor's templates filled from ``environ`` (default:
        the host's environment, read, never written): ``${VAR}`` and ``${VAR:-default}``.

        Raises:
            TaskError: a ``${VAR}`` without a default names a variable ``environ`` lacks.
        """
        source = os.environ if environ is None else environ
        raw = getattr(self.config, section).env
        return {name: _fill(value, name, section, self.name, source) for name, value in raw.items()}

    def tests_hash(self) -> str:
        """A hash of every file of ``tests/`` (the verifier image's build context)."""
        return _tree_hash(self.tests_dir, None)


_TEMPLATE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _fill(value: str, name: str, section: str, task: str, environ: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        variable, default = match.group(1), match.group(2)
        found = environ.get(variable)
        if found is not None:
            return found
        if default is not None:
            return default
        raise TaskError(
            f"task {task}: [{section}.env] {name} needs ${{{variable}}} from the host's "
            f"environment: set {variable} or give a default (${{{variable}:-value}})"
        )

    return _TEMPLATE.sub(one, value)


def user_option(user: str | int | None, backend: str) -> dict[str, str]:
    """The sandbox option that runs the agent's commands as ``user`` (harbor's ``[agent]
    user``), on a backend that can switch users (``supports_user``: docker); nothing for
    no user, or on a backend that cannot (logged: its commands run as the backend's own
    user, as they would without the field).

    Raises:
        UnknownBackendError: ``backend`` is not a known sandbox backend.
    """
    if user is None:
        return {}
    if not default_backends.get(backend).supports_user:
        log.warning(
            "task asks for user %r; the %s backend cannot switch users: its commands run as "
            "the backend's own user",
            user,
            backend,
        )
        return {}
    return {"user": str(user)}


def _tree_hash(root: Path, docker_image: str | None) -> str:
    digest = hashlib.sha256()
    digest.update(f"docker_image={docker_image}\n".encode())
    if root.is_dir():
        for file in sorted(_files_below(root)):
            relative = file.relative_to(root).as_posix()
            executable = os.access(file, os.X_OK)
            digest.update(f"{relative}\0{int(executable)}\0".encode())
            digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _files_below(root: Path) -> Iterable[Path]:
    for directory, _dirs, names in os.walk(root):
        for name in names:
            yield Path(directory) / name


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}"


def load_task(path: str | os.PathLike[str]) -> Task:
    """Read and check the task folder at ``path``.

    Raises:
        TaskError: the folder lacks ``instruction.md``, ``task.toml`` or ``tests/test.sh``,
            has neither ``environment/Dockerfile`` nor ``[environment] docker_image``,
            ``task.toml`` is not valid TOML, holds a wrong value (the message names the
            file and the field) or declares harbor's multi-step ``[[steps]]``, or its
            compose file holds what is not run here (see ``_compose``) or comes with a
            separate verifier.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise TaskError(f"task folder {folder} does not exist")
    config_file = folder / "task.toml"
    try:
        raw = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskError(f"{config_file} is missing: every task folder needs one") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise TaskError(f"{config_file} is not valid TOML: {error}") from None
    if "steps" in raw:
        raise TaskError(
            f"{config_file} declares [[steps]] (harbor's multi-step tasks), which hermes-bench "
            "does not run yet: run this task with harbor, or leave it out with the task filter"
        )
    try:
        config = TaskConfig.model_validate(raw)
    except ValidationError as error:
        raise TaskError(f"{config_file}: {_describe(error)}") from None
    instruction_file = folder / "instruction.md"
    try:
        instruction = instruction_file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise TaskError(f"{instruction_file} is missing: it holds the task's prompt") from None
    if not instruction:
        raise TaskError(f"{instruction_file} is empty: it holds the task's prompt")
    if not (folder / "tests" / "test.sh").is_file():
        raise TaskError(f"{folder / 'tests' / 'test.sh'} is missing: it is the verifier")
    compose = read_compose(folder / "environment")
    if compose is not None and config.verifier.environment_mode == "separate":
        raise TaskError(
            f"task {folder.name}: services in {compose.path.name} with a separate verifier "
            "([verifier] environment_mode = 'separate') are not run by hermes-bench: verify "
            "in the agent's container, or run this task with harbor"
        )
    task = Task(
        name=folder.name, path=folder, instruction=instruction, config=config, compose=compose
    )
    if task.dockerfile is None and not config.environment.docker_image:
        raise TaskError(
            f"task {folder.name} has no environment/Dockerfile and no "
            "[environment] docker_image in task.toml: give it one of the two"
        )
    return task


def load_tasks(
    root: str | os.PathLike[str], task_filter: Sequence[str] | None = None
) -> list[Task]:
    """Every task folder directly below ``root`` (those holding a ``task.toml``), by name.

    ``task_filter``: task names or shell patterns (``fix-*``); a task is kept when one
    matches. An empty or absent filter keeps every task.

    Raises:
        TaskError: ``root`` holds no task folder, a filter entry matches no task (the
            message lists the known names), or a task folder is malformed.
    """
    base = Path(root)
    if not base.is_dir():
        raise TaskError(f"tasks_dir {base} does not exist or is not a folder")
    folders = sorted(p for p in base.iterdir() if (p / "task.toml").is_file())
    if not folders:
        raise TaskError(f"tasks_dir {base} holds no task folder (a folder with a task.toml)")
    kept = set(select_tasks([folder.name for folder in folders], task_filter))
    return [load_task(folder) for folder in folders if folder.name in kept]


def select_tasks(names: Sequence[str], task_filter: Sequence[str] | None) -> list[str]:
    """The ``names`` that ``task_filter`` keeps, in their order.

    ``task_filter``: task names or shell patterns (``fix-*``); a name is kept when one
    matches. An empty or absent filter keeps every name.

    Raises:
        TaskError: a filter entry matches no name (the message lists the known names).
    """
    if not task_filter:
        return list(names)
    unmatched = [f for f in task_filter if not any(fnmatch.fnmatchcase(n, f) for n in names)]
    if unmatched:
        known = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
        raise TaskError(f"task_filter names no task: {', '.join(unmatched)} (known tasks: {known})")
    return [n for n in names if any(fnmatch.fnmatchcase(n, pattern) for pattern in task_filter)]
