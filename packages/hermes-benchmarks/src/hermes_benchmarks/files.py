"""Writing a file whole or not at all (``hermes_envs.files``, shared with hermes-envs'
viewer)."""

from __future__ import annotations

from hermes_envs.files import write_whole

__all__ = ["write_whole"]
