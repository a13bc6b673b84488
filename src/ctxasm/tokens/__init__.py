"""Tokenizers: one protocol, exact counts where a tokenizer is public, estimates elsewhere.

A tokenizer is named by a spec string:

``tiktoken:o200k_base``
    an OpenAI encoding (exact);
``hf:/path/to/tokenizer.json``
    a Hugging Face tokenizer file on disk (exact, needs the ``hf`` extra);
``estimate:o200k_base*1.2``
    a proxy encoding's count times a factor (an estimate).

:func:`get_counter` returns a shared, cached :class:`TokenCounter` for a spec.
"""

from __future__ import annotations

import threading

from ctxasm.errors import TokenizerError
from ctxasm.tokens.base import TokenCounter, Tokenizer
from ctxasm.tokens.estimate import EstimateTokenizer
from ctxasm.tokens.hf import HuggingFaceTokenizer
from ctxasm.tokens.tiktoken_source import TiktokenTokenizer

__all__ = [
    "EstimateTokenizer",
    "HuggingFaceTokenizer",
    "TiktokenTokenizer",
    "TokenCounter",
    "Tokenizer",
    "get_counter",
    "make_tokenizer",
]

_COUNTERS: dict[str, TokenCounter] = {}
_LOCK = threading.Lock()


def make_tokenizer(spec: str) -> Tokenizer:
    """Build the tokenizer a spec string names (nothing is loaded until the first count)."""
    kind, _, rest = spec.partition(":")
    if kind == "tiktoken" and rest:
        return TiktokenTokenizer(rest)
    if kind == "hf" and rest:
        return HuggingFaceTokenizer(rest)
    if kind == "estimate" and rest:
        encoding, _, factor_text = rest.partition("*")
        try:
            factor = float(factor_text) if factor_text else 1.0
        except ValueError:
            factor = float("nan")
        try:
            return EstimateTokenizer(TiktokenTokenizer(encoding), factor)
        except ValueError as exc:
            raise TokenizerError(f"invalid tokenizer spec {spec!r}: {exc}") from None
    raise TokenizerError(
        f"invalid tokenizer spec {spec!r}; expected 'tiktoken:<encoding>', "
        "'hf:<path to tokenizer.json>' or 'estimate:<encoding>*<factor>'"
    )


def get_counter(spec: str) -> TokenCounter:
    """The process-wide cached counter for ``spec``."""
    with _LOCK:
        counter = _COUNTERS.get(spec)
        if counter is None:
            counter = _COUNTERS[spec] = TokenCounter(make_tokenizer(spec))
        return counter
