"""Having an image on the daemon: pulled from its registry when absent (with the user's
docker credentials, progress reported, transient failures retried), or refused in one
line when the network may not be used.

Credentials come from the docker client's configuration file as the docker SDK reads it
(``~/.docker/config.json``, or ``$DOCKER_CONFIG/config.json``, or the ``docker_config``
path given; ``auths`` entries, ``credsStore`` and ``credHelpers``). Blocking calls on the
SDK's low-level client: run them in threads from async code.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import tenacity

from hermes_sandbox._lifecycle import ImageUnavailableError, ImageUnavailableKind
from hermes_sandbox.backends.docker._cache import image_id
from hermes_sandbox.backends.docker._sdk import explain, load_sdk

__all__ = ["PULL_ATTEMPTS", "PULL_WAIT", "ensure_reference", "pull_image"]

log = logging.getLogger(__name__)

#: Attempts at a pull whose failure may pass (a registry or network hiccup).
PULL_ATTEMPTS: Final = 4
#: Seconds before the first retry of a pull; doubled at each retry (at most 30).
PULL_WAIT: Final = 2.0

_UNAUTHORIZED: Final = (
    "unauthorized",
    "authentication required",
    "no basic auth credentials",
    "incorrect username or password",
    "access denied",
    "denied:",
)
_NOT_FOUND: Final = ("not found", "manifest unknown", "does not exist", "name unknown")


class _Transient(Exception):
    """A pull failure that may pass; retried."""


def ensure_reference(
    api: Any,
    reference: str,
    *,
    offline: bool,
    docker_config: str | Path | None = None,
    on_progress: Callable[[str], None] | None = None,
    attempts: int = PULL_ATTEMPTS,
    wait: float = PULL_WAIT,
) -> str:
    """The id of image ``reference`` on the daemon, pulled first when it is absent and
    ``offline`` is false.

    Raises:
        ImageUnavailableError: kind ``missing_offline`` when it is absent and ``offline``;
            else as :func:`pull_image`.
    """
    found = image_id(api, reference)
    if found is not None:
        return found
    if offline:
        raise ImageUnavailableError(
            f"docker: image {reference} is not on the daemon and the network is off "
            "(offline): load or build it first (docker load / docker build)",
            reference=reference,
            kind="missing_offline",
        )
    return pull_image(
        api,
        reference,
        docker_config=docker_config,
        on_progress=on_progress,
        attempts=attempts,
        wait=wait,
    )


def pull_image(
    api: Any,
    reference: str,
    *,
    docker_config: str | Path | None = None,
    on_progress: Callable[[str], None] | None = None,
    attempts: int = PULL_ATTEMPTS,
    wait: float = PULL_WAIT,
) -> str:
    """Pull ``reference`` (``[registry/]repo[:tag|@digest]``, ``:latest`` when neither)
    with the credentials the docker configuration holds for its registry; its image id.
    Each layer's change of status goes to ``on_progress`` (default: the log). Failures
    that may pass are retried (``attempts`` in all, ``wait`` seconds doubling between
    them); a refusal of the credentials or an absent image is not.

    Raises:
        ValueError: ``attempts`` below 1.
        ImageUnavailableError: kind ``unauthorized`` (the registry refused the
            credentials, or has none), ``not_found`` (no such image), ``pull_failed``
            (still failing after the retries); one line naming the image and what to do.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, got {attempts}")
    docker = load_sdk()
    repository, tag = docker.utils.parse_repository_tag(reference)
    registry, _ = docker.auth.resolve_repository_name(repository)
    try:
        config = docker.auth.load_config(str(docker_config) if docker_config is not None else None)
        credentials = config.resolve_authconfig(registry)
    except docker.errors.DockerException as exc:
        raise ImageUnavailableError(
            f"docker: cannot read the docker credentials for {registry} "
            f"({docker_config or 'the docker config'}): {exc}; fix the file or `docker login "
            f"{registry}` again",
            reference=reference,
            kind="unauthorized",
        ) from None
    report = on_progress or (lambda line: log.info("%s", line))
    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_exponential(multiplier=wait, max=30),
        retry=tenacity.retry_if_exception_type(_Transient),
        before_sleep=lambda state: report(
            f"pull {reference}: attempt {state.attempt_number} failed "
            f"({state.outcome.exception() if state.outcome else '?'}); retrying"
        ),
        reraise=True,
    )
    try:
        for attempt in retrying:
            with attempt:
                _pull_once(api, repository, tag, reference, credentials, report)
    except _Transient as exc:
        raise ImageUnavailableError(
            f"docker: could not pull {reference} after {attempts} attempts: {exc}; check "
            "that its registry is reachable from the docker daemon",
            reference=reference,
            kind="pull_failed",
        ) from None
    found = image_id(api, reference)
    if found is None:
        raise ImageUnavailableError(
            f"docker: pulling {reference} reported no error but the image is absent",
            reference=reference,
            kind="pull_failed",
        )
    return found


def _pull_once(
    api: Any,
    repository: str,
    tag: str | None,
    reference: str,
    credentials: dict[str, Any] | None,
    report: Callable[[str], None],
) -> None:
    """One pull, its progress reported by layer and status.

    Raises:
        ImageUnavailableError: the credentials were refused or there is no such image.
        _Transient: any other failure.
    """
    docker = load_sdk()
    seen: dict[str, str] = {}
    try:
        stream = api.pull(
            repository,
            tag=tag or "latest",
            stream=True,
            decode=True,
            auth_config=credentials or None,
        )
        for message in stream:
            error = message.get("error") or (message.get("errorDetail") or {}).get("message")
            if error:
                raise _refusal(reference, str(error), None, bool(credentials))
            status = str(message.get("status") or "")
            layer = str(message.get("id") or "")
            if status and seen.get(layer) != status:
                seen[layer] = status
                report(f"pull {reference}: {layer + ': ' if layer else ''}{status}")
    except docker.errors.APIError as exc:
        raise _refusal(reference, explain(exc), exc.status_code, bool(credentials)) from None
    except OSError as exc:  # the daemon's connection broke mid-pull
        raise _Transient(f"{type(exc).__name__}: {exc}") from None


def _refusal(
    reference: str, text: str, status: int | None, had_credentials: bool
) -> ImageUnavailableError | _Transient:
    """The error for a pull the daemon or registry refused with ``text``."""
    low = text.lower()
    first_line = text.strip().splitlines()[0] if text.strip() else "no message"
    kind: ImageUnavailableKind
    if status in (401, 403) or any(word in low for word in _UNAUTHORIZED):
        kind = "unauthorized"
        what = (
            "the registry refused the credentials the docker config holds for it"
            if had_credentials
            else "the registry wants credentials (or the image does not exist) and the "
            "docker config holds none for it"
        )
        hint = "`docker login <registry>` (or fix ~/.docker/config.json), then run again"
    elif status == 404 or any(word in low for word in _NOT_FOUND):
        kind = "not_found"
        what = "no such image in its registry"
        hint = "check the name and tag"
    else:
        return _Transient(first_line)
    return ImageUnavailableError(
        f"docker: cannot pull {reference}: {what} ({first_line}); {hint}",
        reference=reference,
        kind=kind,
    )
