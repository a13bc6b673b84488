"""The priority context builder: the seed-002 walk-through, the exact budget, strict vs skip,
``context_for_chat`` with a retriever, and every validation error naming its field.

Expected results are derived from independent tiktoken counts of the whole joined string, not
from ctxasm's own counter (except for the estimated model, whose only counter is ctxasm's).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxasm.builder import BuiltContext, ContextBuilder, context_for_chat
from ctxasm.data import Passage
from ctxasm.errors import RequestError, UnknownModelError
from ctxasm.models import default_registry
from ctxasm.tokens import get_counter

O200K = tiktoken.get_encoding("o200k_base")
CL100K = tiktoken.get_encoding("cl100k_base")

SYSTEM = "You are a helpful assistant."
CHUNKS = {
    "retrieved_chunk_1": "R is great for statistics and data visualization.",
    "retrieved_chunk_2": "Python is popular for machine learning and web development.",
    "retrieved_chunk_3": "Julia offers high performance for numerical computing workloads.",
}


def o200k(text: str) -> int:
    return len(O200K.encode_ordinary(text))


def seed_builder(max_tokens: int, cutoff: str = "strict") -> ContextBuilder:
    builder = ContextBuilder(max_tokens=max_tokens, cutoff=cutoff)
    builder.add(SYSTEM, priority=10, label="system")
    for priority, (label, text) in zip((5, 4, 3), CHUNKS.items(), strict=True):
        builder.add(text, priority=priority, label=label)
    return builder


def reasons(built: BuiltContext) -> list[tuple[str, str]]:
    return [(item.label, item.reason.value) for item in built.excluded]


def reference(
    items: Sequence[tuple[str, float]], max_tokens: int, cutoff: str, separator: str
) -> tuple[list[int], list[tuple[int, str]]]:
    """The rules, written the slow way: rank, then recount the whole joined string each time."""
    ranked = sorted(range(len(items)), key=lambda i: -items[i][1])
    kept: list[int] = []
    dropped: list[tuple[int, str]] = []
    stopped = False
    for index in ranked:
        if not items[index][0].strip():
            dropped.append((index, "empty"))
            continue
        if stopped:
            dropped.append((index, "priority_cutoff"))
            continue
        trial = separator.join(items[i][0] for i in [*kept, index])
        if o200k(trial) <= max_tokens:
            kept.append(index)
        else:
            dropped.append((index, "over_budget"))
            stopped = cutoff == "strict"
    return kept, dropped


# --- the seed walk-through ---------------------------------------------------------------------


def test_seed_basic_usage_with_a_budget_of_100() -> None:
    texts = [SYSTEM, *CHUNKS.values()]
    joined = "\n\n".join(texts)
    assert o200k(joined) <= 100  # everything fits, so nothing may be dropped

    built = seed_builder(100).build()

    assert built.included == ("system", *CHUNKS)
    assert built.excluded == ()
    assert built.excluded_labels == ()
    assert built.context == joined
    assert built.total_tokens == o200k(joined)
    assert (built.model, built.tokenizer, built.exact_count) == (
        "gpt-4o",
        "tiktoken:o200k_base",
        True,
    )


def test_a_small_budget_strict_cuts_off_and_skip_keeps_a_smaller_item() -> None:
    system, c1, c2, c3 = SYSTEM, *CHUNKS.values()
    budget = o200k("\n\n".join([system, c1, c3]))
    # chunk 2 does not fit after system and chunk 1; the smaller chunk 3 would.
    assert o200k("\n\n".join([system, c1, c2])) > budget

    strict = seed_builder(budget, "strict").build()
    assert strict.included == ("system", "retrieved_chunk_1")
    assert reasons(strict) == [
        ("retrieved_chunk_2", "over_budget"),
        ("retrieved_chunk_3", "priority_cutoff"),
    ]
    assert strict.context == f"{system}\n\n{c1}"
    assert strict.total_tokens == o200k(strict.context)
    assert [item.tokens for item in strict.excluded] == [o200k(c2), o200k(c3)]
    assert "retrieved_chunk_2" in strict.excluded[1].detail
    assert str(budget) in strict.excluded[0].detail

    skip = seed_builder(budget, "skip").build()
    assert skip.included == ("system", "retrieved_chunk_1", "retrieved_chunk_3")
    assert reasons(skip) == [("retrieved_chunk_2", "over_budget")]
    assert skip.context == f"{system}\n\n{c1}\n\n{c3}"
    assert skip.total_tokens == o200k(skip.context) == budget


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str
    score: float


class OverlapRetriever:
    """Scores documents by the share of query words they contain (enough for a test)."""

    def __init__(self, documents: Mapping[str, str]) -> None:
        self.documents = dict(documents)
        self.calls: list[tuple[str, int]] = []

    def retrieve(self, query: str, k: int) -> list[Chunk]:
        self.calls.append((query, k))
        words = set(query.lower().split())
        scored = [
            Chunk(doc_id, text, len(words & set(text.lower().split())) / len(words))
            for doc_id, text in self.documents.items()
        ]
        return sorted(scored, key=lambda c: -c.score)[:k]


DOCUMENTS = {
    "lm": "Linear models in R: lm() fits statistical models by least squares.",
    "glm": "Generalized linear models extend statistical models to counts with glm().",
    "plots": "ggplot2 draws statistical graphics.",
    "web": "Shiny builds web applications in R.",
}


def test_seed_dynamic_priorities_from_retrieval_scores() -> None:
    retriever = OverlapRetriever(DOCUMENTS)
    builder = ContextBuilder(max_tokens=500)
    builder.add("You are an R expert.", priority=10, label="system")
    hits = retriever.retrieve("statistical models", k=5)
    for hit in hits:
        builder.add(hit.text, priority=hit.score, label=hit.id)

    built = builder.build()

    # lm and glm match both words, plots one, web none; ties keep retrieval order.
    assert [(h.id, h.score) for h in hits] == [
        ("lm", 1.0),
        ("glm", 1.0),
        ("plots", 0.5),
        ("web", 0.0),
    ]
    assert built.included == ("system", "lm", "glm", "plots", "web")
    assert built.excluded == ()
    assert built.total_tokens == o200k(built.context) <= 500


def test_reset_between_turns_keeps_the_settings() -> None:
    builder = ContextBuilder(max_tokens=40, model="gpt-4", cutoff="skip", separator="\n---\n")
    builder.add("Old system prompt.", priority=10, label="system").add("old chunk", 5)
    assert builder.build().included == ("system", "item-2")

    second = builder.reset().add("New system prompt.", priority=10, label="system_v2").build()

    assert second.included == ("system_v2",)
    assert second.excluded == ()
    assert second.context == "New system prompt."
    assert (builder.max_tokens, builder.model, builder.cutoff, builder.separator) == (
        40,
        "gpt-4",
        "skip",
        "\n---\n",
    )
    assert second.tokenizer == "tiktoken:cl100k_base"
    # Labels and default numbering start afresh.
    builder.add("again", 1, label="system").add("more", 1)
    assert builder.build().included == ("system_v2", "system", "item-3")
    assert len(builder) == 3


# --- the exact count ----------------------------------------------------------------------------


def test_total_tokens_counts_the_separators() -> None:
    # Without end punctuation each separator is a token of its own: the seed's R package
    # summed the items and missed them.
    parts = ["alpha", "beta", "gamma"]
    built = ContextBuilder(max_tokens=100).add(parts[0], 3).add(parts[1], 2).add(parts[2], 1)
    result = built.build()
    assert result.context == "alpha\n\nbeta\n\ngamma"
    assert result.total_tokens == o200k(result.context)
    assert result.total_tokens > sum(o200k(part) for part in parts)


def test_a_budget_that_only_fits_without_separators_drops_the_last_item() -> None:
    parts = ["alpha", "beta", "gamma"]
    naive = sum(o200k(part) for part in parts)
    assert o200k("\n\n".join(parts)) > naive
    builder = ContextBuilder(max_tokens=naive)
    for priority, part in zip((3, 2, 1), parts, strict=True):
        builder.add(part, priority, label=part)
    result = builder.build()
    assert result.included == ("alpha", "beta")
    assert reasons(result) == [("gamma", "over_budget")]
    assert result.total_tokens == o200k(result.context) <= naive


def test_separator_changes_the_context_and_its_count() -> None:
    def build(separator: str) -> BuiltContext:
        builder = ContextBuilder(max_tokens=200, separator=separator)
        return builder.add("alpha", 2).add("beta", 1).build()

    plain, ruled = build("\n\n"), build("\n\n-----------\n\n")
    assert (plain.context, ruled.context) == ("alpha\n\nbeta", "alpha\n\n-----------\n\nbeta")
    assert plain.total_tokens == o200k(plain.context)
    assert ruled.total_tokens == o200k(ruled.context)
    assert ruled.total_tokens > plain.total_tokens
    # The budget applies to the separators too.
    tight = ContextBuilder(max_tokens=plain.total_tokens, separator="\n\n-----------\n\n")
    assert tight.add("alpha", 2).add("beta", 1).build().included == ("item-1",)


def test_ties_keep_insertion_order() -> None:
    builder = ContextBuilder(max_tokens=100)
    for label in ["c", "a", "d", "b"]:
        builder.add(f"text {label}", 1.0, label=label)
    builder.add("first", 2, label="top")
    assert builder.build().included == ("top", "c", "a", "d", "b")


def test_an_empty_builder_builds_an_empty_context() -> None:
    built = ContextBuilder(max_tokens=1).build()
    assert (built.context, built.included, built.excluded, built.total_tokens) == ("", (), (), 0)


def test_an_item_too_big_on_its_own_is_over_budget_even_first() -> None:
    big = " ".join(["word"] * 50)
    for cutoff, expected in [
        ("strict", [("big", "over_budget"), ("small", "priority_cutoff")]),
        ("skip", [("big", "over_budget")]),
    ]:
        builder = ContextBuilder(max_tokens=10, cutoff=cutoff)
        built = builder.add(big, 2, label="big").add("small", 1, label="small").build()
        assert reasons(built) == expected
        assert built.excluded[0].tokens == o200k(big)
        assert built.included == (() if cutoff == "strict" else ("small",))


def test_cl100k_model_counts_with_cl100k() -> None:
    text = CHUNKS["retrieved_chunk_3"]
    assert len(CL100K.encode_ordinary(text)) > o200k(text)  # the two encodings disagree here
    budget = o200k(text)
    gpt4o = ContextBuilder(max_tokens=budget, model="gpt-4o").add(text, 1, label="julia").build()
    gpt4 = ContextBuilder(max_tokens=budget, model="gpt-4").add(text, 1, label="julia").build()
    assert gpt4o.included == ("julia",)
    assert gpt4.tokenizer == "tiktoken:cl100k_base"
    assert reasons(gpt4) == [("julia", "over_budget")]
    assert gpt4.excluded[0].tokens == len(CL100K.encode_ordinary(text))
    roomy = ContextBuilder(max_tokens=100, model="gpt-4").add(text, 2).add(SYSTEM, 1).build()
    assert roomy.total_tokens == len(CL100K.encode_ordinary(roomy.context))


@pytest.mark.parametrize("budget", [5, 12, 20, 33, 60])
def test_estimated_model_never_exceeds_its_own_count(budget: int) -> None:
    spec = default_registry().get("claude-sonnet-4")
    assert spec.tokenizer.startswith("estimate:")
    builder = ContextBuilder(max_tokens=budget, model="claude-sonnet-4", cutoff="skip")
    builder.add(SYSTEM, 10, label="system")
    for priority, (label, text) in zip((5, 4, 3), CHUNKS.items(), strict=True):
        builder.add(text, priority, label=label)

    built = builder.build()

    counter = get_counter(spec.tokenizer)
    assert built.exact_count is False
    assert built.tokenizer == spec.tokenizer
    assert built.total_tokens == counter.count(built.context) <= budget
    # The estimate over-counts: never below the proxy encoding's own count.
    assert built.total_tokens >= o200k(built.context)
    assert len(built.included) + len(built.excluded) == 4


def test_model_aliases_resolve_to_the_registry_name() -> None:
    assert ContextBuilder(max_tokens=10, model="GPT-4o-2024-08-06").model == "gpt-4o"


# --- a property: the fast path equals the slow reference ---------------------------------------

PIECES = st.sampled_from(["alpha", " beta", "  ", "\n", "\n\n", ".", "東京", "```", "x1", "'s"])


@settings(max_examples=int(os.environ.get("CTXASM_PROPERTY_EXAMPLES", "60")), deadline=None)
@given(
    items=st.lists(
        st.tuples(st.lists(PIECES, max_size=12).map("".join), st.sampled_from([0, 1, 1.5, 3])),
        max_size=8,
    ),
    max_tokens=st.integers(1, 40),
    cutoff=st.sampled_from(["strict", "skip"]),
    separator=st.sampled_from(["\n\n", " ", "", "\n---\n", " \n"]),
)
def test_matches_the_slow_reference(
    items: list[tuple[str, float]], max_tokens: int, cutoff: str, separator: str
) -> None:
    builder = ContextBuilder(max_tokens=max_tokens, cutoff=cutoff, separator=separator)
    for text, priority in items:
        builder.add(text, priority)
    built = builder.build()

    kept, dropped = reference(items, max_tokens, cutoff, separator)
    assert built.included == tuple(f"item-{i + 1}" for i in kept)
    assert reasons(built) == [(f"item-{i + 1}", reason) for i, reason in dropped]
    assert built.context == separator.join(items[i][0] for i in kept)
    assert built.total_tokens == o200k(built.context) <= max_tokens


# --- the builder's surface ------------------------------------------------------------------------


def test_add_chains_and_build_leaves_the_items_alone() -> None:
    builder = ContextBuilder(max_tokens=100)
    assert builder.add("a", 1) is builder
    assert builder.reset() is builder
    builder.add("one", 1).add("two", 2)
    first, again = builder.build(), builder.build()
    assert first == again
    assert first.included == ("item-2", "item-1")


def test_to_dict_is_json_data() -> None:
    built = seed_builder(o200k(SYSTEM)).build()
    data = json.loads(json.dumps(built.to_dict()))
    assert data["included"] == ["system"]
    assert [(e["label"], e["reason"]) for e in data["excluded"]] == [
        ("retrieved_chunk_1", "over_budget"),
        ("retrieved_chunk_2", "priority_cutoff"),
        ("retrieved_chunk_3", "priority_cutoff"),
    ]
    assert data["total_tokens"] == built.total_tokens == o200k(SYSTEM)
    assert set(data) == {
        "context",
        "included",
        "excluded",
        "total_tokens",
        "max_tokens",
        "model",
        "tokenizer",
        "exact_count",
    }
    assert set(data["excluded"][0]) == {"label", "reason", "tokens", "detail"}


# --- context_for_chat -----------------------------------------------------------------------------


def test_context_for_chat_uses_scores_and_ids() -> None:
    retriever = OverlapRetriever(DOCUMENTS)
    built = context_for_chat(retriever, "statistical models", max_tokens=2000, k=3)
    assert retriever.calls == [("statistical models", 3)]
    assert built.included == ("lm", "glm", "plots")
    assert built.context == "\n\n".join(DOCUMENTS[i] for i in ("lm", "glm", "plots"))
    assert built.total_tokens == o200k(built.context)


class _Hits:
    def __init__(self, hits: list[dict[str, Any]]) -> None:
        self.hits = hits

    def retrieve(self, query: str, k: int) -> list[dict[str, Any]]:
        return self.hits


def test_context_for_chat_merges_a_repeated_hit_and_refuses_an_id_on_two_texts() -> None:
    # Hybrid retrieval returns a hit twice; the error talked of labels and reset() instead.
    twice = [
        {"id": "x", "text": "The Danube ends in the Black Sea.", "score": 0.9},
        {"id": "x", "text": "The Danube ends in the Black Sea.", "score": 0.7},
        {"id": "y", "text": "The Rhine ends in the North Sea.", "score": 0.5},
    ]
    built = context_for_chat(_Hits(twice), "Danube?", max_tokens=200)
    assert built.included == ("x", "y")
    clash = [twice[0], {"id": "x", "text": "Another text.", "score": 0.7}]
    with pytest.raises(RequestError) as error:
        context_for_chat(_Hits(clash), "Danube?", max_tokens=200)
    assert (error.value.field, error.value.message) == (
        "hits[1].id",
        "hits[1].id 'x' is also the id of hits[0], whose text differs: a retriever's hit ids "
        "must be unique",
    )


def test_context_for_chat_skips_by_default_and_honours_the_budget() -> None:
    retriever = OverlapRetriever(DOCUMENTS)
    lm, glm, plots = DOCUMENTS["lm"], DOCUMENTS["glm"], DOCUMENTS["plots"]
    budget = o200k(f"{lm}\n\n{plots}")
    assert o200k(f"{lm}\n\n{glm}") > budget  # glm does not fit after lm; plots does

    skip = context_for_chat(retriever, "statistical models", max_tokens=budget, k=3)
    assert skip.included == ("lm", "plots")
    assert reasons(skip) == [("glm", "over_budget")]

    strict = context_for_chat(
        retriever, "statistical models", max_tokens=budget, k=3, cutoff="strict"
    )
    assert strict.included == ("lm",)
    assert reasons(strict) == [("glm", "over_budget"), ("plots", "priority_cutoff")]


def test_a_store_is_a_retriever_for_one_principal(tmp_path: Any) -> None:
    """``store.for_principal(...)`` is the one ``ctxasm.Retriever``: ``context_for_chat`` and
    ``ContextBuilder`` read a real SQLite store through it, and only what the principal may."""
    import ctxasm
    from ctxasm.builder import Retriever
    from ctxasm.data import Principal
    from ctxasm.store import Document, chunk_text, open_store

    assert ctxasm.Retriever is Retriever
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    for doc_id, tenant, text in (
        ("lm", "stats", DOCUMENTS["lm"]),
        ("glm", "stats", DOCUMENTS["glm"]),
        ("secret", "other", "Confidential statistical models of the merger."),
    ):
        document = Document(doc_id, text, tenant=tenant)
        store.upsert(document, chunk_text(text, 64, 0))
    try:
        retriever: Retriever = store.for_principal(Principal("ann", "stats"))
        built = context_for_chat(retriever, "statistical models", max_tokens=2000, k=5)
        assert sorted(built.included) == ["glm#0", "lm#0"]
        assert "Confidential" not in built.context
        assert built.total_tokens == o200k(built.context)

        builder = ContextBuilder(2000)
        builder.add(SYSTEM, priority=10, label="system")
        for hit in retriever.retrieve("statistical models", 5):
            assert hit.score is not None
            builder.add(hit.text, priority=hit.score, label=hit.id)
        assert sorted(builder.build().included) == ["glm#0", "lm#0", "system"]

        outsider = store.for_principal(Principal("eve", "other"))
        assert context_for_chat(outsider, "statistical models", 2000).included == ("secret#0",)
        nobody = store.for_principal(Principal("bob"), allow_public=True)
        assert context_for_chat(nobody, "statistical models", 2000).included == ()
    finally:
        store.close()


class MappingRetriever:
    def __init__(self, hits: Sequence[Mapping[str, Any]]) -> None:
        self.hits = list(hits)

    def retrieve(self, query: str, k: int) -> list[Mapping[str, Any]]:
        return self.hits  # ignores k on purpose: context_for_chat keeps only the first k


def test_context_for_chat_accepts_mappings_and_labels_hits_without_ids() -> None:
    retriever = MappingRetriever(
        [
            {"text": "second best", "score": 0.5},
            {"text": "best", "score": 0.9, "id": 17},
            {"text": "worst", "score": 0.1, "id": None},
            {"text": "beyond k", "score": 1.0, "id": "late"},
        ]
    )
    built = context_for_chat(retriever, "q", max_tokens=100, k=3, model="gpt-4")
    assert built.included == ("17", "hit-1", "hit-3")
    assert built.context == "best\n\nsecond best\n\nworst"
    assert built.tokenizer == "tiktoken:cl100k_base"


# --- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": -5}, "max_tokens"),
        ({"max_tokens": 10.0}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"max_tokens": "100"}, "max_tokens"),
        ({"max_tokens": 10, "cutoff": "lenient"}, "cutoff"),
        ({"max_tokens": 10, "separator": None}, "separator"),
        ({"max_tokens": 10, "model": ""}, "model"),
        ({"max_tokens": 10, "model": None}, "model"),
    ],
)
def test_constructor_errors_name_their_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(RequestError) as caught:
        ContextBuilder(**kwargs)
    assert caught.value.field == field
    assert field in str(caught.value)


def test_unknown_model_names_close_matches() -> None:
    with pytest.raises(UnknownModelError) as caught:
        ContextBuilder(max_tokens=10, model="gpt-4o-mimi")
    assert caught.value.field == "model"
    assert "gpt-4o-mini" in str(caught.value)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ((None, 1), "text"),
        ((b"bytes", 1), "text"),
        (("t", math.nan), "priority"),
        (("t", math.inf), "priority"),
        (("t", -math.inf), "priority"),
        (("t", True), "priority"),
        (("t", "1"), "priority"),
        (("t", None), "priority"),
        (("t", 10**400), "priority"),
        (("t", 1, ""), "label"),
        (("t", 1, 5), "label"),
    ],
)
def test_add_errors_name_their_field(args: tuple[Any, ...], field: str) -> None:
    builder = ContextBuilder(max_tokens=10)
    with pytest.raises(RequestError) as caught:
        builder.add(*args)
    assert caught.value.field == field
    assert field in str(caught.value)
    assert len(builder) == 0  # a rejected item is not half-added


def test_a_repeated_label_is_an_error_naming_it() -> None:
    builder = ContextBuilder(max_tokens=10).add("a", 1, label="notes")
    with pytest.raises(RequestError) as caught:
        builder.add("b", 2, label="notes")
    assert caught.value.field == "label"
    assert "'notes'" in str(caught.value)
    # A default label takes the next number an explicit one does not use (it was an error
    # blaming a label the caller never gave).
    builder.add("c", 1, label="item-3")
    builder.add("d", 1)
    assert builder.build().included == ("notes", "item-3", "item-4")


def test_a_hit_without_an_id_is_named_after_the_ids_of_the_others() -> None:
    class Hits:
        def retrieve(self, query: str, k: int) -> list[dict[str, Any]]:
            return [{"text": "t", "score": 1, "id": "hit-2"}, {"text": "u", "score": 0.5}]

    assert context_for_chat(Hits(), "q", 100).included == ("hit-2", "hit-3")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(1, 12)), max_size=12))
def test_hits_without_ids_take_the_first_free_number_from_their_place(
    ids: list[int | None],
) -> None:
    # The search for a free name starts past the last one found (it was quadratic when other
    # hits held the names "hit-1" ... "hit-N"); the names stay those of a search from each
    # hit's own place.
    taken = {f"hit-{n}" for n in ids if n is not None}
    if len(taken) < sum(n is not None for n in ids):
        return  # ids repeat: refused, another test's case
    expected = []
    for index, number in enumerate(ids):
        name = f"hit-{number}" if number is not None else None
        if name is None:
            free = index + 1
            while f"hit-{free}" in taken:
                free += 1
            name = f"hit-{free}"
        taken.add(name)
        expected.append(name)

    class Hits:
        def retrieve(self, query: str, k: int) -> list[dict[str, Any]]:
            return [
                {"text": "t", "score": 1}
                if n is None
                else {"text": "t", "score": 1, "id": f"hit-{n}"}
                for n in ids
            ]

    built = context_for_chat(Hits(), "q", 10_000, k=len(ids) or 1)
    assert sorted(built.included) == sorted(expected)


def test_integer_priorities_past_2_53_keep_their_order() -> None:
    builder = ContextBuilder(max_tokens=3).add("older", 2**60, label="older")
    assert builder.add("newer", 2**60 + 100, label="newer").build().included == ("newer",)


def test_numpy_priorities_and_scores_are_numbers() -> None:
    # A float32 score from FAISS was refused: "priority must be a number; got float32".
    builder = ContextBuilder(max_tokens=100).add("low", np.float32(0.25), label="low")
    built = builder.add("high", np.int64(3), label="high").build()
    assert built.included == ("high", "low")
    hits = MappingRetriever([{"text": "a fact", "score": np.float32(0.5)}])
    assert context_for_chat(hits, "q", 100).included == ("hit-1",)


@dataclass
class BareHit:
    text: Any
    score: Any


@pytest.mark.parametrize(
    ("call", "field"),
    [
        ({"k": 0}, "k"),
        ({"k": 2.0}, "k"),
        ({"query": None}, "query"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"cutoff": "none"}, "cutoff"),
        ({"retriever": object()}, "retriever"),
        ({"retriever": MappingRetriever([{"score": 1.0}])}, "hits[0].text"),
        ({"retriever": MappingRetriever([{"text": "t"}])}, "hits[0].score"),
        ({"retriever": MappingRetriever([{"text": "t", "score": None}])}, "hits[0].score"),
        ({"retriever": MappingRetriever([{"text": 3, "score": 1}])}, "hits[0].text"),
        ({"retriever": MappingRetriever([{"text": "t", "score": 1, "id": ""}])}, "hits[0].id"),
        # str() of an integer over 4,300 digits raised a raw ValueError
        (
            {"retriever": MappingRetriever([{"text": "t", "score": 1, "id": 10**5000}])},
            "hits[0].id",
        ),
        (
            {
                "retriever": MappingRetriever(
                    [{"text": "a", "score": 1, "id": "x"}, {"text": "b", "score": 1, "id": "x"}]
                )
            },
            "hits[1].id",
        ),
        ({"retriever": OverlapRetriever({})}, None),  # no hits is fine
    ],
)
def test_context_for_chat_errors_name_their_field(call: dict[str, Any], field: str | None) -> None:
    arguments: dict[str, Any] = {
        "retriever": OverlapRetriever(DOCUMENTS),
        "query": "statistical models",
        "max_tokens": 100,
        **call,
    }
    if field is None:
        assert context_for_chat(**arguments).context == ""
        return
    with pytest.raises(RequestError) as caught:
        context_for_chat(**arguments)
    assert caught.value.field == field


@pytest.mark.parametrize("bad", [np.uint64(2**60), -(2**53) - 1, True, "", 7.0])
def test_a_hit_id_is_refused_in_the_words_a_passage_uses(bad: object) -> None:
    # context_for_chat said "must be an integer <= 2**53; got int 1152921504606846976" (no
    # reason, the converted value) and "must be a string" for a bool
    hits = MappingRetriever([{"text": "t", "score": 1}, {"text": "u", "score": 1, "id": bad}])
    with pytest.raises(RequestError) as caught:
        context_for_chat(hits, "q", 100)
    with pytest.raises(RequestError) as passage:
        Passage(id=bad, text="u")  # type: ignore[arg-type]
    assert caught.value.field == "hits[1].id"
    assert caught.value.message == passage.value.message.replace("passage.id", "hits[1].id")


def test_a_too_large_hit_id_says_why_and_shows_the_value_given() -> None:
    hits = MappingRetriever([{"text": "t", "score": 1, "id": np.uint64(2**60)}])
    with pytest.raises(RequestError) as caught:
        context_for_chat(hits, "q", 100)
    assert caught.value.message == (
        "hits[0].id must be a non-empty string, or an integer of at most 2**53 in size (JSON "
        "readers lose the digits of a larger one: give it as a string); got uint64 "
        "np.uint64(1152921504606846976)"
    )


def test_a_retriever_returning_something_odd_is_named() -> None:
    class Odd:
        def retrieve(self, query: str, k: int) -> Any:
            return "not hits"

    with pytest.raises(RequestError) as caught:
        context_for_chat(Odd(), "q", max_tokens=10)
    assert caught.value.field == "retriever"
    assert "str" in str(caught.value)

    class NoScore:
        def retrieve(self, query: str, k: int) -> Any:
            return [BareHit("t", math.nan)]

    with pytest.raises(RequestError) as caught:
        context_for_chat(NoScore(), "q", max_tokens=10)
    assert caught.value.field == "hits[0].score"


def test_an_item_that_cannot_be_counted_is_excluded_and_the_build_goes_on() -> None:
    # One unbroken run ended the whole build with an error that named no item
    built = (
        ContextBuilder(1000, cutoff="strict")
        .add("You are helpful.", 3, label="system")
        .add("x" * 300_000, 2, label="blob")
        .add("Short note.", 1, label="note")
    ).build()
    assert built.included == ("system", "note")
    [blob] = built.excluded
    assert (blob.label, blob.reason.value) == ("blob", "untokenizable")
    assert "300,000 letter-like characters without a break" in blob.detail
    assert built.total_tokens == o200k(built.context)


def test_a_run_made_by_the_separator_is_untokenizable_for_the_later_item() -> None:
    built = (
        ContextBuilder(10_000, separator="")
        .add("a" * 4800, 2, label="a")
        .add("b" * 4800, 1, label="b")
    ).build()
    assert built.included == ("a",)
    assert built.excluded[0].detail.startswith(
        "joined to the context with separator '', it cannot be counted: the text has 9,600"
    )


@pytest.mark.parametrize("model", ["gpt-4o", "mistral-7b-instruct"])
def test_an_untokenizable_item_is_placed_in_the_whole_context(model: str) -> None:
    # The run's start was given from the counted tail (after the context's last seam), not
    # from the start of the context: "from character 8" for a run 24 characters in.
    built = (
        ContextBuilder(10_000, model=model)
        .add("alpha beta gamma delta", 2, label="first")
        .add("x" * 9000, 1, label="run")
    ).build()
    [run] = built.excluded
    assert "9,000 letter-like characters without a break from character 24 " in run.detail


@pytest.mark.parametrize("item", ['{"k":1234}', "123456789", "「中文字符串」"])
def test_items_without_spaces_are_not_recounted_whole_for_each_item(item: str) -> None:
    # Items joined by "\n\n" with no space and no letter after the newline gave the growing
    # count no seam: each item tokenized the whole context (10,000 items: 23 s). A character
    # after a newline starts a piece in these tokenizers, so it is a seam too.
    import time

    builder = ContextBuilder(max_tokens=10**7, model="gpt-4o")
    for _ in range(10_000):
        builder.add(item, priority=0)
    started = time.perf_counter()
    built = builder.build()
    assert time.perf_counter() - started < 5.0
    assert built.total_tokens == o200k(built.context)


@pytest.mark.parametrize("cutoff", ["strict", "skip"])
def test_an_empty_or_blank_item_is_excluded_and_leaves_no_separator(cutoff: str) -> None:
    built = (
        ContextBuilder(max_tokens=50, cutoff=cutoff)
        .add("", 3)
        .add("b", 2)
        .add("  \n\t", 1, label="blank")
        .build()
    )
    assert built.context == "b"
    assert built.included == ("item-2",)
    assert [(e.label, e.reason.value) for e in built.excluded] == [
        ("item-1", "empty"),
        ("blank", "empty"),
    ]
