"""Turning a finished rollout into what a trainer reads: tokens, masks, logprobs."""

from hermes_envs.scoring._encoding import TextEncoder
from hermes_envs.scoring._tokens import TokenizedRollout, chat_template_tokens, managed_tokens

__all__ = ["TextEncoder", "TokenizedRollout", "chat_template_tokens", "managed_tokens"]
