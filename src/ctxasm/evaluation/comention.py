"""The co-mention subset: chained questions whose bridges are entities named in the texts.

In the composed subset (:mod:`ctxasm.evaluation.composed`) a passage leads to the next by
naming its title. Here two passages are linked by a third thing both texts name, that neither
is about, as in MuSiQue: "Tangled" and "Sweet Porridge" both name the Brothers Grimm; "What is
the r2 of the r1 of Sweet Porridge?" needs the passage about the tale, which names the Brothers
Grimm, then a passage about something else that names them too and states the answer. Nothing
in the question says which passage that is. Built from any file in the unified format, by a
fixed recipe, so anyone with the same file and seed rebuilds the same subset:

1. Pool every question's passages, one per title, as the composed subset does (its step 1).
2. Candidate entities: the names of two to six words that the composed subset takes as
   answers (its step 5; numbers left out), wherever a pool sentence has one, and the single
   capitalised words of five letters or more, all letters, that do not open their sentence and
   that the pool never writes in lower case. A sentence names an entity where its words stand
   as a name of their own (no capitalised word or number just before or after; of several
   words, one capitalised that does not open the sentence), every content word capitalised,
   and, for one word, no lower-case content word right after it (that makes it an adjective:
   "Bulgarian singer"); where names overlap, the leftmost, then the longest, counts. An entity
   named by two to five passages is a bridge.
3. Passage A links to passage B through bridge E when both name E, E is no part of A's title
   key nor of B's whole title (its "(qualifier)" included) and neither title key is part of E,
   the two title keys differ, and neither text holds the other's title key (of four characters
   or more) as a phrase: E alone links them.
4. Chains A -> B and A -> B -> C, from starts in a seeded order: passages whose title key no
   other passage has, of four characters or more, that name a bridge. Links are followed in a
   seeded order, at most 64 chains from a start for each length, at most 560 characters a
   passage on average (about 125 tokens). A chain of three has distinct title keys and no
   shortcut: its second bridge is another than its first, A's text does not hold the second
   bridge nor C's the first (as phrases, so a bridge inside another name, "Covey" in "Stephen
   Covey", counts), neither of A and C holds the other's title key, the first bridge is no part
   of C's whole title nor the second of A's title key.
5. Ask "What is the r_k of ... the r_1 of T?", T being A's title without its "(qualifier)".
   r_i is the relation word (as the composed subset's step 4 takes it) nearest where the i-th
   passage first names the i-th bridge; r_k the one nearest the answer. The answer is the
   first, in the sentences where the last passage names the last bridge (in order), of the
   composed subset's answers (its step 5) that is not the bridge itself, shares no word with
   a chain title or a bridge, is found in the last passage as the labels find answers, in no
   other chain passage, and has a relation word. A chain without an answer or a relation word
   for a hop is not asked, nor one whose question names a bridge, a chain title but T, or the
   answer.
6. Gold: the chain passages, ``gold_pids`` in chain order, each supported by the sentence where
   it first names each of its bridges (the last passage by its answer sentence); the type is
   ``comention-k``.
7. Distractors fill ``candidates``: up to half of them "near" ones, first passages that name a
   bridge of the chain, then passages that hold a word of T or neighbour A (as in the composed
   subset's step 7); the rest other pool passages that share a content word with the question.
   Each part in order of the question's content words they share, ties in a seeded order. The
   candidates are shuffled in a seeded order.
8. Up to ``per_hops`` chains of each length, chosen as the composed subset chooses (its step 8:
   each start used once, the longest length still short first, at most two chains of a length
   ending in one passage, the lengths in turn).

Building it costs the pool's words twice (once for the title links of the pool, once for the
entities), the links of each passage walked from (at most five passages a bridge), plus, per
question, the pool passages that share a word with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ctxasm.errors import RequestError
from ctxasm.evaluation.composed import (
    _CHARS_PER_HOP,
    _STEPS_PER_START,
    _answers,
    _best,
    _chain_question,
    _check_counts,
    _chosen,
    _name,
    _rank,
    _relation,
    _word_span,
)
from ctxasm.evaluation.composed_pool import Pool, _named, word_list
from ctxasm.evaluation.dataset import EvalQuestion
from ctxasm.evaluation.subsets import has_answer
from ctxasm.lexical import STOPWORDS, Phrases, phrase_key, query_terms

__all__ = ["HOPS", "comention_subset"]

HOPS = (2, 3)

_MOST_NAMERS = 5  # passages that name a bridge, at most: a name many texts hold leads anywhere
_LONGEST_NAME = 6  # words of a candidate entity
_SHORTEST_WORD = 5  # letters of a one-word entity
_SHORTEST_KEY = 4  # characters of a title key looked for in a text


class _Naming(NamedTuple):
    """Where a passage names an entity: its sentence and the words ``start:end`` of it."""

    sentence: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Asked:
    """A chain put as a question, with its bridges and, for each chain passage, the numbers of
    its supporting sentences."""

    chain: tuple[int, ...]
    bridges: tuple[str, ...]
    question: str
    answer: str
    supporting: tuple[tuple[int, ...], ...]


def _entities(pool: Pool) -> Phrases:
    """The keys of the candidate entities of the pool (step 2)."""
    found: set[str] = set()
    for passage, sentences in zip(pool.passages, pool.words, strict=True):
        for sentence, words in zip(passage.sentences, sentences, strict=True):
            for name, _, _ in _answers(sentence):
                parts = word_list(name)
                if not name[0].isdigit() and 2 <= len(parts) <= _LONGEST_NAME:
                    found.add(" ".join(parts).lower())
            found.update(
                word.lower()
                for word in words[1:]
                if word[:1].isupper()
                and word.isalpha()
                and len(word) >= _SHORTEST_WORD
                and word.lower() not in pool.lowercase
            )
    return Phrases(found)


def _as_entity(words: Sequence[str], lower: Sequence[str], start: int, end: int) -> bool:
    """Whether ``words[start:end]`` of a sentence (``lower``: the same in lower case) name an
    entity: written as a name, every content word capitalised, one word not an adjective."""
    if not _named(words, start, end):
        return False
    if any(not words[at][:1].isupper() for at in range(start, end) if lower[at] not in STOPWORDS):
        return False
    # one word before a lower-case content word is an adjective ("Bulgarian singer")
    return not (
        end - start == 1
        and end < len(words)
        and words[end].islower()
        and lower[end] not in STOPWORDS
    )


def _bridges(pool: Pool) -> dict[str, dict[int, list[_Naming]]]:
    """Each bridge (step 2) with the passages that name it and where, in pool order."""
    entities = _entities(pool)
    named: dict[str, dict[int, list[_Naming]]] = {}
    for index, sentences in enumerate(pool.words):
        for number, words in enumerate(sentences):
            lower = [word.lower() for word in words]
            for start, end, key in entities.spans(lower):
                if _as_entity(words, lower, start, end):
                    namings = named.setdefault(key, {}).setdefault(index, [])
                    namings.append(_Naming(number, start, end))
    return {key: by for key, by in named.items() if 2 <= len(by) <= _MOST_NAMERS}


def _part_of(whole: str, part: str) -> bool:
    """Whether the phrase key ``part`` is a phrase of the phrase key ``whole``."""
    return bool(part) and f" {part} " in f" {whole} "


class _Comentions:
    """Chains of passages that name one bridge after another, put as questions (steps 2 to 5)."""

    def __init__(self, pool: Pool, seed: int) -> None:
        self.pool = pool
        self.seed = seed
        self.namers = _bridges(pool)
        self.bridges_of: list[list[str]] = [[] for _ in pool.passages]
        for bridge, by in self.namers.items():
            for index in by:
                self.bridges_of[index].append(bridge)
        self.names = [_name(p.title) for p in pool.passages]
        self.titles = [phrase_key(p.title) for p in pool.passages]
        self.sizes = [len(p.text) for p in pool.passages]
        # filled as chains are walked: only the passages met on a walk are read again
        self._texts: dict[int, str] = {}
        self._links: dict[int, list[tuple[str, int]]] = {}

    def starts(self) -> list[int]:
        """The passages a question can name, in a seeded order."""
        pool = self.pool
        named = [
            index
            for key, index in pool.unique.items()
            if len(key) >= _SHORTEST_KEY and self.names[index] and self.bridges_of[index]
        ]
        return sorted(named, key=lambda i: _rank(self.seed, "start", pool.passages[i].pid))

    def ask(self, start: int, hops: int, taken_last: set[int]) -> _Asked | None:
        """The first chain of ``hops`` passages from ``start`` that can be asked, its last
        passage none of ``taken_last``; None if none within the step limit."""
        for chain, bridges in self._walks(start, hops):
            if chain[-1] not in taken_last:
                asked = self._asked(chain, bridges)
                if asked is not None:
                    return asked
        return None

    def _holds(self, index: int, key: str) -> bool:
        """Whether passage ``index``'s text holds the phrase key ``key``."""
        text = self._texts.get(index)
        if text is None:
            text = self._texts[index] = f" {phrase_key(self.pool.passages[index].text)} "
        return f" {key} " in text

    def _names_title(self, index: int, other: int) -> bool:
        """Whether passage ``index``'s text holds passage ``other``'s title key, of at least
        ``_SHORTEST_KEY`` characters (a shorter one is not looked for)."""
        key = self.pool.keys[other]
        return len(key) >= _SHORTEST_KEY and self._holds(index, key)

    def _linked(self, a: int, bridge: str, b: int) -> bool:
        """Whether ``a`` links to ``b`` through ``bridge``, which both name (step 3)."""
        keys = self.pool.keys
        return not (
            a == b
            or keys[a] == keys[b]
            or _part_of(keys[a], bridge)
            or _part_of(bridge, keys[a])
            or _part_of(self.titles[b], bridge)
            or _part_of(bridge, keys[b])
            or self._names_title(a, b)
            or self._names_title(b, a)
        )

    def _links_of(self, a: int) -> list[tuple[str, int]]:
        """The links from ``a`` as (bridge, passage), in a seeded order."""
        links = self._links.get(a)
        if links is None:
            passages = self.pool.passages
            links = [
                (bridge, b)
                for bridge in self.bridges_of[a]
                for b in self.namers[bridge]
                if self._linked(a, bridge, b)
            ]
            pid = passages[a].pid
            links.sort(key=lambda link: _rank(self.seed, pid, link[0], passages[link[1]].pid))
            self._links[a] = links
        return links

    def _onward(self, a: int, first: str, b: int, second: str, c: int) -> bool:
        """Whether the chain ``a`` -> ``b`` -> ``c`` through ``first`` then ``second`` has no
        shortcut (step 4)."""
        keys = self.pool.keys
        return not (
            c in (a, b)
            or second == first
            or self._holds(a, second)
            or self._holds(c, first)
            or keys[c] == keys[a]
            or self._names_title(a, c)
            or self._names_title(c, a)
            or _part_of(self.titles[c], first)
            or _part_of(keys[a], second)
        )

    def _walks(self, a: int, hops: int) -> Iterator[tuple[tuple[int, ...], tuple[str, ...]]]:
        """Chains of ``hops`` passages from ``a`` with their bridges (step 4), at most
        ``_STEPS_PER_START`` of them."""
        size = self.sizes.__getitem__
        room = hops * _CHARS_PER_HOP
        walked = 0
        for first, b in self._links_of(a):
            two = size(a) + size(b)
            if two > room:
                continue
            onward: list[tuple[tuple[int, ...], tuple[str, ...]]]
            if hops == 2:
                onward = [((a, b), (first,))]
            else:
                onward = [
                    ((a, b, c), (first, second))
                    for second, c in self._links_of(b)
                    if two + size(c) <= room and self._onward(a, first, b, second, c)
                ]
            for walk in onward:
                yield walk
                walked += 1
                if walked == _STEPS_PER_START:
                    return

    def _asked(self, chain: tuple[int, ...], bridges: tuple[str, ...]) -> _Asked | None:
        """``chain`` put as a question (step 5), or None when it cannot be."""
        pool = self.pool
        banned = {
            word for i in chain for word in self.titles[i].split() if word not in STOPWORDS
        } | {word for bridge in bridges for word in bridge.split() if word not in STOPWORDS}
        relations = []
        supporting: list[list[int]] = [[] for _ in chain]
        for place, bridge in enumerate(bridges):
            source, target = chain[place], chain[place + 1]
            naming = self.namers[bridge][source][0]
            words = pool.words[source][naming.sentence]
            relation = _relation(words, naming.start, naming.end, banned, pool.nouns)
            if relation is None:
                return None
            relations.append(relation)
            supporting[place].append(naming.sentence)
            supporting[place + 1].append(self.namers[bridge][target][0].sentence)
        found = self._answer(chain, bridges[-1], banned)
        if found is None:
            return None
        answer, sentence, relation = found
        supporting[-1] = [sentence]
        asked = [relation, *reversed(relations)]
        question = "What is the " + " of the ".join(asked) + f" of {self.names[chain[0]]}?"
        padded = f" {phrase_key(question)} "
        if (
            any(f" {bridge} " in padded for bridge in bridges)
            or any(pool.keys[i] and f" {pool.keys[i]} " in padded for i in chain[1:])
            or has_answer(question, (answer,))
        ):
            return None
        held = tuple(tuple(numbers) for numbers in supporting)
        return _Asked(chain, bridges, question, answer, held)

    def _answer(
        self, chain: tuple[int, ...], bridge: str, banned: set[str]
    ) -> tuple[str, int, str] | None:
        """The answer in the chain's last passage, next to where it names ``bridge``, its
        sentence and the relation word nearest it; None when no sentence has one."""
        pool = self.pool
        last = pool.passages[chain[-1]]
        others = [pool.passages[i].text for i in chain[:-1]]
        for naming in self.namers[bridge][chain[-1]]:
            sentence = last.sentences[naming.sentence]
            for answer, start, end in _answers(sentence):
                first, past = _word_span(sentence, start, end)
                if first < naming.end and naming.start < past:
                    continue  # the bridge itself
                if not banned.isdisjoint(phrase_key(answer).split()):
                    continue
                if not has_answer(last.text, (answer,)):
                    continue
                if any(has_answer(text, (answer,)) for text in others):
                    continue
                words = pool.words[chain[-1]][naming.sentence]
                relation = _relation(words, first, past, banned, pool.nouns)
                if relation is not None:
                    return answer, naming.sentence, relation
        return None


def _distractors(comentions: _Comentions, asked: _Asked, count: int, seed: int) -> list[int]:
    """``count`` pool passages off the chain (step 7): up to half near it, passages naming a
    bridge first, then passages holding a word of its first title or neighbouring its first
    passage; then passages sharing a content word with the question; each part in order of
    the question's content words shared."""
    pool = comentions.pool
    shared: Counter[int] = Counter()
    for word in query_terms(asked.question):
        shared.update(pool.postings.get(word, ()))
    chain = set(asked.chain)
    start = asked.chain[0]
    salt = f"comention:{pool.passages[start].pid}"

    def rank(index: int) -> int:
        return _rank(seed, salt, pool.passages[index].pid)

    namers = set().union(*(comentions.namers[bridge].keys() for bridge in asked.bridges)) - chain
    titled = pool.neighbours(start)
    for word in query_terms(comentions.names[start]):
        titled.update(pool.postings.get(word, ()))
    titled -= chain | namers
    near = count // 2
    chosen = _best(namers, near, shared, rank)
    chosen += _best(titled, near - len(chosen), shared, rank)
    taken = chain.union(chosen)
    chosen += _best(shared.keys() - taken, count - len(chosen), shared, rank)
    return chosen


def comention_subset(
    questions: Sequence[EvalQuestion], *, candidates: int = 20, seed: int = 0, per_hops: int = 100
) -> list[EvalQuestion]:
    """The co-mention subset built from the passages of ``questions`` (see the module
    docstring): up to ``per_hops`` questions per chain length (2 and 3), the lengths in turn,
    each with ``candidates`` candidates (fewer only where too few passages of the pool are near
    its chain or share a word with it). The same input, ``candidates``, ``seed`` and
    ``per_hops`` give the same subset."""
    _check_counts(candidates, seed, per_hops, longest=max(HOPS))
    pool = Pool(questions)
    comentions = _Comentions(pool, seed)
    chosen = _chosen(comentions.starts(), comentions.ask, HOPS, per_hops)
    if not chosen:
        raise RequestError(
            "the comention subset needs passages whose texts name one entity (neither's "
            f"title) in chains of {min(HOPS)} to {max(HOPS)}, with an answer in the last; "
            "this dataset has none",
            field="subset",
        )
    return [
        _chain_question(
            pool,
            "comention",
            asked.chain,
            asked.supporting,
            asked.question,
            asked.answer,
            _distractors(comentions, asked, max(0, candidates - len(asked.chain)), seed),
            seed,
        )
        for asked in chosen
    ]
