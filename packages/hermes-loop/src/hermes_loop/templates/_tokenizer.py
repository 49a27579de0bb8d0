"""Tokenizers: the small ``Tokenizer`` protocol the loop and the model server use.

``load_tokenizer()`` returns the tiny byte-level BPE tokenizer shipped with hermes-loop as
a test fixture (``hermes_loop/data/tiny-tokenizer``, built by
``scripts/make_tiny_tokenizer.py``): ChatML special tokens ``<|im_start|>``, ``<|im_end|>``,
``<|endoftext|>`` and the Hermes tokens ``<tool_call>``, ``</tool_call>``, ``<think>``,
``</think>``, ``<tool_response>``, ``</tool_response>``. It round-trips any text:
``decode(encode(text)) == text``.

``load_tokenizer(path)`` loads any Hugging Face ``tokenizer.json`` (or a directory holding
one), or the tokenizer inside a GGUF model file (``hermes_loop.templates._gguf``), with the
``tokenizers`` library, which comes with the ``hermes-loop[server]`` extra.

A tokenizer also says how a prompt starts and which chat template the model was trained
with: ``bos_token`` / ``bos_token_id``, ``add_bos_token`` (whether the model's own
tokenization of a prompt starts with BOS) and ``chat_template`` (the Jinja template of
``tokenizer_config.json``, or of a ``chat_template.jinja`` beside it, or of the GGUF file).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from hermes_loop._errors import HermesLoopError

if TYPE_CHECKING:
    # tokenizers < 0.23 ships no type information; newer releases do.
    import tokenizers  # type: ignore[import-untyped,unused-ignore]

__all__ = [
    "DEFAULT_TOKENIZER_DIR",
    "HFTokenizer",
    "Tokenizer",
    "TokenizerUnavailableError",
    "load_tokenizer",
]

#: Where the shipped test tokenizer lives, relative to the ``hermes_loop`` package.
DEFAULT_TOKENIZER_DIR = "data/tiny-tokenizer"


class TokenizerUnavailableError(HermesLoopError, ImportError):
    """The ``tokenizers`` library is missing (install ``hermes-loop[server]``)."""


@runtime_checkable
class Tokenizer(Protocol):
    """What hermes-loop needs of a tokenizer.

    ``encode`` never adds BOS/EOS; special tokens written as text (``<|im_end|>``) are
    encoded as their single token. ``decode`` keeps special tokens unless asked not to.
    ``add_bos_token`` says whether the model's own tokenization of a prompt starts with
    ``bos_token_id`` (the caller adds it); ``chat_template`` is the model's own Jinja chat
    template, or ``None`` when it ships none.
    """

    @property
    def eos_token(self) -> str:
        """The end-of-turn token text (``<|im_end|>`` for ChatML)."""
        ...

    @property
    def eos_token_id(self) -> int:
        """The id of ``eos_token``."""
        ...

    @property
    def special_tokens(self) -> Sequence[str]:
        """Tokens that ``decode(..., skip_special_tokens=True)`` drops."""
        ...

    @property
    def bos_token(self) -> str | None:
        """The beginning-of-sequence token text, or ``None`` when the model has none."""
        ...

    @property
    def bos_token_id(self) -> int | None:
        """The id of ``bos_token``."""
        ...

    @property
    def add_bos_token(self) -> bool:
        """Whether a prompt starts with ``bos_token_id`` in the model's own tokenization."""
        ...

    @property
    def chat_template(self) -> str | None:
        """The model's own Jinja chat template, or ``None``."""
        ...

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no BOS/EOS added)."""
        ...

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """The text of ``ids``."""
        ...


class HFTokenizer:
    """A ``Tokenizer`` over a Hugging Face ``tokenizers.Tokenizer``.

    Args:
        tokenizer: the loaded ``tokenizers.Tokenizer``.
        eos_token: the end-of-turn token; it must be in the vocabulary.
        bos_token: the beginning-of-sequence token, if the model has one; it must be in
            the vocabulary.
        add_bos_token: whether the model's prompts start with ``bos_token``; ``None``
            asks the tokenizer's own post-processor (does encoding with special tokens
            put ``bos_token`` first?).
        chat_template: the model's own Jinja chat template, if it ships one.

    Raises:
        ValueError: if ``eos_token`` or ``bos_token`` is not a token of ``tokenizer``, or
            ``add_bos_token`` is true without a ``bos_token``.
    """

    def __init__(
        self,
        tokenizer: tokenizers.Tokenizer,
        *,
        eos_token: str = "<|im_end|>",
        bos_token: str | None = None,
        add_bos_token: bool | None = None,
        chat_template: str | None = None,
    ) -> None:
        eos_id = tokenizer.token_to_id(eos_token)
        if eos_id is None:
            raise ValueError(f"eos token {eos_token!r} is not in the tokenizer's vocabulary")
        bos_id = None if bos_token is None else tokenizer.token_to_id(bos_token)
        if bos_token is not None and bos_id is None:
            raise ValueError(f"bos token {bos_token!r} is not in the tokenizer's vocabulary")
        if add_bos_token is None:
            first = tokenizer.encode("", add_special_tokens=True).ids[:1]
            add_bos_token = bos_id is not None and first == [bos_id]
        if add_bos_token and bos_id is None:
            raise ValueError("add_bos_token is set but the tokenizer has no bos token")
        self._tokenizer = tokenizer
        self._eos_token = eos_token
        self._eos_id = int(eos_id)
        self._bos_token = bos_token
        self._bos_id = None if bos_id is None else int(bos_id)
        self._add_bos = bool(add_bos_token)
        self._chat_template = chat_template or None
        self._special = tuple(
            token.content
            for token in tokenizer.get_added_tokens_decoder().values()
            if token.special
        )

    @classmethod
    def from_file(cls, path: str | Path, *, eos_token: str | None = None) -> HFTokenizer:
        """Load ``tokenizer.json`` (or a directory holding it) or a GGUF model file.

        Beside ``tokenizer.json``, a ``tokenizer_config.json`` gives ``eos_token``,
        ``bos_token``, ``add_bos_token`` and ``chat_template``, and a
        ``chat_template.jinja`` (which wins over the config's) the chat template, as
        ``transformers`` reads them. The EOS token is ``eos_token``, else the config's,
        else ``<|im_end|>``. A ``.gguf`` file gives all of these from its own metadata.

        Raises:
            TokenizerUnavailableError: if the ``tokenizers`` library is not installed.
            FileNotFoundError: if there is no such file.
            ValueError: if the file is not a tokenizer, lacks the EOS or BOS token, or is a
                GGUF file whose tokenizer cannot be rebuilt
                (``hermes_loop.templates._gguf.GGUFError``).
        """
        tokenizers = _import_tokenizers()
        file = Path(path)
        if file.is_dir():
            file = file / "tokenizer.json"
        if not file.is_file():
            raise FileNotFoundError(f"no tokenizer file at {file}")
        if file.suffix == ".gguf":
            from hermes_loop.templates._gguf import tokenizer_from_gguf

            loaded, config = tokenizer_from_gguf(file)
        else:
            config = _read_config(file.parent)
            try:
                loaded = tokenizers.Tokenizer.from_file(str(file))
            except Exception as exc:  # the Rust side raises a bare Exception
                raise ValueError(f"{file}: not a tokenizers JSON file ({exc})") from exc
        add_bos = config.get("add_bos_token")
        return cls(
            loaded,
            eos_token=eos_token or _token_text(config.get("eos_token")) or "<|im_end|>",
            bos_token=_token_text(config.get("bos_token")),
            add_bos_token=add_bos if isinstance(add_bos, bool) else None,
            chat_template=_template_text(config.get("chat_template")),
        )

    @property
    def eos_token(self) -> str:
        """The end-of-turn token text."""
        return self._eos_token

    @property
    def eos_token_id(self) -> int:
        """The id of ``eos_token``."""
        return self._eos_id

    @property
    def special_tokens(self) -> tuple[str, ...]:
        """The added tokens flagged special (ChatML markers, ``<|endoftext|>``)."""
        return self._special

    @property
    def bos_token(self) -> str | None:
        """The beginning-of-sequence token text, or ``None``."""
        return self._bos_token

    @property
    def bos_token_id(self) -> int | None:
        """The id of ``bos_token``, or ``None``."""
        return self._bos_id

    @property
    def add_bos_token(self) -> bool:
        """Whether the model's prompts start with ``bos_token_id``."""
        return self._add_bos

    @property
    def chat_template(self) -> str | None:
        """The model's own Jinja chat template, or ``None`` when it ships none."""
        return self._chat_template

    @property
    def vocab_size(self) -> int:
        """The number of ids, added tokens included."""
        return int(self._tokenizer.get_vocab_size(with_added_tokens=True))

    @property
    def backend(self) -> tokenizers.Tokenizer:
        """The wrapped ``tokenizers.Tokenizer``."""
        return self._tokenizer

    def token_to_id(self, token: str) -> int | None:
        """The id of one token, or ``None`` if it is not in the vocabulary."""
        found = self._tokenizer.token_to_id(token)
        return None if found is None else int(found)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; no BOS/EOS is added."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """``encode`` for several texts at once (parallel in the Rust library)."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [list(encoding.ids) for encoding in encodings]

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """The text of ``ids``; special tokens are kept unless ``skip_special_tokens``."""
        return str(self._tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens))

    def __repr__(self) -> str:
        return f"HFTokenizer(vocab_size={self.vocab_size}, eos_token={self._eos_token!r})"


def _import_tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError as exc:
        raise TokenizerUnavailableError(
            "hermes_loop.templates._tokenizer needs the 'tokenizers' library; "
            "install it with: pip install 'hermes-loop[server]'"
        ) from exc
    return tokenizers


def _read_config(directory: Path) -> dict[str, Any]:
    """``tokenizer_config.json`` of ``directory`` (``{}`` when absent or unreadable), with
    the text of a ``chat_template.jinja`` beside it as its ``chat_template``."""
    try:
        data = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    config: dict[str, Any] = data if isinstance(data, dict) else {}
    with contextlib.suppress(OSError):
        config["chat_template"] = (directory / "chat_template.jinja").read_text(encoding="utf-8")
    return config


def _token_text(token: Any) -> str | None:
    if isinstance(token, dict):
        token = token.get("content")
    return token if isinstance(token, str) and token else None


def _template_text(template: Any) -> str | None:
    """A config's ``chat_template``: a string, or a list of named ones (``default`` wins)."""
    if isinstance(template, list):
        named = {
            item.get("name"): item.get("template") for item in template if isinstance(item, dict)
        }
        template = named.get("default")
    return template if isinstance(template, str) and template.strip() else None


def load_tokenizer(path: str | Path | None = None) -> HFTokenizer:
    """Load a tokenizer: the shipped test tokenizer by default, else ``path``.

    Args:
        path: a ``tokenizer.json`` file, a directory holding one, or a ``.gguf`` model
            file; ``None`` for the tiny ChatML tokenizer shipped in
            ``hermes_loop/data/tiny-tokenizer``.

    Raises:
        TokenizerUnavailableError: (an ``ImportError``) if ``tokenizers`` is missing; the
            message names the ``hermes-loop[server]`` extra.
        FileNotFoundError: if ``path`` holds no tokenizer file.
        ValueError: if the file cannot be read as a tokenizer (for a GGUF file, a
            ``hermes_loop.templates._gguf.GGUFError`` naming what is wrong).
    """
    if path is None:
        shipped = resources.files("hermes_loop").joinpath(DEFAULT_TOKENIZER_DIR, "tokenizer.json")
        with resources.as_file(shipped) as file:
            return HFTokenizer.from_file(file, eos_token="<|im_end|>")
    return HFTokenizer.from_file(path)
