"""Content keys: how every cache of ctxasm keys a text (token counts, term counts, exact
duplicates). A 128-bit xxh3 hash of the text's UTF-8 bytes (lone surrogates, which JSON can
carry, included): the caches hold no text, and collisions are out of reach."""

from __future__ import annotations

import xxhash

__all__ = ["content_key"]


def content_key(text: str) -> int:
    """The 128-bit content key of ``text``."""
    return xxhash.xxh3_128_intdigest(text.encode("utf-8", "surrogatepass"))
