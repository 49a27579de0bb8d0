"""Conformance provider for the ``daytona`` backend: the real backend over a fake client.

Daytona's cloud cannot be reached here, so ``FakeAsyncDaytona``
(``tests/sandbox/fakes/daytona_fake.py``) stands in for ``AsyncDaytona``; see ``DAYTONA``
and ``FAKE_CAPS`` in ``tests/sandbox/fakes/remote_support.py`` for how the sandboxes are
made and checked. Not checked through the fake: ``network_off`` (the backend passes
``network_block_all`` to Daytona) and ``process_limit`` (it refuses ``pids_limit``).
"""

from __future__ import annotations

from tests.sandbox.fakes.remote_support import DAYTONA, FAKE_CAPS

NAME = DAYTONA.name
CAPS = FAKE_CAPS
unavailable = DAYTONA.unavailable
provide = DAYTONA.provide
