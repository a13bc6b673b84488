"""Pages that repeat the question's subject: once the page the question names is kept, the
words of its title say nothing more of the next hop, so the relevance they bring to other
candidates is taken back (``BridgeSelection.subject``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import ctxasm
from ctxasm.data import Candidate, Passage, Report
from ctxasm.errors import RequestError
from ctxasm.stages.selection_packing import SelectionContext
from ctxasm.stages.selection_planners import BridgeSelection, Evidence, _Subjects

QUESTION = "Who is the spouse of the Harbor Lights performer?"
ALBUM = {
    "id": "album",
    "title": "Harbor Lights (Dana Roux album)",
    "text": "Harbor Lights is the second album performed by the French singer Dana Roux, "
    "recorded in Marseille in 1984.",
}
PIANIST = {  # no word of the question: only the name "Dana Roux" ties it to the album
    "id": "pianist",
    "title": "Teo Marchal",
    "text": "Teo Marchal is a pianist who toured for ten years beside Dana Roux. He later "
    "taught at a conservatory in Lyon.",
}
TRIBUTE = {  # the subject's words again, and one more of the question's
    "id": "tribute",
    "title": "Harbor Lights Revisited",
    "text": "Harbor Lights Revisited is a tribute record on which younger bands cover the songs "
    "of Harbor Lights, the 1984 album of the same name, as the Harbor Lights tour had them "
    "performed.",
}
OTHER = {
    "id": "other",
    "title": "Lena Ostrow",
    "text": "Lena Ostrow is a Polish sculptor who works in bronze in Gdansk.",
}
PASSAGES = [ALBUM, PIANIST, TRIBUTE, OTHER]


def _pool(*pages: dict[str, str]) -> list[Candidate]:
    return [
        Candidate(Passage(id=p["id"], text=p["text"], title=p["title"]), i, 1.0, p["text"])
        for i, p in enumerate(pages)
    ]


def _report(
    query: str = QUESTION,
    budget: int = 100,
    selection: dict[str, object] | None = None,
    passages: Sequence[Mapping[str, object]] = PASSAGES,
) -> Report:
    return ctxasm.assemble(
        query,
        passages,
        model="gpt-4o",
        max_context_tokens=budget,
        strategy={"compression": None, "selection": {"name": "bridge", **(selection or {})}},
    ).report


def _kept(query: str = QUESTION, budget: int = 100, **selection: object) -> list[str]:
    return [item.id for item in _report(query, budget, selection).included]


def test_a_page_repeating_the_subject_gives_way_to_the_next_hop() -> None:
    # Room for the album and one more page: the tribute shares the question's words, the
    # pianist only the performer's name.
    assert _kept(subject=0.0) == ["album", "tribute"]
    included = {item.id: item for item in _report().included}
    assert list(included) == ["album", "pianist"]
    chosen = included["pianist"].chosen
    assert chosen is not None
    assert (chosen.by, chosen.linked_from, chosen.via) == ("link", "album", "Dana Roux")


def test_the_report_says_what_brought_a_page_whose_relevance_was_taken_back() -> None:
    # With room for all three, the tribute comes last: the album names its title, and what
    # its relevance kept of the question's words ("performed") is less than that link.
    chosen = {item.id: item.chosen for item in _report(budget=200).included}
    assert chosen["tribute"] is not None
    assert (chosen["tribute"].by, chosen["tribute"].linked_from) == ("link", "album")


def _spent(question: str, title: str) -> list[str]:
    """The query elements taken back once a page titled ``title`` is kept for ``question``."""
    pool = _pool(
        *(
            {"id": str(i), "text": f"{name} is a page.", "title": name}
            for i, name in enumerate((title, "Lena Ostrow"))
        )
    )
    subjects = _Subjects(question, Evidence(question, pool), 1.0)
    subjects.repeated(0, [1])
    return sorted(subjects.spent)


@pytest.mark.parametrize(
    ("question", "title", "spent"),
    [
        # whole words and phrases of the title only: "light" is no word of "Harbor Lights"
        (
            f"{QUESTION[:-1]}, a light tenor?",
            "Harbor Lights (album)",
            ["harbor", "harbor lights", "lights"],
        ),
        (QUESTION, "Harbor Light", []),  # not a phrase of the question
        (QUESTION, "Spouse", []),  # one word the question writes, not as a name
        ("Who founded Paper Trail Records?", "Paper Trail (album)", []),  # inside a longer name
        (
            "Who founded the label of Paper Trail?",
            "Paper Trail (album)",
            ["paper", "paper trail", "trail"],
        ),
        (
            "Who directed the battle of the bulge film?",
            "Battle of the Bulge (film)",
            ["battle", "bulge"],
        ),
        ("Who is the spouse of the Bagboy performer?", "Bagboy (TV special)", ["bagboy"]),
    ],
)
def test_a_subject_is_a_page_the_question_names(
    question: str, title: str, spent: list[str]
) -> None:
    assert _spent(question, title) == spent


def test_candidates_ranked_by_the_retrievers_scores_keep_their_relevance() -> None:
    # The retriever scored the tribute high: its score does not say which words earned it, so
    # none of it is taken back (forced on, the pianist would replace it).
    scores = {"album": 0.9, "tribute": 0.8, "pianist": 0.3, "other": 0.1}
    scored = [{**passage, "score": scores[str(passage["id"])]} for passage in PASSAGES]
    assert [item.id for item in _report(passages=scored).included] == ["album", "tribute"]


def test_the_words_are_taken_back_once_and_only_from_pages_that_hold_them() -> None:
    pool = _pool(*PASSAGES)
    evidence = Evidence(QUESTION, pool)
    subjects = _Subjects(QUESTION, evidence, 1.0)
    assert subjects.repeated(1, [0, 2, 3]) == []  # the pianist's page: not the one asked about
    taken = dict(subjects.repeated(0, [1, 2, 3]))
    assert set(taken) == {2}  # the tribute: the pianist and the sculptor hold no such word
    assert 0.0 < taken[2] < 1.0  # "performer" is no word of the title: its part stays
    assert subjects.repeated(0, [1, 2, 3]) == []  # taken back once
    half = dict(_Subjects(QUESTION, evidence, 0.5).repeated(0, [2]))
    assert half[2] == pytest.approx(taken[2] / 2)


def test_comparison_questions_keep_the_relevance_of_what_they_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A comparison asks about every page it names: none of them is a subject to take back.
    planned: list[_Subjects] = []
    plan = _Subjects.planned

    def spied(*args: Any) -> _Subjects:
        planned.append(plan(*args))
        return planned[-1]

    monkeypatch.setattr(_Subjects, "planned", spied)
    assert _kept("Were Harbor Lights and Teo Marchal recorded in the same city?", 140)
    assert _kept(QUESTION)  # the factoid takes it back
    assert [subjects.weight for subjects in planned] == [0.0, 1.0]


@pytest.mark.parametrize("value", [-0.1, 1.5, "all"])
def test_subject_outside_zero_to_one_is_refused(value: object) -> None:
    with pytest.raises(RequestError, match="subject"):
        _kept(subject=value)


def test_a_page_nothing_but_its_source_brought_is_not_said_to_be_linked() -> None:
    # Its relevance all taken back, no coverage, no link value: a tie of zeros is no link.
    pool = _pool(*PASSAGES)
    evidence = Evidence(QUESTION, pool)
    chosen = BridgeSelection._chosen(pool, 2, evidence, (0.0, 0.0, 0.0), (0, "Harbor Lights"))
    assert (chosen.by, chosen.linked_from) == ("query", "album")
    linked = BridgeSelection._chosen(pool, 2, evidence, (0.0, 0.0, 0.5), (0, "Harbor Lights"))
    assert linked.by == "link"


def test_more_of_the_page_asked_about_keeps_its_relevance() -> None:
    # another chunk of the album's own page is no page that repeats it
    more = {**ALBUM, "id": "album-2", "text": "Harbor Lights was performed live in 1985."}
    pool = _pool(ALBUM, more, TRIBUTE)
    subjects = _Subjects(QUESTION, Evidence(QUESTION, pool), 1.0)
    assert [i for i, _ in subjects.repeated(0, [1, 2])] == [2]


def test_the_previous_turns_passages_kept_for_the_prompt_cache_keep_theirs() -> None:
    pool = _pool(ALBUM, PIANIST, TRIBUTE, OTHER)
    evidence = Evidence(QUESTION, pool)
    context = SelectionContext(QUESTION, "factoid", frozenset({"tribute"}))
    assert _Subjects.planned(context, pool, evidence, 1.0).repeated(0, [1, 2, 3]) == []
    plain = SelectionContext(QUESTION, "factoid")
    assert [i for i, _ in _Subjects.planned(plain, pool, evidence, 1.0).repeated(0, [2])] == [2]


def test_the_pipeline_names_the_previous_turns_passages(monkeypatch: pytest.MonkeyPatch) -> None:
    contexts: list[SelectionContext] = []
    plan = _Subjects.planned

    def spied(context: SelectionContext, *args: Any) -> _Subjects:
        contexts.append(context)
        return plan(context, *args)

    monkeypatch.setattr(_Subjects, "planned", spied)
    strategy = {"compression": None, "selection": "bridge", "ordering": "cache_stable"}
    first = ctxasm.assemble(
        QUESTION, PASSAGES, model="gpt-4o", max_context_tokens=400, strategy=strategy
    )
    ctxasm.assemble(
        "Who is the spouse of the performer of Harbor Lights?",
        PASSAGES,
        model="gpt-4o",
        max_context_tokens=400,
        strategy=strategy,
        previous=first,
    )
    kept = frozenset(item.id for item in first.report.included)
    assert [context.favoured for context in contexts] == [frozenset(), kept]
