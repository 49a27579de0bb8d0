"""Old home of the docker backend's image builder, kept so that existing imports and
``python -m hermes_sandbox.backends.docker_image ...`` keep working; the code lives in
``hermes_sandbox.backends.docker.image`` (and its command line in
``hermes_sandbox.backends.docker.cli``: ``python -m hermes_sandbox.backends.docker``)."""

from __future__ import annotations

import sys

from hermes_sandbox.backends.docker.cli import main
from hermes_sandbox.backends.docker.image import (
    BUSYBOX_IMAGE,
    DEFAULT_IMAGE,
    IMAGES,
    ImageBuildError,
    build_busybox_image,
    build_debian_image,
    build_image,
    ensure_image,
    image_exists,
    missing_image_hint,
)

__all__ = [
    "BUSYBOX_IMAGE",
    "DEFAULT_IMAGE",
    "IMAGES",
    "ImageBuildError",
    "build_busybox_image",
    "build_debian_image",
    "build_image",
    "ensure_image",
    "image_exists",
    "main",
    "missing_image_hint",
]

if __name__ == "__main__":
    sys.exit(main())
