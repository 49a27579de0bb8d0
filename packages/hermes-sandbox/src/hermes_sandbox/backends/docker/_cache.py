"""Images cached by tag: a label on each built image (``STAMP_LABEL``) says how it was
made, so a builder skips a tag whose stamp is current and rebuilds one whose stamp is not.

Blocking calls on the SDK's low-level client (run them in threads from async code).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Final

from hermes_sandbox.backends.docker._errors import ImageBuildError
from hermes_sandbox.backends.docker._sdk import load_sdk

__all__ = ["STAMP_LABEL", "confirm_built", "image_id", "is_current"]

log = logging.getLogger(__name__)

#: Label naming how an image was built (the builder's recipe, or a hash of its inputs).
STAMP_LABEL: Final = "hermes-sandbox.image"


def image_id(api: Any, tag: str) -> str | None:
    """The id of image ``tag``, ``None`` if the daemon has none."""
    try:
        return str(api.inspect_image(tag)["Id"])
    except load_sdk().errors.ImageNotFound:
        return None


def is_current(api: Any, tag: str, stamp: str) -> bool:
    """Whether ``tag`` exists and carries ``stamp`` (then nothing needs building)."""
    try:
        info = api.inspect_image(tag)
    except load_sdk().errors.ImageNotFound:
        return False
    labels = (info.get("Config") or {}).get("Labels") or {}
    if labels.get(STAMP_LABEL) == stamp:
        log.info("image %s exists and is current; not rebuilding", tag)
        return True
    log.info("image %s exists but is not the current build (%s); rebuilding", tag, stamp)
    return False


def confirm_built(api: Any, tag: str, previous: str | None) -> None:
    """Check ``tag`` exists after a build; remove the image it replaced (``previous``, its
    id before the build) unless a container still uses that one.

    Raises:
        ImageBuildError: if ``tag`` is absent.
    """
    current = image_id(api, tag)
    if current is None:
        raise ImageBuildError(f"building {tag} reported no error but the image is absent")
    if previous is not None and previous != current:
        with contextlib.suppress(Exception):
            api.remove_image(previous)
