"""Planner selection strategies: coverage, bridge and auto (routing by query class)."""

from __future__ import annotations

import random
from typing import Any

import pytest

import ctxasm
from ctxasm.data import Candidate, Passage
from ctxasm.lexical import title_links
from ctxasm.stages import selection_planners
from ctxasm.stages.selection_planners import Evidence

# A two-hop question: the first hop names the second, which shares no word with the query.
BRIDGE_QUERY = "When was the director of Starfall Voyage born?"
BRIDGE_PASSAGES: list[dict[str, Any]] = [
    {
        "id": "d1",
        "title": "Voyage Home",
        "text": "Voyage Home is a 2004 documentary about sailors. The director was born at sea "
        "and spent years on ships.",
    },
    {
        "id": "hop2",
        "title": "Marten Kollwitz",
        "text": "Marten Kollwitz is a Dutch filmmaker from Utrecht. His birth year is 1961, and "
        "he studied painting in Ghent.",
    },
    {
        "id": "d2",
        "title": "Born Free",
        "text": "Born Free is a 1966 British drama film. Its director worked with lions in Kenya "
        "for the production.",
    },
    {
        "id": "hop1",
        "title": "Starfall Voyage",
        "text": "Starfall Voyage is a 1998 science fiction film. Its director is Marten Kollwitz, "
        "who also wrote the script.",
    },
    {
        "id": "d3",
        "title": "Lena Ostrow",
        "text": "Lena Ostrow is a Polish sculptor who works in bronze. She lives in Krakow with "
        "her family.",
    },
]
# Room for two of these passages, not three.
TWO_PASSAGES = 100
BM25_GREEDY = {"relevance": "bm25", "selection": "greedy_by_score", "compression": None}


def _ids(result: ctxasm.Assembly) -> list[str]:
    return [item.id for item in result.report.included]


def _reasons(result: ctxasm.Assembly) -> dict[str, str]:
    return {e.candidate_id: e.reason.value for e in result.report.excluded}


def _bridge(strategy: dict[str, Any], **fields: Any) -> ctxasm.Assembly:
    return ctxasm.assemble(
        BRIDGE_QUERY,
        BRIDGE_PASSAGES,
        max_context_tokens=TWO_PASSAGES,
        strategy={"ordering": "score", **strategy},
        **fields,
    )


# --- bridge ------------------------------------------------------------------------------------


def test_bridge_follows_the_title_the_first_hop_names() -> None:
    result = _bridge({"selection": "bridge"})
    assert _ids(result) == ["hop1", "hop2"]
    assert _reasons(result) == {
        "d1": "over_budget",
        "d2": "over_budget",
        "d3": "below_threshold",
    }


# The first hop names two people; the question's words are in the sentence naming one of them.
ANCHOR_QUERY = "Who did the lead singer of Blue Harbor marry?"
ANCHOR_PASSAGES: list[dict[str, Any]] = [
    {
        "id": "band",
        "title": "Blue Harbor",
        "text": "Blue Harbor is a rock band from Oslo. Its lead singer is Tom Vale. In 2003 the "
        "band toured with Kim Reed across Europe.",
    },
    {
        "id": "other",
        "title": "Kim Reed",
        "text": "Kim Reed is a Swedish singer and songwriter. She married the actor Per Holm in "
        "2001.",
    },
    {
        "id": "singer",
        "title": "Tom Vale",
        "text": "Tom Vale is a Norwegian musician. He married the painter Ada Lind in 1999.",
    },
]


def _anchor_run(**bridge: Any) -> list[str]:
    result = ctxasm.assemble(
        ANCHOR_QUERY,
        ANCHOR_PASSAGES,
        max_context_tokens=80,
        strategy={
            "ordering": "score",
            "compression": None,
            "selection": {"name": "bridge", **bridge},
        },
    )
    return _ids(result)


def test_a_link_counts_where_its_sentence_states_the_question() -> None:
    # Both people are linked from the band; "Kim Reed" is named where the question's words are
    # not ("toured ... across Europe"), and her passage says "singer" too.
    assert _anchor_run() == ["band", "singer"]
    assert _anchor_run(anchor=1.0) == ["band", "other"]


def _links_of(query: str, passages: list[Passage]) -> list[dict[int, float]]:
    candidates = [Candidate.of(p, i, 1.0) for i, p in enumerate(passages)]
    evidence = Evidence(query, candidates)
    links = title_links([p.title for p in passages], [p.text for p in passages])
    return selection_planners._anchored(links, candidates, evidence, 0.3)


def test_a_page_the_question_names_by_title_alone_keeps_its_links() -> None:
    # "Blue Harbor" is named by the question through its title; its text says neither "blue",
    # "harbor" nor "founded" in any sentence, so no sentence is the hop's: its link stays whole
    # (it was weakened with every other link of the page).
    village = Passage(
        "village",
        "It is a small fishing village on the coast of Norway. The first houses there were "
        "built by Tom Vale in 1820.",
        title="Blue Harbor",
    )
    founder = Passage("founder", "Tom Vale was a Norwegian shipbuilder.", title="Tom Vale")
    assert _links_of("Who founded Blue Harbor?", [village, founder])[0] == {1: 1.0}
    # Where a sentence of the text does state the question, the other sentences' links weaken.
    stated = Passage(
        "village",
        f"{village.text} Blue Harbor was founded by Ada Lind.",
        title="Blue Harbor",
    )
    lind = Passage("lind", "Ada Lind was a painter.", title="Ada Lind")
    links = _links_of("Who founded Blue Harbor?", [stated, founder, lind])
    assert links[0] == {1: pytest.approx(0.3), 2: 1.0}


def test_a_page_named_by_title_alone_is_read_once_not_sentence_by_sentence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Whether its text states the query is one search of the text: asked sentence by sentence,
    # a page of 1,000 sentences and a query of 512 words took 1 s a passage.
    searched: list[str] = []
    covered_terms = selection_planners.covered_terms

    def counting(terms: Any, text: str, *rest: Any) -> Any:
        searched.append(text)
        return covered_terms(terms, text, *rest)

    village = Passage(
        "village",
        "The first houses were built by Tom Vale. " + "It lies on a fjord. " * 300,
        title="Blue Harbor",
    )
    founder = Passage("founder", "Tom Vale was a Norwegian shipbuilder.", title="Tom Vale")
    candidates = [Candidate.of(p, i, 1.0) for i, p in enumerate([village, founder])]
    evidence = Evidence("Who founded Blue Harbor?", candidates)
    links = title_links([village.title, founder.title], [village.text, founder.text])
    monkeypatch.setattr(selection_planners, "covered_terms", counting)
    assert selection_planners._anchored(links, candidates, evidence, 0.3)[0] == {1: 1.0}
    assert len(searched) <= 2  # the sentence naming the link, then the whole text


def test_the_words_of_a_pages_own_title_anchor_no_link() -> None:
    # Every sentence of "Radio 538" is about Radio 538: the one naming its sister station beside
    # those words marks no hop; the one stating "owner" (as "owned") names the hop asked.
    radio = Passage(
        "radio",
        "Radio 538 is a Dutch radio station. Radio 538 shares a studio with TV 538. "
        "It is owned by Talpa Holding.",
        title="Radio 538",
    )
    tv = Passage("tv", "TV 538 is a Dutch music channel.", title="TV 538")
    talpa = Passage("talpa", "Talpa Holding is a media company.", title="Talpa Holding")
    links = _links_of("Who founded the owner of Radio 538?", [radio, tv, talpa])
    assert links[0] == {1: pytest.approx(0.3), 2: 1.0}
    # a word the title says in another form ("radios" of "Radio 538") anchors nothing either
    links = _links_of("Who founded the owner of the radios of 538?", [radio, tv, talpa])
    assert links[0] == {1: pytest.approx(0.3), 2: 1.0}


@pytest.mark.parametrize("anchor", [-0.1, 1.5, "high", None])
def test_anchor_is_a_share_of_a_link(anchor: object) -> None:
    with pytest.raises(ctxasm.RequestError, match="anchor"):
        _anchor_run(anchor=anchor)


def test_bm25_greedy_misses_the_second_hop_at_the_same_budget() -> None:
    result = _bridge(BM25_GREEDY)
    assert _ids(result) == ["hop1", "d1"]
    assert _reasons(result) == {
        "hop2": "below_threshold",
        "d2": "over_budget",
        "d3": "below_threshold",
    }


def test_bridge_without_its_bonus_takes_the_word_match_instead() -> None:
    # The second hop is chosen for the bridge bonus, not by its own (tiny) link score (the
    # relevance the words of hop1's title bring kept, as subject=0 keeps it).
    result = _bridge({"selection": {"name": "bridge", "bridge": 0.0, "subject": 0.0}})
    assert _ids(result) == ["hop1", "d1"]


def test_bridge_without_compression_still_finds_both_hops() -> None:
    result = _bridge({"selection": "bridge", "compression": None})
    assert _ids(result) == ["hop1", "hop2"]


# --- coverage ----------------------------------------------------------------------------------

COVERAGE_QUERY = "What is the capital and the currency of Lumeria?"
COVERAGE_PASSAGES: list[dict[str, Any]] = [
    {
        "id": "a",
        "text": "The capital of Lumeria is Orvana, a port city on the northern coast.",
        "score": 0.9,
    },
    {  # says what "a" says, in other words: scores high, adds no query term
        "id": "b",
        "text": "Orvana, the capital of Lumeria, is a port city on the northern coast of the "
        "island.",
        "score": 0.85,
    },
    {
        "id": "c",
        "text": "Lumeria pays with the lumen, its currency since the monetary reform of 1921.",
        "score": 0.5,
    },
    {
        "id": "e",
        "text": "Tourists visit the beaches in summer and the mountains in winter.",
        "score": 0.2,
    },
]
PLAIN = {"dedup": "none", "compression": None, "ordering": "score"}


def _coverage_run(selection: Any, budget: int) -> ctxasm.Assembly:
    return ctxasm.assemble(
        COVERAGE_QUERY,
        COVERAGE_PASSAGES,
        max_context_tokens=budget,
        strategy={**PLAIN, "selection": selection},
    )


def test_coverage_prefers_new_query_terms_over_a_near_repeat() -> None:
    assert _ids(_coverage_run("coverage", 80)) == ["a", "c"]
    # Score order alone takes the repeat.
    assert _ids(_coverage_run("greedy_by_score", 80)) == ["a", "b"]


BIG_TEXT = "Quantum lattice decoherence limits qubit lifetimes because " + " ".join(
    [
        "phonons in the crystal lattice couple to each qubit and carry quantum phase "
        "information away into the environment"
    ]
    * 16
)
FALLBACK_PASSAGES: list[dict[str, Any]] = [
    {"id": "big", "text": BIG_TEXT, "score": 1.0},
    *(
        {"id": f"t{i}", "text": f"Note {word} qubit.", "score": 0.3}
        for i, word in enumerate(["alpha", "bravo", "charlie", "delta", "echo"])
    ),
]
FALLBACK_QUERY = "How does quantum lattice decoherence limit qubit lifetimes?"


def _fallback_run(selection: str, budget: int) -> ctxasm.Assembly:
    return ctxasm.assemble(
        FALLBACK_QUERY,
        FALLBACK_PASSAGES,
        max_context_tokens=budget,
        strategy={**PLAIN, "relevance": "given", "selection": selection},
    )


def test_fallback_fixture_sizes() -> None:
    tokens = {item.id: item.tokens for item in _fallback_run("coverage", 4000).report.included}
    # One big passage that cannot share the budget below with all the tiny ones.
    assert tokens["big"] > 300
    assert all(tokens[f"t{i}"] < 25 for i in range(5))


def test_coverage_keeps_the_best_single_passage_over_a_worse_greedy_set() -> None:
    # Per token the tiny notes win, so the cost-benefit greedy alone fills up with them (as
    # utility_per_token does) and the big passage no longer fits; the notes together are worth
    # less than the big passage, so coverage keeps the big one and fills the rest.
    assert _ids(_fallback_run("utility_per_token", 380)) == ["t0", "t1", "t2", "t3", "t4"]
    assert _ids(_fallback_run("coverage", 380)) == ["big", "t0"]
    result = _fallback_run("coverage", 365)
    assert _ids(result) == ["big"]
    assert set(_reasons(result)) == {"t0", "t1", "t2", "t3", "t4"}


# --- auto --------------------------------------------------------------------------------------


def _routed(selection: Any, query_class: str | None = None) -> tuple[list[str], str | None]:
    fields = {} if query_class is None else {"query_class": query_class}
    result = _bridge({"selection": selection}, **fields)
    return _ids(result), result.report.query_class


def test_auto_routes_a_summary_to_mmr() -> None:
    assert _routed("auto", "summary") == (["hop1", "d1"], "summary")
    assert _routed("mmr")[0] == ["hop1", "d1"]


@pytest.mark.parametrize("query_class", ["factoid", "multihop", "comparison"])
def test_auto_routes_questions_to_bridge(query_class: str) -> None:
    assert _routed("auto", query_class) == (["hop1", "hop2"], query_class)


def test_auto_is_the_default_and_detects_the_class() -> None:
    result = ctxasm.assemble(
        BRIDGE_QUERY,
        BRIDGE_PASSAGES,
        max_context_tokens=TWO_PASSAGES,
        strategy={"ordering": "score"},
    )
    assert (_ids(result), result.report.query_class) == (["hop1", "hop2"], "factoid")


def test_auto_routes_are_configurable() -> None:
    summary_to_bridge = {"name": "auto", "summary": "bridge"}
    assert _routed(summary_to_bridge, "summary") == (["hop1", "hop2"], "summary")
    multihop_to_mmr = {"name": "auto", "multihop": {"name": "mmr", "lam": 0.7}}
    assert _routed(multihop_to_mmr, "multihop") == (["hop1", "d1"], "multihop")


@pytest.mark.parametrize(
    ("selection", "field", "message"),
    [
        ({"name": "auto", "summary": "nope"}, "strategy.selection.summary", "unknown selection"),
        ({"name": "auto", "factoid": "auto"}, "strategy.selection.factoid", "auto itself"),
        (
            {"name": "auto", "comparison": {"name": "auto"}},
            "strategy.selection.comparison",
            "auto itself",
        ),
        (
            {"name": "auto", "multihop": {"name": "mmr", "lam": 2}},
            "strategy.selection.multihop.lam",
            "lam",
        ),
        ({"name": "auto", "trivia": "mmr"}, "strategy.selection.trivia", "no parameter"),
    ],
)
def test_bad_routes_name_the_field(selection: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(ctxasm.RequestError) as caught:
        _bridge({"selection": selection})
    assert caught.value.field == field
    assert message in caught.value.message


@pytest.mark.parametrize("route", [5, None, ["mmr"]])
def test_a_route_of_the_wrong_type_is_a_request_error(route: object) -> None:
    with pytest.raises(ctxasm.RequestError) as caught:
        _bridge({"selection": {"name": "auto", "summary": route}})
    assert caught.value.field == "strategy.selection.summary"
    assert "selection strategy name" in caught.value.message


def test_a_bad_route_parameter_names_the_nested_field() -> None:
    with pytest.raises(ctxasm.RequestError) as caught:
        _bridge({"selection": {"name": "auto", "multihop": {"name": "mmr", "lam": 2}}})
    assert caught.value.field == "strategy.selection.multihop.lam"
    assert caught.value.message.startswith("strategy.selection.multihop.lam: must be between")


# --- every candidate accounted for -------------------------------------------------------------


@pytest.mark.parametrize("selection", ["coverage", "bridge", "auto"])
@pytest.mark.parametrize("budget", [30, 60, TWO_PASSAGES, 400])
@pytest.mark.parametrize("query_class", ["factoid", "summary"])
def test_every_candidate_is_included_or_excluded_once(
    selection: str, budget: int, query_class: str
) -> None:
    passages = [*BRIDGE_PASSAGES, *COVERAGE_PASSAGES, *FALLBACK_PASSAGES]
    passages += [{"id": "copy", "text": BRIDGE_PASSAGES[3]["text"], "title": "Starfall Voyage"}]
    result = ctxasm.assemble(
        BRIDGE_QUERY + " Capital of Lumeria?",
        passages,
        max_context_tokens=budget,
        query_class=query_class,
        strategy={"selection": selection},
    )
    seen = _ids(result) + [e.candidate_id for e in result.report.excluded]
    assert sorted(seen) == sorted(p["id"] for p in passages)
    assert result.report.context_tokens <= budget


def test_named_phrases_of_a_long_query_are_found_as_by_search() -> None:
    # Past a few dozen named phrases, a passage's phrases are looked up in its words rather
    # than searched for: the same phrases, in the same order.
    rng = random.Random(4)
    names = ["New York", "York", "New York City", "Ann Arbor", "Arbor Day", "City Hall", "Hall"]
    vocabulary = [*" ".join(names).split(), "the", "of", "in"]
    for _ in range(60):
        query = "Where? " + ", ".join(rng.sample(names, rng.randrange(1, len(names))))
        candidates = [
            Candidate.of(
                Passage(
                    f"p{i}",
                    " ".join(rng.choices(vocabulary, k=rng.randrange(0, 30))) + ".",
                    title=rng.choice([None, "", *names]),
                ),
                i,
                1.0,
            )
            for i in range(6)
        ]
        searched = Evidence(query, candidates)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(selection_planners, "_PHRASES_BY_SEARCH", 0)
            looked_up = Evidence(query, candidates)
        assert looked_up.ordered == searched.ordered
        assert looked_up.covers == searched.covers
