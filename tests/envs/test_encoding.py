"""TextEncoder: the tokenizer's own ids, text by text, however the text is cut."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import (
    AddedToken,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    trainers,
)
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from hermes_envs._tokenizer import chat_template_renderer
from hermes_envs.scoring._encoding import LONGEST_REMEMBERED, TextEncoder

from .support import TOKENIZER

CORPUS = [
    "Write hello into greeting.txt, then read it back.",
    "The quick brown fox jumps over the lazy dog; ünïcode façade naïve 日本語 текст.",
    '{"name": "terminal", "arguments": {"command": "ls -la /tmp"}}',
    "def main():\n    return 42\n\n\nif __name__ == '__main__':\n    main()\n",
] * 20

FRAGMENTS = [
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<|endoftext|>",
    "<|im",
    "_end|>",
    "<|sep|>",
    "<|x|>",
    "q<|x",
    "<|x|>y",
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "é",
    "日本",
    "👍",
    "a",
    "Hello world",
    " the",
    "assistant\n",
    '{"a": 1}',
]

texts = st.lists(st.sampled_from(FRAGMENTS), max_size=14).map("".join)


def _shipped() -> Any:
    return AutoTokenizer.from_pretrained(TOKENIZER)


def _built(kind: str) -> PreTrainedTokenizerFast:
    """A small real tokenizer of another family than the shipped one, with added tokens
    that strip their neighbours' spaces and that overlap each other."""
    tok = Tokenizer(models.BPE(unk_token="<unk>" if kind != "bytelevel" else None))
    if kind == "bytelevel":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    elif kind == "metaspace":
        # Llama 3 / Mistral style: a "▁" only before the first stretch of a text.
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
        alphabet = []
    else:  # Llama 2 style: normalizer prepends "▁" to every stretch
        tok.normalizer = normalizers.Sequence(
            [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]
        )
        tok.pre_tokenizer = pre_tokenizers.Split("▁", behavior="merged_with_next")
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.Strip(" ", 1, 0)])
        alphabet = []
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=alphabet, special_tokens=["<unk>"], show_progress=False
    )
    tok.train_from_iterator(CORPUS + FRAGMENTS, trainer)
    tok.add_special_tokens(
        [
            AddedToken("<|im_start|>", special=True, normalized=False),
            AddedToken("<|im_end|>", special=True, normalized=False, rstrip=True),
            AddedToken("<|sep|>", special=True, normalized=False, lstrip=True, rstrip=True),
            AddedToken("<|x|>", special=True, normalized=False),
        ]
    )
    # Overlaps: "q<|x" (a whole word only) ends where "<|x|>" begins, "<|x|>y" holds it.
    tok.add_tokens(
        [
            AddedToken("q<|x", normalized=False, single_word=True),
            AddedToken("<|x|>y", normalized=False),
            AddedToken("<tool_call>", normalized=False),
        ]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok)


TOKENIZERS = {
    "shipped": _shipped(),
    "bytelevel": _built("bytelevel"),
    "metaspace": _built("metaspace"),
    "prepend": _built("prepend"),
}


def _own(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@settings(max_examples=150, deadline=None)
@given(batch=st.lists(texts, max_size=5))
def test_encode_many_gives_the_tokenizers_own_ids(name: str, batch: list[str]) -> None:
    tokenizer = TOKENIZERS[name]
    encoder = TextEncoder(tokenizer, remember_from=4)
    assert encoder.encode_many(batch) == [_own(tokenizer, text) for text in batch]
    # Again, now largely from what it remembered.
    assert encoder.encode_many(batch) == [_own(tokenizer, text) for text in batch]


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
def test_cuts_at_added_tokens_never_fall_back(name: str, caplog: pytest.LogCaptureFixture) -> None:
    # Overlapping added tokens are never cuts, so the check of the cut ids never fails.
    tokenizer = TOKENIZERS[name]
    encoder = TextEncoder(tokenizer)
    text = "a q<|x|>y <|x|>y b <|sep|> c<|im_end|>\n <|im_start|>q<|x|> <|x|>"
    with caplog.at_level(logging.WARNING):
        assert encoder(text) == _own(tokenizer, text)
        assert encoder.encode_many([text, text[3:], text[:-2]]) == [
            _own(tokenizer, t) for t in (text, text[3:], text[:-2])
        ]
    assert not caplog.records


def test_a_whole_rendered_conversation_and_its_pieces() -> None:
    hf = TOKENIZERS["shipped"]
    render = chat_template_renderer(hf)
    assert render is not None
    conversation: list[dict[str, Any]] = [
        {"role": "user", "content": "List the files."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.txt"},
        {"role": "assistant", "content": "Two files: a.txt and b.txt."},
    ]
    tools = [{"type": "function", "function": {"name": "ls", "description": "List files."}}]
    text = render(conversation, tools=tools, add_generation_prompt=False)
    encoder = TextEncoder(hf)
    pieces = [text, text[:100], text[100:], "Done.<|im_end|>", " ünïcode\n\n  spaces ", ""]
    assert encoder.encode_many(pieces) == [_own(hf, piece) for piece in pieces]
    assert encoder(text) == _own(hf, text)


def test_each_call_returns_lists_of_its_own() -> None:
    hf = TOKENIZERS["shipped"]
    encoder = TextEncoder(hf, remember_from=1)
    long = "<|im_start|>system\n" + "You are careful. " * 50 + "<|im_end|>\n"
    first = encoder(long)
    first.append(-1)
    first[0] = -5
    assert encoder(long) == _own(hf, long)
    both = encoder.encode_many([long, long])
    both[0].append(-1)
    assert both[1] == _own(hf, long)


def test_remembers_at_most_cache_size_stretches() -> None:
    hf = TOKENIZERS["shipped"]
    texts = [f"<|im_start|>user {n} " + "word " * 60 + "<|im_end|>" for n in range(6)]
    # Longer than any stretch it remembers.
    texts.append("<|im_start|>tool\n" + "output line\n" * (LONGEST_REMEMBERED // 10))
    for size in (0, 1, 2):
        encoder = TextEncoder(hf, cache_size=size, remember_from=10, short_cache_size=size)
        for _ in range(2):
            assert encoder.encode_many(texts) == [_own(hf, t) for t in texts]
            assert all(encoder(t) == _own(hf, t) for t in reversed(texts))


class _CountingBackend:
    """The real backend tokenizer, counting the texts it encodes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts = 0

    def encode(self, text: str, **options: Any) -> Any:
        self.texts += 1
        return self.inner.encode(text, **options)

    def encode_batch_fast(self, texts: list[str], **options: Any) -> Any:
        self.texts += len(texts)
        return self.inner.encode_batch_fast(texts, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _CountingTokenizer:
    """A fast tokenizer whose backend counts what it encodes."""

    is_fast = True

    def __init__(self, hf: Any) -> None:
        self.hf = hf
        self.backend_tokenizer = _CountingBackend(hf.backend_tokenizer)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return list(self.hf.encode(text, add_special_tokens=add_special_tokens))


def test_short_stretches_between_added_tokens_are_encoded_once() -> None:
    hf = TOKENIZERS["shipped"]
    counting = _CountingTokenizer(hf)
    encoder = TextEncoder(counting)
    turns = [
        f"<|im_start|>user\nTask {n}<|im_end|>\n<|im_start|>assistant\nDone.<|im_end|>\n"
        for n in range(5)
    ]
    assert encoder(turns[0]) == _own(hf, turns[0])
    first = counting.backend_tokenizer.texts
    assert first == 4  # "user\nTask 0", "\n", "assistant\nDone.", "\n"
    for turn in turns[1:]:
        assert encoder(turn) == _own(hf, turn)
    # Afterwards only each new user stretch is encoded.
    assert counting.backend_tokenizer.texts == first + 4
    forgetful = _CountingTokenizer(hf)
    encoder = TextEncoder(forgetful, short_cache_size=0)
    for turn in turns:
        assert encoder(turn) == _own(hf, turn)
    assert forgetful.backend_tokenizer.texts == 4 * len(turns)


class _PlainTokenizer:
    """A tokenizer that is not a fast ``transformers`` one: only ``encode``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return list(self.inner.encode(text, add_special_tokens=add_special_tokens))


def test_any_tokenizer_with_encode_works_text_by_text() -> None:
    hf = TOKENIZERS["shipped"]
    encoder = TextEncoder(_PlainTokenizer(hf))
    batch = ["<|im_start|>user\nhi<|im_end|>\n", "", "ünïcode"]
    assert encoder.encode_many(batch) == [_own(hf, t) for t in batch]


class _SplittingBackend:
    """A Rust tokenizer stand-in whose added token ``<|a|>`` comes out as two ids: what
    a tokenizer that does not cut at its added tokens would do."""

    class _Encoding:
        def __init__(self, ids: list[int]) -> None:
            self.ids = ids

    def get_added_tokens_decoder(self) -> dict[int, AddedToken]:
        return {7: AddedToken("<|a|>", special=True, normalized=False)}

    def encode_batch_fast(self, texts: list[str], add_special_tokens: bool) -> list[Any]:
        return [self.encode(t, add_special_tokens) for t in texts]

    def encode(self, text: str, add_special_tokens: bool) -> Any:
        return self._Encoding([ord(c) for c in text])


class _SplittingTokenizer:
    is_fast = True
    backend_tokenizer = _SplittingBackend()

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return list(self.backend_tokenizer.encode(text, add_special_tokens).ids)


def test_a_tokenizer_that_does_not_cut_at_added_tokens_gets_whole_texts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    encoder = TextEncoder(_SplittingTokenizer())
    long = "x" * 3000  # encoded without the GIL; the short ones with it
    with caplog.at_level(logging.WARNING):
        assert encoder.encode_many(["x<|a|>y", "<|a|>", long + "<|a|>"]) == [
            [ord(c) for c in "x<|a|>y"],
            [ord(c) for c in "<|a|>"],
            [ord(c) for c in long + "<|a|>"],
        ]
    assert "cannot be encoded stretch by stretch" in caplog.text
    assert encoder("<|a|>z") == [ord(c) for c in "<|a|>z"]


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="needs a tokenizer with encode"):
        TextEncoder(object())
    with pytest.raises(ValueError, match="cache_size, remember_from and short_cache_size"):
        TextEncoder(TOKENIZERS["shipped"], cache_size=-1)
    with pytest.raises(ValueError, match="must be >= 0, got 256, 256 and -1"):
        TextEncoder(TOKENIZERS["shipped"], short_cache_size=-1)
    with pytest.raises(ValueError, match="must be >= 0"):
        TextEncoder(TOKENIZERS["shipped"], remember_from=-3)


def test_threads_taking_turns_get_the_tokenizers_own_ids() -> None:
    hf = TOKENIZERS["shipped"]
    encoder = TextEncoder(hf, cache_size=4, remember_from=8)
    texts = [f"<|im_start|>user\n{n} " + "some words here " * (n % 7 + 1) for n in range(40)]
    expected = [_own(hf, t) for t in texts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda n: encoder.encode_many(texts[n:] + texts[:n]), range(40)))
    for n, got in enumerate(results):
        assert got == expected[n:] + expected[:n]
