"""The report: a pure function of the final state of one assembly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm.data import (
    Budget,
    Candidate,
    Chosen,
    Compressed,
    Compression,
    Exclusion,
    Included,
    Report,
)
from ctxasm.formatting.blocks import FencedBlock, SourcesBlock, label
from ctxasm.lexical import covered_terms, query_terms, term_counts_all
from ctxasm.models import ModelSpec
from ctxasm.tokens import TokenCounter

__all__ = ["build_report", "cost_usd"]


def cost_usd(model: ModelSpec, input_tokens: int) -> float | None:
    """What the prompt's input tokens cost at the registry price for a prompt of that size
    (a long prompt's tier, where the model has one; output is billed as written)."""
    price = model.prices(input_tokens).input
    if price is None:
        return None
    return round(input_tokens * price / 1_000_000, 8)


def _order(exclusion: Exclusion, positions: Mapping[str, int]) -> tuple[int, int]:
    """History turns first (by turn index), then passages in request order."""
    position = positions.get(exclusion.candidate_id)
    if position is not None:
        return (1, position)
    return (0, int(exclusion.candidate_id.removeprefix("history[").rstrip("]") or 0))


def build_report(
    *,
    model: ModelSpec,
    counter: TokenCounter,
    budget: Budget,
    ordered: Sequence[Candidate],
    excluded: Sequence[Exclusion],
    positions: Mapping[str, int],
    total_tokens: int,
    context_tokens: int,
    considered: int,
    no_relevant_context: bool,
    timings_ms: Mapping[str, float],
    compressed: Mapping[str, Compressed] | None = None,
    query_class: str | None = None,
    block: SourcesBlock | None = None,
    history: Mapping[str, Any] | None = None,
    exact_count: bool | None = None,
    labels: Mapping[str, int] | None = None,
    query: str = "",
    relevance: Mapping[str, str | None] | None = None,
) -> Report:
    """The report for passages ``ordered`` as rendered; exclusions sorted by request position.

    A passage's ``tokens`` is its exact share of the sources block: the separator and header
    line before it (the heading, for the first) and its fenced text, so the shares plus the
    final closing fence add up to ``context_tokens`` for the OpenAI encodings.
    """
    terms = query_terms(query)
    included = _included(counter, ordered, compressed or {}, block or FencedBlock(), labels, terms)
    return Report(
        model=model.name,
        tokenizer=counter.name,
        exact_count=counter.exact if exact_count is None else exact_count,
        budget=budget,
        total_tokens=total_tokens,
        context_tokens=context_tokens,
        considered=considered,
        selected=len(included),
        no_relevant_context=no_relevant_context,
        included=included,
        excluded=tuple(sorted(excluded, key=lambda e: _order(e, positions))),
        cost_usd=cost_usd(model, total_tokens),
        timings_ms={name: round(ms, 3) for name, ms in timings_ms.items()},
        query_class=query_class,
        history=dict(history) if history else None,
        relevance=dict(relevance) if relevance else None,
    )


def _included(
    counter: TokenCounter,
    ordered: Sequence[Candidate],
    compressed: Mapping[str, Compressed],
    block: SourcesBlock,
    labels: Mapping[str, int] | None = None,
    terms: Sequence[str] = (),
) -> tuple[Included, ...]:
    """One entry per rendered passage, in prompt order, with its exact share of the block
    (labelled by ``labels``, passage id to number, where labels are kept across turns)."""

    def compression(candidate: Candidate, fenced: str) -> Compression | None:
        found = compressed.get(candidate.id)
        if found is None or found.candidate.text != candidate.text:
            # not compressed, or grown by stitching since: the numbers would not describe it
            return None
        whole = block.body(candidate._replace(text=found.original))
        return Compression(
            original_tokens=counter.count(whole),
            kept_tokens=counter.count(fenced),
            sentences=found.sentences,
            kept_sentences=found.kept_sentences,
        )

    counts = _term_counts(terms, ordered)
    return tuple(
        Included(
            id=c.id,
            label=label(number if labels is None else labels[c.id]),
            tokens=counter.count(opening) + counter.count(fenced),
            score=c.score,
            position=number,
            source=c.passage.source,
            url=c.passage.url,
            compression=compression(c, fenced),
            flags=c.flags,
            chosen=_chosen(c, compressed, terms, counts.get(c.id)),
        )
        for number, (c, (opening, fenced)) in enumerate(
            zip(ordered, block.parts(ordered, labels), strict=True), start=1
        )
    )


def _term_counts(terms: Sequence[str], ordered: Sequence[Candidate]) -> dict[str, tuple[int, ...]]:
    """The counts of ``terms`` in the title and text of each passage whose strategy did not
    record why it chose it, by id: all texts counted at once (a text relevance counted is
    looked up), plus their titles. Words never span the line break :func:`titled` puts between
    title and text, so the two counts add up to the count of both read together."""
    unexplained = [c for c in ordered if c.chosen is None]
    if not terms or not unexplained:
        return {}
    in_texts = term_counts_all(terms, [c.text for c in unexplained])
    in_titles = term_counts_all(terms, [c.passage.title or "" for c in unexplained])
    return {
        c.id: tuple(map(sum, zip(text, title, strict=True)))
        for c, text, title in zip(unexplained, in_texts, in_titles, strict=True)
    }


def _chosen(
    candidate: Candidate,
    compressed: Mapping[str, Compressed],
    terms: Sequence[str],
    counted: Sequence[int] | None = None,
) -> Chosen:
    """Why ``candidate`` was kept: as its selection strategy recorded it; else a passage
    compressed into the room left was a ``fill``, and one kept in rank order was chosen by the
    retriever's score where it had one, otherwise by the query words (``terms``) it covers."""
    if candidate.chosen is not None:
        return candidate.chosen
    given = candidate.passage.score
    covered = tuple(covered_terms(terms, candidate.text, candidate.passage.title, None, counted))
    if candidate.id in compressed:
        return Chosen("fill", covered, given_score=given)
    return Chosen("score" if given is not None else "query", covered, given_score=given)
