"""Planners: selection strategies that value a passage by what it adds to the passages already
chosen, not by its score alone (seed 003, cost-based assembly).

- ``coverage``: redundancy-aware greedy on a monotone submodular objective;
- ``bridge``: multi-hop selection that follows the entities chosen passages introduce;
- ``auto`` (the default): the planner that suits the query's class.

They read the query from ``packing.context`` (see :class:`SelectionContext`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from ctxasm.data import Candidate, Chosen, Reason
from ctxasm.deadline import checkpoint
from ctxasm.lexical import (
    Phrases,
    covered_terms,
    entities,
    phrase_key,
    query_terms,
    sentence_spans,
    sentence_words,
    states_a_term,
    term_counts_all,
    term_forms,
    title_aliases,
    title_key,
    title_links,
    titled,
    written_phrase,
)
from ctxasm.stages.relevance import MIN_AGREEMENT, rank_agreement
from ctxasm.stages.relevance_utility import name_strength, shared_names
from ctxasm.stages.selection import offer_in_order, scaled_scores
from ctxasm.stages.selection_packing import Offer, Packing, SelectionContext
from ctxasm.strategy import ParamError, Strategy, require_int, require_number
from ctxasm.validation import shown

__all__ = ["AutoSelection", "BridgeSelection", "CoverageSelection", "Evidence"]

# Outcomes of an offer that keep the candidate (whole, or stitched into a kept passage).
_KEPT = (Offer.ADDED, Offer.MERGED)
# Candidates offered in rank order in the budget the plan left.
_FILL = Chosen("fill")
# Less than this of a value is rounding left by incremental updates, not a part of it.
_RESIDUE = 1e-9
# The most candidates a planner may weigh: each step compares every open candidate with what
# was chosen, so the work grows with their square.
PLANNER_MAX_CANDIDATES = 500


class Evidence:
    """What each candidate says about the query: the query's content words (weighted by IDF over
    the candidates) and named phrases it contains, its title, and the entities it introduces.
    Built once per selection; every list is indexed like ``candidates``."""

    def __init__(self, query: str, candidates: Sequence[Candidate]) -> None:
        self.terms = query_terms(query)
        query_entities = entities(query)
        self.phrases = sorted(query_entities - set(self.terms))
        self.titles = [title_key(c.passage.title) for c in candidates]
        # Whether the query names each one's title as a phrase (the page the question asks
        # about: see _Subjects and _name_links).
        asked = f" {phrase_key(query)} "
        self.title_asked = [bool(key) and f" {key} " in asked for key in self.titles]
        # The text alone: a title that repeats another title is not a link between them.
        self.texts = [f" {phrase_key(c.text)} " for c in candidates]
        # A query word is in a passage when one of its forms is in the title or the text (see
        # term_forms: "married" states "spouse").
        self.forms = forms = {term: term_forms(term) for term in self.terms}
        counts = term_counts_all(self.terms, [titled(c.passage.title, c.text) for c in candidates])
        covers = []
        for c, counted in zip(candidates, counts, strict=True):
            checkpoint()  # here and below: each candidate's text is read again
            covers.append(covered_terms(self.terms, c.text, c.passage.title, forms, counted))
        # A named phrase when it occurs between spaces in title and text together, as
        # phrase_key(f"{title}\n{text}") would give them (words never span the line break).
        if self.phrases:
            # Many phrases (a long query) are looked up by their first word and length in the
            # words of each text, rather than each searched for in it.
            many = len(self.phrases) > _PHRASES_BY_SEARCH
            index = Phrases(self.phrases) if many else None
            for found, c, text in zip(covers, candidates, self.texts, strict=True):
                key = _with_title(c.passage.title, text)
                if index is None:
                    found += [p for p in self.phrases if f" {p} " in key]
                else:
                    present = {" ".join(words) for words in index.found(key.split())}
                    found += [p for p in self.phrases if p in present]
        self.covers = [frozenset(found) for found in covers]
        elements = (*self.terms, *self.phrases)
        # The same, in query order: what the report lists, and the order values are summed in.
        self.ordered = [tuple(e for e in elements if e in found) for found in self.covers]
        count = len(candidates)
        self.weight: dict[str, float] = {}
        for element in (*self.terms, *self.phrases):
            df = sum(1 for covered in self.covers if element in covered)
            self.weight[element] = math.log(1.0 + (count - df + 0.5) / (df + 0.5))
        total = sum(self.weight.values()) or 1.0
        self.weight = {element: w / total for element, w in self.weight.items()}
        self.introduced: list[frozenset[str]] = []
        for c in candidates:
            checkpoint()
            self.introduced.append(entities(c.text) - query_entities)

    def next_hop(
        self, index: int, links: Mapping[int, float], is_open: Sequence[bool], covered: set[str]
    ) -> float:
        """The most query coverage an open candidate that ``index`` links to would add to what
        is ``covered`` and what ``index`` covers, times the link's strength."""
        best = 0.0
        if links:
            have = covered | self.covers[index]
            for j, strength in links.items():
                if is_open[j]:
                    best = max(best, strength * self.new_coverage(j, have))
        return best

    def elements_in(self, title: str | None, text: str) -> tuple[str, ...]:
        """The query's words and named phrases that ``text`` under ``title`` covers, in query
        order, as for a candidate: what a candidate kept in a changed form (compressed) still
        covers."""
        found = set(covered_terms(self.terms, text, title, self.forms))
        key = _with_title(title, f" {phrase_key(text)} ")
        found.update(p for p in self.phrases if f" {p} " in key)
        return tuple(e for e in (*self.terms, *self.phrases) if e in found)

    def terms_of(self, index: int) -> tuple[str, ...]:
        """The query's words and named phrases candidate ``index`` covers, in query order."""
        return self.ordered[index]

    def new_coverage(self, index: int, covered: set[str]) -> float:
        """The weight of the query elements candidate ``index`` covers that nothing kept does
        (summed in query order, so the value does not depend on how a set iterates)."""
        return sum(self.weight[e] for e in self.terms_of(index) if e not in covered)


# Up to this many named phrases, each is searched for in a passage's key; beyond, they are
# looked up in its words (8,000 names in a query against 50 passages of 10 KB took 5 s).
_PHRASES_BY_SEARCH = 32


def _with_title(title: str | None, padded_text: str) -> str:
    """The padded phrase key of a passage's title and text (``padded_text`` is the text's)."""
    head = phrase_key(title) if title else ""
    if not head:
        return padded_text
    return f" {head}{padded_text}" if padded_text != "  " else f" {head} "


class _Subjects:
    """The words of the pages a question names, taken back from the relevance of the
    candidates that repeat them once such a page is kept (see :class:`BridgeSelection`)."""

    def __init__(
        self, query: str, evidence: Evidence, weight: float, kept_whole: Set[int] = frozenset()
    ) -> None:
        self.evidence = evidence
        self.weight = weight
        self.kept_whole = kept_whole  # candidates that lose none of their relevance
        self.named = entities(query)  # the names the question writes (see repeated)
        self.spent: set[str] = set()  # the query elements already taken back
        self.taken = [0.0] * len(evidence.covers)  # the relevance taken back, by candidate

    @classmethod
    def planned(
        cls,
        context: SelectionContext,
        pool: Sequence[Candidate],
        evidence: Evidence,
        weight: float,
    ) -> _Subjects:
        """The subjects of a selection: none taken back for a comparison (every page it
        names is asked about) nor for candidates ranked by the retriever's own scores, whose
        relevance the planner cannot split by word."""
        off = context.query_class == "comparison" or _ranked_by_retriever(pool)
        # a previous turn's passage raised for the prompt cache keeps all it was given
        kept_whole = {i for i, c in enumerate(pool) if c.id in context.favoured}
        return cls(context.query, evidence, 0.0 if off else weight, kept_whole)

    def take_back(
        self,
        kept: int,
        open_: Sequence[int],
        value: list[float],
        relevance: float,
        scaled: Sequence[float],
    ) -> None:
        """Lower ``value`` (and add to ``taken``) by the share of each open candidate's
        relevance (``relevance`` times its ``scaled`` score) that repeats the subject ``kept``
        is the page of (see :meth:`repeated`)."""
        for i, share in self.repeated(kept, open_):
            cut = relevance * scaled[i] * share
            value[i] -= cut
            self.taken[i] += cut

    def repeated(self, kept: int, open_: Sequence[int]) -> list[tuple[int, float]]:
        """When candidate ``kept`` is a page the question names (its title key is a phrase of
        the question and one of its names, or of two words or more and inside none of them:
        "Harbor Lights", not a "Spouse" page for "the spouse of", nor "Paper Trail" for
        "Paper Trail Records"), the open candidates that cover words of that title not taken
        back yet, each with ``weight`` times the share of its query weight they hold; none
        otherwise."""
        key = self.evidence.titles[kept]
        padded = f" {key} "
        if self.weight == 0 or not self.evidence.title_asked[kept]:
            return []
        # Not a name the question writes: of two words or more, and inside none of its names.
        if key not in self.named and (
            " " not in key or any(padded in f" {name} " for name in self.named)
        ):
            return []
        words = {e for e in self.evidence.weight if f" {e} " in padded} - self.spent
        if not words:
            return []
        self.spent |= words
        found = []
        for i in open_:
            # more of the page asked about (another chunk of it) is no page that repeats it
            if i in self.kept_whole or self.evidence.titles[i] == key:
                continue
            held = sum(self.evidence.weight[e] for e in self.evidence.terms_of(i) if e in words)
            total = self.evidence.new_coverage(i, set())  # all it covers, in query order
            if held > 0 and total > 0:
                found.append((i, self.weight * held / total))
        return found


@dataclass(frozen=True)
class CoverageSelection(Strategy):
    """Redundancy-aware greedy: pick the candidate with the most new evidence per token.

    The objective is ``f(S) = sum of the IDF weights of the query's words and named phrases that
    S covers + relevance * sum of the scaled scores in S``: monotone and submodular, so a
    passage that only repeats covered words gains little. It is maximised under the budget by
    the cost-benefit greedy (gain per token), and the better of that set and the single best
    passage that fits is kept, which guarantees at least ``(1 - 1/e) / 2`` of the optimum
    (Khuller, Moss and Naor 1999; Leskovec et al. 2007). The best ``max_candidates`` are
    planned; the rest fill any budget left in rank order. Use it for single-answer (factoid)
    questions over redundant results.
    """

    name: ClassVar[str] = "coverage"
    slot: ClassVar[str] = "selection"
    relevance: float = 0.5
    max_candidates: int = 50

    def __post_init__(self) -> None:
        require_number("relevance", self.relevance, low=0.0, high=100.0)
        require_int("max_candidates", self.max_candidates, low=1, high=PLANNER_MAX_CANDIDATES)

    def select(self, candidates: Sequence[Candidate], packing: Packing) -> None:
        pool, rest = candidates[: self.max_candidates], candidates[self.max_candidates :]
        evidence = Evidence(packing.context.query, pool)
        values = scaled_scores(pool)
        priced = {c.request_index: cost for c, cost in packing.price(pool)}
        costs = [priced.get(c.request_index, -1) for c in pool]
        open_ = [i for i, cost in enumerate(costs) if cost >= 0]
        covered: set[str] = set()
        while open_:
            plan = self._plan(open_, costs, evidence, values, covered, packing.remaining)
            if not plan:
                break
            rejected = False
            for index in plan:
                outcome = packing.offer(pool[index])
                if outcome in _KEPT:
                    covered |= evidence.covers[index]
                else:
                    rejected = True
            open_ = [i for i in open_ if i not in plan]
            if not rejected:
                break
        leftovers = [pool[i] for i in open_]
        offer_in_order(leftovers + list(rest), packing)

    def _plan(
        self,
        open_: list[int],
        costs: list[int],
        evidence: Evidence,
        values: list[float],
        covered: set[str],
        capacity: int,
    ) -> list[int]:
        def gain(index: int, have: set[str]) -> float:
            return evidence.new_coverage(index, have) + self.relevance * values[index]

        plan: list[int] = []
        have = set(covered)
        left = capacity
        remaining = list(open_)
        total = 0.0
        while remaining:
            checkpoint()
            best, best_ratio = -1, -1.0
            for index in remaining:
                cost = costs[index]
                if cost > left:
                    continue
                ratio = gain(index, have) / max(cost, 1)
                if ratio > best_ratio:
                    best, best_ratio = index, ratio
            if best < 0:
                break
            total += gain(best, have)
            plan.append(best)
            have |= evidence.covers[best]
            left -= costs[best]
            remaining.remove(best)
        single = max(
            (i for i in open_ if costs[i] <= capacity),
            key=lambda i: (gain(i, covered), -i),
            default=-1,
        )
        if single >= 0 and gain(single, covered) > total:
            return [single]
        return plan


@dataclass(frozen=True)
class BridgeSelection(Strategy):
    """Multi-hop selection: after each pick, re-score the rest for what the picks introduced.

    A candidate's value is its scaled score times ``relevance``, plus ``coverage`` times the
    weight of query words it adds, plus ``bridge`` when a chosen passage names its title (the
    second hop of a bridge question often shares no word with the query, but the first passage
    names it), plus ``backlink`` when it names a chosen passage's title, plus ``entities``
    times the share (up to three) of entities it shares with the chosen passages that the
    query does not mention (names, numbers, dates). A passage names many others; a link counts
    whole where the text names the title in a sentence that states a query word or phrase
    (the hop the question asks about: "... married the lead singer of R.E.M."), and
    ``anchor`` times as much elsewhere. Two passages that share a name the query does not say
    ("Steve Hillage") link both ways with strength ``names``, anchored alike (see
    :func:`_name_links`), except for comparison questions. Once the page the question names
    is kept (its title, less a qualifier, is one of the question's names; see
    :meth:`_Subjects.repeated`), ``subject`` times the share of each other candidate's
    relevance that the words of that title bring is taken back: pages that repeat the
    question's subject ("No Matter What", a single from the album "Paper Trail") say nothing
    of the next hop; except for comparison questions, whose every named thing is asked
    about, and for candidates ranked by the retriever's own scores, which do not say which
    words earned them. The best is offered, and the rest are re-scored, until the budget is
    full. Where the request compresses after selection, a pick that does not fit whole is cut
    to its sentences that carry a hop at once when it is worth ``shrink`` times every open
    candidate that might fit whole, before those take its room. The best ``max_candidates``
    are planned; the rest fill any budget left in rank order. Use it for multi-hop and
    comparison questions (the default does, for them).
    """

    name: ClassVar[str] = "bridge"
    slot: ClassVar[str] = "selection"
    # Below coverage's 1: a passage whose only support is the query's words weighs less than
    # one that links to what is kept (0.6 to 0.8 were alike on the measured sets; 1 kept 1 to
    # 4 fewer questions whole on the hard and co-mention subsets).
    relevance: float = 0.7
    coverage: float = 1.0
    bridge: float = 1.0
    backlink: float = 0.25
    entities: float = 0.3
    lookahead: float = 1.0
    trust: float = 4.0
    anchor: float = 0.3
    names: float = 0.4
    subject: float = 1.0
    # A pick that does not fit whole is compressed into the room left at once (where the
    # request compresses after selection) when it is worth this many times the best open
    # candidate that might fit whole (0: never) (1.25 and 1.5 did alike on the measured sets; 1 cut
    # picks that a whole passage served better, 2 gave back the gain on composed chains).
    shrink: float = 1.5
    max_candidates: int = 50

    def __post_init__(self) -> None:
        for weight in (
            "relevance",
            "coverage",
            "bridge",
            "backlink",
            "entities",
            "lookahead",
            "trust",
            "names",
        ):
            require_number(weight, getattr(self, weight), low=0.0, high=100.0)
        # 0 turns the cut off; below 1 it would act as 1 (the pick is worth the most)
        if 0 < require_number("shrink", self.shrink, low=0.0, high=100.0) < 1:
            raise ParamError("shrink", f"must be 0 (off) or between 1 and 100, got {self.shrink!r}")
        require_number("anchor", self.anchor, low=0.0, high=1.0)
        require_number("subject", self.subject, low=0.0, high=1.0)
        require_int("max_candidates", self.max_candidates, low=1, high=PLANNER_MAX_CANDIDATES)

    def select(self, candidates: Sequence[Candidate], packing: Packing) -> None:
        pool, rest = list(candidates[: self.max_candidates]), candidates[self.max_candidates :]
        evidence = Evidence(packing.context.query, pool)
        # Values are kept current incrementally: a pick changes only the candidates that share
        # a query element or an entity with it, or that it links to.
        coverage = [evidence.new_coverage(i, set()) for i in range(len(pool))]
        relevance = self.relevance * (1.0 + self.trust * _retriever_trust(pool, coverage))
        scaled = scaled_scores(pool)
        value = [relevance * v + self.coverage * coverage[i] for i, v in enumerate(scaled)]
        # query element -> candidates covering it; entity -> candidates introducing it
        holders, mentions = _holders(evidence.covers), _holders(evidence.introduced)
        links, named = self._links(pool, evidence, packing.context)
        backlinks = _reverse(links)  # for each candidate, those that name its title (or a name)
        bridged = [0.0] * len(pool)  # the strongest link to it from a kept passage
        linked = [False] * len(pool)  # it names a kept passage's title
        # The kept passage whose link counts most for a candidate, and the title or name that
        # links them.
        link_source: dict[int, tuple[int, str | None]] = {}
        shared = [0] * len(pool)  # entities it shares with kept passages
        covered: set[str] = set()
        introduced: set[str] = set()  # entities of kept passages the query does not name
        open_ = list(range(len(pool)))  # in rank order, so max() breaks ties by rank
        is_open = [True] * len(pool)
        subjects = _Subjects.planned(packing.context, pool, evidence, self.subject)

        def ahead(i: int) -> float:
            """Its value, plus what the best open next hop from it would add to coverage."""
            return value[i] + self.lookahead * evidence.next_hop(i, links[i], is_open, covered)

        while open_:
            if packing.full:
                packing.exclude([pool[i] for i in open_], Reason.OVER_BUDGET, "the budget is full")
                break
            pick = max(open_, key=ahead)
            is_open[pick] = False
            open_.remove(pick)
            parts = (
                max(0.0, relevance * scaled[pick] - subjects.taken[pick]),
                self.coverage * evidence.new_coverage(pick, covered),
            )
            why = self._chosen(pool, pick, evidence, (*parts, value[pick]), link_source.get(pick))
            if (
                elements := self._offer(pick, why, (open_, ahead), (pool, evidence), packing)
            ) is None:
                continue
            # In query order and sorted: float sums must not depend on how a set iterates.
            for element in elements:
                if element in covered:
                    continue
                covered.add(element)
                for i in holders[element]:
                    value[i] -= self.coverage * evidence.weight[element]
            for entity in sorted(evidence.introduced[pick] - introduced):
                introduced.add(entity)
                for i in mentions[entity]:
                    if shared[i] < 3:
                        shared[i] += 1
                        value[i] += self.entities / 3
            for j, strength in links[pick].items():
                if strength > bridged[j]:
                    value[j] += self.bridge * (strength - bridged[j])
                    bridged[j] = strength
                    link_source[j] = (pick, named.get((pick, j), pool[j].passage.title))
            for i, strength in backlinks[pick].items():
                if not linked[i]:
                    linked[i] = True
                    value[i] += self.backlink * strength
                    via = named.get((i, pick), pool[pick].passage.title)
                    link_source.setdefault(i, (pick, via))
            subjects.take_back(pick, open_, value, relevance, scaled)
        offer_in_order(rest, packing, _FILL)

    def _offer(
        self,
        pick: int,
        why: Chosen,
        rivals: tuple[Sequence[int], Callable[[int], float]],
        planned: tuple[Sequence[Candidate], Evidence],
        packing: Packing,
    ) -> tuple[str, ...] | None:
        """Offer candidate ``pick`` (chosen for ``why``); ``None`` when it was not kept, else
        the query elements it covers as kept. A pick too big to fit whole is compressed into
        the room left at once (see :attr:`SelectionContext.shrink`) when its value is at
        least ``shrink`` times that of every open candidate that might still fit whole
        (``rivals``: the open candidates and their values); otherwise the room goes to those,
        and the pick may be compressed into what they leave, after selection. A pick kept
        compressed covers what its kept sentences state, and the report says so."""
        pool, evidence = planned
        offered = pool[pick]._replace(chosen=why)
        outcome = packing.offer(offered)
        if outcome in _KEPT:
            return evidence.terms_of(pick)
        shrink = packing.context.shrink
        if outcome is not Offer.TOO_BIG or shrink is None or self.shrink == 0:
            return None
        open_, value = rivals
        room, meter = packing.remaining, packing.meter
        fitting = [value(i) for i in open_ if meter.lower_bound(pool[i]) <= room]
        if not fitting or value(pick) < self.shrink * max(fitting):
            return None
        if not shrink(offered, packing, [pool[i] for i in open_]):
            return None
        kept = packing.kept_form(offered.id)
        if kept is None:  # stitched into a kept window of its document: what that one covers
            into = packing.kept_form(packing.merged_into.get(offered.id, offered.id))
            return () if into is None else evidence.elements_in(into.passage.title, into.text)
        elements = evidence.elements_in(kept.passage.title, kept.text)
        packing.relabel(offered.id, replace(why, terms=elements))
        return elements

    def _links(
        self, pool: Sequence[Candidate], evidence: Evidence, context: SelectionContext
    ) -> tuple[list[dict[int, float]], dict[tuple[int, int], str]]:
        """For each candidate, the candidates it links to and how strongly: titles it names
        (see :func:`ctxasm.lexical.title_links` and :func:`_anchored`) and names it shares
        (:func:`_name_links`); and the shared name behind each link that is one."""
        links = title_links([c.passage.title for c in pool], [c.text for c in pool])
        if self.anchor < 1.0:
            links = _anchored(links, pool, evidence, self.anchor)
        # A comparison names each thing it compares: a name two passages share hides no hop.
        if self.names > 0 and context.query_class != "comparison":
            return _name_links(links, pool, evidence, self.names, self.anchor, evidence.title_asked)
        return links, {}

    @staticmethod
    def _chosen(
        pool: Sequence[Candidate],
        pick: int,
        evidence: Evidence,
        parts: tuple[float, float, float],
        source: tuple[int, str | None] | None,
    ) -> Chosen:
        """Why ``pick`` is offered: the largest part of its value (``parts``: its relevance,
        its new query coverage and its whole value, the rest of which came from links to kept
        passages)."""
        candidate = pool[pick]
        relevance, coverage, value = parts
        retriever = candidate.score == candidate.passage.score  # ranked by the given score
        link = value - relevance - coverage  # what links and shared entities added
        by = max(
            (
                (link if link > _RESIDUE else -1.0, "link"),  # none: never by a tie
                (relevance, "score" if retriever else "query"),
                (coverage, "query"),
            ),
            key=lambda part: part[0],
        )[1]
        if by == "link" and source is None:
            by = "query"  # entities shared with kept passages, no title link
        linked_from = via = None
        if source is not None:
            linked_from, via = pool[source[0]].id, source[1]
            titles = (candidate.passage.title, pool[source[0]].passage.title)
            if via is not None and via not in titles:  # a shared name: as the texts write it
                via = (
                    written_phrase(via, candidate.text)
                    or written_phrase(via, pool[source[0]].text)
                    or via
                )
        return Chosen(
            by,
            evidence.terms_of(pick),
            linked_from,
            via,
            candidate.passage.score,
        )


# A passage whose links times sentences pass this keeps its links as they are: anchoring
# compares every linked name with every sentence (500 candidates naming 50 titles each in
# 200 sentences took 5 s), and a page naming that many is a list, not one hop of a chain.
# Past 8 query elements the passage covers, the bound shrinks in proportion (each sentence
# asked is searched for every one: 512 of them took about 1 ms a sentence).
_ANCHOR_WORK = 1024


def _anchored(
    links: Sequence[dict[int, float]],
    pool: Sequence[Candidate],
    evidence: Evidence,
    weak: float,
) -> list[dict[int, float]]:
    """``links`` (see :func:`ctxasm.lexical.title_links`), those a text makes in no sentence
    that states a query word (in one of its forms) or a named phrase of the query ``weak``
    times as strong: of the pages a passage names, the question follows the one named where
    its words are. Words of the passage's own title anchor nothing: every sentence of a page
    is about the page, and one naming a page beside the title's words ("Radio 538 ... its
    sister station TV 538") names no hop for that. A passage of one sentence, one that covers
    nothing of the query beyond its own title (a bridge the question never names: "... a
    native of Kestrel") and one with more than ``_ANCHOR_WORK`` links times sentences (fewer
    where it covers many query elements) keep their links as they are, as does a name no
    sentence holds whole (a sentence end the splitter saw inside it), and one whose text
    states none of the rest of the query (it covers it in its title alone: the page the
    question names, every sentence about it, none the hop's more than another)."""
    aliases: list[list[tuple[str, float]]] | None = None
    anchored: list[dict[int, float]] = []
    words = frozenset(evidence.terms)  # a set: a long query has many
    for index, out in enumerate(links):
        checkpoint()
        text = pool[index].text
        # A sentence states only what its passage covers, and what its title says marks no
        # hop: every sentence of a page is about the page ("TV 538" beside "Radio 538").
        covered = _beyond_title(evidence, index, pool[index].passage.title, words) if out else []
        spans = sentence_spans(text) if out and covered else ()
        # each sentence asked is searched for what the passage covers: many elements count
        if len(spans) < 2 or len(out) * len(spans) * max(len(covered), 8) > _ANCHOR_WORK * 8:
            anchored.append(out)
            continue
        terms = [e for e in covered if e in words]
        phrases = [e for e in covered if e not in words]
        if aliases is None:
            aliases = title_aliases([c.passage.title for c in pool])
        sentences = [text[start:end] for start, end in spans]
        spoken = sentence_words(text)
        keys = [f" {' '.join(words)} " for words in spoken]  # their phrase keys
        stating: dict[int, bool] = {}  # by sentence, asked only where a linked name is
        stated: dict[int, bool] = {}
        for linked in out:
            names = [f" {alias} " for alias, _ in aliases[linked]]
            where = [k for k, key in enumerate(keys) if any(name in key for name in names)]
            stated[linked] = not where or any(
                _states(k, (sentences, keys, spoken), (terms, phrases), stating) for k in where
            )
        if all(stated.values()) or not _states_any(text, terms, phrases):
            anchored.append(out)
        else:
            anchored.append(
                {linked: s if stated[linked] else s * weak for linked, s in out.items()}
            )
    return anchored


def _beyond_title(
    evidence: Evidence, index: int, title: str | None, terms: frozenset[str]
) -> list[str]:
    """The query elements candidate ``index`` covers that its own ``title`` does not say: a
    named phrase not in the title, a query word (of ``terms``) none of whose forms is a word
    of it ("studios" is said by the title "Dutch Studio")."""
    if not title:
        return list(evidence.terms_of(index))
    key = phrase_key(title)
    padded, words = f" {key} ", frozenset(key.split())
    return [
        element
        for element in evidence.terms_of(index)
        if f" {element} " not in padded
        and (element not in terms or words.isdisjoint(term_forms(element)))
    ]


def _states(
    at: int,
    sentences: tuple[Sequence[str], Sequence[str], Sequence[Sequence[str]]],
    elements: tuple[Sequence[str], Sequence[str]],
    known: dict[int, bool],
) -> bool:
    """Whether sentence ``at`` of ``sentences`` (their texts, phrase keys and words) states
    one of the query's words or named phrases ``elements`` (remembered in ``known``)."""
    found = known.get(at)
    if found is None:
        texts, keys, spoken = sentences
        found = known[at] = _says(keys[at], texts[at], *elements, spoken[at])
    return found


def _states_any(text: str, terms: Sequence[str], phrases: Sequence[str]) -> bool:
    """Whether ``text`` states one of the query's words or named phrases (one search of the
    whole text, not one per sentence)."""
    return _says(f" {phrase_key(text)} ", text, terms, phrases)


def _says(
    key: str,
    text: str,
    terms: Sequence[str],
    phrases: Sequence[str],
    text_words: Sequence[str] = (),
) -> bool:
    """Whether ``text`` (``key``: its padded phrase key; ``text_words``: its words, where
    known) states one of the query's words ``terms`` (in one of their forms) or named
    ``phrases``."""
    return any(f" {phrase} " in key for phrase in phrases) or states_a_term(terms, text, text_words)


def _name_links(
    links: Sequence[dict[int, float]],
    pool: Sequence[Candidate],
    evidence: Evidence,
    strength: float,
    weak: float,
    titled_in_query: Sequence[bool] = (),
) -> tuple[list[dict[int, float]], dict[tuple[int, int], str]]:
    """``links``, plus a link both ways between passages that share a name (see
    :func:`ctxasm.stages.relevance_utility.shared_names`, of the texts as they stand: a
    sentence compression cut names nothing) with no word of the query (a name the question
    says ties every passage that says it), where no link is stronger: the next hop of a chain
    is often a page about the answer that names the bridge in its text, "... with her partner
    Steve Hillage", not the bridge's own page. A link from passage A to passage B is
    ``strength`` strong where A writes the name in a sentence that states a query element it
    covers beyond its own title (the relation the hop from A answers: the next passage of a
    chain is the one the kept passage names where it states the question's words, not every
    passage that writes the name beside the question's words of its own), ``weak`` times that
    elsewhere; half that again where the question names B's title (``titled_in_query``, by
    candidate, as :attr:`Evidence.title_asked` has it: the question reaches that page itself,
    and a name it shares with a kept page is no hop). Also the name behind each such link, by
    (from, to)."""
    asked = frozenset(evidence.terms)
    names = [
        frozenset(n for n in found if asked.isdisjoint(n.split()))
        for found in shared_names([c.text for c in pool])
    ]
    joined = [dict(out) for out in links]
    named: dict[tuple[int, int], str] = {}
    stating = _stating(names, pool, evidence)
    for name, holders in sorted(_holders(names).items()):
        checkpoint()  # up to a quarter of the candidates share a name: pairs of them
        for i in holders:
            for j in holders:
                s = strength if name in stating[i] else strength * weak
                s *= name_strength((name,))
                if titled_in_query and titled_in_query[j]:
                    s *= _ASKED_NAME_LINK
                if i != j and joined[i].get(j, 0.0) < s:
                    joined[i][j] = s
                    named[(i, j)] = name
    return joined, named


# A name link to a page whose title the question names counts this much of its strength: the
# question reaches that page by its title already (a character the question names beside the
# actor it asks about), and a name it shares with a kept page names no hop.
_ASKED_NAME_LINK = 0.5

# A passage that shares more names than this with the others is a list (a filmography, a
# roster): which of them its sentences state the question beside is not asked (each sentence
# holding one would be), and its name links stay weak.
_MOST_STATED_NAMES = 16


def _stating(
    names: Sequence[frozenset[str]], pool: Sequence[Candidate], evidence: Evidence
) -> list[frozenset[str]]:
    """For each candidate, those of its ``names`` that it writes in a sentence stating a
    query element it covers beyond its own title: its sentences are read once, each for the
    names it holds, and a sentence that holds one is asked once (none, where it shares more
    than ``_MOST_STATED_NAMES`` names)."""
    words = frozenset(evidence.terms)
    found: list[frozenset[str]] = []
    for index, own in enumerate(names):
        checkpoint()
        title = pool[index].passage.title
        # a list of names is no one hop: none of them is asked about
        listed = len(own) > _MOST_STATED_NAMES
        covered = _beyond_title(evidence, index, title, words) if own and not listed else []
        if not covered:
            found.append(frozenset())
            continue
        terms = [e for e in covered if e in words]
        phrases = [e for e in covered if e not in words]
        text = pool[index].text
        index_of = Phrases(own)
        stated: set[str] = set()
        for sentence, (start, end) in zip(sentence_words(text), sentence_spans(text), strict=True):
            held = {" ".join(parts) for parts in index_of.found(sentence)} - stated
            if not held:
                continue
            if _says(f" {' '.join(sentence)} ", text[start:end], terms, phrases, sentence):
                stated |= held
        found.append(frozenset(stated))
    return found


def _reverse(links: Sequence[dict[int, float]]) -> list[dict[int, float]]:
    """The links the other way: for each index, the indexes that link to it, and how strongly."""
    reverse: list[dict[int, float]] = [{} for _ in links]
    for i, out in enumerate(links):
        for j, strength in out.items():
            reverse[j][i] = strength
    return reverse


def _holders(found: Sequence[frozenset[str]]) -> dict[str, list[int]]:
    """For each element, the indexes of the sets that hold it."""
    holders: dict[str, list[int]] = {}
    for i, elements in enumerate(found):
        for element in elements:
            holders.setdefault(element, []).append(i)
    return holders


def _ranked_by_retriever(pool: Sequence[Candidate]) -> bool:
    """Whether every candidate is ranked by the score it was given (the retriever's)."""
    return all(c.score == c.passage.score for c in pool)


def _retriever_trust(pool: Sequence[Candidate], coverage: Sequence[float]) -> float:
    """How far the retriever's scores, where they rank the candidates as given, agree with
    the query coverage the planner measures itself (rank correlation, 0 when they do not
    agree or when the ranking is not the retriever's). Whole for fewer candidates than an
    agreement can be measured on (see ``MIN_AGREEMENT``): relevance ranked them as given for
    that reason, and the few best of a retriever or reranker scored for meaning often share
    few words with the query, so its order leads the query's words there."""
    if not _ranked_by_retriever(pool):
        return 0.0
    if len(pool) < MIN_AGREEMENT:
        return 1.0
    return max(0.0, rank_agreement([c.score for c in pool], coverage))


_DEFAULT_ROUTES: dict[str, Any] = {
    # A question that reads as one fact often hides a hop ("When did the mother of X die?"),
    # and following links costs a true factoid nothing once its passage is in.
    "factoid": "bridge",
    "multihop": "bridge",
    # A comparison names every thing it compares: the query's words find its passages, and
    # they keep their full weight against links.
    "comparison": {"name": "bridge", "relevance": 1.0},
    "summary": "mmr",
}


@dataclass(frozen=True)
class AutoSelection(Strategy):
    """The default: the selection strategy configured for the query's class (given in the
    request's ``query_class``, or detected by :func:`ctxasm.query_class.classify`).

    By default ``factoid``, ``multihop`` and ``comparison`` questions go to ``bridge`` (on
    HotpotQA a fifth of the bridge questions read as factoids, and routing those to
    ``coverage`` cost 1.5 points of all-gold at 512 tokens); ``summary`` requests go to ``mmr``
    (diverse passages). Each route is a selection strategy name or
    ``{"name": ..., **params}``.
    """

    name: ClassVar[str] = "auto"
    slot: ClassVar[str] = "selection"
    factoid: Any = _DEFAULT_ROUTES["factoid"]
    multihop: Any = _DEFAULT_ROUTES["multihop"]
    comparison: Any = field(default_factory=lambda: dict(_DEFAULT_ROUTES["comparison"]))
    summary: Any = _DEFAULT_ROUTES["summary"]

    def __post_init__(self) -> None:
        from ctxasm.errors import RequestError
        from ctxasm.registry import build
        from ctxasm.strategy import ParamError

        routes = {}
        for query_class in _DEFAULT_ROUTES:
            spec = getattr(self, query_class)
            if not isinstance(spec, str | Mapping):
                raise ParamError(
                    query_class,
                    f"must be a selection strategy name or {{name, ...}}, got {shown(spec)}",
                )
            if (spec.get("name") if isinstance(spec, Mapping) else spec) == self.name:
                raise ParamError(query_class, "cannot route to auto itself")
            try:
                routes[query_class] = build("selection", spec, query_class)
            except RequestError as exc:
                where = exc.field or query_class
                message = exc.message.removeprefix(f"{where}: ")
                raise ParamError(where, message) from None
        object.__setattr__(self, "_routes", routes)

    def planner(self, query_class: str) -> Any:
        routes: dict[str, Any] = getattr(self, "_routes")  # noqa: B009 - set in __post_init__
        return routes.get(query_class, routes["factoid"])

    def select(self, candidates: Sequence[Candidate], packing: Packing) -> None:
        self.planner(packing.context.query_class).select(candidates, packing)
