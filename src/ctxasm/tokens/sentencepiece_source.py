"""Exact counts from a SentencePiece ``tokenizer.model`` (the ``sentencepiece`` library).

Mistral's first tokenizers (v1 to v7 before Tekken) and Gemma's are SentencePiece models. A text
is encoded as SentencePiece encodes any text: control symbols (``<s>``, ``[INST]``) written in it
are plain text; user-defined symbols (Mistral's ``[REF]``) are one token, as in the model. The
encoding of a text alone starts with the model's dummy-prefix space, as each message's text does
when a chat is encoded part by part (mistral-common's instruct tokenizers do so).
"""

from __future__ import annotations

import threading
from typing import Any

from ctxasm.errors import TokenizerError
from ctxasm.tokens.files import TokenizerFile

__all__ = ["SentencePieceTokenizer"]


class SentencePieceTokenizer:
    """Counts with the SentencePiece model in ``file`` (read, checked and loaded on first use)."""

    exact = True

    def __init__(self, name: str, file: TokenizerFile) -> None:
        self.name = name
        self.file = file
        self._processor: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        processor = self._processor
        if processor is None:
            with self._lock:
                if self._processor is None:
                    self._processor = self._build()
                processor = self._processor
        return processor

    def _build(self) -> Any:
        try:
            import sentencepiece
        except ImportError:
            install = f"'ctxasm[{self.file.extra}]'" if self.file.extra else "sentencepiece"
            raise TokenizerError(
                f"counting with {self.file.name} needs the sentencepiece library: "
                f"pip install {install}"
            ) from None
        data = self.file.read()
        try:
            return sentencepiece.SentencePieceProcessor(model_proto=data)
        except Exception as exc:  # the C++ core raises RuntimeError or OSError
            raise TokenizerError(
                f"{self.file.label} is not a valid SentencePiece model: {exc}"
            ) from None

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._load().encode(text))

    def lower_bound(self, text: str) -> int:
        return 1 if text else 0  # a piece may span spaces: only non-empty is known
