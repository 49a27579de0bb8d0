"""What the SDK-backed web providers share: importing the SDK, finding the API key,
reading fields of SDK answers, and closing per-call clients."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from hermes_sandbox._errors import WebProviderError

__all__ = [
    "call_client",
    "client_for_call",
    "close_quietly",
    "field",
    "find_api_key",
    "import_sdk",
    "key_unless_client",
]


def import_sdk(module: str, package: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise WebProviderError(
            f"{package} is not installed; install it with pip install 'hermes-sandbox[web]' "
            f"(or pip install {package})",
            kind="sdk_missing",
        ) from exc


def find_api_key(
    api_key: str | None, env: Mapping[str, str] | None, variable: str, provider: str
) -> str:
    key = api_key or (os.environ if env is None else env).get(variable)
    if not key:
        raise WebProviderError(
            f"{provider} needs an API key: set the {variable} environment variable or pass "
            f"api_key=... to {provider}Provider",
            kind="no_api_key",
        )
    return key


def key_unless_client(
    client: Any, api_key: str | None, env: Mapping[str, str] | None, variable: str, provider: str
) -> str | None:
    """The API key a provider makes its per-call clients with: None when the caller
    passed its own ``client``, else ``find_api_key``'s.

    Raises:
        WebProviderError: kind ``no_api_key``, without a client and a key.
    """
    return None if client is not None else find_api_key(api_key, env, variable, provider)


def field(item: Any, *names: str) -> Any:
    """The first present attribute or key of ``item`` among ``names`` (``None`` if none
    is, or ``item`` is ``None``)."""
    if item is None:
        return None
    for name in names:
        value = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
        if value is not None:
            return value
    return None


async def close_quietly(client: Any) -> None:
    close = getattr(client, "close", None)
    if close is None:
        return
    try:
        result = close()
        if asyncio.iscoroutine(result):
            await result
    except Exception:  # closing a finished client must not hide the answer
        return


@contextlib.asynccontextmanager
async def client_for_call(given: Any, make: Callable[[], Any]) -> AsyncIterator[Any]:
    """The SDK client for one provider call: ``given`` when the caller passed one (its
    owner closes it), else a new one from ``make``, closed quietly when the block ends.

    Raises:
        Exception: what ``make`` raises (e.g. ``WebProviderError`` for a missing SDK).
    """
    if given is not None:
        yield given
        return
    client = make()
    try:
        yield client
    finally:
        await close_quietly(client)


async def call_client(
    given: Any, make: Callable[[], Any], provider: str, method: str, *args: Any, **kwargs: Any
) -> Any:
    """``method(*args, **kwargs)`` of the client for one call (``client_for_call``: the
    ``given`` one, or one from ``make`` closed afterwards).

    Raises:
        WebProviderError: if the call fails (the message names ``provider`` and
            ``method``); what ``make`` raises.
    """
    async with client_for_call(given, make) as client:
        try:
            return await getattr(client, method)(*args, **kwargs)
        except Exception as exc:
            raise WebProviderError(
                f"{provider} {method} failed: {type(exc).__name__}: {exc}"
            ) from exc
