"""Exact counts for open-weight byte-level BPE tokenizers, with tiktoken as the engine
(or fastokens, for files whose fastokens counts are checked: see ``fastokens_parity``).

Meta's Llama 3 ``tokenizer.model`` and Qwen's ``qwen.tiktoken`` are tiktoken rank files; Mistral's
``tekken.json`` holds the same ranks in JSON with its pre-tokenizer pattern. A
:class:`BpeEncoding` says how to read one such file and how the model applies it: the
pattern, the Unicode normalization (Qwen 2 and later: NFC) and the added tokens the model
matches inside ordinary text (Qwen's ``<tool_call>`` or ``<think>``: one token wherever they
appear). Control tokens (``<|eot_id|>``, ``<|im_end|>``, ``[INST]``) found in a text are counted
as the plain text they are: a passage is data, never control.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from ctxasm.errors import TokenizerError
from ctxasm.tokens.fastokens_source import FastBpe, FastBpeSource, fast_bpe
from ctxasm.tokens.files import TokenizerFile
from ctxasm.tokens.probes import PROBE_CHARACTERS
from ctxasm.tokens.tiktoken_source import count_upto_at_spaces, space_lower_bound
from ctxasm.unicode_text import normalize

if TYPE_CHECKING:
    import tiktoken

__all__ = ["BpeEncoding", "BpeTokenizer"]


@dataclass(frozen=True, slots=True)
class BpeEncoding:
    """How one BPE rank file is read (``format``) and applied.

    ``pattern`` is the pre-tokenizer regex; ``None`` takes it from a ``tekken`` file.
    ``seams`` promises what :class:`~ctxasm.tokens.base.TokenCounter` relies on to count texts
    part by part: a space after a non-whitespace character, and a character after a newline
    other than white space and "/" (a letter, a backtick), always start a new pre-tokenizer
    piece (true of every pattern pinned in :mod:`ctxasm.tokens.pinned`; leave it false for a
    pattern nobody checked).
    ``fastokens_parity`` lets fastokens count when it is the backend
    (:mod:`ctxasm.tokens.fastokens_source`): set it only for a pinned file whose fastokens
    counts the test suite compares with tiktoken's.
    """

    file: TokenizerFile
    format: Literal["tiktoken", "tekken"]
    pattern: str | None = None
    normalization: Literal["NFC"] | None = None
    text_tokens: tuple[str, ...] = ()
    seams: bool = False
    fastokens_parity: bool = False

    def __post_init__(self) -> None:
        if self.pattern is None and self.format != "tekken":
            raise TokenizerError(f"{self.file.label}: a tiktoken rank file needs a pattern")
        if self.fastokens_parity and self.file.sha256 is None:
            raise TokenizerError(
                f"{self.file.label}: fastokens parity is only checked for a file with a "
                "pinned SHA-256"
            )


@dataclass(frozen=True, slots=True)
class _Loaded:
    encoding: tiktoken.Encoding
    max_token_bytes: int
    text_tokens: re.Pattern[str] | None


class BpeTokenizer:
    """Counts with a :class:`BpeEncoding`; the file is read, checked and parsed on first use."""

    exact = True

    def __init__(self, name: str, encoding: BpeEncoding) -> None:
        self.name = name
        self.encoding = encoding
        self.splits_before_fence = encoding.seams
        self.splits_at_spaces = encoding.seams
        # One fastokens load per file and pattern: Qwen 2.5 and 3 share theirs.
        self._fast_key = f"bpe:{encoding.file.sha256}:{encoding.pattern}"
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = _build(self.name, self.encoding)
                loaded = self._loaded
        return loaded

    def count(self, text: str) -> int:
        loaded = self._load()
        if loaded.text_tokens is None or loaded.text_tokens.search(text) is None:
            return self._count_plain(loaded, text)
        pieces = loaded.text_tokens.split(text)
        # split() on one group alternates text and matched tokens: each match is one token.
        matched = len(pieces) // 2
        return matched + sum(self._count_plain(loaded, piece) for piece in pieces[::2])

    def _count_plain(self, loaded: _Loaded, text: str) -> int:
        if not text:
            return 0
        if self.encoding.normalization is not None and not text.isascii():
            text = normalize(self.encoding.normalization, text)
        fast = self._fast()
        if fast is not None:
            counted = fast.count(text)
            if counted is not None:
                return counted
        return len(loaded.encoding.encode_ordinary(text))

    def _fast(self) -> FastBpe | None:
        if not self.encoding.fastokens_parity:
            return None
        return fast_bpe(self._fast_key, self._fast_source)

    def _fast_source(self) -> FastBpeSource:
        """The checked file's ranks in tiktoken format, the only one fastokens reads."""
        file = self.encoding.file
        data = file.read()
        pattern = self.encoding.pattern
        if self.encoding.format == "tekken":
            ranks, pattern = _tekken_ranks(file, data, pattern)
            data = b"".join(b"%s %d\n" % (base64.b64encode(t), r) for t, r in ranks.items())
        return FastBpeSource(file.label, data, pattern=pattern)

    def lower_bound(self, text: str) -> int:
        if not self.encoding.seams:
            return 1 if text else 0
        loaded = self._load()
        if self.encoding.normalization is not None and not text.isascii():
            # composition can shrink the UTF-8 the byte bound is taken from
            text = normalize(self.encoding.normalization, text)
        return space_lower_bound(text, loaded.max_token_bytes)

    def count_upto(self, text: str, limit: int) -> int:
        """``count(text)`` if it is at most ``limit``, else a count above ``limit`` that the
        exact one is not below (a prefix is counted first when the pattern allows it)."""
        if not self.encoding.seams:
            return self.count(text)
        return count_upto_at_spaces(self.count, text, limit)


def _build(name: str, encoding: BpeEncoding) -> _Loaded:
    return encoding.file.load(partial(_parse, name, encoding))


def _parse(name: str, encoding: BpeEncoding, data: bytes) -> _Loaded:
    import tiktoken

    if encoding.format == "tiktoken":
        ranks, pattern = _tiktoken_ranks(encoding.file, data), encoding.pattern
    else:
        ranks, pattern = _tekken_ranks(encoding.file, data, encoding.pattern)
    assert pattern is not None  # BpeEncoding checks it for tiktoken files
    try:
        built = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    except Exception as exc:  # tiktoken raises ValueError for a bad pattern or ranks
        raise TokenizerError(f"{encoding.file.label} cannot be used: {exc}") from None
    _check_pattern_covers(built, encoding.file.label)
    longest = max(len(token) for token in ranks)
    text_tokens = None
    if encoding.text_tokens:
        longest = max(longest, *(len(t.encode()) for t in encoding.text_tokens))
        ordered = sorted(encoding.text_tokens, key=len, reverse=True)  # longest match first
        text_tokens = re.compile("(" + "|".join(re.escape(t) for t in ordered) + ")")
    return _Loaded(built, longest, text_tokens)


# Characters of many kinds, each alone and all together: a pre-tokenizer pattern that leaves
# one of them unmatched makes tiktoken skip it, so its count would be too low.
_PROBE = "".join((*PROBE_CHARACTERS, " \t\n\r\u00a0\u2003"))


def _check_pattern_covers(built: Any, label: str) -> None:
    """Refuse a pattern that does not cover every character of :data:`_PROBE` (byte-level BPE
    is lossless, so the tokens of a covered text decode to it)."""
    for text in (*_PROBE, _PROBE):
        if built.decode_bytes(built.encode_ordinary(text)) != text.encode("utf-8"):
            what = repr(text) if len(text) == 1 else "a text of such characters together"
            raise TokenizerError(
                f"{label} cannot be used: its pre-tokenizer pattern skips {what}, which is then "
                "counted as no token at all, so its counts would be too low for any budget"
            )


def _tiktoken_ranks(file: TokenizerFile, data: bytes) -> dict[bytes, int]:
    """The ranks of a tiktoken file: one ``<base64 token> <rank>`` per line."""
    try:
        ranks = {
            base64.b64decode(token, validate=True): int(rank)
            for token, rank in (line.split() for line in data.splitlines() if line)
        }
    except (ValueError, binascii.Error):
        raise TokenizerError(
            f"{file.label} is not a tiktoken rank file (lines of '<base64 token> <rank>')"
        ) from None
    _check_ranks(file, ranks)
    return ranks


def _tekken_ranks(
    file: TokenizerFile, data: bytes, pinned_pattern: str | None
) -> tuple[dict[bytes, int], str]:
    """The ranks and pattern of a ``tekken.json``: its first ``default_vocab_size -
    default_num_special_tokens`` vocabulary entries, as mistral-common reads them."""
    try:
        parsed: Any = json.loads(data)
        config = parsed["config"]
        size = int(config["default_vocab_size"]) - int(config["default_num_special_tokens"])
        pattern = str(config["pattern"])
        ranks = {
            base64.b64decode(entry["token_bytes"], validate=True): int(entry["rank"])
            for entry in parsed["vocab"][:size]
        }
    # OverflowError: int() of Infinity; RecursionError: nesting too deep for the reader
    except (ValueError, KeyError, TypeError, binascii.Error, OverflowError, RecursionError):
        raise TokenizerError(
            f"{file.label} is not a tekken.json file (config with pattern and sizes, vocab "
            "entries with rank and token_bytes)"
        ) from None
    if pinned_pattern is not None and pattern != pinned_pattern:
        raise TokenizerError(f"{file.label} has a pre-tokenizer pattern other than the pinned one")
    _check_ranks(file, ranks)
    return ranks, pattern


def _check_ranks(file: TokenizerFile, ranks: dict[bytes, int]) -> None:
    missing = [byte for byte in range(256) if bytes((byte,)) not in ranks]
    if missing:
        # tiktoken's encoder panics on a byte it has no token for
        raise TokenizerError(
            f"{file.label} cannot be used: {len(missing)} of the 256 bytes have no token of "
            f"their own (the first: 0x{missing[0]:02x}); a byte-level vocabulary needs all of "
            "them to count every text"
        )
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise TokenizerError(f"{file.label}: the ranks are not 0 to {len(ranks) - 1}, once each")
