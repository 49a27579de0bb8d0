"""How long a model request may hang, and when repeated hangs stop a run.

Atropos' ``APIServerConfig.timeout`` defaults to 1200 s per request; with the client's
retries a hung endpoint held a ``process`` run for hours. Unless ``openai.timeout`` is set
explicitly (config_init, YAML or ``--openai.timeout``), requests time out after
``DEFAULT_REQUEST_TIMEOUT`` seconds, and ``max_endpoint_timeouts`` rollouts in a row that
ended on a timeout stop the run in one line, as repeated 500s do.
"""

from __future__ import annotations

from atroposlib.envs.server_handling.server_manager import APIServerConfig

from hermes_envs._errors import RunAbortedError

__all__ = ["DEFAULT_REQUEST_TIMEOUT", "TimeoutStreak", "request_timeout"]

#: Seconds one model request may take when ``openai.timeout`` is not set: room for a long
#: answer from a slow model, not for an endpoint that stopped answering.
DEFAULT_REQUEST_TIMEOUT = 300.0


def request_timeout(server: APIServerConfig) -> float:
    """``server.timeout`` when it was set explicitly, else ``DEFAULT_REQUEST_TIMEOUT``."""
    if "timeout" in server.model_fields_set:
        return float(server.timeout)
    return DEFAULT_REQUEST_TIMEOUT


class TimeoutStreak:
    """Counts rollouts in a row that ended because the model endpoint timed out."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_a_row = 0

    def answered(self) -> None:
        """A rollout got its answers: the streak ends."""
        self.in_a_row = 0

    def timed_out(self, url: str, timeout: float) -> None:
        """One more rollout ended on a timeout.

        Raises:
            RunAbortedError: one line, when this makes ``limit`` in a row.
        """
        self.in_a_row += 1
        if self.in_a_row >= self.limit:
            raise RunAbortedError(
                f"the model endpoint {url} timed out on {self.in_a_row} rollouts in a row "
                f"(each request waited {timeout:g}s, and its retries as long): check that it "
                "is up and serves --openai.model_name, or raise --openai.timeout "
                "(--env.max_endpoint_timeouts sets this limit)"
            )
