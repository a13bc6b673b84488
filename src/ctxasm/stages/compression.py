"""The compression slot: query-aware extractive compression at sentence level.

A compressed passage keeps whole sentences in their original order and marks every gap with
``[…]``; it never cuts inside a sentence (see :func:`ctxasm.lexical.sentence_spans`) and never
touches the ``[Source N]`` header, which the format adds around the text.

With ``mode="fill"`` selection first takes whole passages; then every passage that did not fit
whole is offered again, compressed, in rank order, so the tokens left over admit more evidence
without cutting what already fit. With ``mode="all"`` every candidate is compressed before
selection, which fits the most passages into a tiny budget. ``mode="auto"`` (the default)
chooses ``all`` when the budget holds fewer than ``min_whole_passages`` typical passages and
``fill`` otherwise: on HotpotQA, ``all`` keeps more evidence at 256 tokens and ``fill`` from
512 up.

A sentence matches a query word in any inflected form: words are compared by their lemma
("taught" and "teaches" by "teach"), looked up in simplemma's English dictionary, which ships
with the package (no download) and covers irregular forms that a stemmer cannot. Lookups are
cached per word and per text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from ctxasm.data import Candidate, Compressed, Reason
from ctxasm.lexical import (
    entities,
    query_terms,
    sentence_spans,
    sentence_words,
    title_key,
)
from ctxasm.stages.selection_packing import Offer, Packing
from ctxasm.strategy import Strategy, require_choice, require_int, require_number

__all__ = ["ELISION", "Compressed", "Phrases", "SentenceCompression", "lemma", "sentence_lemmas"]

ELISION = "[…]"


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """The dictionary form of a lower-case English word ("taught" -> "teach", "rivers" ->
    "river"); a word the dictionary does not know comes back as it is. simplemma is imported
    here, on the first lemma asked for: a request that compresses nothing never pays for it."""
    import simplemma

    return simplemma.lemmatize(word, lang="en").lower()


@lru_cache(maxsize=8192)
def sentence_lemmas(text: str) -> tuple[frozenset[str], ...]:
    """For each sentence of ``text`` (see :func:`ctxasm.lexical.sentence_spans`), its words
    together with their lemmas, so a query word matches in either form."""
    return tuple(frozenset((*sentence, *map(lemma, sentence))) for sentence in sentence_words(text))


class Phrases:
    """Phrase keys to look for in sentences, indexed by their first word, so a sentence is
    checked with one dictionary lookup per word rather than one scan per phrase."""

    def __init__(self, phrases: Iterable[str] = ()) -> None:
        self._by_first: dict[str, set[tuple[str, ...]]] = {}
        self.update(phrases)

    def update(self, phrases: Iterable[str]) -> None:
        for phrase in phrases:
            parts = tuple(phrase.split())
            if parts:
                self._by_first.setdefault(parts[0], set()).add(parts)

    def found_in(self, sentence: Sequence[str]) -> bool:
        """Whether the word sequence ``sentence`` contains one of the phrases."""
        by_first = self._by_first
        for start, word in enumerate(sentence):
            for parts in by_first.get(word, ()):
                if tuple(sentence[start : start + len(parts)]) == parts:
                    return True
        return False


@dataclass(frozen=True)
class SentenceCompression(Strategy):
    """Keep the sentences that carry a query word or a bridge entity, plus the first
    ``lead_sentences`` (which usually name the passage's subject).

    Bridge entities are the titles of the other candidates and, in ``fill`` mode, the titles
    and named entities of the passages already kept: a sentence that mentions them links this
    passage to the others, which is what a multi-hop answer needs. A passage left with nothing
    but its lead is still offered; a passage of one sentence is never compressed. The report
    lists original and kept tokens of every compressed passage.
    """

    name: ClassVar[str] = "sentences"
    slot: ClassVar[str] = "compression"
    mode: str = "auto"
    lead_sentences: int = 1
    max_candidates: int = 16
    min_whole_passages: float = 2.5

    def __post_init__(self) -> None:
        require_choice("mode", self.mode, ("auto", "fill", "all"))
        require_number("min_whole_passages", self.min_whole_passages, low=0.0, high=1000.0)
        require_int("lead_sentences", self.lead_sentences, low=0)
        require_int("max_candidates", self.max_candidates, low=1)

    def compress(
        self, candidate: Candidate, terms: Iterable[str], bridges: Phrases | Iterable[str]
    ) -> Compressed | None:
        """``candidate`` cut to its useful sentences, or ``None`` when nothing would be cut.
        ``terms`` are query words, matched in any inflected form; ``bridges`` are phrase keys
        (names, titles) whose sentences are kept too."""
        text = candidate.text
        spans = sentence_spans(text)
        if len(spans) < 2:
            return None
        phrases = bridges if isinstance(bridges, Phrases) else Phrases(bridges)
        keep = self._useful_sentences(candidate, terms, phrases)
        if len(keep) == len(spans) or not keep:
            return None
        pieces: list[str] = []
        previous = -1
        for index in keep:
            if index != previous + 1:
                pieces.append(ELISION)
            start, end = spans[index]
            pieces.append(text[start:end].strip())
            previous = index
        if previous != len(spans) - 1:
            pieces.append(ELISION)
        shorter = candidate._replace(text=" ".join(pieces), start=None, end=None)
        return Compressed(shorter, text, len(keep), len(spans))

    def _useful_sentences(
        self, candidate: Candidate, terms: Iterable[str], bridges: Phrases
    ) -> list[int]:
        """Indexes of the sentences to keep: the lead; those that carry a query word (in any
        form) that no sentence kept before them carries; those that name a bridge or the
        passage's own title. A sentence that only repeats query words already kept adds
        tokens, not evidence."""
        wanted = {form for term in terms for form in (term, lemma(term))}
        own = Phrases([title_key(candidate.passage.title)])
        forms = sentence_lemmas(candidate.text)
        covered: set[str] = set()
        keep = []
        for index, sentence in enumerate(sentence_words(candidate.text)):
            carried = wanted & forms[index]
            if (
                index < self.lead_sentences
                or not carried <= covered
                or bridges.found_in(sentence)
                or own.found_in(sentence)
            ):
                keep.append(index)
                covered |= carried
        return keep

    def mode_for(self, ranked: Sequence[Candidate], budget: int) -> str:
        """The placement this configuration asks for, which the assembler applies: ``all``
        (:meth:`before_selection`) or ``fill`` (:meth:`after_selection`). In ``auto`` mode,
        ``all`` when the budget holds fewer than ``min_whole_passages`` typical passages (the
        median length of the best ten, at about four characters per token: only a rule of
        thumb to choose the mode; every count that decides what fits is exact)."""
        if self.mode != "auto":
            return self.mode
        sizes = sorted(len(c.text) for c in ranked[:10])
        if not sizes:
            return "fill"
        typical = sizes[len(sizes) // 2] / 4
        return "all" if budget < self.min_whole_passages * typical else "fill"

    def _could_fit(self, candidate: Candidate, packing: Packing) -> bool:
        """Whether the lead sentences alone might fit what is left (a cheap lower bound, so
        hopeless passages are not compressed at all)."""
        spans = sentence_spans(candidate.text)
        if len(spans) < 2:
            return False
        lead = spans[: self.lead_sentences]
        if not lead:
            return True
        text = candidate.text[lead[0][0] : lead[-1][1]]
        return packing.meter.lower_bound(candidate._replace(text=text)) <= packing.remaining

    def before_selection(
        self, query: str, ranked: Sequence[Candidate]
    ) -> tuple[list[Candidate], dict[str, Compressed]]:
        """``ranked`` with the best ``max_candidates`` compressed (bridges: their titles), and
        what was compressed by id (the ``all`` placement)."""
        terms = query_terms(query)
        titles = Phrases(title_key(c.passage.title) for c in ranked[: self.max_candidates])
        out: list[Candidate] = []
        done: dict[str, Compressed] = {}
        for position, candidate in enumerate(ranked):
            if position >= self.max_candidates:
                out.extend(ranked[position:])
                break
            found = self.compress(candidate, terms, titles)
            if found is None:
                out.append(candidate)
            else:
                out.append(found.candidate)
                done[candidate.id] = found
        return out, done

    def after_selection(
        self, query: str, ranked: Sequence[Candidate], packing: Packing
    ) -> dict[str, Compressed]:
        """Offer compressed versions of the best ``max_candidates`` passages that did not fit
        whole, in rank order (the ``fill`` placement); bridges are the titles of those and of
        the kept passages, and what the kept passages name."""
        turned_away = {e.candidate_id for e in packing.excluded if e.reason is Reason.OVER_BUDGET}
        retry = [c for c in ranked if c.id in turned_away][: self.max_candidates]
        if not retry:
            return {}
        terms = query_terms(query)
        bridges = Phrases(title_key(c.passage.title) for c in (*retry, *packing.kept))
        done = {}
        seen: set[str] = set()
        for candidate in retry:
            if packing.full:
                break
            if not self._could_fit(candidate, packing):
                continue
            for kept in packing.kept:
                if kept.id not in seen:
                    seen.add(kept.id)
                    bridges.update(entities(kept.text))
            found = self.compress(candidate, terms, bridges)
            if found is not None and packing.readmit(found.candidate) in (
                Offer.ADDED,
                Offer.MERGED,
            ):
                done[candidate.id] = found
        return done
