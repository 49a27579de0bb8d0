"""Build the tiny test tokenizer shipped in ``hermes_loop/data/tiny-tokenizer/``.

Run from the repository root::

    ./dev uv run python scripts/make_tiny_tokenizer.py [--check]

It trains a small byte-level BPE (the same family as GPT-2, Qwen 2.5 and Hermes 3
tokenizers) on the few KB of text below, adds the ChatML special tokens and the Hermes
tool-call tokens, and writes ``tokenizer.json`` plus a ``tokenizer_config.json`` that holds
the ChatML chat template, so ``transformers.AutoTokenizer`` can load the directory offline.

The result is reproducible: the corpus is fixed, training runs single-threaded over a fixed
order of sentences, and the JSON is written with sorted keys. ``--check`` rebuilds into
memory and fails if the shipped files differ.

Byte-level BPE with no normalizer round-trips any unicode text: every string is encoded
as its UTF-8 bytes, so ``decode(encode(text)) == text``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

from hermes_loop.templates import CHATML_JINJA_TEMPLATE

OUT_DIR = (
    Path(__file__).resolve().parent.parent
    / "packages"
    / "hermes-loop"
    / "src"
    / "hermes_loop"
    / "data"
    / "tiny-tokenizer"
)

VOCAB_SIZE = 1536
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED_TOKENS = ["<tool_call>", "</tool_call>", "<think>", "</think>", "<tool_response>",
                "</tool_response>"]  # fmt: skip

# Written for this fixture: a little of everything an agent transcript holds.
CORPUS = r"""
The agent reads the task, looks at the files in the working directory and decides which
tool to call first. When a command fails, it reads the error message, fixes the problem
and tries again. When the tests pass, it writes a short summary of what it changed.
A good rollout is short: it calls the right tools with the right arguments, reads what
they return, and stops as soon as the task is done. A bad rollout loops, guesses file
names, or answers before it has looked.
The weather in Paris is mild today, with light rain in the morning and sun in the
afternoon. Tomorrow will be colder. Bring an umbrella and a warm coat.
Please list the files in the current directory, then open the README and tell me what
the project does. After that, run the test suite and report how many tests passed.
I will check the configuration file first. The configuration sets the number of workers,
the timeout in seconds, the model name and the path to the dataset.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 12 16 32 64 100 128 256 512 1000 1024 2048 4096 65536.
Dates and times: 2024-05-01 12:30:00, 2025-11-23T08:15:42Z, 3.14159, -0.5, 1e-3, 42%.
<|im_start|>system
You are a helpful assistant that can call tools to answer questions.<|im_end|>
<|im_start|>user
What files are in /tmp?<|im_end|>
<|im_start|>assistant
<think>
The user wants a directory listing. I should call the terminal tool with ls.
</think>

<tool_call>
{"name": "terminal", "arguments": {"command": "ls -la /tmp"}}
</tool_call><|im_end|>
<|im_start|>tool
<tool_response>
{"output": "total 8\ndrwxrwxrwt  2 root root 4096 .\ndrwxr-xr-x 19 root root 4096 ..",
 "exit_code": 0}
</tool_response><|im_end|>
<|im_start|>assistant
The directory /tmp is empty apart from the usual entries.<|im_end|>
<|im_start|>user
Read the file src/main.py and fix the failing test.<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "read_file", "arguments": {"path": "src/main.py"}}
</tool_call>
<tool_call>
{"name": "search", "arguments": {"pattern": "def test_", "path": "tests/"}}
</tool_call><|im_end|>
<|im_start|>tool
<tool_response>
def add(a, b):
    return a - b
</tool_response>
<tool_response>
tests/test_main.py:3:def test_add():
</tool_response><|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "write_file", "arguments": {"path": "src/main.py",
 "content": "def add(a, b):\n    return a + b\n"}}
</tool_call><|im_end|>
{"type": "function", "function": {"name": "terminal", "description":
 "Run a shell command and return its output and exit code.", "parameters": {"type": "object",
 "properties": {"command": {"type": "string", "description": "The command to run."},
 "timeout": {"type": "integer", "description": "Seconds before the command is killed."}},
 "required": ["command"]}}}
{"type": "function", "function": {"name": "read_file", "description": "Read a text file.",
 "parameters": {"type": "object", "properties": {"path": {"type": "string"},
 "offset": {"type": "integer"}, "limit": {"type": "integer"}}, "required": ["path"]}}}
{"type": "function", "function": {"name": "get_weather", "description":
 "Get the current weather for a city.", "parameters": {"type": "object", "properties":
 {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
 "required": ["city"]}}}
import json
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Count the lines of every file.")
    parser.add_argument("paths", nargs="+", help="files to read")
    args = parser.parse_args(argv)
    total = 0
    for path in args.paths:
        with open(path, encoding="utf-8") as handle:
            count = sum(1 for _ in handle)
        print(f"{path}: {count}")
        total += count
    return 0 if total else 1


class Result:
    def __init__(self, name: str, score: float) -> None:
        self.name = name
        self.score = score

    def __repr__(self) -> str:
        return f"Result(name={self.name!r}, score={self.score})"


if __name__ == "__main__":
    raise SystemExit(main())
$ cd /workspace && git status
On branch main
nothing to commit, working tree clean
$ python -m pytest -q tests/
........................................ [100%]
40 passed in 1.23s
$ grep -rn "TODO" src/ | head
$ cat /etc/os-release | head -2
PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
$ echo $((6 * 7))
42
for i in range(10):
    if i % 2 == 0:
        continue
    result.append({"index": i, "value": i * i, "ok": True, "note": None})
SELECT id, name, created_at FROM users WHERE active = 1 ORDER BY created_at DESC LIMIT 10;
Der schnelle braune Fuchs springt über den faulen Hund. Größe, Straße, Übung.
Le renard brun rapide saute par-dessus le chien paresseux. Été, déjà, où, ça.
El rápido zorro marrón salta sobre el perro perezoso. ¿Qué tal? ¡Muy bien!
Быстрая коричневая лиса прыгает через ленивую собаку.
敏捷的棕色狐狸跳过了懒狗。你好，世界。今天天气很好。
素早い茶色の狐がのろまな犬を飛び越える。こんにちは。
빠른 갈색 여우가 게으른 개를 뛰어넘는다.
Emoji and symbols: ✅ ❌ 🚀 🔧 → ← ≤ ≥ ≠ ∞ € £ ¥ © ® ™ … — – • ° ± × ÷
The answer is 42. The file was saved. The command exited with code 0. The test failed
with an AssertionError: expected 3, got -1. The function returns the sum of its two
arguments. I have fixed the bug and all tests pass now.
""".strip()


def training_lines() -> list[str]:
    """The corpus cut into lines, repeated so that common pairs pass ``min_frequency``."""
    lines = [line for line in CORPUS.splitlines() if line.strip()]
    return [line + "\n" for line in lines] * 3


def build() -> Tokenizer:
    """Train the tokenizer from ``CORPUS``; deterministic for a given ``tokenizers`` version."""
    tokenizer = Tokenizer(models.BPE(unk_token=None, byte_fallback=False, fuse_unk=False))
    tokenizer.normalizer = None
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=2,
        show_progress=False,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(training_lines(), trainer=trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in ADDED_TOKENS])
    return tokenizer


def tokenizer_json(tokenizer: Tokenizer) -> str:
    """``tokenizer.json`` text with sorted keys, so rebuilding gives identical bytes."""
    return json.dumps(json.loads(tokenizer.to_str()), ensure_ascii=False, sort_keys=True) + "\n"


def tokenizer_config(tokenizer: Tokenizer) -> str:
    """``tokenizer_config.json``: what ``transformers.AutoTokenizer`` reads beside the model."""
    decoder: dict[str, dict[str, object]] = {}
    for token in SPECIAL_TOKENS + ADDED_TOKENS:
        token_id = tokenizer.token_to_id(token)
        assert token_id is not None, token
        decoder[str(token_id)] = {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": token in SPECIAL_TOKENS,
        }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": decoder,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "split_special_tokens": False,
        "model_max_length": 32768,
        "chat_template": CHATML_JINJA_TEMPLATE,
    }
    return json.dumps(config, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` verify) the fixture files; return the exit status."""
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--check", action="store_true", help="fail if the shipped files differ")
    args.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    options = args.parse_args(argv)
    tokenizer = build()
    files = {
        "tokenizer.json": tokenizer_json(tokenizer),
        "tokenizer_config.json": tokenizer_config(tokenizer),
    }
    out: Path = options.out
    if options.check:
        stale = [
            name
            for name, text in files.items()
            if not (out / name).is_file() or (out / name).read_text(encoding="utf-8") != text
        ]
        if stale:
            print(f"out of date in {out}: {', '.join(stale)}", file=sys.stderr)
            return 1
        print(f"{out} is up to date")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    print(f"wrote {out} (vocab {tokenizer.get_vocab_size()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
