"""URL safety: which URLs the web and browser tools may open on the host."""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse

__all__ = ["blocked_address", "check_url"]


def blocked_address(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    # Not globally routable: loopback, private, link-local (cloud metadata), shared
    # (100.64/10), reserved, unspecified; and multicast.
    return not ip.is_global or ip.is_multicast


def check_url(url: str, *, allow_private: bool = False) -> str:
    """Validate a URL the tools are asked to open on the host; returns it stripped.

    Only ``http`` and ``https`` are allowed. Unless ``allow_private``, the host must not
    resolve to a loopback, private, link-local or otherwise reserved address. Blocking
    (it may resolve a name): call it from a worker thread.

    Raises:
        ValueError: naming what is wrong with the URL.
    """
    if not isinstance(url, str) or not url.strip():
        raise ValueError("a URL must be a non-empty string")
    url = url.strip()
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"only http and https URLs can be opened, not {url!r}")
    host = parts.hostname
    if not host:
        raise ValueError(f"the URL {url!r} has no host")
    if allow_private:
        return url
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, parts.port or None)}
    except socket.gaierror as exc:
        raise ValueError(f"cannot resolve the host of {url!r}: {exc}") from None
    if any(blocked_address(str(a)) for a in addresses):
        raise ValueError(
            f"refusing to open {url!r}: {host} is a loopback, private or link-local address "
            "on the machine running the tools (enable it with allow_private=True)"
        )
    return url
