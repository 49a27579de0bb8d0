"""The root of every exception hermes-loop raises.

Every error class of the package derives from :class:`HermesLoopError`, so a caller can
catch the whole package's failures with one ``except``. Where callers already rely on a
builtin base (``KeyError`` for an unknown toolset, ``ValueError`` for a bad script), the
class keeps it as a second base.
"""

from __future__ import annotations

__all__ = ["HermesLoopError"]


class HermesLoopError(Exception):
    """Base class of every exception raised by hermes-loop."""
