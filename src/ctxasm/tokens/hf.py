"""Exact counts from a Hugging Face ``tokenizer.json`` on disk (the ``hf`` extra)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ctxasm.errors import TokenizerError

__all__ = ["HuggingFaceTokenizer"]


class HuggingFaceTokenizer:
    """Counts with the ``tokenizers`` library from a local ``tokenizer.json``.

    Nothing is downloaded: point ``path`` at the file that ships with the model's weights.
    Special tokens the chat template adds are not counted here; the model registry's
    per-message overhead covers them.
    """

    exact = True

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"hf:{self.path}"
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
                if not self.path.is_file():
                    raise TokenizerError(
                        f"tokenizer file {self.path} does not exist; give the path of the "
                        "model's tokenizer.json"
                    )
                try:
                    self._tokenizer = Tokenizer.from_file(str(self.path))
                except Exception as exc:  # the Rust core raises a bare Exception
                    raise TokenizerError(
                        f"{self.path} is not a valid tokenizer.json: {exc}"
                    ) from None
            return self._tokenizer

    def count(self, text: str) -> int:
        encoded = self._load().encode(text, add_special_tokens=False)
        return len(encoded.ids)

    def lower_bound(self, text: str) -> int:
        return 1 if text else 0  # nothing is known about an arbitrary tokenizer's pieces
