"""tiktoken encodings that load without a network, from files whose official hash is checked.

tiktoken downloads its rank files on first use and keeps them in ``TIKTOKEN_CACHE_DIR`` under
the SHA-1 of their address. ctxasm ships the o200k_base and cl100k_base files inside the package
(``ctxasm/tokens/ranks/``, see the NOTICE there) and looks for a file in this order:

1. ``$CTXASM_TIKTOKEN_DIR/<encoding>.tiktoken`` (a folder you fill by hand or ship with an image);
2. ``$TIKTOKEN_CACHE_DIR/<sha1 of the address>`` (tiktoken's own cache layout);
3. ``$TIKTOKEN_CACHE_DIR/<encoding>.tiktoken``;
4. the copy shipped with ctxasm, :data:`BUNDLED_RANKS` ``/<encoding>.tiktoken``.

A file that is found must match the SHA-256 that OpenAI publishes for it, or loading fails with a
:class:`~ctxasm.errors.TokenizerError` (a corrupt or substituted file would silently change every
count). Only when no file is found (an install that lost its package data) does tiktoken try to
download.

Counts come from fastokens instead when it is the backend (see
:mod:`ctxasm.tokens.fastokens_source`), built from the same checked file; tiktoken stays the
reference and counts whatever fastokens refuses.
"""

from __future__ import annotations

import binascii
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ctxasm.errors import TokenizerError, TokenizerFileError, UntokenizableError
from ctxasm.tokens.fastokens_source import FastBpeSource, fast_bpe

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "BUNDLED_RANKS",
    "OFFICIAL_RANKS",
    "RankFile",
    "TiktokenTokenizer",
    "count_upto_at_spaces",
    "find_rank_file",
    "load_encoding",
    "space_lower_bound",
]


@dataclass(frozen=True, slots=True)
class RankFile:
    """Where OpenAI publishes an encoding's ranks, the SHA-256 of that file, and what tiktoken
    builds the encoding with besides the ranks: the pre-tokenizer ``pattern`` and the
    ``special`` tokens (tiktoken's own values; a test compares them with tiktoken's)."""

    url: str
    sha256: str
    pattern: str
    special: tuple[tuple[str, int], ...]

    @property
    def cache_name(self) -> str:
        """The file name tiktoken gives this file in its cache folder."""
        return hashlib.sha1(self.url.encode()).hexdigest()


_BASE = "https://openaipublic.blob.core.windows.net/encodings/"
OFFICIAL_RANKS: dict[str, RankFile] = {
    "o200k_base": RankFile(
        _BASE + "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "|".join(
            (
                r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
                r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
                r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
                r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
                r"\p{N}{1,3}",
                r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
                r"\s*[\r\n]+",
                r"\s+(?!\S)",
                r"\s+",
            )
        ),
        (("<|endoftext|>", 199999), ("<|endofprompt|>", 200018)),
    ),
    "cl100k_base": RankFile(
        _BASE + "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"
        r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s",
        (
            ("<|endoftext|>", 100257),
            ("<|fim_prefix|>", 100258),
            ("<|fim_middle|>", 100259),
            ("<|fim_suffix|>", 100260),
            ("<|endofprompt|>", 100276),
        ),
    ),
}

# The rank files installed with ctxasm (package data; wheels install as plain files).
BUNDLED_RANKS = Path(__file__).resolve().parent / "ranks"

# Prefixes this many characters per token of the limit usually hold more tokens than the limit
# (English runs at about 4.5), so one prefix count settles most rejections.
_PREFIX_CHARS_PER_TOKEN = 5
# The longest token of both encodings covers 128 bytes of UTF-8.
_MAX_TOKEN_BYTES = 128
# A space preceded by one of these may share a piece with it (see TiktokenTokenizer.lower_bound).
_ASCII_SPACE_NEIGHBOURS = tuple(f"{c} " for c in "\t\n\r\x0b\x0c")
_UNICODE_SPACES = tuple(
    "\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_LOAD_LOCK = threading.Lock()
_LOADED: dict[str, tiktoken.Encoding] = {}


def find_rank_file(name: str) -> Path | None:
    """The first local copy of ``name``'s rank file, or ``None`` when there is none."""
    found = _find_rank_file(name)
    return None if found is None else found[0]


def _find_rank_file(name: str) -> tuple[Path, str | None] | None:
    """The first local copy of ``name``'s rank file and the environment variable naming its
    folder (``None`` for the copy shipped with ctxasm), or ``None`` when there is none."""
    ranks = OFFICIAL_RANKS[name]
    places: list[tuple[Path, str | None]] = []
    if own := os.environ.get("CTXASM_TIKTOKEN_DIR"):
        places.append((Path(own) / f"{name}.tiktoken", "CTXASM_TIKTOKEN_DIR"))
    if cache := os.environ.get("TIKTOKEN_CACHE_DIR"):
        places += [
            (Path(cache) / ranks.cache_name, "TIKTOKEN_CACHE_DIR"),
            (Path(cache) / f"{name}.tiktoken", "TIKTOKEN_CACHE_DIR"),
        ]
    places.append((BUNDLED_RANKS / f"{name}.tiktoken", None))
    return next((place for place in places if place[0].is_file()), None)


def _verify(name: str, path: Path, variable: str | None = None) -> bytes:
    """The bytes of ``path``, once their SHA-256 is the official one for ``name``.

    A copy found through an environment ``variable`` that cannot be read or has another hash
    is a :class:`TokenizerFileError` naming the variable (its user put it there); the copy
    shipped with ctxasm is a :class:`TokenizerError` (the install is broken)."""
    from ctxasm.tokens.files import read_tokenizer_file

    try:
        data = read_tokenizer_file(path)
    except TokenizerError as error:
        if variable is None:
            raise
        raise TokenizerFileError(f"{variable}: {error.message}", field=variable) from None
    digest = hashlib.sha256(data).hexdigest()
    expected = OFFICIAL_RANKS[name].sha256
    if digest == expected:
        return data
    message = (
        f"{path} is not the official {name} rank file: its SHA-256 is {digest}, expected {expected}"
    )
    if variable is None:
        raise TokenizerError(f"{message}; reinstall ctxasm")
    raise TokenizerFileError(
        f"{variable}: {message}; replace it with the file published by OpenAI, or remove it "
        "to use the copy shipped with ctxasm",
        field=variable,
    )


def _build(name: str, data: bytes) -> tiktoken.Encoding:
    """The encoding from the verified bytes of its rank file.

    Each line of an official file is a token in base64 and its rank, and the ranks run 0, 1, 2,
    ... in file order (the SHA-256 pins the file, and a test checks the order), so only the
    tokens are decoded: several times faster than tiktoken's own reader, which would also read
    the file and check its hash a second time.
    """
    import tiktoken

    spec = OFFICIAL_RANKS[name]
    tokens = data.split()[0::2]
    ranks = dict(zip(map(binascii.a2b_base64, tokens), range(len(tokens)), strict=True))
    return tiktoken.Encoding(
        name, pat_str=spec.pattern, mergeable_ranks=ranks, special_tokens=dict(spec.special)
    )


def load_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding ``name``, from a verified local file when there is one."""
    loaded = _LOADED.get(name)
    if loaded is not None:
        return loaded
    with _LOAD_LOCK:
        if name in _LOADED:
            return _LOADED[name]
        if name not in OFFICIAL_RANKS:
            raise TokenizerError(
                f"unknown tiktoken encoding {name!r}; ctxasm supports "
                f"{', '.join(sorted(OFFICIAL_RANKS))}"
            )
        found = _find_rank_file(name)
        encoding = _download(name) if found is None else _build(name, _verify(name, *found))
        _LOADED[name] = encoding
        return encoding


def _download(name: str) -> tiktoken.Encoding:
    import tiktoken

    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken raises whatever its HTTP client raised
        shipped = BUNDLED_RANKS / f"{name}.tiktoken"
        raise TokenizerError(
            f"cannot load the {name} tokenizer: no local rank file and the download failed "
            f"({type(exc).__name__}: {exc}). ctxasm ships {shipped}, which is missing from "
            f"this install: reinstall ctxasm, or set CTXASM_TIKTOKEN_DIR to a folder holding "
            f"{name}.tiktoken (see docs/tokenizers.md)."
        ) from None


class TiktokenTokenizer:
    """Exact counts with one of OpenAI's tiktoken encodings (loaded on first use), by the
    backend :mod:`ctxasm.tokens.fastokens_source` chooses; the name, the counts and the
    properties below are the encoding's, whatever the backend."""

    exact = True
    # In o200k and cl100k no pre-tokenizer piece contains a newline followed by a backtick: a
    # newline ends a whitespace piece or trails a punctuation piece, which may only continue
    # with newlines (or "/" in o200k). Tokens never cross pieces, so counts add up across it.
    splits_before_fence = True
    # ... and a space after a non-whitespace character always starts a new piece, as does a
    # character after a newline other than white space and "/" (a piece takes newlines only at
    # its end, and only o200k's punctuation piece goes on past them, with "/").
    splits_at_spaces = True

    @property
    def slash_runs(self) -> bool:
        """Whether a piece may run on through slashes and line breaks after punctuation:
        o200k's may (``[\\r\\n/]*``), cl100k's and the older encodings' take line breaks
        only, which are white space (see :mod:`ctxasm.tokens.runs`)."""
        return self.encoding.startswith("o200k")

    def __init__(self, encoding: str) -> None:
        if encoding not in OFFICIAL_RANKS:
            raise TokenizerError(
                f"unknown tiktoken encoding {encoding!r}; ctxasm supports "
                f"{', '.join(sorted(OFFICIAL_RANKS))}"
            )
        self.encoding = encoding
        self.name = f"tiktoken:{encoding}"

    def count(self, text: str) -> int:
        # Passage text is data: special-token strings in it are counted as plain text.
        fast = fast_bpe(self.name, self._fast_source)
        if fast is not None:
            counted = fast.count(text)
            if counted is not None:
                return counted
        encoding = load_encoding(self.encoding)
        try:
            return len(encoding.encode_ordinary(text))
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # tiktoken's Rust core panics (a BaseException) on some input
            raise UntokenizableError(
                f"a text of {len(text):,} characters could not be tokenized with {self.encoding} "
                f"({type(exc).__name__})"
            ) from None

    def _fast_source(self) -> FastBpeSource | None:
        found = _find_rank_file(self.encoding)
        if found is None:
            return None  # tiktoken downloads it
        path = found[0]
        ranks = _verify(self.encoding, *found)
        return FastBpeSource(str(path), ranks, preset=self.encoding)

    def lower_bound(self, text: str) -> int:
        """See :func:`space_lower_bound` (the longest token of both encodings covers 128 bytes)."""
        return space_lower_bound(text, _MAX_TOKEN_BYTES)

    def count_upto(self, text: str, limit: int) -> int:
        """See :func:`count_upto_at_spaces`."""
        return count_upto_at_spaces(self.count, text, limit)


def space_lower_bound(text: str, max_token_bytes: int) -> int:
    """A count ``text`` is never below, for an encoding whose pattern always starts a new
    pre-tokenizer piece at a space that follows a non-whitespace character (o200k, cl100k and
    the open-weight encodings of :mod:`ctxasm.tokens.bpe`).

    Tokens never span two pieces. Counting spaces, minus two per double space (so a run of
    spaces adds at most one), minus every space that follows other whitespace, never exceeds
    the pieces; a token also covers at most ``max_token_bytes`` bytes of UTF-8. Both cost a
    few string scans, no tokenizing."""
    spaces = text.count(" ") - 2 * text.count("  ")
    for other in _ASCII_SPACE_NEIGHBOURS:
        spaces -= text.count(other)
    if not text.isascii():
        for other in _UNICODE_SPACES:
            if other in text:  # rare: pay for the pair count only when the space is there
                spaces -= text.count(other + " ")
    if spaces * max_token_bytes >= 4 * len(text):
        return spaces  # at most 4 bytes a character: the byte bound cannot be larger
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return max(spaces, -(-size // max_token_bytes))


def count_upto_at_spaces(count: Callable[[str], int], text: str, limit: int) -> int:
    """``count(text)`` when it is at most ``limit``; otherwise some count above ``limit``
    (never above the exact one), found by counting only a prefix.

    For encodings like those of :func:`space_lower_bound`: the prefix ends before a space that
    follows a non-whitespace character, which always starts a new pre-tokenizer piece, so
    ``count(text) == count(head) + count(tail)``.
    """
    start = (limit + 1) * _PREFIX_CHARS_PER_TOKEN
    if len(text) <= start:
        return count(text)
    cut = text.find(" ", start)
    while cut != -1 and text[cut - 1].isspace():
        cut = text.find(" ", cut + 1)
    if cut == -1:
        return count(text)
    head = count(text[:cut])
    return head if head > limit else head + count(text[cut:])
