"""Built-in sandbox backends, imported on first use by ``create_sandbox``."""

from __future__ import annotations

#: Each backend is a subpackage or module of its own; this package exports nothing.
__all__: list[str] = []
