"""Planning for the providers' prompt caches: stable labels, the identical prefix, breakpoints
and the expected cost (docs/caching.md).

Providers bill a prompt prefix they have seen recently at a fraction of the input price. The
pipeline plans for it when a request carries the previous turn's :class:`CacheState`
(``previous``) or orders with ``cache_stable``:

- :func:`prefer_previous` raises the scores the selection sees of the previous turn's
  passages, in proportion to what reading them from the cache saves (:func:`cache_discount`),
  and :func:`relevance_scores` puts the relevance scores back after selection;
- :func:`assign_labels` keeps each passage's ``[Source N]`` number across the session; new
  passages get the next free numbers;
- :func:`previous_forms` gives the previous turn's compressed sources the sentences they
  showed then (:func:`kept_sentences` reads them back for the state), so they stay
  byte-identical;
- :func:`stable_ids` lists the previous turn's passages whose rendered share is byte-identical
  now, in their previous order, for the ordering to put first;
- :func:`plan` measures the prefix identical to the previous turn, applies the model's cache
  rules (automatic prefixes, or Anthropic's ``cache_control`` breakpoints, which it places in
  the rendered request), prices the request with and without caching, and returns the state
  for the next turn.

Every step is one pass over the kept passages; each passage's share is rendered and counted
once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from ctxasm.cache_state import (
    DIGEST_CHARS,
    MAX_BREAKPOINTS,
    MAX_LABELS,
    Breakpoint,
    CacheReport,
    CacheState,
)
from ctxasm.data import Candidate, Compressed
from ctxasm.formatting import Format, PromptParts, Rendered
from ctxasm.formatting.blocks import SourcesBlock
from ctxasm.lexical import sentence_spans
from ctxasm.models import ModelSpec
from ctxasm.stages.compression import ELISION, cut_text
from ctxasm.tokens import TokenCounter

__all__ = [
    "assign_labels",
    "cache_discount",
    "fingerprint",
    "head_digest",
    "kept_sentences",
    "plan",
    "prefer_previous",
    "previous_forms",
    "relevance_scores",
    "stable_ids",
]

_EPHEMERAL = {"type": "ephemeral"}


def _digest(*texts: str) -> str:
    hasher = hashlib.blake2b(digest_size=DIGEST_CHARS // 2)
    for text in texts:
        hasher.update(text.encode("utf-8", "surrogatepass"))
        hasher.update(b"\x00")
    return hasher.hexdigest()


def head_digest(model: ModelSpec, fmt: Format, system: str, layout: str = "") -> str:
    """A digest of everything before the sources: the model, the format, the system prompt,
    and ``layout``, where a chat template put the system prompt when it moves it (see
    ``ChatTemplate.head``; empty: before the sources, as every other layout)."""
    if layout:
        return _digest(model.name, fmt.name, system, layout)
    return _digest(model.name, fmt.name, system)


def fingerprint(block: SourcesBlock, candidate: Candidate, number: int) -> str:
    """A digest of ``candidate``'s rendered share of the block with label ``number``: equal
    digests of the passages, in the same order, mean byte-identical blocks up to them (a
    share's lead depends only on the passage before it)."""
    opening, body = block.parts([candidate], {candidate.id: number})[0]
    return _digest(opening, body)


def cache_discount(model: ModelSpec, fmt: Format) -> float:
    """The share of the input price saved on a token read from the cache (0 to 1): 0 when this
    model and format cache nothing on their own (no caching, explicit caches, breakpoints
    outside the anthropic format, a template's own layout) or a price is missing."""
    price, cached = model.input_price, model.cached_input_price
    automatic = model.cache == "automatic" and fmt.name != "template"
    placed = model.cache == "breakpoints" and fmt.name == "anthropic"
    if not (automatic or placed) or not price or cached is None:
        return 0.0
    return min(1.0, max(0.0, 1.0 - cached / price))


def prefer_previous(
    ranked: Sequence[Candidate], previous: CacheState, weight: float
) -> list[Candidate]:
    """``ranked`` (best first) with the previous turn's passages raised, best first again.
    At equal scores a new passage comes first, then the previous ones in their previous order
    (the cap below makes such ties: the first previous passage must not lose to the last by
    relevance alone), and other ties keep their order.

    The ``k``-th of the previous turn's ``s`` sources (from 0) is raised by ``weight`` times
    the scores' scale (the best score, or the spread when some are negative) times
    ``1/2 + (s - k)/s``: from 1.5 for the first down to just over 0.5 for the last, 1 on
    average. Half of a passage's worth is its own tokens, read from the cache; the other half
    is the identical prefix after it, which ends where a passage is left out, so the earlier
    it sits the more it takes with it. No score is raised past the best: a previous passage
    competes with the best new one but never outranks it, and the scale planners divide
    scores by stays the scale of relevance (raised past it, it would shrink every other
    passage's share of a planner's value).

    An added amount rather than a factor: the passages a follow-up shares no word with score 0,
    and they save as much per token as any other. A given score the candidate carries as its
    own (``passage.score``) is raised with it, so planners that trust the retriever's order
    still recognise it."""
    order = {passage_id: k for k, (passage_id, _) in enumerate(previous.sources)}
    if weight <= 0 or not ranked or not order:
        return list(ranked)
    scores = [c.score for c in ranked]
    low, high, count = min(scores), max(scores), len(order)
    # Halved before subtracting, so scores near the float limit do not overflow.
    half = high / 2 - min(low, 0.0) / 2
    lift = weight * (2 * half if half > 0 else 1.0)

    def raise_(candidate: Candidate) -> Candidate:
        k = order.get(candidate.id)
        if k is None:
            return candidate
        share = 0.5 + (count - k) / count
        score = max(candidate.score, min(candidate.score + lift * share, high))
        passage = candidate.passage
        if passage.score == candidate.score:
            passage = replace(passage, score=score)
        return candidate._replace(score=score, passage=passage)

    return sorted(map(raise_, ranked), key=lambda c: (-c.score, order.get(c.id, -1)))


def relevance_scores(
    kept: Sequence[Candidate], ranked: Sequence[Candidate], merged_into: Mapping[str, str]
) -> list[Candidate]:
    """``kept`` with the scores and passages of ``ranked`` (what relevance gave them, before
    :func:`prefer_previous`), and the given score a strategy recorded in ``chosen`` the
    retriever's again; a passage others were stitched into keeps the best of theirs."""
    original = {c.id: c for c in ranked}
    best = {c.id: c.score for c in ranked}
    for gone, into in merged_into.items():
        if gone in best and into in best:
            best[into] = max(best[into], best[gone])
    restored = []
    for candidate in kept:
        given = original.get(candidate.id)
        if given is None:
            restored.append(candidate)
            continue
        chosen = candidate.chosen
        if chosen is not None and chosen.given_score is not None:
            chosen = replace(chosen, given_score=given.passage.score)
        restored.append(
            candidate._replace(score=best[candidate.id], passage=given.passage, chosen=chosen)
        )
    return restored


def previous_forms(
    previous: CacheState, ranked: Sequence[Candidate], block: SourcesBlock
) -> dict[str, Compressed]:
    """The previous turn's compressed sources among ``ranked`` as they were shown then (the
    same sentences), by id: offered in that form rather than whole or cut anew for this
    query, a kept one stays in the identical prefix. Only those whose share of the block is
    byte-identical to the previous turn's (same label, same text, same flags)."""
    digests = dict(previous.sources)
    found: dict[str, Compressed] = {}
    for candidate in ranked:
        kept = previous.compressed.get(candidate.id)
        number = previous.labels.get(candidate.id)
        if kept is None or number is None:
            continue
        original = candidate.passage.text
        text = _cut_text(original, kept)
        if text is None:
            continue
        shown = candidate._replace(text=text, start=None, end=None)
        if fingerprint(block, shown, number) == digests.get(candidate.id):
            sentences = len(sentence_spans(original))
            found[candidate.id] = Compressed(shown, original, len(kept), sentences)
    return found


def _cut_text(original: str, kept: Sequence[int]) -> str | None:
    """``original`` with only the sentences ``kept`` (increasing indexes), every gap marked
    as compression marks it (:mod:`ctxasm.stages.compression`); ``None`` when an index is
    past its sentences."""
    if not kept or kept[-1] >= len(sentence_spans(original)):
        return None
    return cut_text(original, kept)


def kept_sentences(original: str, text: str) -> tuple[int, ...] | None:
    """The indexes of the sentences of ``original`` that ``text``, a compression of it,
    kept; ``None`` when ``text`` is not such a cut (a stitched or rewritten text)."""
    spans = sentence_spans(original)
    kept: list[int] = []
    at = 0
    for index, (start, end) in enumerate(spans):
        piece = original[start:end].strip()
        for lead in ("", f"{ELISION} "):
            if text.startswith(lead + piece, at):
                kept.append(index)
                at += len(lead) + len(piece) + 1
                break
    if not kept or len(kept) == len(spans) or _cut_text(original, kept) != text:
        return None
    return tuple(kept)


def assign_labels(previous: CacheState, ordered: Sequence[Candidate]) -> dict[str, int]:
    """Each passage's label number: the one it had earlier in the session, else the next
    free one, in prompt order."""
    labels: dict[str, int] = {}
    following = previous.next_label
    for candidate in ordered:
        number = previous.labels.get(candidate.id)
        if number is None:
            number, following = following, following + 1
        labels[candidate.id] = number
    return labels


def stable_ids(previous: CacheState, kept: Sequence[Candidate], block: SourcesBlock) -> list[str]:
    """The previous turn's passages that are kept and render byte-identically now (same
    label, same text, same flags), in their previous order."""
    by_id = {c.id: c for c in kept}
    found = []
    for passage_id, digest in previous.sources:
        candidate = by_id.get(passage_id)
        number = previous.labels.get(passage_id)
        if candidate is None or number is None:
            continue
        if fingerprint(block, candidate, number) == digest:
            found.append(passage_id)
    return found


@dataclass(frozen=True, slots=True)
class _Prefix:
    """Token positions of the prompt: ``through[k]`` is the tokens up to the end of the
    ``k``-th source (``through[0]``: everything before the sources)."""

    through: tuple[int, ...]
    identical: int  # sources in the prefix identical to the previous turn
    same_head: bool

    @property
    def tokens(self) -> int:
        return self.through[self.identical] if self.same_head else 0


def plan(
    *,
    model: ModelSpec,
    fmt: Format,
    counter: TokenCounter,
    parts: PromptParts,
    previous: CacheState,
    kept: Sequence[Candidate],
    labels: Mapping[str, int],
    rendered: Rendered,
    total_tokens: int,
) -> tuple[CacheReport, Rendered]:
    """The cache section of the report and the request with any breakpoints placed."""
    block = fmt.block
    prints = [fingerprint(block, c, labels[c.id]) for c in kept]
    head_tokens, layout = _head(model, fmt, counter, parts)
    head = head_digest(model, fmt, parts.system, layout)
    prefix = _measure(fmt, counter, previous, kept, labels, prints, head, head_tokens)
    if model.cache == "breakpoints" and fmt.name == "anthropic" and kept:
        placed, read = _breakpoints(model, previous, prefix, len(kept))
        rendered = _with_breakpoints(rendered, placed)
        written = placed[-1].tokens - read if placed else 0
        rule = _anthropic_rule(model, read, placed)
    else:
        placed, written = (), 0
        read, rule = _automatic(model, fmt, prefix.tokens)
    # A state holds at most MAX_LABELS sources, so that it is always read back: the first ones,
    # where the next turn's identical prefix is looked for (a prompt of more sources is rare).
    stated = kept[:MAX_LABELS]
    compressed: dict[str, tuple[int, ...]] = {}
    for candidate in stated:
        if candidate.text != candidate.passage.text:
            cut = kept_sentences(candidate.passage.text, candidate.text)
            if cut is not None:
                compressed[candidate.id] = cut
    state = CacheState(
        model=model.name,
        format=fmt.name,
        head=head,
        sources=tuple(zip([c.id for c in stated], prints[: len(stated)], strict=True)),
        labels=_session_labels(previous, stated, labels),
        next_label=max([previous.next_label, *(labels[c.id] + 1 for c in kept)]),
        breakpoints=tuple(b.after_sources for b in placed if b.after_sources <= len(stated)),
        compressed=compressed,
    )
    report = CacheReport(
        prefix_tokens=prefix.tokens,
        prefix_sources=prefix.identical if prefix.same_head else 0,
        reused_context_tokens=prefix.tokens - prefix.through[0] if prefix.same_head else 0,
        cached_tokens=read,
        written_tokens=written,
        cost_usd=_cost(model, total_tokens, read, written),
        cost_usd_uncached=_cost(model, total_tokens, 0, 0),
        rule=rule,
        breakpoints=tuple(placed),
        state=state,
    )
    return report, rendered


def _measure(
    fmt: Format,
    counter: TokenCounter,
    previous: CacheState,
    kept: Sequence[Candidate],
    labels: Mapping[str, int],
    prints: Sequence[str],
    head: str,
    head_tokens: int,
) -> _Prefix:
    """Where the prompt stops being identical to the previous turn's, in tokens."""
    through = [head_tokens]
    for opening, body in fmt.block.parts(kept, labels):
        # the shares of the block add up to its count (docs/report.md, included[].tokens)
        through.append(through[-1] + counter.count(opening) + counter.count(body))
    # a template lays the prompt out itself: nothing before its sources is known to be stable
    same_head = bool(previous.head) and previous.head == head and fmt.name != "template"
    identical = 0
    if same_head:
        limit = min(len(kept), len(previous.sources))
        while (
            identical < limit
            and previous.sources[identical][0] == kept[identical].id
            and previous.sources[identical][1] == prints[identical]
        ):
            identical += 1
    return _Prefix(tuple(through), identical, same_head)


def _head(
    model: ModelSpec, fmt: Format, counter: TokenCounter, parts: PromptParts
) -> tuple[int, str]:
    """Tokens before the sources block when the sources come first (the system prompt and
    the framing up to the sources, as the format or the model's chat template writes them),
    and where a template put the system prompt when it moves it (``ChatTemplate.head``)."""
    if fmt.name == "openai":
        replies = any(turn.role == "assistant" for turn in parts.history)
        return model.chat_template.head(parts.system, counter.count, replies=replies)
    if fmt.name == "anthropic":
        system = counter.count(parts.system)
        return system + model.tokens_per_message + counter.count("user"), ""
    if fmt.name == "markdown":
        return counter.count(f"## Instructions\n\n{parts.system}\n\n"), ""
    return counter.count(f"{parts.system}\n\n"), ""


def _automatic(model: ModelSpec, fmt: Format, prefix: int) -> tuple[int, str]:
    """Tokens an automatic prefix cache is expected to read, and the rule in a sentence."""
    if fmt.name == "template":
        return 0, "a template lays out the prompt itself, so its identical prefix is not measured"
    if model.cache is None:
        return 0, f"{model.name} has no prompt caching in the registry"
    if model.cache == "explicit":
        return 0, (
            f"{model.name} caches only explicitly (a cache object you create), so nothing is "
            "reused automatically"
        )
    if model.cache == "breakpoints":
        return 0, (
            f"{model.name} caches only up to cache_control breakpoints, which the "
            f"{fmt.name} format does not carry; use format anthropic to have them placed"
        )
    least, step = model.cache_min_tokens, model.cache_increment
    if prefix < least:
        return 0, (
            f"automatic prefix caching from {least:,} tokens; the prefix identical to the "
            f"previous turn has {prefix:,}"
        )
    cached = least + (prefix - least) // step * step
    steps = f" in steps of {step:,}" if step > 1 else ""
    return cached, (
        f"automatic prefix caching from {least:,} tokens{steps}: {cached:,} of the "
        f"{prefix:,} tokens identical to the previous turn"
    )


def _breakpoints(
    model: ModelSpec, previous: CacheState, prefix: _Prefix, count: int
) -> tuple[tuple[Breakpoint, ...], int]:
    """Up to four breakpoints after sources, each at a prefix of at least the model's minimum,
    and the tokens expected to be read from the cache (at the furthest breakpoint the previous
    turn placed within the identical prefix).

    The last, at the end of the sources, sets this turn's cost: the tokens from the read up
    to it are written, once, whatever lies between (Anthropic bills each input token once:
    read, written or plain). The others are for the next turn, which reads at the furthest
    breakpoint of this one that its identical prefix still reaches: the read one, the end of
    the sources identical to the previous turn, the previous turn's other breakpoints within
    the identical prefix (found in the cache, so kept fresh), then, while there is room, the
    source boundary in the written part furthest from any breakpoint."""
    least, through = model.cache_min_tokens, prefix.through
    stable = prefix.identical if prefix.same_head else 0
    hits = [b for b in previous.breakpoints if b <= stable and through[b] >= least]
    read = through[hits[-1]] if hits else 0
    if through[count] < least:
        return (), read
    reasons = {count: "end of the sources: the next turn reads it if it keeps them all"}
    if hits:
        reasons.setdefault(hits[-1], "the previous turn cached the prompt up to here: read")
    if stable and through[stable] >= least:
        reasons.setdefault(
            stable, "end of the sources identical to the previous turn: cached for the next"
        )
    for hit in reversed(hits[:-1]):
        if len(reasons) < MAX_BREAKPOINTS:
            reasons[hit] = "a breakpoint of the previous turn: found in the cache, so kept fresh"
    written = hits[-1] if hits else 0
    hedges = [k for k in range(written + 1, count) if through[k] >= least and k not in reasons]
    while hedges and len(reasons) < MAX_BREAKPOINTS:
        best = max(hedges, key=lambda k: _distance(through, reasons, k))
        hedges.remove(best)
        reasons[best] = (
            "in the written sources, far from the other breakpoints: the next turn reads up "
            "to here if it keeps the sources before it"
        )
    chosen = sorted(reasons)
    return tuple(Breakpoint(a, through[a], reasons[a]) for a in chosen), read


def _distance(through: Sequence[int], marks: Iterable[int], k: int) -> int:
    """Tokens from the end of source ``k`` to the nearest of ``marks`` (or the start)."""
    return min(abs(through[k] - through[m]) for m in (0, *marks))


def _anthropic_rule(model: ModelSpec, read: int, placed: Sequence[Breakpoint]) -> str:
    least = model.cache_min_tokens
    if not placed:
        return (
            f"cache_control breakpoints need a prefix of at least {least:,} tokens; the "
            "sources do not reach it, so none was placed"
        )
    return (
        f"{len(placed)} cache_control breakpoint(s) at prefixes of at least {least:,} tokens; "
        f"{read:,} tokens expected read from the cache, the rest up to the last breakpoint "
        "written to it"
    )


def _with_breakpoints(rendered: Rendered, placed: Sequence[Breakpoint]) -> Rendered:
    """``rendered`` with ``cache_control`` on the text block that ends each breakpoint's
    source (the anthropic format's first message, one block per source)."""
    if not placed or not rendered.messages:
        return rendered
    first = rendered.messages[0]
    content = first["content"]
    if isinstance(content, str):
        return rendered
    marked = {b.after_sources - 1 for b in placed}
    blocks = [
        {**block, "cache_control": dict(_EPHEMERAL)} if i in marked else block
        for i, block in enumerate(content)
    ]
    messages = ({**first, "content": blocks}, *rendered.messages[1:])
    return Rendered(messages, rendered.system, rendered.text)


def _session_labels(
    previous: CacheState, kept: Sequence[Candidate], labels: Mapping[str, int]
) -> dict[str, int]:
    """Every label of the session, the oldest forgotten beyond :data:`MAX_LABELS` (never a
    label of this prompt; a forgotten number is never given again)."""
    merged = dict(previous.labels)
    for candidate in kept:
        merged.pop(candidate.id, None)
    current = {c.id: labels[c.id] for c in kept}
    room = max(0, MAX_LABELS - len(current))
    older = list(merged.items())[-room:] if room else []
    return {**dict(older), **current}


def _cost(model: ModelSpec, total: int, read: int, written: int) -> float | None:
    """The input cost of ``total`` tokens, ``read`` of them from the cache and ``written`` to
    it, at the registry's prices for a prompt of ``total`` tokens (``None`` when the model has
    no input price)."""
    prices = model.prices(total)
    price = prices.input
    if price is None:
        return None
    cached = price if prices.cached_input is None else prices.cached_input
    write = price if prices.cache_write is None else prices.cache_write
    usd = (read * cached + written * write + (total - read - written) * price) / 1_000_000
    return round(usd, 8)
