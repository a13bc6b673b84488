"""Exact counts from a Hugging Face ``tokenizer.json`` on disk (the ``hf`` extra)."""

from __future__ import annotations

import json
import threading
from functools import partial
from pathlib import Path
from typing import Any

from ctxasm.errors import TokenizerError, install_hint
from ctxasm.tokens.files import TokenizerFile
from ctxasm.tokens.probes import PROBE_CHARACTERS

__all__ = ["HuggingFaceTokenizer"]


class HuggingFaceTokenizer:
    """Counts with the ``tokenizers`` library from a local ``tokenizer.json``.

    Nothing is downloaded: point ``path`` at the file that ships with the model's weights, and
    pin its SHA-256 (``hf:<path>#sha256=<hex>``) to have it checked when it loads. Special
    tokens written in a text (``<|eot_id|>``) are counted as the plain text they are; other
    added tokens are matched as the tokenizer matches them. The special tokens the chat template
    adds are the model registry's per-message overhead, not counted here.
    """

    exact = True

    def __init__(self, path: str | Path | TokenizerFile) -> None:
        self.file = path if isinstance(path, TokenizerFile) else TokenizerFile(str(path))
        self.path = Path(self.file.path)
        self.name = f"hf:{self.file.path}"
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._tokenizer is None:
                try:
                    from tokenizers import Tokenizer
                except ImportError:
                    raise TokenizerError(
                        "counting with a tokenizer.json needs the tokenizers library: "
                        + install_hint("hf")
                    ) from None
                self._tokenizer = self.file.load(partial(_parse, Tokenizer, self.file.label))
            return self._tokenizer

    def count(self, text: str) -> int:
        encoded = self._load().encode(text, add_special_tokens=False)
        return len(encoded.ids)

    def lower_bound(self, text: str) -> int:
        return 1 if text else 0  # nothing is known about an arbitrary tokenizer's pieces


def _parse(tokenizer_class: Any, label: str, data: bytes) -> Any:
    """The tokenizer in a ``tokenizer.json``'s bytes, set to count as ctxasm counts."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TokenizerError(
            f"{label} is not a valid tokenizer.json: it is not UTF-8 text (byte "
            f"0x{data[exc.start]:02x} at offset {exc.start:,})"
        ) from None
    try:
        tokenizer = tokenizer_class.from_str(text)
    except Exception as exc:  # the Rust core raises a bare Exception
        raise TokenizerError(f"{label} is not a valid tokenizer.json: {exc}") from None
    tokenizer.encode_special_tokens = True  # control tokens in a text are text
    # A file saved from a pipeline may carry its truncation and padding: counts would stop at
    # max_length (under-counted: the request overflows) or grow to it.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    _check_no_text_vanishes(tokenizer, data, label)
    return tokenizer


def _check_no_text_vanishes(tokenizer: Any, data: bytes, label: str) -> None:
    """Refuse a file that counts some text as no token at all (see ctxasm.tokens.probes): a
    BPE model with no unknown token, no byte fallback and no byte-level pre-tokenizer or
    normalizer drops every character its vocabulary lacks, and any file that counts a probe
    character so."""
    config = json.loads(data)
    model = config.get("model") if isinstance(config, dict) else None
    if isinstance(model, dict) and model.get("type") == "BPE" and not model.get("unk_token"):
        byte_level = _byte_level(config.get("pre_tokenizer")) or _byte_level(
            config.get("normalizer")
        )
        if not byte_level and not model.get("byte_fallback"):
            raise TokenizerError(
                f"{label} cannot be used: its BPE model has no unknown token, no byte fallback "
                "and no byte-level pre-tokenizer or normalizer, so it counts every character "
                "outside its vocabulary as no token at all, and its counts would be too low "
                "for any budget"
            )
        vocab = model.get("vocab")
        if byte_level and not model.get("byte_fallback") and isinstance(vocab, dict):
            # every byte needs its symbol, or text holding that byte loses it
            from tokenizers.pre_tokenizers import ByteLevel

            missing = [symbol for symbol in ByteLevel.alphabet() if symbol not in vocab]
            if missing:
                raise TokenizerError(
                    f"{label} cannot be used: its byte-level vocabulary has no token for "
                    f"{len(missing)} of the 256 bytes ({missing[0]!r} first), so text holding "
                    "them would be counted too low for any budget"
                )
    for probe in PROBE_CHARACTERS:
        try:
            ids = tokenizer.encode(probe, add_special_tokens=False).ids
        except Exception as exc:  # the Rust core raises a bare Exception
            raise TokenizerError(f"{label} cannot be used: it fails on {probe!r}: {exc}") from None
        if not ids:
            raise TokenizerError(
                f"{label} cannot be used: it counts {probe!r} as no token at all (an empty "
                "vocabulary, or no unknown token and no byte fallback), so its counts would be "
                "too low for any budget"
            )


def _byte_level(step: object) -> bool:
    """Whether a ``tokenizer.json`` pre-tokenizer or normalizer is byte-level (alone or in a
    sequence): every character then reaches the model as bytes it has symbols for."""
    if not isinstance(step, dict):
        return False
    if step.get("type") == "ByteLevel":
        return True
    steps = step.get("pretokenizers", step.get("normalizers"))
    return isinstance(steps, list) and any(_byte_level(inner) for inner in steps)
