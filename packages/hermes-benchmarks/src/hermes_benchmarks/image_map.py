"""Base images for machines that reach no registry: ``FROM`` lines rewritten to local tags.

An air-gapped machine cannot pull ``python:3.13-slim``. The ``image_map`` option maps the
images tasks name to images built or loaded locally::

    image_map:
      - python:3.13-slim=hermes-sandbox/debian:bookworm
      - ubuntu:24.04=hermes-sandbox/debian:bookworm

:class:`ImageMap` parses those entries, rewrites a Dockerfile's ``FROM`` lines (stage
names and ``scratch`` are left alone; ``ARG`` defaults declared before the first ``FROM``
are expanded) and reports the base images the rewritten file needs, so the caller can
check that each is present before a build starts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hermes_benchmarks.errors import ImageMapError

__all__ = ["DockerfileBases", "ImageMap", "normalize_image"]

_FROM = re.compile(r"^(?P<lead>\s*FROM\s+)(?P<rest>.*)$", re.IGNORECASE)
_ARG = re.compile(r"^\s*ARG\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:=(?P<value>\S*))?\s*$", re.I)
_VARIABLE = re.compile(r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}|(?P<bare>[A-Za-z_]\w*))")


def normalize_image(image: str) -> str:
    """The short form of an image reference: no ``docker.io/library/``, ``:latest`` added.

    ``docker.io/library/python`` and ``python:latest`` both become ``python:latest``;
    references with a digest (``@sha256:...``) keep it and get no tag.
    """
    name = image.strip()
    for prefix in ("docker.io/library/", "index.docker.io/library/", "docker.io/"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    if "@" in name:
        return name
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


@dataclass(frozen=True)
class DockerfileBases:
    """A Dockerfile after mapping: its text and the external base images it builds FROM."""

    text: str
    bases: tuple[str, ...]
    unresolved: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImageMap:
    """A mapping from the images tasks name to local images (compared in short form)."""

    mapping: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, entries: Iterable[str] | None) -> ImageMap:
        """Build a map from ``FROM=TO`` strings.

        Raises:
            ImageMapError: an entry has no ``=``, an empty side, or maps one image twice
                to different targets.
        """
        mapping: dict[str, str] = {}
        for entry in entries or ():
            source, sep, target = str(entry).partition("=")
            if not sep or not source.strip() or not target.strip():
                raise ImageMapError(
                    f"image_map entry {entry!r} is not FROM=TO "
                    "(e.g. python:3.13-slim=hermes-sandbox/debian:bookworm)"
                )
            key = normalize_image(source)
            if key in mapping and mapping[key] != target.strip():
                raise ImageMapError(
                    f"image_map maps {source.strip()} twice: to {mapping[key]} and to "
                    f"{target.strip()}; keep one"
                )
            mapping[key] = target.strip()
        return cls(mapping)

    def resolve(self, image: str) -> str:
        """The local image to use for ``image``: its mapping, else ``image`` unchanged."""
        return self.mapping.get(normalize_image(image), image)

    def rewrite_dockerfile(self, text: str) -> DockerfileBases:
        """Rewrite the ``FROM`` lines of a Dockerfile through the map.

        Returns the new text and the external images it builds from (after mapping), in
        order and without repeats. A ``FROM`` whose image still holds a variable no
        ``ARG`` default resolves is listed in ``unresolved`` and left as written.
        """
        defaults: dict[str, str] = {}
        stages: set[str] = set()
        bases: list[str] = []
        unresolved: list[str] = []
        lines = text.splitlines(keepends=True)
        seen_from = False
        for index, line in enumerate(lines):
            arg = _ARG.match(line)
            if arg and not seen_from and arg.group("value") is not None:
                defaults[arg.group("name")] = arg.group("value").strip("\"'")
                continue
            match = _FROM.match(line.rstrip("\r\n"))
            if not match:
                continue
            seen_from = True
            words = match.group("rest").split()
            position = next((i for i, w in enumerate(words) if not w.startswith("--")), None)
            if position is None:
                continue
            image = _expand(words[position], defaults)
            is_stage = image.lower() in stages or image.lower() == "scratch"
            if len(words) > position + 2 and words[position + 1].lower() == "as":
                stages.add(words[position + 2].lower())
            if is_stage:
                continue
            if "$" in image:
                unresolved.append(words[position])
                continue
            local = self.resolve(image)
            if local not in bases:
                bases.append(local)
            if local != words[position]:
                words[position] = local
                ending = line[len(line.rstrip("\r\n")) :]
                lines[index] = match.group("lead") + " ".join(words) + ending
        return DockerfileBases("".join(lines), tuple(bases), tuple(unresolved))


def _expand(word: str, defaults: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        return defaults.get(name, match.group(0))

    return _VARIABLE.sub(value, word)
