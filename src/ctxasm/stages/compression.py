"""The compression slot: query-aware extractive compression at sentence level.

A compressed passage keeps whole sentences in their original order and marks every gap with
``[…]``; it never cuts inside a sentence (see :func:`ctxasm.lexical.sentence_spans`) and never
touches the ``[Source N]`` header, which the format adds around the text.

Which sentences: those that carry a hop of the question (see :class:`Hops`): the one naming
another passage in play (a bridge: the next or previous hop of a chain) and those stating a
query word in any form ("married" states "spouse", see :func:`ctxasm.lexical.term_forms`) or a
query's named phrase that no earlier sentence states, and the lead sentence, which names the
subject; when not all fit, the best first: the most query elements, then a bridge.

With ``mode="fill"`` selection first takes whole passages; then every passage that did not fit
whole is offered again, compressed to the room left, the passages a kept one names first (the
next hop), then in rank order: the tokens left over admit more evidence without cutting what
already fit. With ``mode="all"`` every candidate is compressed before selection, each to about
``budget / fit_passages`` tokens, which fits the most passages into a tiny budget.
``mode="auto"`` (the default) chooses ``all`` when the budget holds fewer than
``min_whole_passages`` typical passages and ``fill`` otherwise: on HotpotQA, ``all`` keeps more
evidence at 256 tokens and ``fill`` from 512 up.

A sentence matches a query word in any inflected form: words are compared by their lemma
("taught" and "teaches" by "teach"), looked up in simplemma's English dictionary, which ships
with the package (no download) and covers irregular forms that a stemmer cannot. Lookups are
cached per word and per text, and the dictionary is read from a table in the user's cache folder
(see :mod:`ctxasm.stages.lemmas`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from ctxasm.data import ELISION, Candidate, Compressed, Reason
from ctxasm.deadline import checkpoint
from ctxasm.keys import HEAVY_CACHE_CHARS, text_cache
from ctxasm.lexical import (
    Phrases,
    entities,
    query_terms,
    sentence_spans,
    sentence_words,
    term_forms,
    title_key,
    title_links,
)
from ctxasm.stages.lemmas import lemmatizer
from ctxasm.stages.selection_packing import Offer, Packing
from ctxasm.strategy import Strategy, require_choice, require_int, require_number

__all__ = [
    "ELISION",
    "Compressed",
    "Hops",
    "Phrases",
    "SentenceCompression",
    "cut_text",
    "lemma",
    "sentence_lemmas",
]

# What ranks a sentence, besides one point per query element it carries: naming a bridge (a
# link to another passage in play) counts as one more element, being the lead as half of one.
_LINK = 1.0
_LEAD = 0.5
# ``fill`` guesses how many sentences the room holds at this many characters a token (a
# generous guess: most English runs 4 to 5), then trusts the exact count, dropping the least
# useful sentence at most this many times.
_CHARS_PER_TOKEN = 6.0
_FIT_TRIES = 4


@lru_cache(maxsize=65536)
def lemma(word: str) -> str:
    """The dictionary form of a lower-case English word ("taught" -> "teach", "rivers" ->
    "river"); a word the dictionary does not know comes back as it is. simplemma is imported
    here, on the first lemma asked for: a request that compresses nothing never pays for it
    (see :mod:`ctxasm.stages.lemmas` for how its dictionary is read)."""
    return lemmatizer().lemmatize(word, "en").lower()


@text_cache(HEAVY_CACHE_CHARS)
def sentence_lemmas(text: str) -> tuple[frozenset[str], ...]:
    """For each sentence of ``text`` (see :func:`ctxasm.lexical.sentence_spans`), its words
    together with their lemmas, so a query word matches in either form."""
    return tuple(frozenset((*sentence, *map(lemma, sentence))) for sentence in sentence_words(text))


class Hops:
    """What a sentence can carry of a question: one of its content words in any form (the
    word, its lemma, inflections and relation words, see :func:`ctxasm.lexical.term_forms`), or
    one of its named phrases ("Modern Drummer Hall of Fame"). Built once per request."""

    def __init__(self, terms: Iterable[str], phrases: Iterable[str] = ()) -> None:
        self.terms = list(terms)
        self.forms: dict[str, str] = {}  # a form -> the query word it states
        for term in self.terms:
            for form in (term, lemma(term), *term_forms(term)):
                self.forms.setdefault(form, term)
        self.phrases = Phrases(phrases)

    @classmethod
    def of(cls, query: str) -> Hops:
        """The hops of ``query``: its content words and the named phrases not among them."""
        terms = query_terms(query)
        return cls(terms, entities(query) - set(terms))

    def carried(self, words: Sequence[str], forms: frozenset[str]) -> set[str]:
        """The query words and phrases a sentence carries, given its ``words`` in order and
        ``forms``, its words with their lemmas (see :func:`sentence_lemmas`)."""
        found = {self.forms[f] for f in forms if f in self.forms}
        found.update(" ".join(parts) for parts in self.phrases.found(words))
        return found


def _ranked(candidate: Candidate, hops: Hops, bridges: Phrases, lead: int) -> list[int]:
    """The indexes of the sentences of ``candidate`` worth keeping, best first. Worth keeping:
    one of the first ``lead``, one naming a bridge (a phrase of ``bridges`` other than the
    passage's own title), or one carrying a query element no earlier sentence carries (one
    that only repeats them adds tokens, not evidence). Best: carrying the most query
    elements, naming a bridge, being the lead. Scored once: ``O(n log n)`` in the sentences.
    """
    sentences = sentence_words(candidate.text)
    forms = sentence_lemmas(candidate.text)
    carried = [hops.carried(words, forms[i]) for i, words in enumerate(sentences)]
    own = tuple(title_key(candidate.passage.title).split())
    linked = [bool(bridges.found(words) - {own}) for words in sentences]

    def value(i: int) -> float:
        return len(carried[i]) + _LINK * linked[i] + _LEAD * (i < lead)

    covered: set[str] = set()
    keep = []
    for i in range(len(sentences)):
        if i < lead or linked[i] or not carried[i] <= covered:
            keep.append(i)
            covered |= carried[i]
    return sorted(keep, key=lambda i: (-value(i), i))


def _next_hops_first(retry: Sequence[Candidate], kept: Sequence[Candidate]) -> list[Candidate]:
    """``retry`` with the passages a kept passage names first (the next hop of a chain: on
    HotpotQA the second hop is often what did not fit whole), by the strength of the link
    (see :func:`ctxasm.lexical.title_links`), otherwise in rank order."""
    links = title_links([c.passage.title for c in retry], [c.text for c in kept], aligned=False)
    strength: dict[int, float] = {}
    for named in links:
        for j, link in named.items():
            strength[j] = max(strength.get(j, 0.0), link)
    order = sorted(range(len(retry)), key=lambda j: (-strength.get(j, 0.0), j))
    return [retry[j] for j in order]


def _smallest_fits(text: str, spans: Sequence[tuple[int, int]], packing: Packing) -> bool:
    """Whether the smallest of ``text``'s sentences (``spans``) might fit the room left, by
    the tokenizer's lower bound (no text is tokenized)."""
    least = min(packing.meter.counter.lower_bound(text[start:end]) for start, end in spans)
    return least + packing.meter.floor <= packing.remaining


def _within(ranked: Sequence[int], spans: Sequence[tuple[int, int]], max_chars: float) -> list[int]:
    """The sentences of ``ranked`` (best first) that fit ``max_chars`` characters, taken in
    turn, skipping those that would not fit; the best is kept in any case."""
    keep: list[int] = []
    used = 0
    for index in ranked:
        start, end = spans[index]
        if keep and used + end - start > max_chars:
            continue
        keep.append(index)
        used += end - start
    return keep


def cut_text(text: str, keep: Sequence[int]) -> str:
    """``text`` with only its sentences ``keep`` (increasing indexes of
    :func:`ctxasm.lexical.sentence_spans`), joined by spaces, every gap marked with
    :data:`ELISION`."""
    spans = sentence_spans(text)
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
    return " ".join(pieces)


def _cut(candidate: Candidate, keep: Sequence[int]) -> Compressed:
    """``candidate`` with only the sentences ``keep`` (indexes in order), gaps marked."""
    text = candidate.text
    shorter = candidate._replace(text=cut_text(text, keep), start=None, end=None)
    return Compressed(shorter, text, len(keep), len(sentence_spans(text)))


@dataclass(frozen=True)
class SentenceCompression(Strategy):
    """Keep the sentences that carry a hop of the question: a query word or phrase, or a
    bridge; plus the first ``lead_sentences`` (which usually name the passage's subject).

    Bridges are the titles of the other candidates and, in ``fill`` mode, the titles and
    named entities of the passages already kept: a sentence that names them links this
    passage to the others, which is what a multi-hop answer needs. In ``all`` mode a passage
    keeps its best sentences up to about ``budget / fit_passages`` tokens, so that at least
    ``fit_passages`` passages fit; in ``fill`` mode, as many as the room left holds. A
    passage of one sentence is never compressed. The report lists original and kept tokens
    of every compressed passage.
    """

    name: ClassVar[str] = "sentences"
    slot: ClassVar[str] = "compression"
    mode: str = "auto"
    lead_sentences: int = 1
    max_candidates: int = 10
    min_whole_passages: float = 2.5
    fit_passages: float = 2.0

    def __post_init__(self) -> None:
        require_choice("mode", self.mode, ("auto", "fill", "all"))
        require_number("min_whole_passages", self.min_whole_passages, low=0.0, high=1000.0)
        require_int("lead_sentences", self.lead_sentences, low=0)
        require_int("max_candidates", self.max_candidates, low=1, high=1_000)
        require_number("fit_passages", self.fit_passages, low=1.0, high=1000.0)

    def prepare(self) -> None:
        # The first lemma loads simplemma and its English dictionary (see ctxasm.stages.lemmas).
        lemma("rivers")

    def compress(
        self,
        candidate: Candidate,
        terms: Iterable[str],
        bridges: Phrases | Iterable[str],
        *,
        hops: Hops | None = None,
        max_chars: float | None = None,
    ) -> Compressed | None:
        """``candidate`` cut to its useful sentences, or ``None`` when nothing would be cut.
        ``terms`` are query words, matched in any inflected form (``hops``, when given,
        replaces them with a question's words and phrases); ``bridges`` are phrase keys
        (names, titles) whose sentences are kept too. With ``max_chars``, only the best
        sentences that fit that many characters (at least one)."""
        text = candidate.text
        spans = sentence_spans(text)
        if len(spans) < 2:
            return None
        phrases = bridges if isinstance(bridges, Phrases) else Phrases(bridges)
        hops = hops if hops is not None else Hops(terms)
        keep = _ranked(candidate, hops, phrases, self.lead_sentences)
        if max_chars is not None:
            keep = _within(keep, spans, max_chars)
        if len(keep) == len(spans) or not keep:
            return None
        found = _cut(candidate, sorted(keep))
        if len(found.candidate.text) >= len(text):
            return None  # only marks in place of what it drops ("." for "[…]"): no shorter
        return found

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

    def before_selection(
        self, query: str, ranked: Sequence[Candidate], budget: int | None = None
    ) -> tuple[list[Candidate], dict[str, Compressed]]:
        """``ranked`` with the best ``max_candidates`` compressed (bridges: their titles), and
        what was compressed by id (the ``all`` placement). Given the ``budget`` (context
        tokens), each keeps about ``budget / fit_passages`` tokens of its best sentences (at
        about four characters a token: a rule of thumb; what fits is counted exactly by
        selection); without it, every useful sentence."""
        hops = Hops.of(query)
        max_chars = None if budget is None else budget * 4 / self.fit_passages
        titles = Phrases(title_key(c.passage.title) for c in ranked[: self.max_candidates])
        out: list[Candidate] = []
        done: dict[str, Compressed] = {}
        for position, candidate in enumerate(ranked):
            if position >= self.max_candidates:
                out.extend(ranked[position:])
                break
            checkpoint()
            found = self.compress(candidate, hops.terms, titles, hops=hops, max_chars=max_chars)
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
        whole (less those cut during selection, see :meth:`cut_pick`), each cut to the room
        left, those a kept passage names first, then in rank order (the ``fill``
        placement); bridges are the titles of those and of the kept passages, and what the
        kept passages name."""
        turned_away = {e.candidate_id for e in packing.excluded if e.reason is Reason.OVER_BUDGET}
        left = self.max_candidates - len(packing.readmitted)  # some may be cut in selection
        retry = [c for c in ranked if c.id in turned_away][: max(0, left)]
        if not retry:
            return {}
        return self._refit(query, _next_hops_first(retry, packing.kept), packing, ())

    def cut_pick(
        self, query: str, candidate: Candidate, packing: Packing, in_play: Sequence[Candidate]
    ) -> Compressed | None:
        """``candidate``, a planner's pick just turned away as too big, cut to the room left
        and admitted as in :meth:`after_selection`, or ``None``. The titles of ``in_play``
        (the candidates not decided yet) are bridges too: the next hop the pick leads to is
        one of them. It counts towards ``max_candidates`` with what is cut after selection."""
        if len(packing.readmitted) >= self.max_candidates or packing.full:
            return None
        spans = sentence_spans(candidate.text)
        if len(spans) < 2 or not _smallest_fits(candidate.text, spans, packing):
            return None  # never cut, or cut to nothing (see _refit): no bridges to build
        return self._refit(query, [candidate], packing, in_play).get(candidate.id)

    def _refit(
        self,
        query: str,
        retry: Sequence[Candidate],
        packing: Packing,
        in_play: Sequence[Candidate],
    ) -> dict[str, Compressed]:
        """Each of ``retry`` in turn cut to the room left and admitted (see :meth:`_fit`);
        bridges are the titles of those, of the kept passages and of ``in_play``, and what
        the kept passages name."""
        hops = Hops.of(query)
        titles = (*retry, *packing.kept, *in_play)
        bridges = Phrases(title_key(c.passage.title) for c in titles)
        done = {}
        seen: set[str] = set()
        for candidate in retry:
            if packing.full:
                break
            if len(sentence_spans(candidate.text)) < 2:
                continue
            for kept in packing.kept:
                if kept.id not in seen:
                    checkpoint()
                    seen.add(kept.id)
                    bridges.update(entities(kept.text))
            found = self._fit(candidate, hops, bridges, packing)
            if found is not None:
                done[candidate.id] = found
        return done

    def _fit(
        self, candidate: Candidate, hops: Hops, bridges: Phrases, packing: Packing
    ) -> Compressed | None:
        """``candidate`` compressed to the room left and admitted, or ``None``: its useful
        sentences, best first, as many as a generous guess of the room holds; while the
        exact count says they do not fit, the least useful goes (at most ``_FIT_TRIES``
        times, so a long passage costs a few counts, not one per sentence)."""
        if packing.meter.unreadable(candidate) is not None:
            # its whole text cannot be counted (an unbroken run too long), which the report
            # does for every compressed passage: it stays turned away, as it was uncut
            return None
        spans = sentence_spans(candidate.text)
        if not _smallest_fits(candidate.text, spans, packing):
            return None  # not even its smallest sentence could fit: no need to rank them
        ranked = _ranked(candidate, hops, bridges, self.lead_sentences)
        room = (packing.remaining - packing.meter.floor) * _CHARS_PER_TOKEN
        keep = _within(ranked, spans, room)
        if len(keep) == len(spans):  # the whole passage did not fit: one sentence less
            keep = keep[:-1]
        for _ in range(_FIT_TRIES):
            if not keep:
                return None
            found = _cut(candidate, sorted(keep))
            outcome = packing.readmit(found.candidate)
            if outcome in (Offer.ADDED, Offer.MERGED):
                return found
            if outcome is not Offer.TOO_BIG:
                return None
            keep = keep[:-1]
        return None
