"""The tokenizer protocol and the content-hash count cache every stage shares."""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

import xxhash

__all__ = ["TokenCounter", "Tokenizer"]


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens the way one model family does.

    ``exact`` is false for estimates. ``lower_bound`` is a count the text can never be below,
    computed much faster than ``count`` (0 is always correct); selection uses it to skip
    passages that cannot fit without tokenizing them.
    """

    name: str
    exact: bool

    def count(self, text: str) -> int: ...

    def lower_bound(self, text: str) -> int: ...


class TokenCounter:
    """A tokenizer with a bounded cache of counts keyed by a 128-bit hash of the text.

    Retrieval returns the same chunks again and again, so counts are looked up by content, not
    by object. The cache is shared by every assembly that uses the same tokenizer, and holds no
    text, only ``hash -> count``.
    """

    def __init__(self, tokenizer: Tokenizer, max_entries: int = 500_000) -> None:
        self.tokenizer = tokenizer
        self.max_entries = max_entries
        self._counts: dict[int, int] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.tokenizer.name

    @property
    def exact(self) -> bool:
        return self.tokenizer.exact

    def count(self, text: str) -> int:
        """The number of tokens in ``text``, from the cache when it has been counted before."""
        if not text:
            return 0
        key = xxhash.xxh3_128_intdigest(text.encode("utf-8", "surrogatepass"))
        cached = self._counts.get(key)
        if cached is not None:
            return cached
        counted = self.tokenizer.count(text)
        with self._lock:
            if len(self._counts) >= self.max_entries:
                # Drop the oldest half: dicts keep insertion order, so this is FIFO eviction.
                for stale in list(self._counts)[: self.max_entries // 2]:
                    del self._counts[stale]
            self._counts[key] = counted
        return counted

    def cached(self, text: str) -> int | None:
        """The count of ``text`` if it has been counted before, else ``None`` (no tokenizing)."""
        if not text:
            return 0
        return self._counts.get(xxhash.xxh3_128_intdigest(text.encode("utf-8", "surrogatepass")))

    def lower_bound(self, text: str) -> int:
        """A count that ``count(text)`` is never below, computed without tokenizing."""
        return self.tokenizer.lower_bound(text) if text else 0

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()

    def __len__(self) -> int:
        return len(self._counts)
