"""The tokenizer inside a GGUF model file, as a Hugging Face ``tokenizers`` tokenizer.

llama.cpp serves GGUF files, which carry their tokenizer in their metadata
(``tokenizer.ggml.*``) rather than as a ``tokenizer.json``. ``read_metadata`` reads that
metadata (the key/value section only, never the tensors) and ``tokenizer_from_gguf``
rebuilds the tokenizer so that Phase 2 can build on the client exactly the prompt ids
llama.cpp builds on the server.

Supported: SentencePiece vocabularies (``tokenizer.ggml.model == "llama"``: Llama 2,
Mistral, Gemma). llama.cpp encodes them by merging, at each step, the adjacent pair whose
joined text is the vocabulary entry with the highest score (the leftmost pair on a tie),
falling back to ``<0xXX>`` byte tokens for text outside the vocabulary; control and
user-defined tokens are cut out of the text first. The rebuilt tokenizer is a byte-fallback
BPE whose merges are ranked by that score, with every control and user-defined token as an
added token, and spaces written as ``▁``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from hermes_loop._errors import HermesLoopError

__all__ = ["GGUFError", "read_metadata", "tokenizer_from_gguf"]

_MAGIC = b"GGUF"
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
            12: "d"}  # fmt: skip
_STRING, _ARRAY = 8, 9
# llama.cpp's token types (llama_token_type).
_NORMAL, _UNKNOWN, _CONTROL, _USER_DEFINED, _UNUSED, _BYTE = 1, 2, 3, 4, 5, 6
_SPACE = "\u2581"


class GGUFError(HermesLoopError, ValueError):
    """A file is not a GGUF model, or its tokenizer is of a kind this module cannot rebuild."""


def _reader(file: IO[bytes], path: Path) -> Callable[[str], Any]:
    def unpack(fmt: str) -> Any:
        size = struct.calcsize("<" + fmt)
        data = file.read(size)
        if len(data) != size:
            raise GGUFError(f"{path}: the GGUF metadata ends early (a cut or damaged file)")
        return struct.unpack("<" + fmt, data)[0]

    return unpack


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The key/value metadata of a GGUF file (versions 2 and 3), tensors left unread.

    Raises:
        FileNotFoundError: if there is no such file.
        GGUFError: (a ``ValueError``) if the file is not GGUF or its metadata is cut short.
    """
    file_path = Path(path)
    with file_path.open("rb") as file:
        if file.read(4) != _MAGIC:
            raise GGUFError(f"{file_path}: not a GGUF file (it does not start with 'GGUF')")
        unpack = _reader(file, file_path)

        def string() -> str:
            data = file.read(unpack("Q"))
            return data.decode("utf-8", errors="replace")

        def value(kind: int) -> Any:
            if kind in _SCALARS:
                return unpack(_SCALARS[kind])
            if kind == _STRING:
                return string()
            if kind == _ARRAY:
                item_kind = unpack("I")
                return [value(item_kind) for _ in range(unpack("Q"))]
            raise GGUFError(f"{file_path}: unknown GGUF value type {kind}")

        version = unpack("I")
        if version not in (2, 3):
            raise GGUFError(f"{file_path}: GGUF version {version} is not supported (2 or 3)")
        unpack("Q")  # tensor count
        count = unpack("Q")
        metadata: dict[str, Any] = {}
        for _ in range(count):
            key = string()
            metadata[key] = value(unpack("I"))
        return metadata


def _merges(vocab: dict[str, int], scores: list[float]) -> list[tuple[str, str]]:
    """Every split of a vocabulary entry into two entries, best joined score first."""
    ranked: list[tuple[float, int, int, str, str]] = []
    for token, token_id in vocab.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            left_id, right_id = vocab.get(left), vocab.get(right)
            if left_id is not None and right_id is not None:
                ranked.append((-scores[token_id], left_id, right_id, left, right))
    ranked.sort()
    return [(left, right) for _, _, _, left, right in ranked]


def tokenizer_from_gguf(path: str | Path) -> tuple[Any, dict[str, Any]]:
    """Rebuild a GGUF file's tokenizer; return it and a ``tokenizer_config``-shaped dict.

    The dict holds ``bos_token``, ``eos_token``, ``add_bos_token`` and, when the file has
    one, ``chat_template``, as a ``tokenizer_config.json`` would.

    Raises:
        FileNotFoundError: if there is no such file.
        GGUFError: if the file is not GGUF, has no tokenizer, or has a tokenizer other
            than SentencePiece (``tokenizer.ggml.model`` ``"llama"``).
        ImportError: if the ``tokenizers`` library is missing (the caller names the extra).
    """
    from tokenizers import (  # type: ignore[import-untyped,unused-ignore]
        AddedToken,
        Tokenizer,
        decoders,
        models,
        normalizers,
        processors,
    )

    file_path = Path(path)
    metadata = read_metadata(file_path)
    kind = metadata.get("tokenizer.ggml.model")
    if kind is None:
        raise GGUFError(f"{file_path}: the GGUF file holds no tokenizer (tokenizer.ggml.model)")
    if kind != "llama":
        raise GGUFError(
            f"{file_path}: GGUF tokenizer kind {kind!r} cannot be rebuilt; only SentencePiece "
            "('llama') is supported: load the model's tokenizer.json instead"
        )
    tokens: list[str] = metadata["tokenizer.ggml.tokens"]
    scores: list[float] = metadata.get("tokenizer.ggml.scores") or [0.0] * len(tokens)
    types: list[int] = metadata.get("tokenizer.ggml.token_type") or [_NORMAL] * len(tokens)
    vocab = {token: index for index, token in enumerate(tokens)}
    mergeable = {
        token: index
        for token, index in vocab.items()
        if types[index] not in (_BYTE, _CONTROL, _USER_DEFINED, _UNKNOWN)
    }
    unk_id = metadata.get("tokenizer.ggml.unknown_token_id")
    model = models.BPE(
        vocab=vocab,
        merges=_merges(mergeable, scores),
        unk_token=tokens[unk_id] if isinstance(unk_id, int) else None,
        byte_fallback=True,
        fuse_unk=True,
    )
    tokenizer = Tokenizer(model)
    normalizer = [normalizers.Replace(" ", _SPACE)]
    if metadata.get("tokenizer.ggml.add_space_prefix", True):
        normalizer.insert(0, normalizers.Prepend(_SPACE))
    tokenizer.normalizer = normalizers.Sequence(normalizer)
    steps = [decoders.Replace(_SPACE, " "), decoders.ByteFallback(), decoders.Fuse()]
    if metadata.get("tokenizer.ggml.add_space_prefix", True):
        steps.append(decoders.Strip(" ", 1, 0))
    tokenizer.decoder = decoders.Sequence(steps)
    tokenizer.add_tokens(
        [
            AddedToken(tokens[i], special=types[i] != _USER_DEFINED, normalized=False)
            for i in range(len(tokens))
            if types[i] in (_CONTROL, _USER_DEFINED, _UNKNOWN)
        ]
    )
    config: dict[str, Any] = {"add_bos_token": bool(metadata.get("tokenizer.ggml.add_bos_token"))}
    for name in ("bos", "eos"):
        token_id = metadata.get(f"tokenizer.ggml.{name}_token_id")
        if isinstance(token_id, int) and 0 <= token_id < len(tokens):
            config[f"{name}_token"] = tokens[token_id]
    # Encoding with special tokens adds what llama.cpp's add_special adds.
    bos, eos = config.get("bos_token"), config.get("eos_token")
    add_eos = bool(metadata.get("tokenizer.ggml.add_eos_token"))
    pieces = [bos] if config["add_bos_token"] and bos else []
    pieces += ["$A"] + ([eos] if add_eos and eos else [])
    if len(pieces) > 1:
        marks = {piece: vocab[piece] for piece in pieces if piece != "$A"}
        tokenizer.post_processor = processors.TemplateProcessing(
            single=" ".join(pieces), special_tokens=list(marks.items())
        )
    template = metadata.get("tokenizer.chat_template")
    if isinstance(template, str) and template:
        config["chat_template"] = template
    return tokenizer, config
