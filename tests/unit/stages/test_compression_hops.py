"""Sentence-level evidence: which sentences carry a hop, and how many fit the budget."""

from __future__ import annotations

from typing import Any

import pytest
import tiktoken

import ctxasm
from ctxasm.data import Candidate
from ctxasm.stages.compression import ELISION, Hops, SentenceCompression

O200K = tiktoken.get_encoding("o200k_base")

QUERY = "Where does the river that the Velora bridge crosses rise?"
BRIDGE = {
    "id": "a",
    "title": "Velora bridge",
    "score": 0.9,
    "text": "The Velora bridge crosses the Tamsin river. It opened in 1887.",
}
HILLS = {
    "id": "b",
    "title": "Orlen hills",
    "score": 0.8,
    "text": "The Orlen hills rise north of Velora. Shepherds graze sheep on their slopes every "
    "summer. A bridge of rope once crossed the gorge there. Snow covers the peaks in winter.",
}
RIVER = {
    "id": "c",
    "title": "Tamsin river",
    "score": 0.7,
    "text": "The Tamsin river rises in the Orlen hills. Otters and herons live along its banks. "
    "Velora bridge crosses it near the old mill. The river floods most springs.",
}


def _candidates(*passages: dict[str, Any]) -> list[Candidate]:
    return [
        Candidate.of(ctxasm.Passage(**passage), index, float(passage.get("score", 1.0)))
        for index, passage in enumerate(passages)
    ]


def _fill(budget: int) -> ctxasm.Assembly:
    return ctxasm.assemble(
        QUERY,
        [BRIDGE, HILLS, RIVER],
        max_context_tokens=budget,
        strategy={
            "selection": "greedy_by_score",
            "compression": {"name": "sentences", "mode": "fill"},
            "ordering": "score",
            "dedup": "none",
        },
    )


def test_a_sentence_stating_the_relation_asked_is_kept() -> None:
    passage = {
        "id": "p",
        "title": "Ada Velora",
        "text": "Ada Velora was a painter from Orlen. She studied in Paris for six years. "
        "In 1931 she married the sculptor Tomas Brel. Her studio burned down in 1950.",
    }
    result = ctxasm.assemble(
        "Who was the spouse of Ada Velora?",
        [passage],
        max_context_tokens=4000,
        strategy={"compression": {"name": "sentences", "mode": "all"}},
    )
    # "married" states "spouse" (see term_forms); the other sentences carry nothing asked
    assert [p.text for p in result.passages] == [
        f"Ada Velora was a painter from Orlen. {ELISION} In 1931 she married the sculptor Tomas "
        f"Brel. {ELISION}"
    ]


def test_hops_carry_query_words_in_any_form_and_named_phrases() -> None:
    hops = Hops.of("Which drummer of Rush entered the Modern Drummer Hall of Fame?")
    words = ("he", "was", "inducted", "into", "the", "modern", "drummer", "hall", "of", "fame")
    assert hops.carried(words, frozenset(words)) == {
        "drummer",
        "modern",
        "hall",
        "fame",
        "modern drummer hall of fame",
    }
    assert hops.carried(("drummers",), frozenset({"drummers", "drummer"})) == {"drummer"}
    assert hops.carried(("a", "band"), frozenset({"a", "band"})) == set()


def test_a_sentence_naming_another_passage_is_kept_and_one_naming_its_own_title_is_not() -> None:
    strategy = SentenceCompression()
    river = _candidates(RIVER)[0]
    found = strategy.compress(river, ["otters"], ["velora bridge", "tamsin river"])
    assert found is not None
    # the lead, the otters, the bridge named; "The river floods" names no other passage
    assert found.candidate.text == (
        "The Tamsin river rises in the Orlen hills. Otters and herons live along its banks. "
        f"Velora bridge crosses it near the old mill. {ELISION}"
    )
    only_own = strategy.compress(river, ["otters"], ["tamsin river"])
    assert only_own is not None
    assert only_own.candidate.text == (
        "The Tamsin river rises in the Orlen hills. Otters and herons live along its banks. "
        f"{ELISION}"
    )


def test_before_selection_cuts_each_passage_to_a_share_of_the_budget() -> None:
    strategy = SentenceCompression(mode="all")
    ranked = _candidates(BRIDGE, HILLS, RIVER)
    roomy, _ = strategy.before_selection(QUERY, ranked)
    tight, done = strategy.before_selection(QUERY, ranked, budget=24)
    assert [c.text for c in roomy][2] == (
        f"The Tamsin river rises in the Orlen hills. {ELISION} Velora bridge crosses it near "
        f"the old mill. {ELISION}"
    )
    # about 24 / fit_passages = 12 tokens each: the best sentence alone, lead or not
    assert [c.text for c in tight] == [
        f"The Velora bridge crosses the Tamsin river. {ELISION}",
        f"The Orlen hills rise north of Velora. {ELISION}",
        f"{ELISION} Velora bridge crosses it near the old mill. {ELISION}",
    ]
    assert sorted(done) == ["a", "b", "c"]
    assert [(d.sentences, d.kept_sentences) for d in done.values()] == [(2, 1), (4, 1), (4, 1)]
    wider, _ = SentenceCompression(mode="all", fit_passages=1.0).before_selection(
        QUERY, ranked, budget=24
    )
    assert wider[2].text == roomy[2].text


def test_fill_offers_the_passage_a_kept_one_names_before_a_better_ranked_one() -> None:
    result = _fill(80)
    assert [item.id for item in result.report.included] == ["a", "c"]
    assert [(e.id, e.reason.value) for e in result.report.excluded] == [("b", "over_budget")]
    assert [p.text for p in result.passages] == [
        BRIDGE["text"],
        f"The Tamsin river rises in the Orlen hills. {ELISION} Velora bridge crosses it near "
        f"the old mill. {ELISION}",
    ]


@pytest.mark.parametrize("budget", range(50, 160, 5))
def test_fill_cuts_a_passage_to_the_room_left_within_the_budget(budget: int) -> None:
    result = _fill(budget)
    recount = sum(
        3 + len(O200K.encode(m["role"])) + len(O200K.encode(str(m["content"])))
        for m in result.messages
    )
    assert result.report.total_tokens == recount + 3
    assert result.report.context_tokens <= budget
    assert result.passages[0].text == BRIDGE["text"]


def test_fill_keeps_the_best_sentence_when_only_one_fits() -> None:
    result = _fill(70)
    assert [p.text for p in result.passages] == [
        BRIDGE["text"],
        f"{ELISION} Velora bridge crosses it near the old mill. {ELISION}",
    ]
    compressed = result.report.included[1].compression
    assert compressed is not None
    assert (compressed.sentences, compressed.kept_sentences) == (4, 1)


def test_fit_passages_is_validated() -> None:
    with pytest.raises(ctxasm.RequestError) as caught:
        _fill_with({"name": "sentences", "fit_passages": 0.5})
    assert caught.value.field == "strategy.compression.fit_passages"


def _fill_with(compression: dict[str, Any]) -> ctxasm.Assembly:
    return ctxasm.assemble(QUERY, [BRIDGE], strategy={"compression": compression})


def test_a_long_passage_compresses_in_linear_time() -> None:
    # thousands of sentences, each carrying a query word: ranked once, fitted in a few counts
    text = " ".join(f"The Tamsin river rises near mill {i}." for i in range(5000))
    long = {"id": "long", "title": "Tamsin river", "text": text, "score": 0.1}
    result = ctxasm.assemble(
        QUERY,
        [BRIDGE, long],
        max_context_tokens=120,
        strategy={"selection": "greedy_by_score", "compression": {"name": "sentences"}},
    )
    assert [item.id for item in result.report.included] == ["a", "long"]
    assert result.passages[1].text == f"The Tamsin river rises near mill 0. {ELISION}"


# The next hop of a chain (RIVER, named by BRIDGE) does not fit whole after BRIDGE; a short
# passage that only shares some of the question's words (FAIR) would fit.
LONG_RIVER = {
    "id": "c",
    "title": "Tamsin river",
    "text": "The Tamsin river rises in the Orlen hills. Otters and herons live along its banks, "
    "and anglers come for its trout in the autumn months. The old mill by the water was built "
    "of grey stone in the year the railway came. The river floods most springs, when the snow "
    "on the hills melts.",
}
FAIR = {
    "id": "m",
    "title": "Harvest fair",
    "text": "Where the river rises, a fair is held each May by the old stone bridge.",
}


def _chain(selection: dict[str, Any], compression: dict[str, Any] | None) -> ctxasm.Assembly:
    return ctxasm.assemble(
        QUERY,
        [BRIDGE, FAIR, LONG_RIVER],
        max_context_tokens=80,
        strategy={
            "selection": selection,
            "compression": compression,
            "ordering": "score",
            "dedup": "none",
        },
    )


def test_a_chain_pick_too_big_to_fit_whole_is_compressed_before_a_weaker_one_takes_its_room() -> (
    None
):
    result = _chain({"name": "bridge"}, {"name": "sentences", "mode": "fill"})
    included = {item.id: item for item in result.report.included}
    assert sorted(included) == ["a", "c"]
    assert [(e.id, e.reason.value) for e in result.report.excluded] == [("m", "over_budget")]
    river = included["c"]
    assert river.compression is not None  # reported as compressed, with its counts
    assert river.compression.kept_sentences < river.compression.sentences
    assert river.chosen is not None
    assert (river.chosen.by, river.chosen.linked_from) == ("link", "a")  # why it was picked
    kept = next(p.text for p in result.passages if p.id == "c")
    assert kept.startswith("The Tamsin river rises in the Orlen hills.")
    assert result.report.context_tokens <= 80


@pytest.mark.parametrize(
    ("selection", "compression"),
    [
        ({"name": "bridge", "shrink": 0}, {"name": "sentences", "mode": "fill"}),  # off
        ({"name": "bridge"}, None),  # no compression: nothing is cut in selection either
    ],
)
def test_the_weaker_passage_keeps_the_room_without_compression_or_below_shrink(
    selection: dict[str, Any], compression: dict[str, Any] | None
) -> None:
    result = _chain(selection, compression)
    assert sorted(item.id for item in result.report.included) == ["a", "m"]
    assert all(item.compression is None for item in result.report.included)
    assert [(e.id, e.reason.value) for e in result.report.excluded] == [("c", "over_budget")]


@pytest.mark.parametrize("shrink", [-1, 0.5, 101, "x"])
def test_shrink_is_validated(shrink: object) -> None:
    with pytest.raises(ctxasm.RequestError) as caught:
        _chain({"name": "bridge", "shrink": shrink}, None)
    assert caught.value.field == "strategy.selection.shrink"


FOUNDED = "Where was the founder of Acme Corp born?"
ACME = {
    "id": "acme",
    "title": "Acme Corp",
    "text": "Acme Corp is a maker of anvils and rockets, and its founder is a man of few words. "
    "The firm sells to cartoon coyotes across the western deserts of the country. "
    "Its catalogue runs to four hundred pages of traps, springs and magnets. "
    "John Smith started it in a garage in 1950. "
    "Sales fell in the eighties when road runners learned to avoid the traps.",
}
SMITH = {"id": "smith", "title": "John Smith", "text": "John Smith was born in Leeds in 1921."}
TAX = {
    "id": "other",
    "title": "Corp tax",
    "text": "Corp tax is paid where the firm was born, by law.",
}
FILL = {"compression": {"name": "sentences", "mode": "fill"}, "ordering": "score", "dedup": "none"}


@pytest.mark.parametrize("budget", [60, 80, 90])
def test_a_pick_cut_in_selection_keeps_the_sentence_naming_the_next_hop_and_reports_its_terms(
    budget: int,
) -> None:
    # the cut kept only the lead sentence (the candidates not decided yet were no bridges), and
    # the report kept the words of the whole passage: "born" and the link to John Smith
    result = ctxasm.assemble(
        FOUNDED,
        [ACME, TAX, SMITH],
        max_context_tokens=budget,
        strategy={"selection": "bridge", **FILL},
    )
    shown = {p.id: p.text for p in result.passages}
    included = {item.id: item for item in result.report.included}
    acme = included["acme"]
    assert acme.compression is not None and acme.chosen is not None
    assert "John Smith" in shown["acme"]  # the sentence that leads to the next hop
    if budget >= 80:  # and the next hop is kept, by that link
        smith = included["smith"].chosen
        assert smith is not None and (smith.by, smith.linked_from) == ("link", "acme")
    from ctxasm.lexical import phrase_key

    key = f" {phrase_key('Acme Corp')} {phrase_key(shown['acme'])} "
    assert all(f" {term} " in key or term == "founder" for term in acme.chosen.terms)
    assert "born" not in acme.chosen.terms  # no kept sentence of Acme states it


def test_cuts_in_and_after_selection_share_the_max_candidates_of_sentences() -> None:
    passages = [
        {
            "id": f"b{i}",
            "title": f"Item {i}",
            "text": f"Acme Corp founder Kim{i} Lee{i} was born in Town{i}. Zed "
            + " ".join(f"z{i}q{k}" for k in range(300))
            + ".",
        }
        for i in range(30)
    ]
    passages.append({"id": "off", "title": "Off", "text": "Acme is nothing here at all."})
    result = ctxasm.assemble(
        FOUNDED,
        passages,
        max_context_tokens=3000,
        strategy={
            "selection": {"name": "bridge", "max_candidates": 500},
            "compression": {"name": "sentences", "mode": "fill", "max_candidates": 1},
            "dedup": "none",
        },
    )
    assert sum(item.compression is not None for item in result.report.included) == 1


def test_a_pick_is_kept_only_when_the_packing_kept_it() -> None:
    # a compression strategy that says it cut the pick but never offered the cut
    from ctxasm.stages.compression import SentenceCompression

    class Boastful(SentenceCompression):
        def cut_pick(self, query: str, candidate: Any, packing: Any, in_play: Any) -> Any:
            return self.compress(candidate, ["founder"], [])

        def after_selection(self, query: str, ranked: Any, packing: Any) -> Any:
            cut = {c.id: self.compress(c, ["founder"], []) for c in ranked}
            return {name: found for name, found in cut.items() if found is not None}

    from ctxasm.assembler import Assembler
    from ctxasm.schema import parse_request

    assembler = Assembler()
    request = parse_request(
        {
            "query": FOUNDED,
            "passages": [ACME, TAX, SMITH],
            "max_context_tokens": 80,
            "strategy": {"selection": "bridge", **FILL},
        }
    )
    setup = assembler._setup(request)
    from dataclasses import replace

    from ctxasm import pipeline
    from ctxasm.stages.dedup import DedupChain

    setup = replace(setup, strategies=replace(setup.strategies, compression=Boastful(mode="fill")))
    planned = pipeline.plan(setup)
    ranked = pipeline.relevance(setup, pipeline.access(setup))
    dedup = DedupChain([s.session() for s in setup.strategies.dedup])
    selected = pipeline.select(setup, ranked, planned, dedup, pipeline.Placement.AFTER_SELECTION)
    kept = {c.id for c in selected.packed.kept}
    excluded = {e.candidate_id for e in selected.packed.excluded}
    assert not kept & excluded
    for candidate in selected.packed.kept:
        source = candidate.chosen.linked_from if candidate.chosen else None
        assert source is None or source in kept
    assert "acme" not in selected.compressed or "acme" in kept


def test_a_cut_pick_keeps_its_reported_terms_when_a_window_is_stitched_onto_it() -> None:
    # the stitch session still held the pick as first admitted, with the terms of the whole
    # passage; a window stitched onto the cut brought "founder" and "born" back into the report
    founder = (
        "The founder of the company was born in a small fishing town far to the north, where "
        "the winters are long and the nights are dark for months, and where the river freezes "
        "over every year, so that the children skate to school across it and the old men fish "
        "through holes cut in the ice with long saws and axes, and the boats wait on the shore "
        "for the spring thaw, which in some years does not come until the end of May."
    )
    last = "John Smith runs the works by the canal."
    whole = " ".join(
        ["Acme Corp is a maker of anvils.", founder, "Its anvils are sold abroad.", last]
    )
    passages = [
        {
            "id": "q",
            "title": "Anvil trade",
            "score": 0.95,
            "text": "Acme Corp leads the trade. " * 3,
        },
        {"id": "p", "title": "Acme Corp", "doc_id": "D", "score": 0.9, "text": whole},
        {
            "id": "w2",
            "title": "Acme Corp",
            "doc_id": "D",
            "score": 0.3,
            "text": last + " It is old.",
        },
        {"id": "j", "title": "John Smith", "score": 0.2, "text": "John Smith is an engineer."},
    ]
    result = ctxasm.assemble(
        FOUNDED,
        passages,
        max_context_tokens=100,
        strategy={"selection": "bridge", **FILL, "dedup": ["stitch"]},
    )
    shown = {p.id: p.text for p in result.passages}["p"]
    chosen = {item.id: item.chosen for item in result.report.included}["p"]
    assert ELISION in shown and chosen is not None
    assert ("w2", "merged") in [(e.id, e.reason.value) for e in result.report.excluded]
    assert not [term for term in ("founder", "born") if term in chosen.terms]
