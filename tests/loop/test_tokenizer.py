"""The shipped test tokenizer: special tokens, lossless round trips, reproducible build."""

from __future__ import annotations

import json
import runpy
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_loop._errors import HermesLoopError
from hermes_loop.templates._chat_template import CHATML_JINJA_TEMPLATE, render_prompt
from hermes_loop.templates._gguf import GGUFError, read_metadata
from hermes_loop.templates._tokenizer import (
    HFTokenizer,
    Tokenizer,
    TokenizerUnavailableError,
    load_tokenizer,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "packages" / "hermes-loop" / "src" / "hermes_loop" / "data" / "tiny-tokenizer"
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>",
         "</tool_response>"]  # fmt: skip

TOKENIZER = load_tokenizer()


def test_default_tokenizer_is_the_shipped_chatml_fixture() -> None:
    assert isinstance(TOKENIZER, Tokenizer)
    assert TOKENIZER.eos_token == "<|im_end|>"
    assert TOKENIZER.encode("<|im_end|>") == [TOKENIZER.eos_token_id]
    assert set(TOKENIZER.special_tokens) == set(SPECIAL)
    assert 1000 <= TOKENIZER.vocab_size <= 2100
    for token in SPECIAL + ADDED:
        token_id = TOKENIZER.token_to_id(token)
        assert token_id is not None, token
        assert TOKENIZER.encode(token) == [token_id], token


def test_markup_tokens_are_single_tokens_inside_text() -> None:
    text = '<|im_start|>assistant\n<tool_call>\n{"name": "ls"}\n</tool_call><|im_end|>'
    ids = TOKENIZER.encode(text)
    for token in ("<|im_start|>", "<tool_call>", "</tool_call>", "<|im_end|>"):
        assert TOKENIZER.token_to_id(token) in ids


def test_skip_special_tokens_drops_chatml_markers_but_keeps_tool_markup() -> None:
    ids = TOKENIZER.encode("<|im_start|>user\nhi<tool_call>x</tool_call><|im_end|>")
    assert TOKENIZER.decode(ids, skip_special_tokens=True) == "user\nhi<tool_call>x</tool_call>"


def test_encode_adds_no_bos_or_eos() -> None:
    assert TOKENIZER.encode("") == []
    assert TOKENIZER.decode(TOKENIZER.encode("hello world")) == "hello world"
    assert TOKENIZER.eos_token_id not in TOKENIZER.encode("hello world")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_unicode_text_round_trips(text: str) -> None:
    assert TOKENIZER.decode(TOKENIZER.encode(text)) == text


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=20), st.sampled_from(SPECIAL + ADDED)), max_size=12))
def test_text_mixed_with_special_tokens_round_trips(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert TOKENIZER.decode(TOKENIZER.encode(text)) == text


@pytest.mark.parametrize(
    "text",
    ["e\u0301 vs \u00e9", "\x00\r\n\t", "\ufeffbom", "🚀👩‍👩‍👧", "\U0010ffff", "  two  spaces "],
)
def test_unnormalized_and_control_text_round_trips(text: str) -> None:
    assert TOKENIZER.decode(TOKENIZER.encode(text)) == text


def test_load_by_directory_or_file(tmp_path: Path) -> None:
    by_dir = load_tokenizer(FIXTURE)
    by_file = load_tokenizer(FIXTURE / "tokenizer.json")
    sample = "<|im_start|>user\nWhat's in /tmp?<|im_end|>"
    assert by_dir.encode(sample) == by_file.encode(sample) == TOKENIZER.encode(sample)
    assert by_dir.eos_token == "<|im_end|>"  # read from tokenizer_config.json


def test_missing_and_broken_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no tokenizer file"):
        load_tokenizer(tmp_path / "nowhere")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not a tokenizers JSON file"):
        load_tokenizer(bad)
    with pytest.raises(ValueError, match="eos token"):
        HFTokenizer.from_file(FIXTURE, eos_token="<|not-a-token|>")


def test_missing_library_names_the_extra() -> None:
    # A child interpreter where ``import tokenizers`` fails; the module is loaded from its
    # file so the child does not pay for importing the whole package.
    source = (
        ROOT / "packages" / "hermes-loop" / "src" / "hermes_loop" / "templates" / "_tokenizer.py"
    )
    code = (
        "import sys, importlib.util\n"
        "sys.modules['tokenizers'] = None\n"
        f"spec = importlib.util.spec_from_file_location('tok', {str(source)!r})\n"
        "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
        "try:\n    mod.HFTokenizer.from_file('x')\n"
        "except mod.TokenizerUnavailableError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "hermes-loop[server]" in out.stdout


def test_fixture_is_small_and_rebuilds_identically() -> None:
    size = sum(path.stat().st_size for path in FIXTURE.iterdir())
    assert size < 300_000
    script = runpy.run_path(str(ROOT / "scripts" / "make_tiny_tokenizer.py"))
    assert script["main"](["--check"]) == 0


def test_tokenizer_config_holds_the_chat_template_for_transformers() -> None:
    config = json.loads((FIXTURE / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"] == CHATML_JINJA_TEMPLATE
    assert config["eos_token"] == "<|im_end|>"
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    decoder = config["added_tokens_decoder"]
    for token in SPECIAL + ADDED:
        entry = decoder[str(TOKENIZER.token_to_id(token))]
        assert entry["content"] == token
        assert entry["special"] == (token in SPECIAL)


def test_transformers_auto_tokenizer_loads_the_directory_offline() -> None:
    transformers = pytest.importorskip("transformers")
    auto = transformers.AutoTokenizer.from_pretrained(str(FIXTURE), local_files_only=True)
    sample = "<|im_start|>user\nhi 🚀<|im_end|>\n"
    assert auto.encode(sample, add_special_tokens=False) == TOKENIZER.encode(sample)
    assert auto.eos_token == "<|im_end|>"
    tools = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "list"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "ls", "arguments": '{"path": "/"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "bin etc"},
    ]
    text = auto.apply_chat_template(
        messages, tools=tools, tokenize=False, add_generation_prompt=True
    )
    assert text == render_prompt(messages, tools)


# BOS and the model's own chat template -------------------------------------------------


def _tokenizer_dir(tmp_path: Path, config: dict[str, Any], template: str | None = None) -> Path:
    directory = tmp_path / "tok"
    directory.mkdir()
    (directory / "tokenizer.json").write_bytes((FIXTURE / "tokenizer.json").read_bytes())
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    if template is not None:
        (directory / "chat_template.jinja").write_text(template, encoding="utf-8")
    return directory


def test_unavailable_error_is_a_hermes_loop_error_and_an_import_error() -> None:
    assert issubclass(TokenizerUnavailableError, HermesLoopError)
    assert issubclass(TokenizerUnavailableError, ImportError)


def test_shipped_tokenizer_has_no_bos_and_its_own_chatml_template() -> None:
    assert TOKENIZER.bos_token is None
    assert TOKENIZER.bos_token_id is None
    assert not TOKENIZER.add_bos_token
    assert TOKENIZER.chat_template == CHATML_JINJA_TEMPLATE


def test_config_gives_bos_and_template_file_wins_over_config(tmp_path: Path) -> None:
    config = {
        "eos_token": "<|im_end|>",
        "bos_token": {"content": "<|endoftext|>"},
        "add_bos_token": True,
        "chat_template": "from the config",
    }
    loaded = load_tokenizer(_tokenizer_dir(tmp_path, config, template="from the file"))
    assert loaded.bos_token == "<|endoftext|>"
    assert loaded.bos_token_id == TOKENIZER.token_to_id("<|endoftext|>")
    assert loaded.add_bos_token
    assert loaded.chat_template == "from the file"
    assert loaded.encode("hi") == TOKENIZER.encode("hi")  # encode itself never adds BOS


def test_named_templates_pick_default_and_blank_means_none(tmp_path: Path) -> None:
    named = [{"name": "tool_use", "template": "tools"}, {"name": "default", "template": "chat"}]
    (tmp_path / "a").mkdir()
    loaded = load_tokenizer(_tokenizer_dir(tmp_path / "a", {"chat_template": named}))
    assert loaded.chat_template == "chat"
    (tmp_path / "b").mkdir()
    assert (
        load_tokenizer(_tokenizer_dir(tmp_path / "b", {"chat_template": "  "})).chat_template
        is None
    )


def test_add_bos_is_read_from_the_post_processor_when_the_config_is_silent(tmp_path: Path) -> None:
    # tokenizers < 0.23 ships no type information; newer releases do.
    from tokenizers import processors  # type: ignore[import-untyped,unused-ignore]

    backend = load_tokenizer().backend
    bos_id = TOKENIZER.token_to_id("<|endoftext|>")
    plain = HFTokenizer(backend, bos_token="<|endoftext|>")
    assert not plain.add_bos_token
    backend.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos_id)]
    )
    with_bos = HFTokenizer(backend, bos_token="<|endoftext|>")
    assert with_bos.add_bos_token
    assert with_bos.bos_token_id == bos_id
    assert (
        HFTokenizer(backend, bos_token="<|endoftext|>", add_bos_token=False).add_bos_token is False
    )


def test_bad_bos_settings_are_clear_errors() -> None:
    backend = load_tokenizer().backend
    with pytest.raises(ValueError, match="bos token '<nope>' is not in the tokenizer's vocabulary"):
        HFTokenizer(backend, bos_token="<nope>")
    with pytest.raises(ValueError, match="add_bos_token is set but the tokenizer has no bos"):
        HFTokenizer(backend, add_bos_token=True)


# The tokenizer inside a GGUF file ------------------------------------------------------

_SPACE = "\u2581"


def _gguf_value(kind: int, value: Any) -> bytes:
    if kind == 8:
        data: bytes = value.encode("utf-8")
        return struct.pack("<Q", len(data)) + data
    if kind == 9:
        item_kind, items = value
        head = struct.pack("<IQ", item_kind, len(items))
        return head + b"".join(_gguf_value(item_kind, item) for item in items)
    return struct.pack("<" + {4: "I", 5: "i", 6: "f", 7: "?"}[kind], value)


def _write_gguf(path: Path, metadata: dict[str, tuple[int, Any]], version: int = 3) -> Path:
    out = b"GGUF" + struct.pack("<IQQ", version, 0, len(metadata))
    for key, (kind, value) in metadata.items():
        out += _gguf_value(8, key) + struct.pack("<I", kind) + _gguf_value(kind, value)
    path.write_bytes(out)
    return path


# A SentencePiece vocabulary: control tokens, the 256 byte tokens, then pieces whose
# score orders the merges (higher merges first), a user-defined "\n\n" and a template.
_PIECES = [
    ("a", -1.0), ("b", -1.0), (_SPACE, -1.0), ("ab", -2.0), (_SPACE + "a", -3.0),
    ("ba", -0.5), (_SPACE + "ab", -4.0), ("abab", -5.0),
]  # fmt: skip
_GGUF_TOKENS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>"]
_GGUF_TOKENS += [f"<0x{byte:02X}>" for byte in range(256)]
_GGUF_TOKENS += [piece for piece, _ in _PIECES] + ["\n\n"]
_GGUF_SCORES = [0.0] * 261 + [score for _, score in _PIECES] + [0.0]
_GGUF_TYPES = [3, 3, 3, 2, 3] + [6] * 256 + [1] * len(_PIECES) + [4]


def _spm_gguf(path: Path, **extra: tuple[int, Any]) -> Path:
    metadata: dict[str, tuple[int, Any]] = {
        "general.architecture": (8, "gemma3"),
        "tokenizer.ggml.model": (8, "llama"),
        "tokenizer.ggml.tokens": (9, (8, _GGUF_TOKENS)),
        "tokenizer.ggml.scores": (9, (6, _GGUF_SCORES)),
        "tokenizer.ggml.token_type": (9, (5, _GGUF_TYPES)),
        "tokenizer.ggml.bos_token_id": (4, 2),
        "tokenizer.ggml.eos_token_id": (4, 1),
        "tokenizer.ggml.unknown_token_id": (4, 3),
        "tokenizer.ggml.add_bos_token": (7, True),
        "tokenizer.ggml.add_space_prefix": (7, False),
    }
    metadata.update(extra)
    return _write_gguf(path, metadata)


def test_gguf_tokenizer_merges_by_score_and_falls_back_to_bytes(tmp_path: Path) -> None:
    loaded = load_tokenizer(_spm_gguf(tmp_path / "m.gguf"))
    ids = {token: index for index, token in enumerate(_GGUF_TOKENS)}
    assert loaded.eos_token == "<eos>"
    assert loaded.bos_token == "<bos>"
    assert loaded.bos_token_id == 2
    assert loaded.add_bos_token
    assert loaded.chat_template is None
    # "aba": "ba" (-0.5) beats "ab" (-2.0), so a + ba; llama.cpp picks the same.
    assert loaded.encode("aba") == [ids["a"], ids["ba"]]
    # "abab": ba first, then no pair of (a, ba, b) is in the vocabulary.
    assert loaded.encode("abab") == [ids["a"], ids["ba"], ids["b"]]
    assert loaded.encode(" ab") == [ids[_SPACE + "ab"]]
    # é is outside the vocabulary: its two UTF-8 bytes.
    assert loaded.encode("é") == [ids["<0xC3>"], ids["<0xA9>"]]
    text = "<start_of_turn>a\n\nb é<eos>"
    encoded = loaded.encode(text)
    assert encoded[0] == ids["<start_of_turn>"]
    assert ids["\n\n"] in encoded
    assert encoded[-1] == ids["<eos>"]
    assert loaded.decode(encoded) == text
    assert loaded.decode(encoded, skip_special_tokens=True) == "a\n\nb é"
    assert loaded.backend.encode("a", add_special_tokens=True).ids == [2, ids["a"]]


def test_gguf_space_prefix_and_chat_template_are_read(tmp_path: Path) -> None:
    path = _spm_gguf(
        tmp_path / "m.gguf",
        **{"tokenizer.ggml.add_space_prefix": (7, True), "tokenizer.chat_template": (8, "T")},
    )
    loaded = load_tokenizer(path)
    ids = {token: index for index, token in enumerate(_GGUF_TOKENS)}
    assert loaded.encode("ab") == [ids[_SPACE + "ab"]]
    assert loaded.decode(loaded.encode("ab")) == "ab"
    assert loaded.chat_template == "T"


def test_bad_gguf_files_are_clear_errors(tmp_path: Path) -> None:
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        load_tokenizer(not_gguf)
    whole = _spm_gguf(tmp_path / "whole.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(GGUFError, match="ends early"):
        load_tokenizer(cut)
    bpe = _spm_gguf(tmp_path / "bpe.gguf", **{"tokenizer.ggml.model": (8, "gpt2")})
    with pytest.raises(GGUFError, match="kind 'gpt2' cannot be rebuilt"):
        load_tokenizer(bpe)
    bare = _write_gguf(tmp_path / "bare.gguf", {"general.architecture": (8, "x")})
    with pytest.raises(GGUFError, match="holds no tokenizer"):
        load_tokenizer(bare)
    old = _write_gguf(tmp_path / "v1.gguf", {}, version=1)
    with pytest.raises(GGUFError, match="version 1 is not supported"):
        load_tokenizer(old)
    assert issubclass(GGUFError, HermesLoopError)
    assert issubclass(GGUFError, ValueError)
    assert read_metadata(tmp_path / "whole.gguf")["tokenizer.ggml.bos_token_id"] == 2
