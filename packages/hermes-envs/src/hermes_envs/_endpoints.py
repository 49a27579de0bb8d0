"""An environment's model endpoints: the server configs it accepts, the copy Atropos
gets, and the hermes-loop endpoint each one becomes.

Inference goes through hermes-loop endpoints (``OpenAIChatServer`` in Phase 1,
``GenerateChatServer`` in Phase 2), never through Atropos' ``ServerManager``; Atropos
still builds one from the server configs, so it gets a copy it can always construct.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from atroposlib.envs.server_handling.server_manager import APIServerConfig, ServerBaseline

from hermes_envs._endpoint_limits import request_timeout
from hermes_envs._env_config import HermesAgentEnvConfig
from hermes_envs._preflight import check_endpoint_key
from hermes_loop import ChatServer, GenerateChatServer, OpenAIChatServer
from hermes_loop.templates import TransformersTokenizer

__all__ = ["PHASES", "SET_TOKENIZER", "atropos_copy", "checked_servers", "make_endpoint"]

#: ``openai.server_type`` values and the phase each one runs in.
PHASES = {"openai": 1, "vllm": 2}

#: How to give an environment a tokenizer (the end of every message that asks for one).
SET_TOKENIZER = "set --env.tokenizer_name to a local tokenizer directory or a Hugging Face hub name"


def checked_servers(
    server_configs: ServerBaseline | APIServerConfig | Sequence[APIServerConfig],
    config: HermesAgentEnvConfig,
) -> list[APIServerConfig]:
    """The server configs as a list, each one checked for agent rollouts.

    Raises:
        ValueError: if no model endpoint is configured, a ``server_type`` is not
            supported, a ``base_url`` is empty, Phase 2 is asked for without
            ``env.tokenizer_name``, or a hosted (``https://``) endpoint has no API key.
    """
    if isinstance(server_configs, APIServerConfig):
        servers = [server_configs]
    elif isinstance(server_configs, ServerBaseline):
        servers = []
    else:
        servers = list(server_configs)
    if not servers:
        raise ValueError(
            "no model endpoint configured: set --openai.base_url and --openai.model_name "
            "(or return an APIServerConfig from config_init)"
        )
    for server in servers:
        if server.server_type not in PHASES:
            raise ValueError(
                f"openai.server_type {server.server_type!r} is not supported for agent "
                f"rollouts; allowed: {', '.join(PHASES)}"
            )
        if not server.base_url:
            raise ValueError("openai.base_url is empty: set --openai.base_url")
        if server.server_type == "vllm" and config.tokenizer_name is None:
            raise ValueError(
                "openai.server_type 'vllm' (Phase 2) renders prompts with the model's "
                f"tokenizer: {SET_TOKENIZER}"
            )
    check_endpoint_key(servers)
    return servers


def atropos_copy(config: APIServerConfig) -> APIServerConfig:
    """The copy of ``config`` Atropos' ``BaseEnv`` builds its ``ServerManager`` from: openai
    type (a vllm one would fetch a tokenizer from the hub), a non-empty key (openai>=2
    rejects ""; ``OPENAI_API_KEY`` when the config has none, as our endpoints read, so that
    the reference's ``self.server.chat_completion`` in an environment's ``evaluate``
    reaches the same endpoint), no health-check traffic."""
    data = config.model_dump()
    key = config.api_key or os.environ.get("OPENAI_API_KEY") or "unused"
    data.update(server_type="openai", api_key=key, health_check=False)
    return APIServerConfig(**data)


def make_endpoint(
    server: APIServerConfig,
    config: HermesAgentEnvConfig,
    *,
    tokenizer: TransformersTokenizer | None,
    render: Callable[..., str],
) -> ChatServer:
    """The hermes-loop endpoint of ``server``: chat completions (Phase 1) or ``/generate``
    with prompts rendered by ``render`` and tokenized by ``tokenizer`` (Phase 2).

    The config's literal key (Atropos' ``api_key``) goes to the endpoint's client only:
    never logged, written out, or put in a sandbox's environment. Without one, the
    endpoint reads ``OPENAI_API_KEY``.

    Raises:
        ValueError: if ``server`` is Phase 2 and ``tokenizer`` is ``None``.
    """
    url = str(server.base_url)
    common: dict[str, Any] = {
        "model": server.model_name,
        "api_key": server.api_key or None,
        "timeout": request_timeout(server),
        "extra_body": config.extra_body,
    }
    if server.server_type == "openai":
        return OpenAIChatServer(base_url=url, **common)
    if tokenizer is None:
        raise ValueError(f"Phase 2 (openai.server_type 'vllm') needs a tokenizer: {SET_TOKENIZER}")
    return GenerateChatServer(
        base_url=url,
        tokenizer=tokenizer,
        parser=config.tool_call_parser,
        render=render,
        stop_text=tokenizer.eos_token,
        **common,
    )
