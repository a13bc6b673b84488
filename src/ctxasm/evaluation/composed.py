"""The composed subset: questions that chain two to four single-hop questions.

"What is the label of the band of Green?" needs the passage about "Green", which names the
band, then the band's passage, which names the label: each bridge entity is found only through
the passage before it. Built from any file in the unified format, by a fixed recipe, so anyone
with the same file and seed rebuilds the same subset:

1. Pool every question's passages, one per title (HTML entities in titles, as in "&amp;", read
   as the characters they are), with their sentence split; a passage keeps its pid, or, where
   an earlier one has it, its question's id before it (and a number after, if that is taken
   too), so pids are unique.
2. Passage P links to passage Q when one of P's sentences holds Q's title key
   (:func:`~ctxasm.lexical.title_key`, else :func:`~ctxasm.lexical.phrase_key`) as a phrase,
   the longest key first where two start at one word, written as a name: no capitalised word or
   number just before or after it, and, of several words, one capitalised that does not open
   the sentence. Only specific titles are linked to: a key no other title of the pool has, of
   two to eight words, or of one word of five letters or more that the pool never writes in
   lower case. A title with a "(qualifier)" is linked to only from a passage with a word that
   starts as one of the qualifier's does ("films" for "(2014 film)"): a name in a text is often
   another thing of that name. Each phrase starting with a key's first word is looked up, so
   the cost follows the text, not the number of titles.
3. Walk chains P1 -> ... -> Pk (k of 2, 3 or 4), each Pi linking to P(i+1), titles distinct,
   without a shortcut (no passage before Pi mentions P(i+1)'s title), at most 560 characters a
   passage on average (about 125 tokens). Starts in a seeded order, each used once; links
   followed in a seeded order, at most 64 steps from a start for each length.
4. Ask "What is the r_k of the r_(k-1) of ... the r_1 of T1?", T1 being P1's title without its
   "(qualifier)". r_i is the word nearest the mention of T(i+1) in the sentence of Pi that
   makes it (before the mention preferred: a word after costs two of distance), r_k the one
   nearest the answer; a word the pool writes as "the ... of" (a noun), at least four letters,
   no word of a chain title, or a verb that says a relation as its noun ("born": "birth",
   "directed": "director"). The question names no chain title but T1.
5. The answer is the first, in Pk's sentences, capitalised name of two to six words (leading
   function words and a trailing "'s" dropped; not one used as an adjective, as "West Germanic
   language") or number of three digits or more, that no other chain passage states and that
   shares no word with a chain title, that its own passage holds as the labels find answers
   (whole words once normalised: not "13,361" of "13,361.74"), and that has a relation word
   (else the next one is tried). A chain without such an answer, or without a relation word
   for a hop, is not asked.
6. Gold: the k chain passages, ``gold_pids`` in chain order, each supported by its linking
   sentence (Pk by its answer sentence); the type is ``composed-k``.
7. Distractors fill ``candidates``: up to half of them neighbours of the chain (passages whose
   title key a chain passage holds as a name, or that hold a chain title's key), the rest
   other pool passages that share a content word with the question; each part in order of the
   question's content words
   (:func:`~ctxasm.lexical.query_terms`) they share, ties in a seeded order. ``has_answer`` is
   computed for every candidate as the data defines it (see :mod:`ctxasm.evaluation.subsets`).
   The candidates are shuffled in a seeded order.
8. Up to ``per_hops`` chains of each length, at most two of a length ending in one passage;
   at each start, the longest length still short of ``per_hops`` is tried first. The questions
   come with the lengths in turn (2, 3, 4, 2, ...), so the first of them hold every length.

Building it costs the pool's words once, plus, per question, the pool passages that share a
word with it.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise, zip_longest
from typing import Protocol, TypeVar

import xxhash

from ctxasm.errors import RequestError
from ctxasm.evaluation.composed_pool import Pool, word_list
from ctxasm.evaluation.dataset import EvalPassage, EvalQuestion
from ctxasm.evaluation.subsets import has_answer
from ctxasm.lexical import STOPWORDS, phrase_key, query_terms
from ctxasm.validation import shown

__all__ = ["HOPS", "composed_subset"]

HOPS = (2, 3, 4)

_STEPS_PER_START = 64  # partial chains taken from the stack, per start and length
_CHAINS_PER_END = 2  # chains of one length ending in one passage
# Characters of a chain passage on average, at most: about 125 tokens, so that a whole chain
# fits a budget of about 128 tokens a hop.
_CHARS_PER_HOP = 560
# An answer: a capitalised name of two or more words (an initial as "M." is one, a few
# lower-case particles may join them), or a number of three digits or more (years among them;
# a day of a month is too easily guessed).
_NAME_WORD = r"[A-Z](?:\.|[\w'’]*(?:-[A-Z][\w'’]*)*)"
_ANSWER = re.compile(
    rf"(?<![\w.'’-]){_NAME_WORD}(?:\s+(?:(?:of|the|de|la|del|von|van|der|du)\s+)*{_NAME_WORD})+"
    r"|\b\d{1,3}(?:,\d{3})+\b|\b\d{3,}\b"
)
# A lower-case word right after a name, which makes the name an adjective ("West Germanic
# language", "Award-winning").
_AFTER_NAME = re.compile(r"(?:\s+|-)([a-z]\w*)")
_LONGEST_ANSWER = 6  # words


@dataclass(frozen=True, slots=True)
class _Asked:
    """A chain put as a question."""

    chain: tuple[int, ...]
    question: str
    answer: str
    answer_sentence: int


def _rank(seed: int, *parts: str) -> int:
    """A seeded pseudo-random rank of ``parts``, the same on every run."""
    return int(xxhash.xxh64_intdigest(":".join((str(seed), *parts)).encode()))


def _relation(
    words: Sequence[str], start: int, end: int, banned: set[str], nouns: frozenset[str]
) -> str | None:
    """The relation word of ``words`` for the phrase ``words[start:end]`` (see step 4): the
    nearest of ``nouns``, or of the verbs that say a relation taken as their noun, none of
    ``banned``. A word before the phrase, which usually says what it is ("the band R.E.M.",
    "starring Kyle Massey"), wins over one as near after it."""
    best: tuple[int, int, str] | None = None
    for at, word in enumerate(words):
        noun = _RELATION_NOUNS.get(word) or (word if word in nouns else None)
        if noun is None or start <= at < end or len(noun) < 4 or noun in banned:
            continue
        distance = start - at if at < start else at - end + 1 + _AFTER
        if best is None or (distance, at) < best[:2]:
            best = (distance, at, noun)
    return None if best is None else best[2]


# A relation word after the phrase costs this many words of distance more than one before.
_AFTER = 2
# Verbs that say a relation, as the noun a question asks it with ("published by X": X is the
# publisher).
_RELATION_NOUNS = {
    "born": "birth",
    "composed": "composer",
    "created": "creator",
    "died": "death",
    "directed": "director",
    "founded": "founder",
    "married": "spouse",
    "owned": "owner",
    "performed": "performer",
    "produced": "producer",
    "published": "publisher",
    "released": "release",
    "starred": "star",
    "starring": "star",
    "written": "writer",
    "wrote": "writer",
}


class _Chains:
    """Chains walked through the pool and put as questions (steps 3 to 5)."""

    def __init__(self, pool: Pool, seed: int) -> None:
        self.pool = pool
        self.seed = seed
        self.names = [_name(p.title) for p in pool.passages]

    def starts(self) -> list[int]:
        """The passages a question can name, in a seeded order."""
        pool = self.pool
        named = [
            index
            for key, index in pool.unique.items()
            if pool.links[index] and len(key) >= 4 and self.names[index]
        ]
        return sorted(named, key=lambda i: _rank(self.seed, pool.passages[i].pid))

    def ask(self, start: int, hops: int, taken_last: set[int]) -> _Asked | None:
        """The first chain of ``hops`` passages from ``start`` that can be asked, its last
        passage none of ``taken_last``; None if none within the step limit."""
        for chain in self._walks(start, hops):
            if chain[-1] not in taken_last:
                asked = self._asked(chain)
                if asked is not None:
                    return asked
        return None

    def _walks(self, start: int, hops: int) -> Iterator[tuple[int, ...]]:
        """Chains of ``hops`` passages from ``start`` without a shortcut (a passage mentioned
        before the last one is never the next) and of at most ``_CHARS_PER_HOP`` characters a
        passage on average, depth first, within ``_STEPS_PER_START`` steps."""
        links, passages = self.pool.links, self.pool.passages
        room = hops * _CHARS_PER_HOP
        stack: list[tuple[tuple[int, ...], frozenset[int], int]] = [
            ((start,), frozenset(), len(passages[start].text))
        ]
        for _ in range(_STEPS_PER_START):
            if not stack:
                return
            chain, shortcut, size = stack.pop()
            if len(chain) == hops:
                yield chain
                continue
            last = chain[-1]
            onward = [
                t
                for t in links[last]
                if t not in chain and t not in shortcut and size + len(passages[t].text) <= room
            ]
            pid = passages[last].pid
            onward.sort(key=lambda t: _rank(self.seed, pid, passages[t].pid))
            passed = shortcut.union(links[last])
            stack.extend(
                ((*chain, t), passed, size + len(passages[t].text)) for t in reversed(onward)
            )

    def _asked(self, chain: tuple[int, ...]) -> _Asked | None:
        """``chain`` put as a question (steps 4 and 5), or None when it cannot be."""
        pool = self.pool
        banned = {
            word
            for i in chain
            for word in phrase_key(pool.passages[i].title).split()
            if word not in STOPWORDS
        }
        relations = []
        for source, target in pairwise(chain):
            mention = pool.mention(source, target)
            words = pool.words[source][mention.sentence]
            relations.append(_relation(words, mention.start, mention.end, banned, pool.nouns))
        found = self._answer(chain, banned)
        if found is None or None in relations:
            return None
        answer, sentence, relation = found
        asked = [relation, *reversed([r for r in relations if r is not None])]
        question = "What is the " + " of the ".join(asked) + f" of {self.names[chain[0]]}?"
        padded = f" {phrase_key(question)} "
        if any(f" {pool.keys[i]} " in padded for i in chain[1:]):
            return None
        return _Asked(chain, question, answer, sentence)

    def _answer(self, chain: tuple[int, ...], banned: set[str]) -> tuple[str, int, str] | None:
        """The answer in the chain's last passage, its sentence and the relation word nearest
        it; None when no sentence has one."""
        pool = self.pool
        last = pool.passages[chain[-1]]
        others = [pool.passages[i].text for i in chain[:-1]]
        for number, sentence in enumerate(last.sentences):
            for answer, start, end in _answers(sentence):
                if not banned.isdisjoint(phrase_key(answer).split()):
                    continue
                # as the labels find it: "Shakespeare" of "Shakespeare's", or "13,361" cut
                # from "13,361.74", is not found in its own passage
                if not has_answer(last.text, (answer,)):
                    continue
                if any(has_answer(text, (answer,)) for text in others):
                    continue
                words = pool.words[chain[-1]][number]
                relation = _relation(words, *_word_span(sentence, start, end), banned, pool.nouns)
                if relation is not None:
                    return answer, number, relation
        return None


def _answers(sentence: str) -> Iterator[tuple[str, int, int]]:
    """The answers ``sentence`` offers (see ``_ANSWER``), with where each starts and ends: a
    name without its leading function words ("On" of "On June") nor a trailing "'s", not an
    adjective, of at most ``_LONGEST_ANSWER`` words."""
    for match in _ANSWER.finditer(sentence):
        answer, start, end = match.group(), match.start(), match.end()
        if answer[0].isdigit():
            yield answer, start, end
            continue
        words = list(re.finditer(r"\S+", answer))
        while words and words[0].group().lower() in STOPWORDS:
            words.pop(0)
        if not 2 <= len(words) <= _LONGEST_ANSWER:
            continue
        start += words[0].start()
        answer = sentence[start:end]
        if answer.endswith(("'s", "’s")):  # "Oscar Wilde's": the name is "Oscar Wilde"
            yield answer[:-2], start, end - 2
            continue
        after = _AFTER_NAME.match(sentence, end)
        if after is None or after.group(1) in STOPWORDS:
            yield answer, start, end


def _name(title: str) -> str:
    """``title`` without a trailing "(qualifier)", as a question names it."""
    head, parenthesis, _ = title.rpartition(" (")
    return head.strip() if parenthesis and title.endswith(")") else title.strip()


def _word_span(sentence: str, start: int, end: int) -> tuple[int, int]:
    """The indexes of the first and past the last word of ``sentence[start:end]``."""
    first = len(word_list(sentence[:start]))
    return first, first + len(word_list(sentence[start:end]))


class _Chained(Protocol):
    """A chain put as a question, as :func:`_chosen` sees it."""

    @property
    def chain(self) -> tuple[int, ...]: ...


_AskedChain = TypeVar("_AskedChain", bound=_Chained)


def _chosen(
    starts: Iterable[int],
    ask: Callable[[int, int, set[int]], _AskedChain | None],
    lengths: Sequence[int],
    per_hops: int,
) -> list[_AskedChain]:
    """Up to ``per_hops`` chains per length of ``lengths`` (step 8), each from a start of
    ``starts`` that ``ask(start, hops, full)`` puts as a question ending in none of ``full``,
    the longest length still short first; the lengths taken in turn (a chain of 2, of 3, of 4,
    then the next of 2, ...), each length in start order: the first questions of the subset
    hold every length."""
    found: dict[int, list[_AskedChain]] = {hops: [] for hops in lengths}
    ends: dict[int, Counter[int]] = {hops: Counter() for hops in lengths}
    for start in starts:
        wanted = [hops for hops in reversed(lengths) if len(found[hops]) < per_hops]
        if not wanted:
            break
        for hops in wanted:
            full = {end for end, times in ends[hops].items() if times == _CHAINS_PER_END}
            asked = ask(start, hops, full)
            if asked is not None:
                found[hops].append(asked)
                ends[hops][asked.chain[-1]] += 1
                break
    return [asked for turn in zip_longest(*found.values()) for asked in turn if asked is not None]


def _distractors(pool: Pool, asked: _Asked, count: int, seed: int) -> list[int]:
    """``count`` pool passages off the chain: neighbours of the chain first (up to half), then
    any, each in order of the question's content words shared (step 7)."""
    shared: Counter[int] = Counter()
    for word in query_terms(asked.question):
        shared.update(pool.postings.get(word, ()))
    chain = set(asked.chain)
    salt = f"composed:{pool.passages[asked.chain[0]].pid}"

    def rank(index: int) -> int:
        return _rank(seed, salt, pool.passages[index].pid)

    near = set().union(*map(pool.neighbours, asked.chain)) - chain
    chosen = _best(near, count // 2, shared, rank)
    taken = chain.union(chosen)
    chosen += _best(shared.keys() - taken, count - len(chosen), shared, rank)
    return chosen


def _best(
    indexes: Iterable[int], count: int, shared: Counter[int], rank: Callable[[int], int]
) -> list[int]:
    """The first ``count`` of ``indexes`` by ``shared`` words, most first, ties by ``rank``:
    only the ties at the cut are ranked (most of the pool shares a word with a question)."""
    by_shared = sorted(indexes, key=shared.__getitem__, reverse=True)
    if count <= 0:
        return []
    if len(by_shared) > count:
        floor = shared[by_shared[count - 1]]
        by_shared = [i for i in by_shared if shared[i] >= floor]
    ranked = sorted(by_shared, key=lambda i: (-shared[i], rank(i)))
    return ranked[:count]


def _question(pool: Pool, asked: _Asked, candidates: int, seed: int) -> EvalQuestion:
    """``asked`` as a question with its gold and distractor candidates (steps 6 and 7)."""
    hops = len(asked.chain)
    mentions = [pool.mention(source, target).sentence for source, target in pairwise(asked.chain)]
    supporting = [(sentence,) for sentence in (*mentions, asked.answer_sentence)]
    extra = _distractors(pool, asked, max(0, candidates - hops), seed)
    return _chain_question(
        pool, "composed", asked.chain, supporting, asked.question, asked.answer, extra, seed
    )


def _chain_question(
    pool: Pool,
    kind: str,
    chain: tuple[int, ...],
    supporting: Sequence[Iterable[int]],
    question: str,
    answer: str,
    extra: Sequence[int],
    seed: int,
) -> EvalQuestion:
    """``chain`` asked as ``question``, of type ``kind``-length: its passages gold, each
    supported by its sentences numbered in ``supporting``, then the ``extra`` pool passages,
    all shuffled in an order seeded by ``seed`` and the question's id."""
    answers = (answer,)
    gold = []
    for index, numbers in zip(chain, supporting, strict=True):
        passage = pool.passages[index]
        sentences = tuple(passage.sentences[n] for n in dict.fromkeys(numbers))
        gold.append(_labelled(passage, answers, sentences))
    passages = [*gold, *(_labelled(pool.passages[i], answers, ()) for i in extra)]
    qid = f"{kind}-{len(chain)}:{gold[0].pid}"
    random.Random(f"{kind}:{seed}:{qid}").shuffle(passages)
    return EvalQuestion(
        id=qid,
        question=question,
        answers=answers,
        passages=tuple(passages),
        gold_pids=tuple(p.pid for p in gold),
        type=f"{kind}-{len(chain)}",
        all_gold_in_candidates=True,
    )


def _labelled(
    passage: EvalPassage, answers: Sequence[str], supporting: tuple[str, ...]
) -> EvalPassage:
    """``passage`` as a candidate: gold when it has ``supporting`` sentences."""
    return EvalPassage(
        pid=passage.pid,
        title=passage.title,
        text=passage.text,
        is_gold=bool(supporting),
        has_answer=has_answer(passage.text, answers),
        supporting=supporting,
        sentences=passage.sentences,
    )


def composed_subset(
    questions: Sequence[EvalQuestion], *, candidates: int = 20, seed: int = 0, per_hops: int = 100
) -> list[EvalQuestion]:
    """The composed subset built from the passages of ``questions`` (see the module
    docstring): up to ``per_hops`` questions per chain length, the lengths in turn, each with
    ``candidates`` candidates (fewer only where too few passages of the pool neighbour its
    chain or share a word with it). The same input, ``candidates``, ``seed`` and ``per_hops``
    give the same subset."""
    _check_counts(candidates, seed, per_hops, longest=max(HOPS))
    pool = Pool(questions)
    chains = _Chains(pool, seed)
    chosen = _chosen(chains.starts(), chains.ask, HOPS, per_hops)
    if not chosen:
        raise RequestError(
            "the composed subset needs passages that name one another's titles in chains of "
            f"{min(HOPS)} to {max(HOPS)}, with an answer in the last; this dataset has none",
            field="subset",
        )
    return [_question(pool, asked, candidates, seed) for asked in chosen]


def _check_counts(candidates: object, seed: object, per_hops: object, *, longest: int) -> None:
    """Raise :class:`~ctxasm.errors.RequestError`, naming the argument, unless ``candidates``
    is an integer of at least ``longest`` (the longest chain), ``per_hops`` one of at least 1
    and ``seed`` one of at least 0."""
    for name, value, low in (("candidates", candidates, longest), ("per_hops", per_hops, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise RequestError(
                f"{name} must be an integer of at least {low}, got {shown(value)}", field=name
            )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise RequestError(
            f"seed must be an integer of at least 0, got {shown(seed)}", field="seed"
        )
