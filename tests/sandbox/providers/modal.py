"""Conformance provider for the ``modal`` backend: the real backend over ``FakeModal``
(``tests/sandbox/fakes/modal_fake.py``), as Modal's cloud cannot be reached here.

How the sandboxes are made and checked, and the capabilities the fake can show:
``MODAL`` and ``FAKE_CAPS`` in ``tests/sandbox/fakes/remote_support.py``. Not checked
through the fake: ``network_off`` (the backend passes ``block_network`` to Modal) and
``process_limit`` (the backend refuses ``pids_limit``).
"""

from __future__ import annotations

from tests.sandbox.fakes.remote_support import FAKE_CAPS, MODAL

NAME = MODAL.name
CAPS = FAKE_CAPS
unavailable = MODAL.unavailable
provide = MODAL.provide
