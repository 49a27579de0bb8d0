"""Image references rewritten to local or mirrored images: ``image_map``.

An air-gapped machine cannot pull ``python:3.13-slim``; a machine behind a mirror pulls
it under another name. The ``image_map`` option maps the images tasks name to others::

    image_map:
      - python:3.13-slim=hermes-sandbox/debian:bookworm
      - ubuntu:24.04=hermes-sandbox/debian:bookworm

:class:`ImageMap` parses those entries and rewrites every image reference a build reads
(``FROM``, ``COPY --from=``, ``RUN --mount=from=``; build stages, stage indices and
``scratch`` are left alone; ``ARG`` defaults declared before the first ``FROM`` are
expanded) through ``hermes_sandbox.rewrite_references``, and a task's prebuilt ``docker_image``
and ``[verifier.environment] docker_image`` through :meth:`ImageMap.resolve`. It reports
the images the rewritten file reads, so the backend can check or pull each one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hermes_benchmarks._errors import ImageMapError
from hermes_sandbox import image_references, rewrite_references

__all__ = ["DockerfileBases", "ImageMap", "normalize_image"]


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
        """Rewrite every image reference of a Dockerfile through the map (``FROM``,
        ``COPY --from=``, ``RUN --mount=from=``).

        Returns the new text and the images it reads (after mapping), in order and
        without repeats. A reference still holding a variable no ``ARG`` default
        resolves is listed in ``unresolved`` and left as written.
        """
        rewritten = rewrite_references(text, self.resolve) if self.mapping else text
        found = image_references(rewritten)
        return DockerfileBases(rewritten, found.images, found.unresolved)
