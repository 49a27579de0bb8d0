"""``TransformersTokenizer`` gives a transformers tokenizer the loop's ``Tokenizer`` protocol."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest

from hermes_loop.templates._tokenizer import Tokenizer, load_tokenizer
from hermes_loop.templates._transformers_tokenizer import TransformersTokenizer

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

FIXTURE = resources.files("hermes_loop") / "data" / "tiny-tokenizer"


def auto() -> Any:
    return transformers.AutoTokenizer.from_pretrained(str(FIXTURE), local_files_only=True)


def with_bos(add_bos: bool) -> Any:
    """The shipped vocabulary as a fast tokenizer whose BOS is <|endoftext|>, added or not."""
    backend = tokenizers.Tokenizer.from_file(str(FIXTURE / "tokenizer.json"))
    if add_bos:
        backend.post_processor = tokenizers.processors.TemplateProcessing(
            single="<|endoftext|> $A",
            special_tokens=[("<|endoftext|>", backend.token_to_id("<|endoftext|>"))],
        )
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<|endoftext|>", eos_token="<|im_end|>"
    )


def test_it_is_a_tokenizer_and_encodes_like_the_shipped_one() -> None:
    tok = TransformersTokenizer(auto())
    assert isinstance(tok, Tokenizer)
    shipped = load_tokenizer()
    sample = "<|im_start|>user\nhi 🚀 <tool_call>{}</tool_call><|im_end|>\n"
    assert tok.encode(sample) == shipped.encode(sample)
    assert tok.decode(tok.encode(sample)) == sample
    assert tok.eos_token == "<|im_end|>"
    assert tok.eos_token_id == shipped.eos_token_id
    assert tok.chat_template == shipped.chat_template
    assert "<|im_end|>" in tok.special_tokens


@pytest.mark.parametrize("add_bos", [True, False])
def test_add_bos_token_follows_the_tokenizers_own_behaviour(add_bos: bool) -> None:
    tok = TransformersTokenizer(with_bos(add_bos))
    assert tok.bos_token == "<|endoftext|>"
    assert tok.bos_token_id == load_tokenizer().encode("<|endoftext|>")[0]
    assert tok.add_bos_token is add_bos
    assert tok.encode("hi")[:1] != [tok.bos_token_id], "encode itself never adds BOS"


def test_a_tokenizer_without_eos_is_refused() -> None:
    backend = tokenizers.Tokenizer.from_file(str(FIXTURE / "tokenizer.json"))
    bare = transformers.PreTrainedTokenizerFast(tokenizer_object=backend)
    with pytest.raises(ValueError, match="has no eos_token"):
        TransformersTokenizer(bare)
