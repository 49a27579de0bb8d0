"""Reasoning taken out of assistant text."""

from __future__ import annotations

import pytest

from hermes_loop.templates._reasoning import split_reasoning


@pytest.mark.parametrize(
    ("text", "content", "reasoning"),
    [
        ("plain", "plain", None),
        ("<think>hmm</think>Answer", "Answer", "hmm"),
        ("<think>a</think>x<think>b</think>y", "xy", "a\nb"),
        ("prefilled thoughts</think>\nAnswer", "Answer", "prefilled thoughts"),
        ("<think>never closed", None, "never closed"),
        ("<think></think>", None, None),
    ],
)
def test_split_reasoning(text: str, content: str | None, reasoning: str | None) -> None:
    assert split_reasoning(text) == (content, reasoning)
