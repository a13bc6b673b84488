"""Content keys: how every cache of ctxasm keys a text (token counts, term counts, exact
duplicates). A 128-bit xxh3 hash of the text's UTF-8 bytes (lone surrogates, which JSON can
carry, included): the caches hold no text, and collisions are out of reach.

Caches of what a text yields (its phrase key, sentences, shingles, guard scan) keep the text
itself as their key, as :func:`functools.lru_cache` does. They are bounded by the characters
they hold as well as by their entries (:func:`text_cache`): a service takes passages of up to
200,000 characters, and 16,384 of them would hold 3 GB in one cache, however soon each request
that sent them was answered."""

from __future__ import annotations

from collections.abc import Callable
from functools import _CacheInfo, lru_cache, update_wrapper
from typing import Any, ParamSpec, Protocol, TypeVar, cast

import xxhash

__all__ = ["LONG_TEXT", "LONG_TEXTS", "TextCached", "content_key", "text_cache"]

# A call whose texts are longer than this (characters in all) is cached among the last
# LONG_TEXTS such calls only; shorter ones share the cache's own entries.
LONG_TEXT = 8192
LONG_TEXTS = 32

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


def text_cache(
    maxsize: int, *, texts: int = 1
) -> Callable[[Callable[_P, _R_co]], TextCached[_P, _R_co]]:
    """:func:`functools.lru_cache` of ``maxsize`` entries for a function whose first ``texts``
    positional arguments are texts (the rest positional too): calls whose texts hold at most
    ``LONG_TEXT`` characters together use those entries, longer ones a cache of their own of
    ``LONG_TEXTS`` entries. So the cache holds at most ``maxsize * LONG_TEXT`` characters of
    short texts, and long ones are still computed once per request that reads them several
    times. ``cache_clear()`` empties both."""

    def decorate(function: Callable[_P, _R_co]) -> TextCached[_P, _R_co]:
        short: Any = lru_cache(maxsize)(function)
        long: Any = lru_cache(LONG_TEXTS)(function)
        cached: Callable[..., Any]
        if texts == 1:

            def cached(text: str, *rest: object) -> Any:
                return short(text, *rest) if len(text) <= LONG_TEXT else long(text, *rest)

        else:

            def cached(*args: Any) -> Any:
                size = sum(len(text) for text in args[:texts])
                return short(*args) if size <= LONG_TEXT else long(*args)

        def cache_clear() -> None:
            short.cache_clear()
            long.cache_clear()

        def cache_info() -> _CacheInfo:
            """The two caches' statistics together (``maxsize`` the short texts' own)."""
            first, second = short.cache_info(), long.cache_info()
            return _CacheInfo(
                first.hits + second.hits,
                first.misses + second.misses,
                first.maxsize,
                first.currsize + second.currsize,
            )

        update_wrapper(cached, function)
        setattr(cached, "cache_clear", cache_clear)  # noqa: B010 - a function's attribute
        setattr(cached, "cache_info", cache_info)  # noqa: B010
        return cast(TextCached[_P, _R_co], cached)

    return decorate
