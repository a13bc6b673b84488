"""Content keys: how every cache of ctxasm keys a text (token counts, term counts, exact
duplicates). A 128-bit xxh3 hash of the text's UTF-8 bytes (lone surrogates, which JSON can
carry, included): the caches hold no text, and collisions are out of reach.

Caches of what a text yields (its phrase key, words, sentences, shingles, guard scan) keep the
text itself as their key, as :func:`functools.lru_cache` does, and a value often several times
its size (the shingles of a passage, about twenty times). Counted in entries, such a cache grows
with the passages it is given: 16,384 distinct passages of 8,000 characters held 3 GB in all.
:func:`text_cache` bounds each by the characters of the texts it holds instead, sized to what
its values weigh, so a service holds a few hundred MB at most in all of them, however many and
however long the passages it meets."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import _CacheInfo, update_wrapper
from typing import Any, ParamSpec, Protocol, TypeVar, cast

import xxhash

__all__ = [
    "CACHE_CHARS",
    "ENTRY_CHARS",
    "HEAVY_CACHE_CHARS",
    "TextCached",
    "content_key",
    "text_cache",
]

# What an entry costs besides its texts, counted as characters (the entry, its key and value
# objects).
ENTRY_CHARS = 64
# The characters a cache holds: one whose values are small or about the size of the text (a
# phrase key, sentence bounds, a scan's verdict) ...
CACHE_CHARS = 16_000_000
# ... and one whose values weigh several times the text (its words, word sets, shingles:
# about 165 KB for a passage of 8,000 characters).
HEAVY_CACHE_CHARS = 4_000_000

_MISSING = object()
_P = ParamSpec("_P")
_R_co = TypeVar("_R_co", covariant=True)


def content_key(text: str) -> int:
    """The 128-bit content key of ``text``."""
    return xxhash.xxh3_128_intdigest(text.encode("utf-8", "surrogatepass"))


class TextCached(Protocol[_P, _R_co]):
    """A function cached by :func:`text_cache`."""

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R_co: ...

    def cache_clear(self) -> None: ...

    def cache_info(self) -> _CacheInfo: ...

    def cache_chars(self) -> int: ...


def text_cache(
    max_chars: int, *, texts: int = 1
) -> Callable[[Callable[_P, _R_co]], TextCached[_P, _R_co]]:
    """A cache for a function whose first ``texts`` arguments are texts
    (all its arguments hashable; a call that names one is computed and not kept), holding at
    most ``max_chars`` characters of them (each entry counted as its texts' length plus
    ``ENTRY_CHARS``): many short texts, or a few long ones; a call longer than the whole cache
    is not kept. The oldest entries go first. Safe to call from several threads (a value may
    then be computed twice, never mixed up). ``cache_info()`` (``maxsize``: ``max_chars``;
    hits are not counted) and ``cache_clear()`` as :func:`functools.lru_cache` has them."""

    def decorate(function: Callable[_P, _R_co]) -> TextCached[_P, _R_co]:
        compute: Callable[..., Any] = function
        # Insertion order is the order of eviction: the first kept goes first (as least
        # recently used would, but for a hit moving nothing: a hit costs one lookup).
        entries: OrderedDict[Any, Any] = OrderedDict()
        counts = [0, 0]  # characters held, misses
        lock = threading.Lock()

        def size(key: Any) -> int:
            # a call of one text is keyed by the text, any other by its arguments
            return ENTRY_CHARS + (len(key) if type(key) is str else sum(map(len, key[:texts])))

        def cached(*args: Any, **named: Any) -> Any:
            if named:  # a call with keywords (none of ctxasm's own) is computed, not kept
                return compute(*args, **named)
            key = args[0] if len(args) == 1 and type(args[0]) is str else args
            value = entries.get(key, _MISSING)
            if value is not _MISSING:
                return value
            value = compute(*args)
            cost = size(key)
            with lock:
                counts[1] += 1
                if cost <= max_chars and key not in entries:
                    entries[key] = value
                    counts[0] += cost
                    while counts[0] > max_chars:
                        counts[0] -= size(entries.popitem(last=False)[0])
            return value

        def cache_clear() -> None:
            with lock:
                entries.clear()
                counts[:] = [0, 0]

        def cache_info() -> _CacheInfo:
            return _CacheInfo(0, counts[1], max_chars, len(entries))

        def held() -> int:
            """The characters the cache counts as held (its entries' texts and overhead)."""
            return counts[0]

        update_wrapper(cached, function)
        setattr(cached, "cache_clear", cache_clear)  # noqa: B010 - a function's attribute
        setattr(cached, "cache_info", cache_info)  # noqa: B010
        setattr(cached, "cache_chars", held)  # noqa: B010
        return cast(TextCached[_P, _R_co], cached)

    return decorate
