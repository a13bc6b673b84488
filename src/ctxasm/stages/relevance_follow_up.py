"""Follow-up questions: the earlier user turn a question that points back is read with.

A question points back when it has a pointer word ("When did she die?", "Where does this river
end?", "How many people live there?") or no content word of its own ("And why?"). What it
points to is named in an earlier user turn that is about what it asks: some passage has a
content word of the turn's that the question lacks and, where any passage has one of the
question's own content words, one of those too ("What is it made of?" after a question on the
weather finds its passages, none of which speaks of the weather: it asks about something else).
Of the ``NEAREST_TURNS`` nearest user turns with a content word the question lacks, the nearest
that is about what it asks and does not point back itself is read ("Tell me about the Danube."
rather than the "Where does it start?" after it), else the nearest that is about what it asks.
Relevance ranks by the question and that turn together (see :func:`ctxasm.pipeline.relevance`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, islice

from ctxasm.data import Message
from ctxasm.lexical import query_terms, term_counts_all, words

__all__ = ["NEAREST_TURNS", "FollowUp", "follow_up", "points_back"]

# The most earlier user turns (of those with a content word the question lacks) a question is
# compared with, nearest first: what a question points to was named lately, and each turn
# compared is one more pass over the passages.
NEAREST_TURNS = 4
# The most words of a reading the comparison counts: up to this many, the passages are searched
# for each (see ctxasm.lexical.term_counts_all), fast, and the count is cached for relevance.
_CHECKED_TERMS = 64

# Words by which a question points back at an earlier one ("When did she die?", "Tell me more
# about it"). A question without them names what it asks about ("What is the boiling point of
# tungsten?" after a question on Marie Curie). Words that self-contained questions use as often
# ("the film that won", "other than") are no pointers; "there" is one only where it is not
# existential (see ``_EXISTENTIAL_AFTER``).
_POINTERS = frozenset(
    "he she it they him her his hers its their theirs them this these those more else "
    "another".split()
)
# "there" followed by one of these words, or after one of ``_EXISTENTIAL_BEFORE``, says that
# something exists ("there is", "there's", "are there", "isn't there", "will there be") and
# points nowhere.
_EXISTENTIAL_AFTER = frozenset(
    "is isn are aren was wasn were weren s re ll d be been being will won would could can may "
    "might must should shall has hasn have haven had hadn seem seems seemed appear appears "
    "appeared exist exists existed remain remains remained used".split()
)
_EXISTENTIAL_BEFORE = frozenset(
    "is isn are aren was wasn were weren s t will would could can may might must should "
    "shall".split()
)
# Pointer words that may point at what an earlier clause of the question itself names ("Where
# does the Rhine end, and how long is it?"); "more", "else" and "another" always point back.
_BINDABLE = (_POINTERS - {"more", "else", "another"}) | {"there"}
# Where a clause ends: at its punctuation, or before a conjunction that opens another.
_CLAUSE_BREAK = re.compile(
    r"[,;:.!?]+|\s(?:and|but|or|so|then|while|whereas|because)\s", re.IGNORECASE
)
_CONJUNCTIONS = frozenset("and but or so then while whereas because".split())
# A clause that opens with one of these words sets the scene ("According to Wikipedia,", "In
# Europe,", "On Monday,", "Compared to Google,", "If Trump wins,", "For Python,"): a name in it
# is no subject a later pronoun means. Words that bring up a topic ("about", "regarding", "as
# for") are not among them: "What about the Rhine, where does it end?" asks about the Rhine.
# Nor is a clause that asks ("In which country does the Danube end, and how long is it?").
_QUESTION_WORDS = frozenset("what which where when who whom whose why how".split())
_SCENE_SETTERS = frozenset(
    "according across after against along although amid among apart around assuming at before "
    "behind below beneath beside besides between beyond by compared considering despite during "
    "except excluding following for from given if in including inside into like near of off on "
    "once onto outside over past per since though through throughout to toward towards under "
    "unless unlike until upon via whether with within without".split()
)
_WORD = re.compile(r"\w+")
# A demonstrative and the word after it, past a number: "this river", "these two cities".
_DEMONSTRATIVE = re.compile(
    r"\b(this|these|those)\s+(?:(?:\d+|two|three|four|five|six|seven|eight|nine|ten)\s+)?(\w+)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A question read with the earlier user turn at index ``turn`` of the history: ``reading``
    is what relevance ranks by, the question (less the nouns its demonstratives point with)
    and then that turn."""

    reading: str
    turn: int


def follow_up(query: str, history: Sequence[Message], texts: Sequence[str]) -> FollowUp | None:
    """How ``query`` reads with the earlier user turn of ``history`` that names what it
    points to among passages ``texts`` (titles and texts, see the module docstring); ``None``
    where it does not point back or none of the ``NEAREST_TURNS`` nearest user turns that add a
    content word to it is about what it asks.

    A demonstrative's noun names the kind of thing pointed to, not a subject of its own ("this
    river" is the Danube the turn named, not any river): it is left out of the reading, and
    the question's other content words and the turn's weigh alike."""
    if not history or not points_back(query):
        return None
    asked = _DEMONSTRATIVE.sub(_pointer_alone, query)
    own = frozenset(query_terms(asked))
    nearest = None  # the nearest related turn that points back itself
    for at, leans_back in islice(_user_turns(history, own), NEAREST_TURNS):
        # The question first: its words stay among the first MAX_QUERY_TERMS of a long turn's.
        reading = f"{asked}\n{history[at].content}"
        if not _related(reading, own, texts):
            continue
        if not leans_back:
            return FollowUp(reading, at)
        nearest = nearest or FollowUp(reading, at)
    return nearest


def points_back(query: str) -> bool:
    """Whether ``query`` points back at an earlier turn: it has a pointer word (see
    ``_POINTERS``) or a "there" that is not existential ("How many people live there?", not "Is
    there a limit?") that no name before it in the question gives a subject to, or it has no
    content word of its own ("And why?"). "Where does the Rhine end, and how long is it?" asks
    about the Rhine: a pronoun, demonstrative or "there" in a clause after a name (a
    capitalised content word that does not open a sentence) means it. A noun after "the" is
    no such subject: "the film" in "Who directed the film, and when was he born?" is the one
    an earlier turn named."""
    content = frozenset(query_terms(query))
    if not content:
        return True
    named = _first_name_end(query, content)
    start = 0
    for brk in [*_CLAUSE_BREAK.finditer(query), None]:
        found = words(query[start : len(query) if brk is None else brk.start()])
        pointers = _POINTERS.intersection(found) | ({"there"} if _there_points(found) else set())
        if pointers and not (named <= start and _BINDABLE.issuperset(pointers)):
            return True
        if brk is not None:
            start = brk.end()
    return False


def _there_points(found: list[str]) -> bool:
    """Whether the words ``found`` hold a "there" that is not existential."""
    return any(
        word == "there"
        and (found[at + 1] if at + 1 < len(found) else "") not in _EXISTENTIAL_AFTER
        and (found[at - 1] if at else "") not in _EXISTENTIAL_BEFORE
        for at, word in enumerate(found)
    )


def _first_name_end(query: str, content: frozenset[str]) -> float:
    """Where the first name of ``query`` ends: a capitalised word, one of the query's
    ``content`` words, that does not open a sentence and is not in a clause that sets the scene
    (see ``_SCENE_SETTERS``: "According to Wikipedia, where does it end?" still points back);
    infinity where it has none."""
    after = 0  # the end of the word before
    before = ""  # the word before, lower-cased
    scene = False  # whether this clause so far sets the scene
    for word in _WORD.finditer(query):
        gap = query[after : word.start()]
        low = word[0].lower()
        if after == 0 or before in _CONJUNCTIONS or any(mark in gap for mark in ",;:.!?"):
            scene = low in _SCENE_SETTERS
        elif low in _QUESTION_WORDS:
            scene = False
        opens = after == 0 or any(mark in gap for mark in ".!?")
        if not opens and not scene and word[0][:1].isupper() and low in content:
            return word.end()
        after, before = word.end(), low
    return math.inf


def _user_turns(history: Sequence[Message], own: frozenset[str]) -> Iterator[tuple[int, bool]]:
    """The user turns of ``history`` with a content word not in ``own``, nearest first: each
    turn's index, and whether it points back itself."""
    for at in range(len(history) - 1, -1, -1):
        turn = history[at]
        if turn.role == "user" and not own.issuperset(query_terms(turn.content)):
            yield at, points_back(turn.content)


def _related(reading: str, own: frozenset[str], texts: Sequence[str]) -> bool:
    """Whether some text has a word of ``reading`` not in ``own`` (the question's), in a text
    with a word of ``own`` too where any text has one. Counted for the reading's first
    ``_CHECKED_TERMS`` words, as relevance counts them: its count of the reading is then found
    in :func:`ctxasm.lexical.term_counts_all`'s cache."""
    terms = query_terms(reading)[:_CHECKED_TERMS]
    asked = [term in own for term in terms]
    added = [not mine for mine in asked]
    rows = term_counts_all(terms, texts)
    # Where no passage has a word of the question's own, the turn is all there is to go by.
    lead = [row for row in rows if any(compress(row, asked))] or rows
    return any(any(compress(row, added)) for row in lead)


def _pointer_alone(found: re.Match[str]) -> str:
    """The demonstrative alone, without its number and the word after it, where that word is
    a content word and no name: "this Rhine river" names its subject (review rv36-2)."""
    noun = found[2]
    return found[1] if query_terms(noun) and not noun[:1].isupper() else found[0]
