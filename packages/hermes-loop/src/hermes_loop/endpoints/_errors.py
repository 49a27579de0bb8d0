"""Making ``EndpointError``s: from the openai SDK's exceptions, and for wrong-shape answers."""

from __future__ import annotations

from typing import Any

import openai

from hermes_loop._errors import EndpointError, EndpointErrorKind

__all__ = ["bad_response", "endpoint_error", "type_name"]


def endpoint_error(exc: Exception) -> EndpointError:
    """The ``EndpointError`` for an exception raised by an ``openai`` client call."""
    if isinstance(exc, openai.APITimeoutError):
        return EndpointError("timeout", f"request timed out: {exc}")
    if isinstance(exc, openai.APIConnectionError):
        return EndpointError("connection", f"connection failed: {exc.__cause__ or exc}")
    if isinstance(exc, openai.RateLimitError):
        return EndpointError("rate_limited", f"rate limited (429): {exc.message}", 429)
    if isinstance(exc, openai.APIStatusError):
        kind: EndpointErrorKind = "server_error" if exc.status_code >= 500 else "bad_request"
        return EndpointError(kind, f"HTTP {exc.status_code}: {exc.message}", exc.status_code)
    return EndpointError("bad_response", f"unusable response: {type(exc).__name__}: {exc}")


def bad_response(route: str, problem: str) -> EndpointError:
    """The error for a complete answer of the wrong shape: ``route`` answered ``problem``."""
    return EndpointError("bad_response", f"{route} answered the wrong shape: {problem}")


def type_name(value: Any) -> str:
    """A JSON-ish name of ``value``'s type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
