"""Secrets out of everything an environment writes.

``configured_secrets`` gathers what a run holds: the endpoints' API keys (from
``config_init``, YAML or ``--openai.api_key``) and the values of environment variables
named like secrets (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ...: ``OPENAI_API_KEY``,
tool providers' keys), at least ``MIN_SECRET_LENGTH`` characters long. One ``Redactor``
replaces each of them with ``REDACTED`` at the writers: every group line (``GroupFile``,
hence the HTML viewer made from it), evaluation samples and metrics
(``evaluate_log``) and log records (``redacting_logs``), whatever printed the secret: a
sandbox command that read it from ``/proc`` and the model that repeated it included.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from atroposlib.envs.server_handling.server_baseline import APIServerConfig

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SECRET_NAME",
    "Redactor",
    "configured_secrets",
    "redacting_logs",
]

#: What a secret is replaced with.
REDACTED = "[REDACTED]"

#: Shorter values are not treated as secrets (they would blank out ordinary text).
MIN_SECRET_LENGTH = 8

#: Names of environment variables (and option keys) whose values are secrets.
SECRET_NAME = re.compile(
    r"(API_?KEY|ACCESS_?KEY|_KEY$|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE
)


def _named_secrets(values: Mapping[str, Any]) -> Iterator[str]:
    for name, value in values.items():
        if isinstance(value, str) and SECRET_NAME.search(name):
            yield value


def configured_secrets(
    servers: Sequence[APIServerConfig],
    options: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[str]:
    """The secrets a run holds: each server's ``api_key``, secret-named entries of
    ``options`` (and of its ``env`` mapping), and secret-named variables of ``environ``
    (default: this process's environment)."""
    found = [server.api_key for server in servers if isinstance(server.api_key, str)]
    options = options or {}
    found += _named_secrets(options)
    env = options.get("env")
    if isinstance(env, Mapping):
        found += _named_secrets(env)
    found += _named_secrets(os.environ if environ is None else environ)
    return sorted({value for value in found if len(value) >= MIN_SECRET_LENGTH})


class Redactor:
    """Replaces each of ``secrets`` with ``REDACTED`` (longest first); shorter than
    ``MIN_SECRET_LENGTH`` ones are ignored. Falsy when it holds none."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        kept = {value for value in secrets if len(value) >= MIN_SECRET_LENGTH}
        self.secrets: tuple[str, ...] = tuple(sorted(kept, key=len, reverse=True))

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def __call__(self, text: str) -> str:
        """``text`` with every secret replaced."""
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def data(self, value: Any) -> Any:
        """A JSON-ready copy of ``value`` with every secret replaced in its text (keys
        included); ``value`` itself when it holds none."""
        if not self.secrets:
            return value
        text = json.dumps(value, ensure_ascii=False, default=str)
        cleaned = self(text)
        return value if cleaned == text else json.loads(cleaned)


class _RedactingFilter(logging.Filter):
    """Rewrites a record whose message or traceback holds a secret."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = self.redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True


@contextmanager
def redacting_logs(redact: Redactor) -> Iterator[None]:
    """For the block, every log record reaching the root logger's handlers (or, with
    none, the last-resort stderr handler) has its secrets replaced."""
    if not redact:
        yield
        return
    handlers = list(logging.getLogger().handlers)
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    log_filter = _RedactingFilter(redact)
    for handler in handlers:
        handler.addFilter(log_filter)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(log_filter)
