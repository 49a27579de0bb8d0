"""The toolsets an environment can enable out of the box."""

from __future__ import annotations

from hermes_sandbox.tools import TOOLSETS

__all__ = ["AGENT_TOOLSETS"]

#: Toolsets an environment can enable out of the box (``browser`` needs a browser the
#: base environment does not start yet).
AGENT_TOOLSETS: tuple[str, ...] = tuple(name for name in TOOLSETS if name != "browser")
