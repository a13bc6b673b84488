"""A priority-ordered context builder: add texts with priorities, get the string that fits.

:class:`ContextBuilder` is the small, direct tool next to :func:`ctxasm.assemble`: no query, no
passages schema, no chat messages, only labelled texts joined with a separator under a token
budget. Nothing is scanned for prompt injection or fenced as data: untrusted text belongs in
:func:`ctxasm.assemble`, whose guard and formats do both. Items are taken highest priority first
(ties in the order they were added); an item is kept when the joined context with it appended still
counts at most ``max_tokens`` tokens with the model's own tokenizer, separators included.

``cutoff="strict"`` stops at the first item that does not fit: every item ranked after it is
excluded with ``priority_cutoff``, so a lower priority never jumps a higher one.
``cutoff="skip"`` excludes only what does not fit (``over_budget``) and keeps trying the rest.
An item that is empty or only white space is excluded as ``empty`` either way (it would add
nothing but a separator).

The guarantee: ``built.total_tokens == count(built.context) <= max_tokens``, where ``count`` is
the counter :func:`ctxasm.tokens.get_counter` returns for the model's tokenizer spec.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from itertools import islice
from typing import Any

from ctxasm.data import Reason, passage_id
from ctxasm.errors import RequestError, UntokenizableError
from ctxasm.models import ModelSpec, default_registry
from ctxasm.retrieval import Hit, Retriever
from ctxasm.tokens import TokenCounter, get_counter
from ctxasm.validation import integer, number, shown, string

__all__ = [
    "CUTOFFS",
    "BuiltContext",
    "ContextBuilder",
    "Excluded",
    "Hit",
    "Retriever",
    "context_for_chat",
]

CUTOFFS = ("strict", "skip")
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Excluded:
    """An item left out of the context: its label, why, its own token count and a sentence."""

    label: str
    reason: Reason
    tokens: int
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "reason": self.reason.value,
            "tokens": self.tokens,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class BuiltContext:
    """The context string and what went into it.

    ``included`` lists labels in the order their texts appear in ``context``; ``excluded`` lists
    the rest in the order they were considered (highest priority first). ``total_tokens`` is the
    count of ``context`` itself, separators included; ``exact_count`` is false when the model's
    tokenizer is an estimate.
    """

    context: str
    included: tuple[str, ...]
    excluded: tuple[Excluded, ...]
    total_tokens: int
    max_tokens: int
    model: str
    tokenizer: str
    exact_count: bool

    @property
    def excluded_labels(self) -> tuple[str, ...]:
        return tuple(item.label for item in self.excluded)

    def to_dict(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "included": list(self.included),
            "excluded": [item.to_dict() for item in self.excluded],
            "total_tokens": self.total_tokens,
            "max_tokens": self.max_tokens,
            "model": self.model,
            "tokenizer": self.tokenizer,
            "exact_count": self.exact_count,
        }


@dataclass(frozen=True, slots=True)
class _Item:
    label: str
    text: str
    priority: float


class ContextBuilder:
    """Collects labelled texts with priorities and builds the context that fits ``max_tokens``.

    Settings are validated here, once; the model's tokenizer loads on the first count. ``add``
    and ``reset`` return the builder so calls chain; ``build`` leaves the items in place, so the
    same builder can be built again or reset for the next turn.
    """

    def __init__(
        self,
        max_tokens: int,
        model: str = "gpt-4o",
        cutoff: str = "strict",
        separator: str = "\n\n",
    ) -> None:
        self._max_tokens = _require_count(max_tokens, "max_tokens")
        if cutoff not in CUTOFFS:
            raise RequestError(
                f"cutoff must be one of {', '.join(CUTOFFS)}, got {shown(cutoff)}", field="cutoff"
            )
        self._cutoff = cutoff
        self._separator = _require_text(separator, "separator")
        self._spec = _resolve_model(model)
        self._counter: TokenCounter = get_counter(self._spec.tokenizer)
        self._items: list[_Item] = []
        self._labels: set[str] = set()
        self._next_name = 1  # the least number an unlabelled item may be named after

    @property
    def max_tokens(self) -> int:
        return self._max_tokens

    @property
    def model(self) -> str:
        """The registry name of the model (an alias given to the constructor is resolved)."""
        return self._spec.name

    @property
    def cutoff(self) -> str:
        return self._cutoff

    @property
    def separator(self) -> str:
        return self._separator

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return (
            f"ContextBuilder(max_tokens={self._max_tokens}, model={self.model!r}, "
            f"cutoff={self._cutoff!r}, separator={self._separator!r}, items={len(self._items)})"
        )

    def add(self, text: str, priority: float, label: str | None = None) -> ContextBuilder:
        """Add ``text`` with ``priority`` (higher goes first) under a unique ``label``.

        Without a label the item is called ``item-N``, N being its position among the items
        added since the builder was made or last reset, starting at 1 (or the next number no
        label uses, where a label was given that name).
        """
        text = _require_text(text, "text")
        value = _require_priority(priority, "priority")
        if label is None:
            # from the last name given so, never back: callers' labels are passed over once
            label = _free(self._labels, "item", max(len(self._items) + 1, self._next_name))
            self._next_name = int(label.rsplit("-", 1)[1]) + 1
        self._append(text, value, _require_label(label, "label"), "label")
        return self

    def reset(self) -> ContextBuilder:
        """Remove every item; the budget, model, cutoff and separator stay."""
        self._items.clear()
        self._labels.clear()
        self._next_name = 1
        return self

    def build(self) -> BuiltContext:
        """Pack the items into one context string (see the module docstring for the rules)."""
        ranked = sorted(self._items, key=lambda item: -item.priority)  # stable: ties keep order
        # Counts only what follows the context's last split point; equal to a fresh count of
        # the context with the piece by GrowingCount's contract.
        context = self._counter.growing()
        pieces: list[str] = []
        total = 0
        included: list[str] = []
        excluded: list[Excluded] = []
        blocker: _Item | None = None
        for item in ranked:
            if not item.text.strip():  # nothing to add but a separator, as assemble's "empty"
                detail = "text is empty" if not item.text else "text is only white space"
                excluded.append(
                    Excluded(item.label, Reason.EMPTY, self._own_count(item.text), detail)
                )
                continue
            if blocker is not None:
                excluded.append(self._cut_off(item, blocker))
                continue
            piece = f"{self._separator}{item.text}" if pieces else item.text
            try:
                count = context.with_piece(piece)
            except UntokenizableError as error:  # an unbroken run: this item, not the build
                excluded.append(self._untokenizable(item, error, bool(pieces)))
                continue
            if count <= self._max_tokens:
                context.append(piece)
                pieces.append(piece)
                total = count
                included.append(item.label)
                continue
            excluded.append(self._over_budget(item, count, total))
            if self._cutoff == "strict":
                blocker = item
        return BuiltContext(
            context="".join(pieces),
            included=tuple(included),
            excluded=tuple(excluded),
            total_tokens=total,
            max_tokens=self._max_tokens,
            model=self._spec.name,
            tokenizer=self._counter.name,
            exact_count=self._counter.exact,
        )

    def _append(self, text: str, priority: float, label: str, field: str) -> None:
        if label in self._labels:
            raise RequestError(
                f"label {label!r} is already used by another item; labels must be unique "
                "(give this item a different label, or reset() the builder first)",
                field=field,
            )
        self._labels.add(label)
        self._items.append(_Item(label, text, priority))

    def _own_count(self, text: str) -> int:
        """An item's own count; for one that cannot be counted, the count it is never below."""
        try:
            return self._counter.count(text)
        except UntokenizableError:
            return self._counter.lower_bound(text)

    def _over_budget(self, item: _Item, count: int, total: int) -> Excluded:
        detail = (
            f"adding it would make the context {count} tokens, over max_tokens="
            f"{self._max_tokens} ({self._max_tokens - total} left)"
        )
        return Excluded(item.label, Reason.OVER_BUDGET, self._own_count(item.text), detail)

    def _cut_off(self, item: _Item, blocker: _Item) -> Excluded:
        detail = (
            f"not tried: {blocker.label!r} (priority {blocker.priority:g}) ranks above it and "
            "did not fit, and cutoff='strict' stops at the first item that does not fit"
        )
        return Excluded(item.label, Reason.PRIORITY_CUTOFF, self._own_count(item.text), detail)

    def _untokenizable(self, item: _Item, error: UntokenizableError, joined: bool) -> Excluded:
        where = f"joined to the context with separator {self._separator!r}, " if joined else ""
        detail = f"{where}it cannot be counted: {error.message}"
        return Excluded(item.label, Reason.UNTOKENIZABLE, self._own_count(item.text), detail)


def context_for_chat(
    retriever: Retriever,
    query: str,
    max_tokens: int,
    k: int = 5,
    model: str = "gpt-4o",
    cutoff: str = "skip",
    separator: str = "\n\n",
) -> BuiltContext:
    """Retrieve the top ``k`` hits for ``query`` and build a context from them.

    Each hit is added with its score as priority and its id (else ``hit-N``, N its rank from 1,
    or the next number no id uses) as label. A hit that repeats an earlier one (the same id and
    text, as hybrid retrieval returns) is left out; the same id with another text is an error.
    At most ``k`` hits are used even if the retriever
    returns more. For a system prompt or history next to the hits, use :class:`ContextBuilder`
    directly.
    """
    builder = ContextBuilder(max_tokens, model=model, cutoff=cutoff, separator=separator)
    k = _require_count(k, "k")
    query = _require_text(query, "query")
    retrieve = getattr(retriever, "retrieve", None)
    if not callable(retrieve):
        raise RequestError(
            f"retriever must have a retrieve(query, k) method, got {type(retriever).__name__}",
            field="retriever",
        )
    found = retrieve(query, k)
    if not isinstance(found, Iterable) or isinstance(found, str | bytes | Mapping):
        raise RequestError(
            f"retriever.retrieve must return a sequence of hits, got {type(found).__name__}",
            field="retriever",
        )
    hits = []
    seen: dict[str, tuple[str, str]] = {}  # id -> the hit that has it, and its text
    for index, hit in enumerate(islice(found, k)):
        where = f"hits[{index}]"
        text = _require_text(_hit_value(hit, "text", where), f"{where}.text")
        score = _require_priority(_hit_value(hit, "score", where), f"{where}.score")
        raw_id = _hit_value(hit, "id", where, required=False)
        label = None
        if raw_id is not None and raw_id is not _MISSING:
            # Stores often use integer ids (numpy's int64 too: FAISS returns those), taken and
            # refused as a Passage's id is, in the same words
            label = passage_id(raw_id, f"{where}.id")
            first = seen.setdefault(label, (where, text))
            if first[0] != where:
                if first[1] == text:  # the same hit twice (hybrid retrieval): the first stays
                    continue
                raise RequestError(
                    f"{where}.id {shown(label)} is also the id of {first[0]}, whose text "
                    "differs: a retriever's hit ids must be unique",
                    field=f"{where}.id",
                )
        hits.append((where, text, score, label))
    # a hit without an id is named after the ids the others have (one may be "hit-2")
    taken = set(seen)  # the ids the hits have
    # Each search starts past the number the one before found, not again from its own index:
    # the numbers between are taken (they were when that one searched, and names are never
    # freed), so the names are the same, found in time linear in the hits (ids "hit-1" ...
    # "hit-N" beside N hits without one made it quadratic).
    last = 0
    for index, (where, text, score, label) in enumerate(hits):
        if label is None:
            name = _free(taken, "hit", max(index + 1, last + 1))
            last = int(name.rpartition("-")[2])
        else:
            name = label
        taken.add(name)
        builder._append(text, score, name, f"{where}.id")
    return builder.build()


def _hit_value(hit: object, name: str, where: str, *, required: bool = True) -> object:
    value = hit.get(name, _MISSING) if isinstance(hit, Mapping) else getattr(hit, name, _MISSING)
    if value is _MISSING and required:
        raise RequestError(
            f"{where} has no {name!r}: a hit is an object with .text and .score (and optionally "
            f".id) or a mapping with those keys, got {type(hit).__name__}",
            field=f"{where}.{name}",
        )
    return value


def _resolve_model(model: object) -> ModelSpec:
    if not isinstance(model, str) or not model:
        raise RequestError(
            f"model must be a model name such as 'gpt-4o', got {shown(model)}; "
            "run `ctxasm models` for the list",
            field="model",
        )
    return default_registry().get(model)  # UnknownModelError names close matches


# The shared validators (ctxasm.validation): the same rules and messages as the request JSON.
def _require_count(value: object, field: str) -> int:
    count = integer(value, field, minimum=1, optional=False)
    assert count is not None
    return count


def _require_text(value: object, field: str) -> str:
    text: str = string(value, field)  # refuses unpaired surrogates: they cannot be sent
    return text


def _require_priority(value: object, field: str) -> float:
    """A finite number; an integer kept as it is, so that two past 2**53 keep their order."""
    priority = number(value, field, optional=False)
    assert priority is not None
    return value if type(value) is int else priority


def _free(labels: Set[str], stem: str, number: int) -> str:
    """``stem-number``, or the first ``stem-M`` after it that no label in ``labels`` uses."""
    while f"{stem}-{number}" in labels:
        number += 1
    return f"{stem}-{number}"


def _require_label(value: object, field: str) -> str:
    label = _require_text(value, field)
    if not label:
        raise RequestError(f"{field} must be a non-empty string; got {shown(value)}", field=field)
    return label
