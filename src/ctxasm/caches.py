"""One reset for the caches the pipeline keeps across assemblies.

Lexical keys, dedup shingles and guard scans are cached by text for the life of the process
(retrieval returns the same chunks again and again). :func:`clear_caches` forgets them, so a
measurement can start cold; token counts are cached per counter (``TokenCounter.clear``).
"""

from __future__ import annotations

import sys

__all__ = ["clear_caches"]


def clear_caches() -> None:
    """Forget the cached words, keys, sentence splits, shingles, guard scans, the sentences'
    lemmas and the neutralised passage texts."""
    from ctxasm import lexical
    from ctxasm.stages import dedup_near

    dedup_near.clear_caches()
    lexical.clear_caches()
    # Modules imported when a request first needs them; before that they have nothing cached.
    guard = sys.modules.get("ctxasm.stages.guard")
    if guard is not None:
        guard.clear_caches()
    compression = sys.modules.get("ctxasm.stages.compression")
    if compression is not None:
        compression.sentence_lemmas.cache_clear()
    labels = sys.modules.get("ctxasm.formatting.labels")
    if labels is not None:
        labels.neutral_text.cache_clear()
