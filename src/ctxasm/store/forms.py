"""The other forms of a question's words, found in a store's own vocabulary: "meal" searches
"meals" too, "park" "parking", "teach" "taught", as the assembler counts them (see
:mod:`ctxasm.stems`). Each store gives only its SQL; what is looked up and kept is here.

A store's vocabulary is its ``class_terms`` (one row per word and access class), whose key
``(term, class_id)`` orders it by word: the words that start with a search key of a query term
are one range of that key, ``[key, after(key))`` (:func:`form_ranges`), read in the index. Of
the words read, those with the term's stem are its forms (:func:`with_forms`), each then
searched as a term of its own, with its own statistics.

Only the rows of the classes the principal can see are read: a document it cannot read adds
no form, so it changes neither its results nor its scores (``hidden_matches`` alone, whose
answer is about the others, reads every class's). And a question's forms are bounded by the
question, not the vocabulary: a short key ("go", "e") starts a large share of it, so at most
:data:`KEY_WORDS` distinct words are read in each key's range, the first in byte order, and
:data:`QUERY_WORDS` for all the keys of a question together.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ctxasm.stems import search_keys, stem

__all__ = ["KEY_WORDS", "QUERY_WORDS", "form_ranges", "with_forms"]

KEY_WORDS = 2_000  # distinct words read in one search key's range at most
QUERY_WORDS = 20_000  # ... in all the ranges of one question


def form_ranges(terms: Sequence[str]) -> tuple[list[tuple[str, str]], int]:
    """Where the forms of ``terms`` lie in a vocabulary sorted by code point (as both stores
    compare words: SQLite's BINARY, PostgreSQL's ``"C"``, are UTF-8's byte order, which is
    code point order): one range ``[first, after)`` per distinct search key, and how many
    distinct words to read in each (:data:`KEY_WORDS`, less where a question has so many keys
    that :data:`QUERY_WORDS` would be passed; 0: none)."""
    keys = sorted({key for term in terms for key in search_keys(term)})
    ranges = [(key, _after(key)) for key in keys]
    return ranges, min(KEY_WORDS, QUERY_WORDS // max(len(ranges), 1))


def _after(key: str) -> str:
    """The first string after every string that starts with ``key``: its last character one
    code point further (past the surrogates, which UTF-8 cannot hold; a key is made of word
    characters, so its last one is never the last code point)."""
    last = ord(key[-1]) + 1
    if 0xD800 <= last < 0xE000:
        last = 0xE000
    return key[:-1] + chr(last)


def with_forms(terms: Sequence[str], vocabulary: Iterable[str]) -> list[str]:
    """``terms``, each followed by its forms among the words of ``vocabulary`` (read in the
    ranges of :func:`form_ranges`): those with its stem that start with one of its search
    keys, as :func:`ctxasm.lexical.term_counts` counts them. Each word once, in order."""
    by_stem: dict[str, set[str]] = {}
    for word in set(vocabulary):
        by_stem.setdefault(stem(word), set()).add(word)
    found: dict[str, None] = {}
    for term in terms:
        found[term] = None
        keys = search_keys(term)
        for form in sorted(by_stem.get(stem(term), ())):
            if form.startswith(keys):
                found.setdefault(form, None)
    return list(found)
