"""``--serve``: a run's folder over HTTP on the loopback interface (the server is
hermes-envs' :class:`hermes_envs.view.serve.RunServer`, shared by both viewers)."""

from __future__ import annotations

from hermes_envs.view.serve import RunServer

__all__ = ["RunServer"]
