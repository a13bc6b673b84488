"""The pool of passages the composed subset is built from, and the links between them (steps 1
and 2 of :mod:`ctxasm.evaluation.composed`): every passage once per title, and where a sentence
of one names another's title. Mentions are found by looking up the phrases that start with a
title's first word, so the cost follows the texts, not the number of titles.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ctxasm.evaluation.dataset import EvalPassage, EvalQuestion
from ctxasm.lexical import STOPWORDS, Phrases, phrase_key, query_terms, sentence_spans, title_key

__all__ = ["LONGEST_KEY", "Mention", "Pool", "word_list"]

LONGEST_KEY = 8  # words; longer titles are not linked to
_WORD = re.compile(r"\w+")
_STEM = 5  # letters of a qualifier's word that a passage's word must start with


@dataclass(frozen=True, slots=True)
class Mention:
    """Where a sentence names a linked title: the sentence and its words ``start:end``."""

    target: int
    sentence: int
    start: int
    end: int


class Pool:
    """Every passage once per title, with the links between them (steps 1 and 2)."""

    def __init__(self, questions: Iterable[EvalQuestion]) -> None:
        self.passages = _pooled(questions)
        self.words = [tuple(map(word_list, p.sentences)) for p in self.passages]
        self.keys = [title_key(p.title) or phrase_key(p.title) for p in self.passages]
        self.unique = _unique_keys(self.keys)
        titles = [p.title for p in self.passages]
        # The words the pool's sentences write in lower case somewhere.
        self.lowercase = _lowercase_words(self.words)
        targets = _targets(self.unique, self.lowercase)
        self.nouns = _nouns(self.words)
        phrases = _phrases(targets)
        qualifiers = [_qualifier(title) for title in titles]
        self.mentions = []
        for index, sentences in enumerate(self.words):
            found = _mentions(index, sentences, targets, phrases)
            if any(qualifiers[m.target] for m in found):
                starts = _starts(sentences)
                found = [m for m in found if _fits(qualifiers[m.target], starts)]
            self.mentions.append(found)
        self.links = [tuple(dict.fromkeys(m.target for m in found)) for found in self.mentions]
        # Every title by its key, however common or shared, for the neighbours of a chain.
        self.named: dict[str, list[int]] = {}
        for index, key in enumerate(self.keys):
            if len(key) >= 4:
                self.named.setdefault(key, []).append(index)
        self.named_phrases = _phrases(self.named)
        self.postings: dict[str, list[int]] = {}
        for index, passage in enumerate(self.passages):
            for word in query_terms(f"{passage.title} {passage.text}"):
                self.postings.setdefault(word, []).append(index)

    def mention(self, source: int, target: int) -> Mention:
        """The first mention of passage ``target`` in passage ``source``."""
        return next(m for m in self.mentions[source] if m.target == target)

    def neighbours(self, index: int) -> set[int]:
        """The passages whose title passage ``index`` names, or that name its title, by the
        title's key alone (as a reader's links do: no test that it means that thing)."""
        found = {
            other
            for words in self.words[index]
            for start, end, key in self.named_phrases.spans([w.lower() for w in words])
            if _named(words, start, end)
            for other in self.named[key]
        }
        key = self.keys[index]
        if len(key) < 4:
            return found
        holders = [self.postings.get(w, []) for w in key.split() if w not in STOPWORDS]
        if holders:
            phrase = f" {key} "
            rarest = min(holders, key=len)
            found.update(i for i in rarest if phrase in f" {phrase_key(self.passages[i].text)} ")
        found.discard(index)
        return found


def _pooled(questions: Iterable[EvalQuestion]) -> list[EvalPassage]:
    """The passages of ``questions``, the first of each title, unlabelled, with unique pids."""
    pooled: list[EvalPassage] = []
    titles: set[str] = set()
    pids: set[str] = set()
    for question in questions:
        for passage in question.passages:
            title = html.unescape(passage.title)
            if title in titles:
                continue
            titles.add(title)
            # pids may be numbered per question ("0", "1", ...): a repeated one is qualified by
            # its question's id, and numbered if that is taken too
            pid, number = passage.pid, 1
            while pid in pids:
                pid = f"{question.id}:{passage.pid}" + (f":{number}" if number > 1 else "")
                number += 1
            pids.add(pid)
            sentences = passage.sentences or tuple(
                passage.text[start:end] for start, end in sentence_spans(passage.text)
            )
            pooled.append(EvalPassage(pid, title, passage.text, False, None, (), sentences))
    return pooled


def word_list(sentence: str) -> tuple[str, ...]:
    """The words of ``sentence`` as written (a word is a run of ``\\w``, as in phrase keys)."""
    return tuple(_WORD.findall(sentence))


def _unique_keys(keys: Sequence[str]) -> dict[str, int]:
    """Each title key that only one passage has, with that passage's index."""
    counts = Counter(keys)
    return {key: index for index, key in enumerate(keys) if key and counts[key] == 1}


def _lowercase_words(words: Iterable[Sequence[Sequence[str]]]) -> set[str]:
    """The words the pool's sentences write in lower case somewhere."""
    return {
        word for passage in words for sentence in passage for word in sentence if word.islower()
    }


def _nouns(words: Iterable[Sequence[Sequence[str]]]) -> frozenset[str]:
    """The content words the pool's sentences write as "the ... of" (or "a", "an"): nouns
    that a question can ask with."""
    return frozenset(
        word
        for passage in words
        for sentence in passage
        for before, word, after in zip(sentence, sentence[1:], sentence[2:], strict=False)
        if after == "of"
        and before.lower() in _ARTICLES
        and word.isalpha()
        and word.islower()
        and word not in STOPWORDS
    )


_ARTICLES = frozenset(("the", "a", "an"))


def _targets(unique: dict[str, int], common: set[str]) -> dict[str, int]:
    """The specific title keys (see step 2) with their passages."""
    return {
        key: index
        for key, index in unique.items()
        if (
            2 <= key.count(" ") + 1 <= LONGEST_KEY
            if " " in key
            else len(key) >= 5 and key.isalpha() and key not in common
        )
    }


def _qualifier(title: str) -> tuple[str, ...]:
    """The first five letters of each content word of ``title``'s trailing "(qualifier)",
    those that start a word of the name before it left out ("alex" of "Alexander (Alex Ebert
    album)", which every mention has)."""
    head, parenthesis, rest = title.rpartition(" (")
    if not parenthesis or not title.endswith(")"):
        return ()
    name = phrase_key(head).split()
    stems = (w[:_STEM] for w in phrase_key(rest).split() if w.isalpha() and w not in STOPWORDS)
    return tuple(stem for stem in stems if not any(word.startswith(stem) for word in name))


def _starts(sentences: Iterable[Sequence[str]]) -> frozenset[str]:
    """The first one to ``_STEM`` letters of every word of ``sentences``, in lower case: what
    a qualifier's stems are looked up in, once per passage."""
    return frozenset(
        word[:size]
        for words in sentences
        for word in map(str.lower, words)
        for size in range(1, _STEM + 1)
    )


def _fits(qualifier: tuple[str, ...], starts: frozenset[str]) -> bool:
    """Whether a passage whose words start as ``starts`` (see :func:`_starts`) can mean the
    title of ``qualifier``: it has a word that starts as a word of the qualifier does
    ("films" for "(2014 film)"), or there is no qualifier. A name in a text is often another
    thing of that name ("Wichita", the city, for "Wichita (film)")."""
    return not qualifier or any(stem in starts for stem in qualifier)


def _phrases(keys: Iterable[str]) -> Phrases:
    """``keys`` of up to ``LONGEST_KEY`` words, to be found in a sentence's words with a
    look-up for each word that starts one, not a search for each key."""
    return Phrases(key for key in keys if key.count(" ") < LONGEST_KEY)


def _mentions(
    source: int,
    sentences: Sequence[Sequence[str]],
    targets: dict[str, int],
    phrases: Phrases,
) -> list[Mention]:
    """The linked titles that passage ``source``'s sentences name, its own title left out."""
    found = []
    for number, words in enumerate(sentences):
        for start, end, key in phrases.spans([word.lower() for word in words]):
            target = targets[key]
            if target != source and _named(words, start, end):
                found.append(Mention(target, number, start, end))
    return found


def _named(words: Sequence[str], start: int, end: int) -> bool:
    """Whether ``words[start:end]`` of a sentence are written as a name of their own: no
    capitalised word or number just before or after ("Danny" in "Danny Willson" is part of
    another name), and, of several words, one with a capital or a digit that does not open
    the sentence ("Going back" opening one names no film). One word is a name wherever it
    stands: only keys the pool never writes in lower case are linked to by one."""
    if (start > 0 and _capitalised(words[start - 1])) or (
        end < len(words) and _capitalised(words[end])
    ):
        return False
    return end - start == 1 or any(
        not words[at].islower() and words[at].lower() not in STOPWORDS
        for at in range(max(start, 1), end)
    )


def _capitalised(word: str) -> bool:
    """Whether ``word`` continues a name: capitalised (not a function word) or a number, as
    in "September 1981"."""
    return (word[:1].isupper() and word.lower() not in STOPWORDS) or word[:1].isdigit()
