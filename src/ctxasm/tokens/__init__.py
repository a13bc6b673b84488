"""Tokenizers: one protocol, exact counts where a tokenizer is public, estimates elsewhere.

A tokenizer is named by a spec string:

``tiktoken:o200k_base``
    an OpenAI encoding (exact);
``pinned:llama-3``
    an open-weight family's official tokenizer file, read from the package that ships it and
    checked against the SHA-256 pinned in :mod:`ctxasm.tokens.pinned` (exact); ``@<path>``
    after the name reads a copy of that file instead;
``hf:/path/to/tokenizer.json``
    a Hugging Face tokenizer file on disk (exact, needs the ``hf`` extra);
``sentencepiece:/path/to/tokenizer.model``, ``tekken:/path/to/tekken.json``
    a SentencePiece model or a Mistral Tekken file on disk (exact);
``estimate:o200k_base*1.2``
    a proxy encoding's count times a factor (an estimate).

A file spec may end with ``#sha256=<64 hex digits>``: the file is then read only if its hash
matches.

tiktoken-format encodings count with tiktoken or with the faster fastokens (same counts, same
names): ``$CTXASM_BPE_BACKEND`` or :func:`set_bpe_backend` chooses, see
:mod:`ctxasm.tokens.fastokens_source`.

:func:`get_counter` returns a shared, cached :class:`TokenCounter` for a spec.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ctxasm.errors import TokenizerError
from ctxasm.tokens.base import TokenCounter, Tokenizer
from ctxasm.tokens.bpe import BpeEncoding, BpeTokenizer
from ctxasm.tokens.estimate import EstimateTokenizer
from ctxasm.tokens.fastokens_source import bpe_backend, set_bpe_backend
from ctxasm.tokens.files import TokenizerFile
from ctxasm.tokens.hf import HuggingFaceTokenizer
from ctxasm.tokens.pinned import PINNED, pinned_tokenizer
from ctxasm.tokens.sentencepiece_source import SentencePieceTokenizer
from ctxasm.tokens.tiktoken_source import TiktokenTokenizer

__all__ = [
    "PINNED",
    "BpeEncoding",
    "BpeTokenizer",
    "EstimateTokenizer",
    "HuggingFaceTokenizer",
    "SentencePieceTokenizer",
    "TiktokenTokenizer",
    "TokenCounter",
    "Tokenizer",
    "TokenizerFile",
    "bpe_backend",
    "check_spec",
    "get_counter",
    "make_tokenizer",
    "resolve_spec_path",
    "set_bpe_backend",
]

_COUNTERS: dict[str, TokenCounter] = {}
_LOCK = threading.Lock()


def make_tokenizer(spec: str) -> Tokenizer:
    """Build the tokenizer a spec string names (nothing is loaded until the first count)."""
    kind, _, rest = spec.partition(":")
    if kind == "tiktoken" and rest:
        return TiktokenTokenizer(rest)
    if kind == "pinned" and rest:
        return pinned_tokenizer(spec, rest)
    if kind in ("hf", "sentencepiece", "tekken") and rest:
        file = _file(spec, rest)
        if kind == "hf":
            return HuggingFaceTokenizer(file)
        if kind == "sentencepiece":
            return SentencePieceTokenizer(f"sentencepiece:{file.path}", file)
        return BpeTokenizer(f"tekken:{file.path}", BpeEncoding(file, "tekken"))
    if kind == "estimate" and rest:
        encoding, _, factor_text = rest.partition("*")
        try:
            factor = float(factor_text) if factor_text else 1.0
        except ValueError:
            raise TokenizerError(
                f"invalid tokenizer spec {spec!r}: the factor after '*' must be a number, got "
                f"{factor_text!r}"
            ) from None
        try:
            return EstimateTokenizer(TiktokenTokenizer(encoding), factor)
        except ValueError as exc:
            raise TokenizerError(f"invalid tokenizer spec {spec!r}: {exc}") from None
    raise TokenizerError(
        f"invalid tokenizer spec {spec!r}; expected 'tiktoken:<encoding>', "
        "'pinned:<name>', 'hf:<path to tokenizer.json>', 'sentencepiece:<path to "
        "tokenizer.model>', 'tekken:<path to tekken.json>' or 'estimate:<encoding>*<factor>'"
    )


def check_spec(spec: str) -> None:
    """Raise a :class:`TokenizerError` unless ``spec`` names a tokenizer that loads: for a file
    (local, a pinned family's, or its copy), one that is there, has the SHA-256 pinned for it
    and parses as the tokenizer it should be. A config is checked when it loads, not at the
    first count; the tokenizer is loaded into the counter :func:`get_counter` shares, so
    counting does not load it again."""
    get_counter(spec).tokenizer.count("check")


def resolve_spec_path(spec: str, folder: Path) -> str:
    """``spec`` with the relative path of its file (``hf:``, ``sentencepiece:``, ``tekken:``,
    ``pinned:<name>@<path>``) made absolute against ``folder``; any other spec as it is.

    A config file's paths are read from its own folder, as a build tool reads its config's, so
    the same config works from any working folder; ``~`` paths stay as they are."""
    kind, colon, rest = spec.partition(":")
    if kind in ("hf", "sentencepiece", "tekken"):
        head, path = f"{kind}{colon}", rest
    elif kind == "pinned" and "@" in rest:
        name, at, path = rest.partition("@")
        head = f"{kind}{colon}{name}{at}"
    else:
        return spec
    path, marker, sha256 = path.partition("#sha256=")
    if not path or path.startswith("~") or Path(path).is_absolute():
        return spec
    return f"{head}{folder / path}{marker}{sha256}"


def _file(spec: str, rest: str) -> TokenizerFile:
    """The local file a spec names, with the hash after ``#sha256=`` when it pins one."""
    path, marker, sha256 = rest.partition("#sha256=")
    if not path or (marker and not sha256):
        raise TokenizerError(
            f"invalid tokenizer spec {spec!r}; expected a path, optionally followed by "
            "'#sha256=<64 hex digits>'"
        )
    return TokenizerFile(path, sha256 or None)


def get_counter(spec: str) -> TokenCounter:
    """The process-wide cached counter for ``spec``."""
    with _LOCK:
        counter = _COUNTERS.get(spec)
        if counter is None:
            counter = _COUNTERS[spec] = TokenCounter(make_tokenizer(spec))
        return counter
