"""Exact counts from a Hugging Face ``tokenizer.json`` on disk (the ``hf`` extra)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ctxasm.errors import TokenizerError
from ctxasm.tokens.files import TokenizerFile

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
                        "pip install 'ctxasm[hf]'"
                    ) from None
                if self.file.distribution is None and not self.path.is_file():
                    raise TokenizerError(
                        f"tokenizer file {self.path} does not exist; give the path of the "
                        "model's tokenizer.json"
                    )
                data = self.file.read()
                try:
                    tokenizer = Tokenizer.from_str(data.decode("utf-8"))
                except Exception as exc:  # the Rust core raises a bare Exception
                    raise TokenizerError(
                        f"{self.file.label} is not a valid tokenizer.json: {exc}"
                    ) from None
                tokenizer.encode_special_tokens = True  # control tokens in a text are text
                # A file saved from a pipeline may carry its truncation and padding: counts
                # would stop at max_length (under-counted: the request overflows) or grow to it.
                tokenizer.no_truncation()
                tokenizer.no_padding()
                _check_no_text_vanishes(tokenizer, self.file.label)
                self._tokenizer = tokenizer
            return self._tokenizer

    def count(self, text: str) -> int:
        encoded = self._load().encode(text, add_special_tokens=False)
        return len(encoded.ids)

    def lower_bound(self, text: str) -> int:
        return 1 if text else 0  # nothing is known about an arbitrary tokenizer's pieces


# One character of each kind: a tokenizer that counts any of them as no token (an empty
# vocabulary, or no unknown token and no byte fallback) would count budgets low.
_PROBES = ("a", "Z", "7", ".", "\u00e9", "\u0436", "\u4e2d", "\U0001f642")


def _check_no_text_vanishes(tokenizer: Any, label: str) -> None:
    for probe in _PROBES:
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
