"""RunApiProcess: Atropos' run-api on a loopback port, started and stopped."""

from __future__ import annotations

import urllib.error
from pathlib import Path

import pytest

from hermes_envs._run_api import RunApiProcess


def test_it_answers_takes_a_trainer_and_stops(tmp_path: Path) -> None:
    with RunApiProcess() as api:
        assert api.url == f"http://127.0.0.1:{api.port}"
        assert api.call("/") == {"message": "AtroposLib API"}
        api.register_trainer(batch_size=4, checkpoint_dir=tmp_path / "ckpt")
        assert api.pull_batch() is None  # nothing queued yet
        with pytest.raises(urllib.error.HTTPError):  # an OSError
            api.call("/no-such-route")
        process = api.process
    assert process is not None
    assert process.poll() is not None  # stopped on exit
    api.stop()  # again: nothing to do


def test_a_run_api_that_cannot_start_says_so() -> None:
    # An environment without PATH or Python paths still runs the script's own
    # interpreter; a start timeout of zero is what cannot be met.
    api = RunApiProcess(start_timeout=0.0)
    with pytest.raises(RuntimeError, match=r"run-api (did not answer|exited)"):
        api.start()
    assert api.process is not None
    assert api.process.poll() is not None  # not left running
