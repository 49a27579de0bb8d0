"""The docker backend's command line: build and look up its base images.

Usage::

    python -m hermes_sandbox.backends.docker build [--kind debian|busybox|all] [--tag T]
    python -m hermes_sandbox.backends.docker exists --kind busybox     # exit 0 or 1
    python -m hermes_sandbox.backends.docker list
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from hermes_sandbox._errors import SandboxError
from hermes_sandbox.backends.docker._image import IMAGES, build_image, image_exists
from hermes_sandbox.backends.docker._rootfs import DEFAULT_SUITE

__all__ = ["PROG", "main"]

PROG = "python -m hermes_sandbox.backends.docker"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status (0 done, 1 an image is missing for
    ``exists``, 2 an error, printed on stderr)."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Build the docker backend's base images locally (cached by tag)."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="build an image unless its tag exists")
    exists = commands.add_parser("exists", help="exit 0 if the image exists, else 1")
    commands.add_parser("list", help="print the kinds, tags and whether each exists")
    for sub in (build, exists):
        sub.add_argument("--kind", choices=[*IMAGES, "all"], default="debian")
        sub.add_argument("--tag", help="image tag (default: the kind's)")
    build.add_argument("--force", action="store_true", help="rebuild even if the tag exists")
    build.add_argument("--suite", default=DEFAULT_SUITE, help="Debian suite (debian kind)")
    build.add_argument("--mirror", help="Debian mirror URL (default: the host's apt source)")
    parser.add_argument("--base-url", help="docker daemon (default: $DOCKER_HOST or the socket)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="docker image: %(message)s")

    kinds = list(IMAGES) if getattr(args, "kind", "all") == "all" else [args.kind]
    if getattr(args, "tag", None) and len(kinds) > 1:
        parser.error("--tag needs a single --kind")
    try:
        if args.command == "build":
            for kind in kinds:
                tag = build_image(
                    kind,
                    tag=args.tag,
                    force=args.force,
                    suite=args.suite,
                    mirror=args.mirror,
                    base_url=args.base_url,
                )
                print(tag)
            return 0
        if args.command == "exists":
            tags = [args.tag or IMAGES[kind] for kind in kinds]
            return 0 if all(image_exists(t, base_url=args.base_url) for t in tags) else 1
        for kind, tag in IMAGES.items():
            present = image_exists(tag, base_url=args.base_url)
            print(f"{kind}\t{tag}\t{'present' if present else 'missing'}")
        return 0
    except SandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
