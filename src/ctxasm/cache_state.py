"""What one turn leaves for the next so the prompt cache can hit: frozen, JSON-serialisable data.

A :class:`CacheState` records the previous turn's prompt compactly: a digest of everything
before the sources, its sources in prompt order with a digest of each one's rendered share,
the ``[Source N]`` label of every source labelled so far in the session, where the
Anthropic breakpoints went, and which sentences of a compressed source were shown (so the next
turn can show it in the same form). A request carries it as ``previous``
(:func:`parse_previous` also takes a whole prior result, or its ``report.cache``); the report
returns the next one as ``report.cache.state`` (:class:`CacheReport`).

Hostile input cannot make a state large or slow: every list and map has a bound
(:data:`MAX_LABELS`, :data:`MAX_KEPT_SENTENCES`), every check is one pass, and the digests are
fixed-length hex.
This module is data: it imports only the errors and the validators.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ctxasm.errors import RequestError
from ctxasm.validation import invalid, key_path, plain, shown

__all__ = [
    "DIGEST_CHARS",
    "MAX_BREAKPOINTS",
    "MAX_KEPT_SENTENCES",
    "MAX_LABEL",
    "MAX_LABELS",
    "Breakpoint",
    "CacheReport",
    "CacheState",
    "CacheTotals",
    "parse_cache_state",
    "parse_previous",
]

# Labels kept per session; the oldest not in the last prompt are forgotten beyond this (their
# numbers are never given again: ``next_label`` only grows).
MAX_LABELS = 10_000
# The largest label number: citations are read as 1 to 9 digits (ctxasm.formatting.labels).
MAX_LABEL = 999_999_999
# The largest next_label a state may carry: one past the largest label, as a turn that gave
# that label leaves it, so that every state a report gives is read back. A turn whose passages
# could run past MAX_LABEL starts the session's numbers again (ctxasm.pipeline.Setup.previous).
_MAX_NEXT_LABEL = MAX_LABEL + 1
# Anthropic's limit of cache_control breakpoints per request.
MAX_BREAKPOINTS = 4
# Sentence indexes a state may list for its compressed sources, all together.
MAX_KEPT_SENTENCES = 100_000
DIGEST_CHARS = 32
_MAX_NAME_CHARS = 1_000
# Passage ids have no length limit of their own (the request's size bounds them), so a state
# this module wrote is always read back.
_MAX_ID_CHARS = 2**31
_HEX = re.compile(f"[0-9a-f]{{{DIGEST_CHARS}}}")
_STATE_KEYS = ("version", "model", "format", "head", "sources", "labels", "next_label")
_OPTIONAL_KEYS = ("breakpoints", "compressed")
VERSION = 1


@dataclass(frozen=True, slots=True)
class CacheState:
    """The previous turn's prompt, as far as the cache is concerned.

    ``head`` digests everything before the sources (model, format, system prompt); ``sources``
    are the previous prompt's passages in order as ``(id, digest of its rendered share)``;
    ``labels`` maps every passage labelled in the session to its number, and ``next_label`` is
    the number the next new passage gets; ``breakpoints`` are the source counts after which
    the previous turn put a ``cache_control`` breakpoint; ``compressed`` maps each source shown
    compressed to the indexes of the sentences it kept (of its text's
    :func:`ctxasm.lexical.sentence_spans`). ``CacheState()`` is a session's first turn: nothing
    to reuse yet.
    """

    model: str = ""
    format: str = ""
    head: str = ""
    sources: tuple[tuple[str, str], ...] = ()
    labels: Mapping[str, int] = field(default_factory=dict)
    next_label: int = 1
    breakpoints: tuple[int, ...] = ()
    compressed: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "model": self.model,
            "format": self.format,
            "head": self.head,
            "sources": [{"id": i, "digest": d} for i, d in self.sources],
            "labels": dict(self.labels),
            "next_label": self.next_label,
            "breakpoints": list(self.breakpoints),
            "compressed": {i: list(kept) for i, kept in self.compressed.items()},
        }


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """A ``cache_control`` breakpoint: after how many sources, the prompt's tokens up to it,
    and why it is there."""

    after_sources: int
    tokens: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"after_sources": self.after_sources, "tokens": self.tokens, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class CacheReport:
    """The report's cache section (docs/caching.md).

    ``prefix_tokens``: tokens from the start of the prompt identical to the previous turn's
    (the system prompt and the sources in ``prefix_sources``); ``reused_context_tokens``: the
    sources block's share of them; ``cached_tokens`` and ``written_tokens``: what the
    provider's rules are expected to read from and write to its cache; ``cost_usd`` and
    ``cost_usd_uncached``: the input cost with and without caching; ``rule``: the rule
    applied, in a sentence; ``state``: what the next turn sends as ``previous``.
    """

    prefix_tokens: int
    prefix_sources: int
    reused_context_tokens: int
    cached_tokens: int
    written_tokens: int
    cost_usd: float | None
    cost_usd_uncached: float | None
    rule: str
    breakpoints: tuple[Breakpoint, ...]
    state: CacheState

    def to_dict(self) -> dict[str, Any]:
        return {
            "prefix_tokens": self.prefix_tokens,
            "prefix_sources": self.prefix_sources,
            "reused_context_tokens": self.reused_context_tokens,
            "cached_tokens": self.cached_tokens,
            "written_tokens": self.written_tokens,
            "cost_usd": self.cost_usd,
            "cost_usd_uncached": self.cost_usd_uncached,
            "rule": self.rule,
            "breakpoints": [b.to_dict() for b in self.breakpoints],
            "state": self.state.to_dict(),
        }


@dataclass
class CacheTotals:
    """Prompt-cache figures summed over many assemblies (a batch, an evaluation run): add
    each result's report with :meth:`add`; :meth:`summary` says it in one line. Reports that
    did not plan for the cache are not counted."""

    planned: int = 0
    prompt_tokens: int = 0
    prefix_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    cost_usd_uncached: float = 0.0

    def add(self, cache: CacheReport | None, total_tokens: int) -> None:
        """Count one report's cache section (``report.cache``) and its ``total_tokens``."""
        if cache is None:
            return
        self.planned += 1
        self.prompt_tokens += total_tokens
        self.prefix_tokens += cache.prefix_tokens
        self.cached_tokens += cache.cached_tokens
        self.cost_usd += cache.cost_usd or 0.0
        self.cost_usd_uncached += cache.cost_usd_uncached or 0.0

    def add_section(self, section: Mapping[str, Any], total_tokens: int) -> None:
        """Count a cache section as a result's JSON carries it (``report.cache``)."""
        self.planned += 1
        self.prompt_tokens += total_tokens
        self.prefix_tokens += int(section.get("prefix_tokens") or 0)
        self.cached_tokens += int(section.get("cached_tokens") or 0)
        self.cost_usd += float(section.get("cost_usd") or 0.0)
        self.cost_usd_uncached += float(section.get("cost_usd_uncached") or 0.0)

    def summary(self) -> str | None:
        """One line for a summary, or ``None`` when nothing planned for the cache."""
        if not self.planned:
            return None
        share = self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0
        return (
            f"prompt cache: {self.cached_tokens:,} of {self.prompt_tokens:,} prompt tokens "
            f"expected cached ({share:.0%}) over {self.planned} requests; input cost "
            f"${self.cost_usd:.4f} with caching, ${self.cost_usd_uncached:.4f} without"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "planned": self.planned,
            "prompt_tokens": self.prompt_tokens,
            "prefix_tokens": self.prefix_tokens,
            "cached_tokens": self.cached_tokens,
            "cost_usd": round(self.cost_usd, 8),
            "cost_usd_uncached": round(self.cost_usd_uncached, 8),
        }


def parse_previous(value: object, where: str = "previous") -> CacheState:
    """``previous`` as a :class:`CacheState`: ``null`` (a session's first turn), a cache state,
    a prior report's ``cache`` section, or a whole prior result (``{"report": {"cache": ...}}``).
    """
    if value is None:
        return CacheState()
    if isinstance(value, CacheState):
        # Checked as its JSON is: one built by hand, or kept from an older turn, may hold
        # labels that clash or that a citation cannot name.
        return parse_cache_state(value.to_dict(), where)
    if not isinstance(value, Mapping):
        raise invalid(where, "a prior result, its report.cache or its cache state", value)
    return _unwrap(value, where)


def _unwrap(value: Any, where: str) -> CacheState:
    """The state inside a result (``report.cache.state``) or a cache section (``state``)."""
    if "report" in value:
        value, where = _member(value, "report", where), f"{where}.report"
        if value is None:
            raise invalid(where, "a report", value)
        if "cache" not in value:
            raise _no_cache_state(where)
    elif _result_without_report(value):
        raise RequestError(
            f"{where} is a result without its report, which holds the cache state; send the "
            "whole result as the assembly returned it, its report, report.cache or "
            "report.cache.state",
            field=where,
        )
    if "cache" in value:
        value, where = _member(value, "cache", where), f"{where}.cache"
        if value is None:
            raise RequestError(
                f"{where} is null: that turn did not plan for the cache; send "
                'previous: null for a first turn, or use strategy.ordering "cache_stable"',
                field=where,
            )
    if "state" in value:
        value, where = _member(value, "state", where), f"{where}.state"
    elif "included" in value:
        raise _no_cache_state(where)
    return parse_cache_state(value, where)


# What a result holds besides its report: a cache state has none of them.
_RESULT_KEYS = ("messages", "system", "text")


def _result_without_report(value: Mapping[str, Any]) -> bool:
    """Whether ``value`` reads as a result whose report was left out: it has a result's own
    keys and none of a cache state's. Next to a state's keys, ``system`` or ``text`` is a
    stray field of that state, and is refused as an unknown field, by name."""
    if any(key in value for key in (*_STATE_KEYS, *_OPTIONAL_KEYS)):
        return False
    return any(key in value for key in _RESULT_KEYS)


def _no_cache_state(where: str) -> RequestError:
    """The error for a report without a cache section, given as ``previous``."""
    return RequestError(
        f"{where} has no cache state: that result was assembled without previous (or the "
        "cache_stable ordering), so it did not plan for the cache; send previous: null on a "
        "session's first turn, then each turn's result as the next one's previous",
        field=where,
    )


def _member(value: Mapping[str, Any], key: str, where: str) -> Any:
    found = value[key]
    if found is not None and not isinstance(found, Mapping):
        raise invalid(f"{where}.{key}", "an object", found)
    return found


def parse_cache_state(value: object, where: str = "previous") -> CacheState:
    """A cache state from its JSON (``report.cache.state``), checked field by field in one
    pass; errors name the field, such as ``previous.sources[2].digest``."""
    if not isinstance(value, Mapping):
        raise invalid(where, "a cache state object (report.cache.state)", value)
    allowed = (*_STATE_KEYS, *_OPTIONAL_KEYS)
    for key in value:
        if key not in allowed:
            raise RequestError(
                f"{where} has unknown field {shown(key)}; a cache state has {', '.join(allowed)}",
                field=key_path(where, key),
            )
    for key in _STATE_KEYS:
        if key not in value:
            raise RequestError(
                f"{where}.{key} is required; send the cache state exactly as the report gave it",
                field=f"{where}.{key}",
            )
    if value["version"] != VERSION or isinstance(value["version"], bool):
        raise invalid(f"{where}.version", str(VERSION), value["version"])
    next_label = _count(value["next_label"], f"{where}.next_label", 1, _MAX_NEXT_LABEL)
    labels = _labels(value["labels"], f"{where}.labels", next_label)
    sources = _sources(value["sources"], f"{where}.sources", labels)
    return CacheState(
        model=_short(value["model"], f"{where}.model", _MAX_NAME_CHARS),
        format=_short(value["format"], f"{where}.format", _MAX_NAME_CHARS),
        head=_digest(value["head"], f"{where}.head", blank=True),
        sources=sources,
        labels=labels,
        next_label=next_label,
        breakpoints=_breakpoints(value.get("breakpoints", []), f"{where}.breakpoints", sources),
        compressed=_compressed(value.get("compressed", {}), f"{where}.compressed", sources),
    )


# Strings and numbers are read as the plain str and int they subclass (validation.plain), before
# any check: a subclass may redefine len, ==, hash, the comparisons or __format__, and a label
# number goes into the prompt (the [Source N] label, the XML index) through an f-string.


def _short(value: object, where: str, limit: int) -> str:
    text = plain(value)
    if type(text) is not str or len(text) > limit:
        raise invalid(where, f"a string of at most {limit} characters", value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise RequestError(f"{where} must be valid Unicode", field=where) from None
    return text


def _digest(value: object, where: str, *, blank: bool = False) -> str:
    text = plain(value)
    if blank and text == "" and type(text) is str:
        return ""
    if type(text) is not str or not _HEX.fullmatch(text):
        raise invalid(where, f"{DIGEST_CHARS} lowercase hex digits (as the report gave it)", value)
    return text


def _count(value: object, where: str, low: int, high: int) -> int:
    number = plain(value)
    if type(number) is not int or not low <= number <= high:
        raise invalid(where, f"an integer from {low} to {high:,}", value)
    return number


def _bounded_list(value: object, where: str, limit: int) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise invalid(where, "a list", value)
    if len(value) > limit:
        raise RequestError(f"{where} has {len(value):,} items; at most {limit:,}", field=where)
    return list(value)


def _labels(value: object, where: str, next_label: int) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise invalid(where, "an object of passage id to label number", value)
    if len(value) > MAX_LABELS:
        raise RequestError(
            f"{where} has {len(value):,} labels; at most {MAX_LABELS:,}", field=where
        )
    labels: dict[str, int] = {}
    taken: set[int] = set()
    for key, number in value.items():
        ident = _short(key, f"{where} key", _MAX_ID_CHARS)
        if not ident:
            raise RequestError(f"{where} has an empty passage id", field=where)
        checked = _count(number, f"{where}[{shown(key)}]", 1, next_label - 1)
        if checked in taken:
            raise RequestError(
                f"{where}[{shown(key)}] repeats label {checked}; every passage has its own",
                field=where,
            )
        taken.add(checked)
        labels[ident] = checked
    return labels


def _sources(value: object, where: str, labels: Mapping[str, int]) -> tuple[tuple[str, str], ...]:
    items = _bounded_list(value, where, MAX_LABELS)
    sources: list[tuple[str, str]] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        at = f"{where}[{index}]"
        if not isinstance(item, Mapping) or set(item) != {"id", "digest"}:
            raise invalid(at, "an object with id and digest", item)
        ident = _short(item["id"], f"{at}.id", _MAX_ID_CHARS)
        if ident not in labels:
            raise RequestError(f"{at}.id {shown(ident)} has no label in labels", field=f"{at}.id")
        if ident in seen:
            raise RequestError(f"{at}.id {shown(ident)} appears twice", field=f"{at}.id")
        seen.add(ident)
        sources.append((ident, _digest(item["digest"], f"{at}.digest")))
    return tuple(sources)


def _breakpoints(value: object, where: str, sources: tuple[Any, ...]) -> tuple[int, ...]:
    items = _bounded_list(value, where, MAX_BREAKPOINTS)
    most = max(1, len(sources))
    checked = [_count(v, f"{where}[{i}]", 1, most) for i, v in enumerate(items)]
    if checked != sorted(set(checked)):
        raise RequestError(
            f"{where} must be increasing source counts; got {shown(checked)}", field=where
        )
    return tuple(checked)


def _compressed(
    value: object, where: str, sources: tuple[tuple[str, str], ...]
) -> dict[str, tuple[int, ...]]:
    if not isinstance(value, Mapping):
        raise invalid(where, "an object of source id to the indexes of its kept sentences", value)
    ids = {ident for ident, _ in sources}
    found: dict[str, tuple[int, ...]] = {}
    total = 0
    for given, kept in value.items():
        key = plain(given)  # found in ids by the plain string's == and hash
        at = f"{where}[{shown(key)}]"  # a long id shortened, in the message and the field
        if type(key) is not str or key not in ids:
            raise RequestError(f"{at}: {shown(key)} is not one of the sources", field=at)
        items = _bounded_list(kept, at, MAX_KEPT_SENTENCES)
        total += len(items)
        if total > MAX_KEPT_SENTENCES:
            raise RequestError(
                f"{where} lists more than {MAX_KEPT_SENTENCES:,} sentences", field=where
            )
        # an index's field is named when it is wrong only: it repeats the id, which may be long
        indexes = [
            v
            if type(v) is int and 0 <= v <= _MAX_ID_CHARS
            else _count(v, f"{at}[{i}]", 0, _MAX_ID_CHARS)
            for i, v in enumerate(items)
        ]
        if not indexes or indexes != sorted(set(indexes)):
            raise RequestError(
                f"{at} must be increasing sentence indexes; got {shown(indexes)}", field=at
            )
        found[key] = tuple(indexes)
    return found
