"""Finding the guard's concepts in folded text, and scoring them with the lexicon's rules.

``concept_events`` walks the words of a text once: each word is looked up whole and by its
stems (bounded by the longest stem), as written, with look-alike letters folded to Latin and
with leetspeak digits read as letters; letters spelled out one at a time (``i g n o r e``) are
read as one word. Chinese and Japanese terms are found as substrings. ``score_events`` sweeps
the events once, remembering where each concept was last seen. Both are linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from itertools import compress, count, repeat

from ctxasm.stages.guard_lexicon import (
    CJK_LANGUAGES,
    LEXICON,
    PAIR_RULES,
    SINGLE_RULES,
    WINDOW,
)
from ctxasm.stages.guard_text import CONFUSABLES, LEET

__all__ = ["Hit", "clear_word_cache", "concept_events", "score_events"]

# Words (letters, digits and the combining marks that \\w leaves out, such as Indic vowel
# signs), sentence ends, "://" and "@": one pass, no rescanning.
# Apostrophes and hyphens only inside a word: "'Reveal" is "reveal". The danda (U+0964,
# U+0965) ends a sentence, though it lies in the Devanagari block.
_TOKEN = re.compile(
    r"[\w\u0900-\u0963\u0966-\u0dff\u064b-\u065f\u0670]"
    r"(?:[\w'\u2019\-\u0900-\u0963\u0966-\u0dff\u064b-\u065f\u0670]*"
    r"[\w\u0900-\u0963\u0966-\u0dff\u064b-\u065f\u0670])?"
    r"|://|[.!?;@\u3002\u061b\u0964\u0965\u06d4]"
)
_TOOL_MARK = " tool"  # never a word of the text: words have no spaces
_SPECIAL_WORDS = {"://": "URL", "@": "MAIL", _TOOL_MARK: "TOOL"}
_SPECIAL_WORDS.update(dict.fromkeys(".!?;\u3002\u061b\u0964\u0965\u06d4", ""))
# The same on ASCII text (where \\w is [A-Za-z0-9_]), faster.
_ASCII_TOKEN = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_'\-]*[A-Za-z0-9_])?|://|[.!?;@]")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
# snake_case names of tools an agent may call: a verb, an underscore, an object.
_TOOL_VERBS = frozenset(
    "send delete remove http post get fetch write read exec execute run transfer upload "
    "download email call invoke create update drop grant shell".split()
)

Event = tuple[int, str]  # (word index, concept); concept "" ends a sentence


@dataclass(frozen=True, slots=True)
class Hit:
    """One rule that fired: its weight, and the check it is evidence for."""

    rule: str
    weight: float
    check: str


@dataclass(frozen=True)
class _Index:
    exact: dict[str, list[tuple[tuple[str, ...], str]]]
    stems: dict[str, list[tuple[tuple[str, ...], str]]]
    gate: frozenset[str]
    prefixes: frozenset[str]
    stem_lengths: tuple[int, ...]
    cjk: re.Pattern[str] | None
    cjk_concepts: dict[str, tuple[str, ...]]


@cache
def _index() -> _Index:
    exact: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    stems: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    cjk_concepts: dict[str, set[str]] = {}
    for language, concepts in LEXICON.items():
        for concept, terms in concepts.items():
            for term in terms.split():
                if language in CJK_LANGUAGES:
                    cjk_concepts.setdefault(term, set()).add(concept)
                    continue
                first, *rest = term.split("_")
                table = stems if first.endswith("*") else exact
                table.setdefault(first.rstrip("*"), []).append((tuple(rest), concept))
    for word, concept in _SPECIAL_WORDS.items():
        exact.setdefault(word, []).append(((), concept))
    cjk = sorted(cjk_concepts, key=len, reverse=True)
    return _Index(
        exact=exact,
        stems=stems,
        gate=frozenset(stem[:3] for stem in stems),
        prefixes=frozenset(stem[:k] for stem in stems for k in range(1, len(stem) + 1)),
        stem_lengths=tuple(sorted({len(stem) for stem in stems}, reverse=True)),
        cjk=re.compile("|".join(map(re.escape, cjk))) if cjk else None,
        cjk_concepts={term: tuple(sorted(c)) for term, c in cjk_concepts.items()},
    )


def _forms(word: str) -> tuple[str, ...]:
    """The spellings of one word to look up: as written, Latin-folded, de-leeted."""
    if word.isalpha() and word.isascii():
        return (word,)
    forms = [word]
    if not word.isascii():
        latin = word.translate(CONFUSABLES)
        if latin != word and latin.isascii():
            forms.append(latin.lower())
    if any(c.isdigit() for c in word) and any(c.isalpha() for c in word):
        forms.append(word.translate(LEET))
    return tuple(forms)


def _matches(pattern: str, forms: tuple[str, ...]) -> bool:
    if pattern.endswith("*"):
        return any(form.startswith(pattern[:-1]) for form in forms)
    return pattern in forms


def _spelling(word: str) -> tuple[str, ...]:
    return (word,) if word.isalpha() and word.isascii() else _forms(word)


def _words(text: str) -> list[str]:
    """The words of ``text`` in order, with sentence ends, ``://``, ``@`` and a marker before
    a snake_case tool name as words of their own; runs of single letters ("i g n o r e") are
    joined into one word."""
    tokens: list[str] = (_ASCII_TOKEN if text.isascii() else _TOKEN).findall(text)
    if "_" in text or _letter_pairs(tokens):
        return _joined(tokens)
    return tokens  # the common case: nothing to split or join


def _letter_pairs(tokens: list[str]) -> bool:
    """Whether two single letters follow each other in ``tokens`` (found at C speed)."""
    try:
        lengths = bytes(map(len, tokens))
    except ValueError:  # a token of 256 characters or more
        lengths = bytes(map(min, map(len, tokens), repeat(255)))
    at = lengths.find(b"\x01\x01")
    while at != -1:
        if tokens[at].isalpha() and tokens[at + 1].isalpha():
            return True
        at = lengths.find(b"\x01\x01", at + 1)
    return False


def _joined(tokens: list[str]) -> list[str]:
    words: list[str] = []
    run = ""
    for token in tokens:
        if len(token) == 1 and token.isalpha():
            run += token
            continue
        if run:
            words.append(run)
            run = ""
        if "_" in token:
            verb, _, rest = token.partition("_")
            if rest and verb in _TOOL_VERBS:
                words.append(_TOOL_MARK)
            words.extend(part for part in token.split("_") if part)
        else:
            words.append(token)
    if run:
        words.append(run)
    return words


def _lookups(forms: tuple[str, ...], index: _Index) -> Iterator[tuple[tuple[str, ...], str]]:
    for form in forms:
        yield from index.exact.get(form, ())
        if form[:3] in index.gate or form[:2] in index.gate:
            reach = 1  # form[:reach] starts some stem: no longer stem can match
            while reach < len(form) and form[: reach + 1] in index.prefixes:
                reach += 1
            for length in index.stem_lengths:
                if length <= reach:
                    yield from index.stems.get(form[:length], ())


# What a word starts: (the words that must follow, concept) for each term it can begin, empty
# for most words. Kept per word across texts (cleared when it grows past a bound): the scan of
# ordinary text is then a dictionary look-up per word, done by ``map`` at C speed.
Entry = tuple[tuple[tuple[str, ...], str], ...]
_WORD_CACHE: dict[str, Entry] = {}
_MAX_CACHED_WORDS = 65_536
_MAX_CACHED_WORD = 64  # characters; longer words are looked up every time


def clear_word_cache() -> None:
    """Forget the looked-up words (for cold-start measurements)."""
    _WORD_CACHE.clear()


def _entry(word: str, index: _Index) -> Entry:
    if (
        word.isascii()
        and word.isalpha()
        and word not in index.exact
        and word[:3] not in index.gate
        and word[:2] not in index.gate
    ):
        return ()  # the common case: a plain word that starts no term
    found = list(_lookups(_spelling(word), index))
    if index.cjk is not None and not word.isascii() and _CJK.search(word):
        for match in index.cjk.finditer(word):
            found.extend(((), concept) for concept in index.cjk_concepts[match.group()])
    return tuple(found)


def _entries(words: list[str], index: _Index) -> list[Entry]:
    """The entry of each word, from the cache, looking up (and caching) the words not in it."""
    cache = _WORD_CACHE
    entries: list[Entry | None] = list(map(cache.get, words))
    if None not in entries:
        return entries  # type: ignore[return-value]
    missing = set(words).difference(cache)
    if len(cache) + len(missing) > _MAX_CACHED_WORDS:
        cache.clear()
    found = {word: _entry(word, index) for word in missing}
    cache.update(found)
    if max(map(len, missing), default=0) > _MAX_CACHED_WORD:
        for word in missing:
            if len(word) > _MAX_CACHED_WORD:
                cache.pop(word, None)
    entries = list(map(cache.get, words))
    if None not in entries:
        return entries  # type: ignore[return-value]
    return [
        entry if entry is not None else found[word] if word in found else _entry(word, index)
        for word, entry in zip(words, entries, strict=True)
    ]


def concept_events(text: str) -> list[Event]:
    """Every place (a word index) a concept of the lexicon occurs in folded ``text``, in
    order; concept ``""`` marks the end of a sentence."""
    index = _index()
    words = _words(text)
    entries = _entries(words, index)
    events: list[Event] = []
    last = len(words) - 1
    for i in compress(count(), entries):  # the words that start a term
        for rest, concept in entries[i]:
            if rest:
                if i + len(rest) > last:
                    continue
                first, after = rest[0], words[i + 1]
                if first != after and first[-1] != "*" and after.isalpha() and after.isascii():
                    continue  # the common case: a plain next word that is not the term's
                if not _follows(words, i, rest):
                    continue
            events.append((i, concept))
    return events


def _follows(words: list[str], i: int, rest: tuple[str, ...]) -> bool:
    """Whether the words after ``words[i]`` spell ``rest`` (the words of a term after its
    first); a plain word is only itself, so most comparisons are one string equality."""
    if i + len(rest) >= len(words):
        return False
    for pattern in rest:
        i += 1
        word = words[i]
        if word == pattern or (pattern[-1] == "*" and word.startswith(pattern[:-1])):
            continue
        if (word.isascii() and word.isalpha()) or not _matches(pattern, _forms(word)):
            return False
    return True


@cache
def _rules() -> tuple[dict[str, Hit], dict[str, tuple[tuple[str, Hit], ...]]]:
    singles = {c: Hit(c, w, check) for c, w, check in SINGLE_RULES}
    pairs: dict[str, list[tuple[str, Hit]]] = {}
    for a, b, weight, check in PAIR_RULES:
        hit = Hit(f"{a}+{b}", weight, check)
        pairs.setdefault(a, []).append((b, hit))
        pairs.setdefault(b, []).append((a, hit))
    return singles, {c: tuple(v) for c, v in pairs.items()}


def score_events(events: Iterable[Event]) -> list[Hit]:
    """The rules ``events`` (in word order) satisfy, each once."""
    singles, pairs = _rules()
    last: dict[str, int] = {}
    fired: dict[str, Hit] = {}
    for offset, concept in events:
        if not concept:  # a sentence ended
            last.clear()
            continue
        single = singles.get(concept)
        if single is not None:
            fired.setdefault(single.rule, single)
        for other, hit in pairs.get(concept, ()):
            seen = last.get(other)
            if seen is not None and offset - seen <= WINDOW:
                fired.setdefault(hit.rule, hit)
        last[concept] = offset
    return list(fired.values())
