"""Names two passages share as links of a chain: the next hop is often a page about the answer
that names the bridge in its text ("... toured for ten years beside Dana Roux"), not the
bridge's own page, so no title links them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxasm
from ctxasm import lexical
from ctxasm.data import Candidate, Passage
from ctxasm.lexical import (
    bridge_names,
    clear_caches,
    lone_names,
    lower_words,
    phrase_key,
    writes_lower,
    written_phrase,
)
from ctxasm.stages import relevance_utility
from ctxasm.stages.relevance_utility import LONE_NAME_LINK, shared_names
from ctxasm.stages.selection_planners import Evidence, _name_links
from scaling import best_cpu_seconds

QUESTION = "Who is the spouse of the Harbor Lights performer?"
PASSAGES = [
    {
        "id": "album",
        "title": "Harbor Lights (Dana Roux album)",
        "text": "Harbor Lights is the second album performed by the French singer Dana Roux, "
        "recorded in Marseille in 1984.",
    },
    {  # no word of the question: only the name ties it to the album
        "id": "pianist",
        "title": "Teo Marchal",
        "text": "Teo Marchal is a pianist who toured for ten years beside Dana Roux. He later "
        "taught at a conservatory in Lyon.",
    },
    {  # the question's words, and nothing the album does not say already
        "id": "port",
        "title": "Old Port of Marseille",
        "text": "The Old Port of Marseille is a harbor in France, lit at night by its quay lights.",
    },
    {
        "id": "other",
        "title": "Lena Ostrow",
        "text": "Lena Ostrow is a Polish sculptor who works in bronze in Gdansk.",
    },
]


def _assemble(budget: int = 90, **selection: object) -> ctxasm.Assembly:
    strategy: dict[str, object] = {"compression": None}
    if selection:
        strategy["selection"] = {"name": "bridge", **selection}
    return ctxasm.assemble(
        QUESTION, PASSAGES, model="gpt-4o", max_context_tokens=budget, strategy=strategy
    )


def test_bridge_names_are_capitalised_phrases_of_two_words_or_more() -> None:
    text = (
        "During World War II, Jules Verne's heirs met Steve Hillage and the University of "
        "Rochester in Persia. However, Thomas left on 9 February 1953 for Apollo 11 and Nice. "
        "It was written by David Byrne for the 1985 Talking Heads album."
    )
    assert bridge_names(text) == {
        "world war ii",  # the function word opening it dropped
        "jules verne",  # and the possessive
        "steve hillage",  # two names "and" joins
        "university of rochester",
        "david byrne",  # two names "for" and a number join
        "talking heads",
    }  # one word ("Persia", "Thomas") and a number or date are no bridge
    whole = (
        "The People's Republic of China, the Institute for Advanced Study and Marks and "
        "Spencer Group met at Jules Verne's Nautilus."
    )
    assert bridge_names(whole) == {
        "people s republic of china",  # a possessive inside a name: the whole, not its tail
        "institute for advanced study",  # "for" and "and" join one name here
        "marks and spencer group",
        "jules verne s nautilus",  # and the owner of a possessive
        "jules verne",
    }
    # A one-word name after "for" or "and" joins the name before it, which is a name alone
    # too: Preacher's "Seth Rogen for AMC" tied it to no page about Seth Rogen.
    assert bridge_names("It was developed by Evan Goldberg and Seth Rogen for AMC.") == {
        "evan goldberg",
        "seth rogen",
        "seth rogen for amc",
    }


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["Steve", "Hillage", "the", "of", "The", "Verne's", "1953", "x.", "And", ",", "Ufa"]
        ),
        max_size=40,
    ).map(" ".join)
)
def test_every_bridge_name_is_a_phrase_of_two_words_of_its_text(text: str) -> None:
    padded = f" {phrase_key(text)} "
    for name in bridge_names(text):
        words = name.split()
        assert len(words) >= 2 and not any(c.isdigit() for c in name)
        assert f" {name} " in padded


def test_a_name_is_shared_by_at_least_two_and_at_most_a_quarter_of_the_passages() -> None:
    rare = ["Dana Roux sang.", "It was Dana Roux.", "No one."]
    assert shared_names(rare) == [{"dana roux"}, {"dana roux"}, frozenset()]
    assert shared_names(["Dana Roux sang.", "Nobody else."]) == [frozenset(), frozenset()]
    # Held by 4 of 12 (more than a quarter, and than 3): a name nearly all of them have.
    common = [f"The United States, {'x' * i}." for i in range(4)]
    common += [f"Other text {i}." for i in range(8)]
    assert shared_names(common) == [frozenset()] * 12
    # Held by 4 of 16: a quarter.
    assert shared_names(common + ["More."] * 4)[:4] == [{"united states"}] * 4


def test_lone_names_are_single_capitalised_words_written_as_names() -> None:
    text = (
        "The club moved to Cambridge in 1990 and signed with Viacom's studio. Margulies won "
        "it in Chicago, Illinois, beside Steve Hillage and the Danish singer Dana Roux on Apollo "
        '11 in Lyon, near "Rouen" and Łódźka.'
    )
    assert lone_names(text) == {
        "cambridge",
        "viacom",  # a possessive before a noun names its owner
        "chicago",  # a comma parts two names
        "illinois",
        "łódźka",  # capitals of any script
    }
    # Not "Margulies" (it opens a sentence), "Steve", "Hillage", "Dana", "Roux" (of longer
    # names), "Danish" (an adjective before "singer"), "Apollo" (beside a number), "Lyon"
    # (four letters), "Rouen" (in quotes, which may open a sentence or a title).
    assert lone_names("cambridge is a city.") == frozenset()


def test_the_words_a_text_writes_in_lower_case_are_whole_words() -> None:
    assert lower_words("They reached the final, then Éclairs and élan.") == {"reached", "final"}
    assert lower_words("The Finals, iTunes, semiFinal and McCain.") == frozenset()
    assert lower_words("a semifinal") == {"semifinal"}
    assert lower_words("") == frozenset()
    # the search for a few words finds them where lower_words would
    for text in ("They reached the final.", "The Finals, a semifinal", "final_x final2", "a final"):
        assert writes_lower(text, "final") == ("final" in lower_words(text))


def test_a_single_word_is_shared_unless_a_text_writes_it_in_lower_case() -> None:
    texts = ["It was sold to Viacom in 1999.", "He worked for Viacom until 2004.", "No one."]
    assert shared_names(texts) == [{"viacom"}, {"viacom"}, frozenset()]
    # another text writes it in lower case: a common noun, no name
    texts = ["They met in the Final round.", "Both played the Final twice.", "The final ended."]
    assert shared_names(texts) == [frozenset()] * 3


def test_a_link_through_a_single_word_is_weaker_than_through_a_name() -> None:
    pool = _pool(
        [
            {"id": "a", "title": "Harbor Lights", "text": "His wife was born in Marseille."},
            {"id": "b", "title": "Teo Marchal", "text": "His wife moved to Marseille."},
        ]
    )
    links, named = _name_links([{}, {}], pool, Evidence(QUESTION, pool), 0.4, 0.5)
    assert links == [{1: 0.4 * LONE_NAME_LINK}, {0: 0.4 * LONE_NAME_LINK}]
    assert named == {(0, 1): "marseille", (1, 0): "marseille"}


def _letters(number: int) -> str:
    """``number`` in base 26, written in lower-case letters (five of them)."""
    return "".join(chr(97 + number // 26**place % 26) for place in range(5))


def test_finding_lone_names_and_lower_case_words_is_linear_in_the_text() -> None:
    """Capitalised words with every neighbour the checks look at, and texts sharing many of
    them (n and 8n: linear work takes about 8 times as long, quadratic 64)."""
    small_text = "Word, Other's x Third 1 " * 2_000
    large_text = small_text * 4
    small = best_cpu_seconds(lambda: (lone_names.cache_clear(), lone_names(small_text)))
    large = best_cpu_seconds(lambda: (lone_names.cache_clear(), lone_names(large_text)))
    assert large / small < 10
    # Texts full of distinct names, each held by two texts (a roster): the names that no text
    # writes in lower case are found once per text, not by searching every text for each.
    names = [f"of Q{_letters(i)}" for i in range(3_300)]
    small_texts = [" ".join(names[i * 50 : i * 50 + 100]) for i in range(8)]
    large_texts = [" ".join(names[i * 400 : i * 400 + 800]) for i in range(8)]
    assert len(shared_names(large_texts)[1]) == 800
    small = best_cpu_seconds(lambda: (clear_caches(), shared_names(small_texts)))
    large = best_cpu_seconds(lambda: (clear_caches(), shared_names(large_texts)))
    assert large / small < 24


def test_names_are_compared_among_the_first_max_name_passages_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(relevance_utility, "MAX_NAME_PASSAGES", 3)
    texts = ["Dana Roux sang.", "It was Dana Roux.", "No one.", "Dana Roux again."]
    assert shared_names(texts) == [{"dana roux"}, {"dana roux"}, frozenset()]


def _fillers(count: int) -> list[dict[str, str]]:
    return [
        {"id": f"filler-{i}", "title": f"Filler {i}", "text": f"Sculptor number {i} works in clay."}
        for i in range(count)
    ]


def test_a_long_list_keeps_the_names_of_its_first_passages() -> None:
    """65 candidates: the first 64 still share names (no cliff past the bound), a passage
    after them does not."""
    passages = PASSAGES + _fillers(61)
    result = ctxasm.assemble(QUESTION, passages, model="gpt-4o", max_context_tokens=400)
    assert "pianist" in {item.id for item in result.report.included}
    last = [p for p in passages if p["id"] != "pianist"] + [PASSAGES[1]]
    result = ctxasm.assemble(QUESTION, last, model="gpt-4o", max_context_tokens=400)
    excluded = {item.id: item.reason.value for item in result.report.excluded}
    assert excluded["pianist"] == "below_threshold"


def test_a_passage_sharing_a_name_with_a_relevant_one_is_not_irrelevant() -> None:
    result = _assemble(budget=400)
    excluded = {item.id: item.reason.value for item in result.report.excluded}
    assert excluded == {"other": "below_threshold"}
    # Without the name, nothing ties it to the question.
    alone = [
        p if p["id"] != "pianist" else {**p, "text": "Teo Marchal is a pianist."} for p in PASSAGES
    ]
    result = ctxasm.assemble(QUESTION, alone, model="gpt-4o", max_context_tokens=400)
    excluded = {item.id: item.reason.value for item in result.report.excluded}
    assert excluded == {"pianist": "below_threshold", "other": "below_threshold"}


def test_the_planner_follows_a_shared_name_and_the_report_names_it() -> None:
    chosen = {item.id: item.chosen for item in _assemble().report.included}
    assert set(chosen) == {"album", "pianist"}
    hop = chosen["pianist"]
    assert hop is not None
    assert (hop.by, hop.linked_from, hop.via) == ("link", "album", "Dana Roux")


def test_without_name_links_the_planner_takes_the_question_words() -> None:
    # (and without taking back the words of "Harbor Lights" that the port repeats; see
    # test_subject_repeats)
    kept = {item.id for item in _assemble(names=0, subject=0).report.included}
    assert kept == {"album", "port"}


def _vias(question: str, query_class: str | None = None) -> set[str | None]:
    """What links each passage kept for ``question`` to an earlier one (see Chosen.via)."""
    result = ctxasm.assemble(
        question,
        PASSAGES,
        model="gpt-4o",
        max_context_tokens=400,
        strategy={"compression": None},
        query_class=query_class,
    )
    return {item.chosen.via for item in result.report.included if item.chosen is not None}


def test_a_name_the_question_says_links_nothing() -> None:
    assert "Dana Roux" in _vias(QUESTION)
    assert "Dana Roux" not in _vias("Who is the spouse of the Dana Roux performer?")


def test_a_comparison_follows_no_shared_name() -> None:
    compared = "Which was recorded first, Harbor Lights or the album by Teo Marchal?"
    assert "Dana Roux" not in _vias(compared, "comparison")
    assert "Dana Roux" in _vias(compared, "multihop")


def _pool(passages: list[dict[str, str]]) -> list[Candidate]:
    return [
        Candidate(Passage(p["id"], p["text"], title=p["title"]), i, 1.0, p["text"], None, None)
        for i, p in enumerate(passages)
    ]


def test_a_name_link_is_strong_where_a_sentence_naming_it_states_the_question() -> None:
    stated = {**PASSAGES[1], "text": "Teo Marchal is a pianist. His wife was Dana Roux."}
    quiet = {**PASSAGES[1], "id": "quiet", "text": "Teo Marchal toured beside Dana Roux."}
    pool = _pool([PASSAGES[0], stated, quiet])
    links, named = _name_links([{}, {}, {}], pool, Evidence(QUESTION, pool), 0.3, 0.5)
    # "wife" states "spouse" beside the name; the album names it beside "performed", a form of
    # "performer": every link from the album is strong, and so is the pianist's.
    assert links[0] == {1: 0.3, 2: 0.3} and links[1][0] == 0.3
    assert links[1][2] == 0.3  # the pianist states it: strong from the pianist
    # The quiet one names it beside nothing the question says: its links are weak, whoever
    # states it at the other end (the kept passage says where the chain goes on).
    assert links[2][0] == links[2][1] == 0.15
    assert named == {pair: "dana roux" for pair in [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]}
    # Nobody states the question beside it: weak.
    plain = {**PASSAGES[0], "text": "Harbor Lights is an album. It was made by Dana Roux."}
    pool = _pool([plain, quiet, {**quiet, "id": "again"}])
    links, _ = _name_links([{}, {}, {}], pool, Evidence(QUESTION, pool), 0.3, 0.5)
    assert links == [{1: 0.15, 2: 0.15}, {0: 0.15, 2: 0.15}, {0: 0.15, 1: 0.15}]


def test_a_name_link_to_a_page_the_question_names_is_weaker() -> None:
    stated = {**PASSAGES[1], "text": "Teo Marchal is a pianist. His wife was Dana Roux."}
    pool = _pool([PASSAGES[0], stated])
    evidence = Evidence(QUESTION, pool)
    links, _ = _name_links([{}, {}], pool, evidence, 0.3, 0.5, [True, False])
    # the question names "Harbor Lights": it reaches that page itself, the name is no hop to it
    assert links == [{1: 0.3}, {0: 0.15}]
    links, _ = _name_links([{}, {}], pool, evidence, 0.3, 0.5)
    assert links == [{1: 0.3}, {0: 0.3}]


def test_a_title_link_stronger_than_a_name_link_stays() -> None:
    pool = _pool(PASSAGES[:2])
    links, named = _name_links([{1: 1.0}, {}], pool, Evidence(QUESTION, pool), 0.3, 0.5)
    # the pianist "toured" beside the name, which states nothing the question asks: weak back
    assert links == [{1: 1.0}, {0: 0.15}] and named == {(1, 0): "dana roux"}


def test_a_list_of_names_is_no_hop_its_name_links_stay_weak() -> None:
    roster = ", ".join(f"Dana Roux{chr(97 + i)}" for i in range(17))  # 17 names, "and"-free
    pool = _pool(
        [
            {"id": "list", "title": "Roster", "text": f"His wife knew {roster}."},
            {"id": "same", "title": "Other", "text": f"His wife met {roster}."},
            *({"id": f"f{i}", "title": f"F{i}", "text": "Nothing."} for i in range(6)),
        ]
    )
    links, _ = _name_links([{} for _ in pool], pool, Evidence(QUESTION, pool), 0.3, 0.5)
    assert links[0] == {1: 0.15} and links[1] == {0: 0.15}
    # The same two with one name each: the sentence naming it states "wife", and is asked.
    pair = _pool(
        [
            {"id": "one", "title": "Roster", "text": "His wife knew Dana Roux."},
            {"id": "two", "title": "Other", "text": "His wife met Dana Roux."},
        ]
    )
    links, _ = _name_links([{}, {}], pair, Evidence(QUESTION, pair), 0.3, 0.5)
    assert links == [{1: 0.3}, {0: 0.3}]


def test_the_report_names_a_shared_name_as_the_texts_write_it() -> None:
    assert written_phrase("steve hillage", "toured with  Steve-Hillage, then") == "Steve-Hillage"
    assert written_phrase("dana roux", "Dana Rouxville played") is None  # whole words only
    assert written_phrase("dana roux", "İstanbul and DANA ROUX") == "DANA ROUX"
    assert written_phrase(phrase_key("İstanbul Park"), "at İstanbul Park") == "İstanbul Park"
    assert written_phrase(phrase_key("Jules Verne"), "Jules Verne's Nautilus") == "Jules Verne"
    # only where a name's words stand: not across a sentence's end, the capitalised first
    assert written_phrase("new york", "It was new. York Records, in New York.") == "New York"
    assert written_phrase("new york", "It was new. York Records.") is None
    assert written_phrase("atlantic records", "an atlantic records deal; Atlantic  Records") == (
        "Atlantic Records"
    )
    assert written_phrase("atlantic records", "an atlantic records deal") == "atlantic records"
    assert written_phrase("steve hillage", "Steve\n\nHillage's band") == "Steve Hillage"
    winners = "the UEFA Cup Winners' Cup, beside Guns N’ Roses"  # a mark ends a name's word
    assert written_phrase("uefa cup winners cup", winners) == "UEFA Cup Winners' Cup"
    assert written_phrase("guns n roses", winners) == "Guns N’ Roses"
    assert written_phrase("", "text") is None


_NAME_WORDS = ["aa", "Aa", "AA", "bb", "a", "x_y", "1", "İa", "ΣA", "Éé", "ǅa"]
_NAME_GAPS = [" ", "  ", "-", "'", "'s ", ". ", "\n", "\x1c", "_", "\u00a0", "\u2013", "’"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_NAME_WORDS), st.sampled_from(_NAME_GAPS)), max_size=40),
    st.lists(st.sampled_from(["aa", "bb", "a", "x_y", "1", "i̇a", "σa", "éé", "ǆa"]), min_size=1),
)
def test_a_name_is_found_in_place_as_among_the_texts_words(
    pieces: list[tuple[str, str]], key_words: list[str]
) -> None:
    """The search in the lower-cased text finds what splitting the text into words finds
    (its fall-back), or leaves the text to it."""
    text, key = "".join(w + gap for w, gap in pieces), " ".join(key_words)
    found = lexical._written_in_place(key_words, text)
    exact = lexical._written_among_words(key_words, text)
    assert found in (lexical._UNDECIDED, exact)
    assert written_phrase(key, text) == exact


def test_finding_how_a_text_writes_a_name_is_linear_in_the_text() -> None:
    """A long capitalised run repeated almost whole before the name itself: a pattern of the
    name's words tried each of them at each word (quadratic). At n and 4n words, a linear
    search takes about 4 times as long, a quadratic one 16 (bound 10, best of five, CPU)."""

    def shape(words: int) -> tuple[str, str]:
        run = words // 6
        text = ("Aa " * (run - 1) + "x. ") * 5 + "Aa " * run + "end."
        return " ".join(["aa"] * run), text

    key, text = shape(6_000)
    assert written_phrase(key, text) == " ".join(["Aa"] * 1_000)
    bigger_key, bigger_text = shape(24_000)
    small = best_cpu_seconds(lambda: written_phrase(key, text))
    large = best_cpu_seconds(lambda: written_phrase(bigger_key, bigger_text))
    assert large / small < 10
