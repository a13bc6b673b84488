"""Utility: one number per candidate from every signal a passage carries (seed 003).

``utility = w_score * given + w_lexical * lexical + w_title * title + w_authority * authority
+ w_freshness * freshness + w_graph * graph + w_link * link``, each signal in 0..1:

- ``given``: the retriever's score, min-max scaled over the candidates (0 when absent);
- ``lexical``: BM25 of the query's content words against title and text, with statistics over
  the candidate set, scaled so the best is 1;
- ``title``: 1 when the query names the passage's title as a phrase (a trailing parenthetical
  qualifier such as "(film)" is ignored), else 0;
- ``authority``: as given (0..1), 0 when absent;
- ``freshness``: ``0.5 ** (age / half_life_days)``, the age counted from the newest timestamp
  among the candidates (so the result does not depend on the clock), 0 when absent;
- ``graph``: ``1 / (1 + graph_distance)``, 0 when absent;
- ``link``: 1 when the passage shares nothing with the query but one of the first
  ``max_link_sources`` relevant passages names its title (a second hop), 0.5 when it shares a
  name with one instead (see :func:`shared_names`; among the first ``MAX_NAME_PASSAGES``
  passages; 0.375 for a name of one word), half that for each further hop, else 0.

Novelty against what is already selected is the planners' part
(:mod:`ctxasm.stages.selection_planners`): it depends on the selection, not on the passage alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ctxasm.data import Passage
from ctxasm.deadline import checkpoint
from ctxasm.lexical import (
    bridge_names,
    inner_phrases,
    lone_names,
    lower_words,
    phrase_key,
    query_terms,
    title_key,
    title_links,
    titled,
    writes_lower,
)
from ctxasm.stages.relevance import Scores, bm25
from ctxasm.strategy import Strategy, require_int, require_number

__all__ = ["UtilityRelevance", "title_match"]

_SECONDS_PER_DAY = 86_400.0


def title_match(query_key: str, title: str | None) -> float:
    """1.0 when the query (a phrase key) names the title as a whole phrase, else 0.0."""
    key = title_key(title)
    return 1.0 if key and f" {key} " in f" {query_key} " else 0.0


@dataclass(frozen=True)
class UtilityRelevance(Strategy):
    """Every signal at once: retriever score, BM25 over title and text, a title named in the
    query, authority, freshness and graph distance, weighted (see the module docstring).

    A passage with no retriever score that shares no content word with the query, whose title
    the query does not name and that no relevant passage names or shares a name with, scores 0
    and is dropped as irrelevant, whatever its metadata. Use it (the default) unless you want
    one signal alone.
    """

    name: ClassVar[str] = "utility"
    slot: ClassVar[str] = "relevance"
    w_score: float = 1.0
    w_lexical: float = 1.0
    w_title: float = 1.0
    w_authority: float = 0.2
    w_freshness: float = 0.2
    w_graph: float = 0.2
    w_link: float = 0.1
    max_link_sources: int = 50
    max_hops: int = 3
    half_life_days: float = 365.0
    k1: float = 1.2
    b: float = 0.75

    def __post_init__(self) -> None:
        weights = ("w_score", "w_lexical", "w_title", "w_authority", "w_freshness", "w_graph")
        for weight in (*weights, "w_link"):
            require_number(weight, getattr(self, weight), low=0.0, high=100.0)
        require_int("max_link_sources", self.max_link_sources, low=0)
        require_int("max_hops", self.max_hops, low=1)
        require_number("half_life_days", self.half_life_days, low=1e-6)
        require_number("k1", self.k1, low=0.0, high=10.0)
        require_number("b", self.b, low=0.0, high=1.0)

    def score(self, query: str, passages: Sequence[Passage]) -> Scores:
        if not passages:
            return Scores([], 0.0, "utility")
        terms = query_terms(query)
        if not terms and all(p.score is None for p in passages):
            return Scores([0.0] * len(passages), 0.0, "utility", "the query has no content words")
        query_key = phrase_key(query)
        texts = [titled(p.title, p.text) for p in passages]
        raw = bm25(terms, texts, self.k1, self.b) if terms else [0.0] * len(passages)
        best = max(raw)
        lexical = [r / best for r in raw] if best > 0 else raw
        titles = _specific_titles(query_key, passages)
        given = _scaled([p.score for p in passages])
        fresh = self._freshness(passages)
        links = self._links(passages, lexical, titles)
        values = []
        for i, passage in enumerate(passages):
            scored = passage.score is not None and self.w_score > 0
            if not scored and lexical[i] == 0.0 and titles[i] == 0.0 and links[i] == 0.0:
                values.append(0.0)
                continue
            graph = 0.0 if passage.graph_distance is None else 1.0 / (1 + passage.graph_distance)
            values.append(
                self.w_score * given[i]
                + self.w_lexical * lexical[i]
                + self.w_title * titles[i]
                + self.w_authority * (passage.authority or 0.0)
                + self.w_freshness * fresh[i]
                + self.w_graph * graph
                + self.w_link * links[i]
            )
            if values[-1] <= 0.0:  # 0 is the irrelevance floor; a relevant passage stays above
                values[-1] = 1e-9
        return Scores(values, 0.0, "utility", "no query term in the title or text", lexical=lexical)

    def _links(
        self, passages: Sequence[Passage], lexical: list[float], titles: list[float]
    ) -> list[float]:
        """How strongly a chain from the query reaches this passage's title, for passages the
        query itself does not reach: a relevant passage naming it gives the link's strength (1
        for the whole title, less for a shorter name; see :func:`ctxasm.lexical.title_links`),
        one sharing a name with it ``NAME_LINK`` (see :func:`shared_names`: among the first
        ``MAX_NAME_PASSAGES`` passages, in the order given; times ``LONE_NAME_LINK`` where
        every name they share is one word), a passage reached
        that way half that, and so on for ``max_hops`` hops. The second hop of a multi-hop
        question often shares no word with the query, but the first hop names it or a name
        in it; the third is reached from the second."""
        links = [0.0] * len(passages)
        if self.w_link == 0:
            return links
        sources = [
            i for i, (lex, title) in enumerate(zip(lexical, titles, strict=True)) if lex or title
        ][: self.max_link_sources]
        targets = [i for i in range(len(passages)) if lexical[i] == 0.0 and titles[i] == 0.0]
        names = shared_names([p.text for p in passages]) if targets else None
        weight = 1.0
        for _ in range(self.max_hops):
            if not sources or not targets:
                break
            checkpoint()  # each hop reads the texts of up to max_link_sources passages
            found = title_links(
                [passages[i].title for i in targets],
                [passages[i].text for i in sources],
                aligned=False,
            )
            reached: dict[int, float] = {}
            for named in found:
                for position, strength in named.items():
                    index = targets[position]
                    reached[index] = max(reached.get(index, 0.0), weight * strength)
            if names is not None:
                bridges = frozenset().union(*(names[i] for i in sources if i < len(names)))
                for index in targets:  # of the first MAX_NAME_PASSAGES only
                    if index < len(names) and index not in reached:
                        shared = bridges & names[index]
                        if shared:
                            reached[index] = weight * NAME_LINK * name_strength(shared)
            for index, strength in reached.items():
                links[index] = strength
            targets = [i for i in targets if i not in reached]
            sources = sorted(reached)[: self.max_link_sources]
            weight /= 2
        return links

    def _freshness(self, passages: Sequence[Passage]) -> list[float]:
        from ctxasm.schema import parse_timestamp

        stamps = [
            None if p.timestamp is None else parse_timestamp(p.timestamp).timestamp()
            for p in passages
        ]
        known = [s for s in stamps if s is not None]
        if not known:
            return [0.0] * len(passages)
        newest = max(known)
        half_life = self.half_life_days * _SECONDS_PER_DAY
        return [0.0 if s is None else 0.5 ** ((newest - s) / half_life) for s in stamps]


# A name a relevant passage shares with a passage that shares nothing with the query links them
# this much, against 1 for a title named whole: the next hop of a chain is often a page about
# the answer that names the bridge in its text ("... with her partner Steve Hillage"), not the
# bridge's own page.
NAME_LINK = 0.5
# A link through a single word (a place, a company: "Cambridge", "Viacom") counts this much of
# one through a name of two words or more: one capitalised word is more often another thing
# of the same name.
LONE_NAME_LINK = 0.75


def name_strength(shared: Iterable[str]) -> float:
    """How much of a name link's strength ``shared`` names give: whole where one of them has
    two words or more, ``LONE_NAME_LINK`` where all are single words."""
    return 1.0 if any(" " in name for name in shared) else LONE_NAME_LINK


# Names are compared among the first this many texts only: each one's names are read, a cost
# that follows the text, which a retriever's long list would pay in full for passages ranked
# far below the few dozen a planner weighs (see PLANNER_MAX_CANDIDATES and its default of 50).
MAX_NAME_PASSAGES = 64


def shared_names(texts: Sequence[str]) -> list[frozenset[str]]:
    """For each of the first ``MAX_NAME_PASSAGES`` ``texts``, its names that at least one
    other of them and at most a quarter of them (at least three) name: a name nearly every
    candidate has ("United States") ties none of them to another. Names are those of
    :func:`ctxasm.lexical.bridge_names` (two words or more), and the single words
    :func:`ctxasm.lexical.lone_names` finds that none of the texts writes in lower case ("the
    final" makes "Final" no name; see :func:`ctxasm.lexical.lower_words`); a link through one
    of those is weaker (see ``LONE_NAME_LINK``). Texts past those have no entry."""
    considered = texts[:MAX_NAME_PASSAGES]
    names = [bridge_names(text) | lone_names(text) for text in considered]
    held = Counter(name for found in names for name in found)
    most = max(3, len(names) // 4)
    shared = {name for name, count in held.items() if 2 <= count <= most}
    single = sorted(name for name in shared if " " not in name)
    if len(single) > _SEARCHED_WORDS:  # many: each text's lower-case words, read once
        lower = frozenset().union(*map(lower_words, considered))
        shared.difference_update([name for name in single if name in lower])
    elif single:  # a few: one search of all the texts each (a line break parts no word)
        every = "\n".join(considered)
        shared.difference_update([name for name in single if writes_lower(every, name)])
    return [found & shared for found in names]


# Up to this many single words two texts share are each searched for in the texts written in
# lower case; beyond, the texts' lower-case words are read (a search each would cost words x
# text on a text full of names, a roster).
_SEARCHED_WORDS = 64


def _specific_titles(query_key: str, passages: Sequence[Passage]) -> list[float]:
    """``title_match`` for each passage, halved when the title the query names is part of a
    longer title the query also names ("Peter Pan" when it names "Peter Pan Live!"): the
    longer match is the more specific evidence."""
    keys = [title_key(p.title) for p in passages]
    padded_query = f" {query_key} "
    named = {key for key in keys if key and f" {key} " in padded_query}
    # Every shorter phrase inside a named title (titles of up to 32 words: a longer one is no
    # name, and this stays linear in the titles' length).
    inside: set[str] = set()
    for key in named:
        parts = key.split()
        if len(parts) <= 32:
            inside.update(inner_phrases(parts))
    return [0.0 if key not in named else 0.5 if key in inside else 1.0 for key in keys]


def _scaled(scores: Sequence[float | None]) -> list[float]:
    known = [s for s in scores if s is not None]
    if not known:
        return [0.0] * len(scores)
    low, high = min(known), max(known)
    span = high / 2 - low / 2
    return [0.0 if s is None else ((s / 2 - low / 2) / span if span > 0 else 1.0) for s in scores]
