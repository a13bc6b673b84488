"""Exact counts from a SentencePiece ``tokenizer.model`` (the ``sentencepiece`` library).

Mistral's first tokenizers (v1 to v7 before Tekken) and Gemma's are SentencePiece models. A text
is encoded as SentencePiece encodes any text: control symbols (``<s>``, ``[INST]``) written in it
are plain text; user-defined symbols (Mistral's ``[REF]``) are one token, as in the model. The
encoding of a text alone starts with the model's dummy-prefix space, as each message's text does
when a chat is encoded part by part (mistral-common's instruct tokenizers do so).

A model with ``seams`` (the pinned Mistral files, whose hashes fix what they hold) has no piece
that joins a space to a character before it other than another space: each is a run of spaces,
or a run of spaces followed by other characters, and its normalizer only writes spaces as
"\u2581" and puts one before the text. BPE merges two neighbouring pieces only into a piece of
the model, so a space after a character other than white space or "\u2581" is never merged
with what precedes it, and ``count(a + b) == count(a) + count_continued(b)`` where ``b`` starts
with such a space: ``count_continued`` is the count without the leading "\u2581". A text that
grows at its end (the builder's context) is then counted from its last such space on
(:class:`ctxasm.tokens.base.GrowingCount`), not whole for each piece tried.
"""

from __future__ import annotations

import re
import threading
from functools import partial
from typing import Any

from ctxasm.errors import TokenizerError, install_hint
from ctxasm.tokens.files import TokenizerFile
from ctxasm.tokens.tiktoken_source import space_lower_bound

__all__ = ["SentencePieceTokenizer"]

# Appended to a serialized ModelProto: its field 3 (normalizer_spec) again, holding only field 3
# (add_dummy_prefix) = false. Protocol buffers merge a message field given twice, the later
# scalar winning, so this is the same model without the dummy prefix.
_NO_DUMMY_PREFIX = b"\x1a\x02\x18\x00"


class SentencePieceTokenizer:
    """Counts with the SentencePiece model in ``file`` (read, checked and loaded on first use)."""

    exact = True

    def __init__(self, name: str, file: TokenizerFile, *, seams: bool = False) -> None:
        self.name = name
        self.file = file
        self.seams = seams
        self._processor: Any = None
        self._continuing: Any = None
        self._data = b""
        self._widest: int | None = None
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
            extra = self.file.extra
            install = install_hint(extra) if extra else "pip install sentencepiece"
            raise TokenizerError(
                f"counting with {self.file.name} needs the sentencepiece library: {install}"
            ) from None
        data, processor = self.file.load(partial(_loaded, sentencepiece, self.file.label))
        if self.seams:
            self._data = data
        return processor

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._load().encode(text))

    def count_continued(self, text: str) -> int:
        """The count of ``text`` where it follows a seam of a longer text (see the module
        docstring): encoded without the model's leading space. Only for a model with
        ``seams``."""
        if not self.seams:
            raise TokenizerError(f"{self.name} has no seams: count the whole text")
        if not text:
            return 0
        processor = self._continuing
        if processor is None:
            self._load()
            with self._lock:
                if self._continuing is None:
                    import sentencepiece

                    data = self._data + _NO_DUMMY_PREFIX
                    self._continuing = _processor(sentencepiece, data, self.file.label)
                processor = self._continuing
        return len(processor.encode(text))

    def lower_bound(self, text: str) -> int:
        """A count ``text`` is never below: with ``seams``, one token per seam at least (the
        spaces ``space_lower_bound`` counts, less those after "\u2581") and one per as many
        bytes as the longest piece covers; else 1 (a piece may span spaces)."""
        if not text:
            return 0
        if not self.seams:
            return 1
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        by_spaces = space_lower_bound(text, 4 * len(text) + 1)  # the spaces alone (or 1)
        if "\u2581" in text:  # read as a space: one byte of a piece, not three
            size -= 2 * text.count("\u2581")
            by_spaces -= text.count("\u2581 ")
        return max(1, by_spaces, -(-size // self._most_bytes()))

    def _most_bytes(self) -> int:
        """The most bytes of a text one piece covers (its "\u2581" a space; a byte piece one)."""
        if self._widest is None:
            processor = self._load()
            self._widest = max(
                len(processor.id_to_piece(i).replace("\u2581", " ").encode("utf-8"))
                for i in range(processor.get_piece_size())
                if not processor.is_byte(i)
            )
        return self._widest


def _loaded(sentencepiece: Any, label: str, data: bytes) -> tuple[bytes, Any]:
    return data, _processor(sentencepiece, data, label)


def _processor(sentencepiece: Any, data: bytes, label: str) -> Any:
    try:
        processor = sentencepiece.SentencePieceProcessor(model_proto=data)
        # An empty file loads, and then fails on every text: refused here, naming the file.
        processor.encode("a")
    except Exception as exc:  # the C++ core raises RuntimeError or OSError
        raise TokenizerError(
            f"{label} is not a valid SentencePiece model: {_plain_reason(exc)}"
        ) from None
    return processor


# The C++ core's messages start with an absl status name and may hold the source line of the
# check that failed ("INTERNAL: src/sentencepiece_processor.cc(109) [model_proto->Parse...]"):
# noise to a reader, who needs to know what is wrong with the file.
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_CHECK_LOCATION = re.compile(r"\S+\.cc\(\d+\) \[")


def _plain_reason(exc: Exception) -> str:
    """What the C++ core said about a file, without its status name and source locations."""
    text = _STATUS_PREFIX.sub("", str(exc).strip(), count=1)
    if text == "Model is not initialized.":
        return "it is empty or holds no model"
    if not text or _CHECK_LOCATION.search(text):
        return "its bytes do not parse as a model protobuf"
    return text
