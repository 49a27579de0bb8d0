"""The public names of hermes_envs."""

from __future__ import annotations

import hermes_envs


def test_public_names_are_pinned() -> None:
    assert hermes_envs.__all__ == [
        "AGENT_TOOLSETS",
        "DatasetLoadError",
        "EnvSetupError",
        "HermesAgentBaseEnv",
        "HermesAgentEnvConfig",
        "HermesEnvsError",
        "HermesSweEnv",
        "HermesSweEnvConfig",
        "InfraFailure",
        "RolloutOutcome",
        "RunAbortedError",
        "RunStats",
        "TerminalTestEnv",
        "TokenizedRollout",
        "TokenizerLoadError",
        "__version__",
        "swe_oracle",
        "terminal_test_oracle",
    ]
    for name in hermes_envs.__all__:
        assert getattr(hermes_envs, name) is not None
