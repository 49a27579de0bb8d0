"""The signal policy's exit status: ``stop_on_sigterm()`` records a SIGTERM, so that a
command can exit with 143 after one and 130 after Ctrl-C."""

from __future__ import annotations

import asyncio
import signal

import pytest

from hermes_sandbox import stop_on_sigterm


def test_a_sigterm_is_recorded_and_gives_143() -> None:
    with stop_on_sigterm() as stop:
        assert stop.exit_status == 130
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGTERM)
    assert stop.terminated
    assert stop.exit_status == 143


def test_ctrl_c_gives_130() -> None:
    with stop_on_sigterm() as stop, pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)
    assert not stop.terminated
    assert stop.exit_status == 130


def test_a_sigterm_under_asyncio_run_cancels_the_main_task_first() -> None:
    cleaned: list[str] = []

    async def main() -> None:
        try:
            asyncio.get_running_loop().call_soon(signal.raise_signal, signal.SIGTERM)
            await asyncio.sleep(30)
        finally:
            cleaned.append("finally ran")

    with stop_on_sigterm() as stop, pytest.raises(KeyboardInterrupt):
        asyncio.run(main())
    assert cleaned == ["finally ran"]
    assert stop.exit_status == 143
