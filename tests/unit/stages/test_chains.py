"""Multi-hop chains: title links (whole and shorter names), relation words, and the bridge
planner's look-ahead to the hop that completes a chain."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import ctxasm
from ctxasm.lexical import PARTIAL, term_forms, title_aliases, title_links


def test_title_aliases_give_shorter_names_at_partial_strength() -> None:
    aliases = title_aliases(["Hoosick, New York", "Richard Nixon", "Bantu peoples", None])
    assert aliases[0] == [("hoosick new york", 1.0), ("hoosick", PARTIAL)]
    assert ("nixon", PARTIAL) in aliases[1]
    assert ("bantu", PARTIAL) in aliases[2]
    assert aliases[3] == []


def test_a_shorter_name_two_titles_share_is_dropped() -> None:
    aliases = title_aliases(["Richard Nixon", "Pat Nixon"])
    assert all(alias != "nixon" for names in aliases for alias, _ in names)


def test_title_links_whole_and_capitalised_shorter_names() -> None:
    titles = ["Roger Egeberg", "Richard Nixon", "Bantu peoples"]
    texts = [
        "Egeberg served in the Nixon administration.",
        "Richard Nixon was the 37th president.",
        "The word nixon in lower case is not a name; Bantu languages spread widely.",
    ]
    links = title_links(titles, texts)
    assert links[0] == {1: PARTIAL}
    assert links[1] == {}
    assert links[2] == {}  # "nixon" is not written as a name; "Bantu" is the text's own title


def test_a_qualified_one_word_title_is_named_only_where_written_as_a_name() -> None:
    titles = ["Home (Leah McFall song)", "Sport in Miami", "Sport in Leeds", "iPod", "Musket"]
    texts = [
        "Home is a song by Leah McFall.",
        "The Miami Heat play their home games downtown.",
        "Leeds Rhinos sing Home before their home games with a musket.",
        "The ipod sold well.",
        "A musket is a firearm.",
    ]
    links = title_links(titles, texts)
    assert links[1] == {}  # "home" in lower case is a word, not the song
    quoted = title_links(['"Heroes" (song)', "Fans"], ["x", "They sang heroes loudly."])
    assert quoted[1] == {}  # the name's first letter is the capital, not the quote mark
    # the song where written as a name; "Musket", with no qualifier, is the thing itself,
    # named by a common noun: a weaker hop than a name
    assert links[2] == {0: 1.0, 4: PARTIAL}
    assert title_links(titles, [*texts[:2], "A Musket hangs here.", *texts[3:]])[2] == {4: 1.0}
    # a title written in lower case is named however a text writes it
    fans = title_links([*titles, "Fans"], [*texts, "Fans play Home on an ipod."])
    assert fans[5] == {0: 1.0, 3: 1.0}


@pytest.mark.parametrize(
    ("title", "text"),
    [
        ("Москва (город)", "Он родился в Москва в 1950 году."),
        ("Łódź (city)", "He was born in Łódź in 1950."),
        ("Αθήνα (πόλη)", "Γεννήθηκε στην Αθήνα."),
        ("Ely (film)", "She starred in Ely in 1950."),
        ("Ufa (city)", "HE WAS BORN IN UFA IN 1950."),
        ("¡Home! (song)", "They sang Home twice."),
    ],
)
def test_a_qualified_name_written_with_a_capital_in_any_script_is_named(
    title: str, text: str
) -> None:
    assert title_links(["Other page", title], [text, "x"])[0] == {1: 1.0}


def test_a_name_written_only_inside_a_longer_title_names_that_title() -> None:
    titles = ["What Ever Happened to...", "What Ever Happened to Baby Jane? (1962 film)", "Baby"]
    inside = "The novel What Ever Happened to Baby Jane? was filmed in 1962."
    assert title_links(titles, ["a", "b", inside]) == [{}, {}, {1: 1.0}]
    # written on its own as well: both are named
    both = f"{inside} What Ever Happened to... followed."
    assert title_links(titles, ["a", "b", both]) == [{}, {}, {0: 1.0, 1: 1.0}]
    # without the longer title among the candidates, the shorter one is named as before
    assert title_links(titles[::2], ["a", inside]) == [{}, {0: 1.0}]
    # a text writing its own longer title names neither itself nor the shorter one
    fund = ["Thurgood Marshall College", "Thurgood Marshall College Fund", "Johnny Taylor"]
    texts = ["x", "The Thurgood Marshall College Fund supports students.", "He ran it."]
    assert title_links(fund, texts) == [{}, {}, {}]
    assert title_links(fund, texts, aligned=False)[1] == {1: 1.0}
    # a shorter name of a person inside a longer title: "Nixon" in "Richard Nixon Library"
    people = ["Richard Nixon", "Richard Nixon Presidential Library", "Yorba Linda"]
    library = "Yorba Linda holds the Richard Nixon Presidential Library."
    assert title_links(people, ["a", "b", library]) == [{}, {}, {1: 1.0}]


def test_title_links_never_link_a_text_to_its_own_title() -> None:
    assert title_links(["Danube"], ["The Danube flows east."]) == [{}]
    assert title_links(["Danube"], ["The Danube flows east."], aligned=False) == [{0: 1.0}]


def test_term_forms_cover_inflections_and_relation_words() -> None:
    assert {"director", "directed"} <= set(term_forms("directed"))
    assert {"married", "wife", "husband"} <= set(term_forms("spouse"))
    assert "founder" in term_forms("founded")
    # a word of three letters has its own inflections too: "end" is covered by "ends"
    assert {"ends", "ended", "ending"} <= set(term_forms("end"))
    assert {"uses", "used", "using"} <= set(term_forms("use"))
    # what questions composed of single facts ask, in the words passages state it in
    assert {"starring", "starred"} <= set(term_forms("star")) & set(term_forms("cast"))
    assert "records" in term_forms("label")
    assert {"aired", "broadcast"} <= set(term_forms("network"))
    assert "established" in term_forms("founder")
    assert "subsidiary" in term_forms("parent")
    assert {"father", "son"} <= set(term_forms("grandfather"))
    assert {"studied", "graduated"} <= set(term_forms("study"))


_GREEN = [
    {
        "id": "al-green",
        "title": "Al Green",
        "text": "Al Green is an American singer and performer of soul music, famous for "
        "Let's Stay Together. Green was born in Arkansas and is a pastor.",
    },
    {
        "id": "rem-green",
        "title": "Green (R.E.M. album)",
        "text": "Green is the sixth studio album by the American rock band R.E.M., released "
        "in 1988 on Warner Bros. Records.",
    },
    {
        "id": "hillage-green",
        "title": "Green (Steve Hillage album)",
        "text": "Green is the fourth studio album by the British guitarist Steve Hillage, "
        "recorded in 1977 and released in 1978.",
    },
    {
        "id": "rem",
        "title": "R.E.M.",
        "text": "R.E.M. was an American rock band formed in Athens, Georgia, in 1980 by "
        "drummer Bill Berry, guitarist Peter Buck and singer Michael Stipe.",
    },
    {
        "id": "hillage",
        "title": "Steve Hillage",
        "text": "Stephen Simpson Hillage is an English musician. He has worked for decades "
        "with Miquette Giraudy, whom he married; together they lead the band System 7.",
    },
    {
        "id": "spouse-word",
        "title": "Spouse",
        "text": "A spouse is a significant other in a marriage, civil union or common-law "
        "marriage. The word spouse is gender-neutral.",
    },
    {
        "id": "green-performer",
        "title": "Green Party performers",
        "text": "The Green Party has staged concerts where performers and the spouse of "
        "a candidate appeared on stage together.",
    },
]


def test_the_bridge_planner_completes_a_chain_the_question_never_names() -> None:
    result = ctxasm.assemble(
        "Who is the spouse of the Green performer?",
        _GREEN,
        model="gpt-4o",
        max_context_tokens=150,
        strategy={"compression": None},
    )
    kept = {passage.id for passage in result.report.included}
    assert {"hillage-green", "hillage"} <= kept


def test_the_report_says_why_each_passage_was_chosen() -> None:
    result = ctxasm.assemble(
        "Who is the spouse of the Green performer?",
        _GREEN,
        model="gpt-4o",
        max_context_tokens=150,
        strategy={"compression": None},
    )
    chosen = {item.id: item.chosen for item in result.report.included}
    hop = chosen["hillage"]
    assert hop is not None
    assert (hop.by, hop.linked_from, hop.via) == ("link", "hillage-green", "Steve Hillage")
    assert "spouse" in hop.terms  # "married" states it
    first = chosen["hillage-green"]
    assert first is not None and first.by == "query" and "green" in first.terms
    assert result.report.to_dict()["included"][0]["chosen"]["by"] in {"query", "link"}


def test_strategies_that_record_no_reason_report_the_terms_of_title_and_text() -> None:
    """The report counts the texts of such passages together (a text relevance counted is
    looked up) and adds their titles' counts: the same terms as reading title and text as one."""
    from ctxasm.lexical import covered_terms, query_terms

    passages = [
        {"id": "a", "title": "Danube river", "text": "It flows through Vienna and Budapest."},
        {"id": "b", "title": None, "text": "The Danube ends in the Black Sea."},
        {"id": "c", "title": "Black Sea", "text": "The end of the Danube is in this sea."},
        {"id": "d", "title": "", "text": "Budapest was married to the river, says the poem."},
    ]
    query = "Where does the Danube river end, and whom was Budapest married to?"
    strategy = {"relevance": "bm25", "selection": "greedy_by_score", "compression": None}
    result = ctxasm.assemble(query, passages, strategy=strategy)
    by_id = {p["id"]: p for p in passages}
    terms = query_terms(query)
    assert len(result.report.included) == 4
    for item in result.report.included:
        passage = by_id[item.id]
        assert item.chosen is not None and item.chosen.by == "query"
        expected = covered_terms(terms, passage["text"], passage["title"])
        assert list(item.chosen.terms) == expected
    assert "spouse" not in terms  # "married" is a query word here, read in text and title


def test_given_scores_that_decide_are_named_in_the_report() -> None:
    passages = [
        {"id": f"p{i}", "text": f"Note {i} on the Danube river and its cities.", "score": s}
        for i, s in enumerate([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    ]
    result = ctxasm.assemble(
        "Danube river cities",
        passages,
        max_context_tokens=60,
        strategy={"relevance": "given", "selection": "greedy_by_score", "compression": None},
    )
    first = result.report.included[0].chosen
    assert first is not None and first.by == "score" and first.given_score == 0.9


_THREE_HOPS = [
    {
        "id": "suite",
        "title": "Velora Suite",
        "text": "The Velora Suite is an orchestral work in four movements by Anton Marek.",
    },
    {
        "id": "marek",
        "title": "Anton Marek",
        "text": "Anton Marek was a Czech conductor and teacher, a native of Kestrel.",
    },
    {
        "id": "kestrel",
        "title": "Kestrel",
        "text": "Kestrel is a market town on the banks of the Lune, with a stone bridge.",
    },
    {
        "id": "river-list",
        "title": "List of rivers",
        "text": "A river runs to the sea; many a city was built where a river runs slowly.",
    },
    {
        "id": "composer",
        "title": "Composer",
        "text": "A composer writes music; a city orchestra may play what a composer writes.",
    },
]


def test_a_third_hop_the_query_never_names_is_not_dropped() -> None:
    result = ctxasm.assemble(
        "What river runs through the city where the composer of the Velora Suite was born?",
        _THREE_HOPS,
        model="gpt-4o",
        max_context_tokens=120,
        strategy={"compression": None},
    )
    kept = {item.id: item.chosen for item in result.report.included}
    assert {"suite", "marek", "kestrel"} <= set(kept)
    third = kept["kestrel"]
    assert third is not None and (third.by, third.linked_from) == ("link", "marek")


_FIRST = ["Richard", "Pat", "Green", "Steve", "Iowa", "Bank", "New", "Hoosick", "Σοφία", "The"]
_LAST = [
    "Nixon",
    "Hillage",
    "State",
    "England",
    "York",
    "Falls",
    "Album",
    "of",
    "İzmir",
    "Cyclones",
]
_TITLE = st.builds(
    lambda words, comma, qualifier: (
        " ".join(words) + (", New York" if comma else "") + (" (album)" if qualifier else "")
    ),
    st.lists(st.sampled_from(_FIRST + _LAST), min_size=1, max_size=4),
    st.booleans(),
    st.booleans(),
)
_TEXT = st.lists(
    st.sampled_from([*_FIRST, *_LAST, "the", "nixon", "green", "x."]), max_size=30
).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(_TITLE, min_size=1, max_size=90), st.lists(_TEXT, min_size=1, max_size=12))
def test_dropping_titles_no_text_can_name_changes_no_link(
    titles: list[str], texts: list[str]
) -> None:
    # With many titles, those whose key has no word of any text are left out before names are
    # looked for; the links must be those found with every title's names.
    from ctxasm import lexical

    original = lexical._MANY_TITLES
    try:
        lexical._MANY_TITLES = 10**9
        every = title_links(titles, texts, aligned=False)
        aligned = title_links(titles[: len(texts)], texts[: len(titles)])
        lexical._MANY_TITLES = 0
        assert title_links(titles, texts, aligned=False) == every
        assert title_links(titles[: len(texts)], texts[: len(titles)]) == aligned
    finally:
        lexical._MANY_TITLES = original


def _links_one_passage_at_a_time(
    titles: list[str], texts: list[str], aligned: bool
) -> list[dict[int, float]]:
    """The plain search title_links must equal: every passage's title on its own, in order,
    its shorter names counted once per passage (no filter of unnameable titles)."""
    from ctxasm.lexical import _names, entities, key_words, phrase_key

    names = [_names(title) for title in titles]
    counts: dict[str, int] = {}
    for _, shorter in names:
        for short in shorter:
            counts[short] = counts.get(short, 0) + 1
    every = [
        [(key, 1.0)] * bool(key) + [(s, PARTIAL) for s in shorter if counts[s] == 1]
        for key, shorter in names
    ]
    keys = [f" {phrase_key(text)} " for text in texts]
    found: list[dict[int, float]] = [{} for _ in texts]
    for j, aliases in enumerate(every):
        for alias, strength in aliases:
            for i, key in enumerate(keys):
                if aligned and (i == j or alias in {a for a, _ in every[i]}):
                    continue
                if strength <= found[i].get(j, 0.0) or f" {alias} " not in key:
                    continue
                capitals = {w for e in entities(texts[i]) for w in e.split()}
                if strength < 1.0 and not capitals.issuperset(alias.split()):
                    continue
                # the one word of a capitalised, qualified title: only where written capitalised
                name, _, qualifier = titles[j].partition(" (")
                qualified = bool(qualifier) and name[:1].isupper()
                written = key_words(
                    " ".join(w for w in re.findall(r"\w+", texts[i]) if w[:1].isupper())
                )
                link = strength
                if strength == 1.0 and " " not in alias and alias not in written:
                    if qualified:
                        continue
                    if re.match(r"\W*\w", titles[j]) and re.search(r"\w", titles[j])[0].isupper():
                        link = PARTIAL  # a capitalised one-word title as a common noun
                        if link <= found[i].get(j, 0.0):
                            continue
                if _inside_longer_titles(alias, key, titles, j):
                    continue
                found[i][j] = link
    return found


def _inside_longer_titles(alias: str, key: str, titles: list[str], j: int) -> bool:
    """Whether every place padded ``key`` writes ``alias`` lies inside a longer title key of
    ``titles`` (of two to 12 words, not the key of title ``j``) written there: the longest name
    wins (a name written more than 8 times, or inside more than 8 longer titles, does not)."""
    from ctxasm.lexical import title_key

    own = title_key(titles[j])
    padded = f" {alias} "
    longer = {
        k
        for k in map(title_key, titles)
        if k and k != own and 1 < len(k.split()) <= 12 and padded in f" {k} " and k != alias
    }
    places = [at for at in range(len(key)) if key.startswith(padded, at)]
    if not longer or len(places) > 8 or len(longer) > 8:
        return False
    covered = set()
    for k in longer:
        written = f" {k} "
        for at in range(len(key)):
            if key.startswith(written, at):
                covered.update(at + o for o in range(len(written)) if written.startswith(padded, o))
    return all(at in covered for at in places)


_SHARED_TITLES = st.lists(_TITLE, min_size=1, max_size=6).flatmap(
    lambda pool: st.lists(st.sampled_from(pool), min_size=1, max_size=90)
)


@settings(max_examples=80, deadline=None)
@given(_SHARED_TITLES, st.lists(_TEXT, min_size=1, max_size=12), st.booleans())
@example(["Green (album)"], ["the green x."], False)  # the word, not the album
@example(["Other", "Green (album)"], ["Green x.", "x"], False)
@example(["Richard", "Richard The"], ["Richard the"], False)  # the longer title wins
@example(["Musket", "Green"], ["a musket, the Green x."], False)  # a common noun: weaker
def test_title_links_equal_looking_for_each_passages_title_in_turn(
    titles: list[str], texts: list[str], many: bool
) -> None:
    # Passages that share a title are looked for once; the links, their strengths and their
    # order must be those of looking for every passage's title in turn, with a shorter name of
    # a title that stands twice dropped as for two titles sharing it.
    from ctxasm import lexical

    original = lexical._MANY_TITLES
    try:
        lexical._MANY_TITLES = 0 if many else 10**9
        for aligned in (False, True):
            got = title_links(
                titles[: len(texts)] if aligned else titles,
                texts[: len(titles)] if aligned else texts,
                aligned=aligned,
            )
            want = _links_one_passage_at_a_time(
                titles[: len(texts)] if aligned else titles,
                texts[: len(titles)] if aligned else texts,
                aligned,
            )
            assert [list(links.items()) for links in got] == [list(links.items()) for links in want]
    finally:
        lexical._MANY_TITLES = original


def test_a_title_two_passages_share_keeps_its_key_and_loses_its_shorter_names() -> None:
    aliases = title_aliases(["Richard Nixon", "Richard Nixon", "Bantu peoples"])
    assert aliases[0] == aliases[1] == [("richard nixon", 1.0)]
    assert aliases[2] == [("bantu peoples", 1.0), ("bantu", PARTIAL)]
    titles = ["Richard Nixon", "Bantu peoples", "Richard Nixon"]
    texts = ["Richard Nixon met Nixon.", "Nixon spoke of Bantu peoples.", "Richard Nixon again."]
    # The key names both passages of the title; "Nixon" alone names neither (with one
    # "Richard Nixon" it names that one at PARTIAL strength).
    assert title_links(titles, texts, aligned=False) == [
        {0: 1.0, 2: 1.0},
        {1: 1.0},
        {0: 1.0, 2: 1.0},
    ]
    assert title_links(titles[:2], texts[:2], aligned=False)[1] == {0: PARTIAL, 1: 1.0}


def test_the_longest_name_rule_counts_every_place() -> None:
    # every place the longer title is written hides the shorter name (not the first alone)
    twice = "Cd Ef Gh met Cd Ef Gh."
    assert title_links(["Cd Ef", "Cd Ef Gh", "x"], ["a", "b", twice])[2] == {1: 1.0}
    # overlapping places: "Ab Ab" is also written outside "Cd Ab Ab Ab" (words 3-4)
    titles = ["Ab Ab", "Ab Ab Cd", "Cd Ab Ab Ab", "x"]
    assert title_links(titles, ["a", "b", "c", "Cd Ab Ab Ab Ab"])[3] == {0: 1.0, 1: 0.5, 2: 1.0}
    # longer titles of more than six words hide their names as well
    long = ["Ab Cd", "Ab Cd Ef Gh Ij Kl Mn", "x"]
    assert title_links(long, ["a", "b", "Ab Cd Ef Gh Ij Kl Mn."])[2] == {1: 1.0}


def test_the_longest_name_rule_stays_bounded_and_keeps_links_it_cannot_check() -> None:
    # A name written more than 8 times in one text counts as written apart (the rule is not
    # asked), as does one inside more than 8 longer candidate titles: each check costs a few
    # scans of the text, however many titles or places there are.
    titles = ["Ab Ab", "Ab Ab Ab", "x"]
    assert title_links(titles, ["a", "b", "Ab Ab Ab. " * 3])[2] == {1: 1.0}
    assert title_links(titles, ["a", "b", "Ab Ab Ab. " * 9])[2] == {0: 1.0, 1: 1.0}
    many = ["Common Name", *(f"W{i} Common Name" for i in range(9)), "x"]
    listed = " ".join(f"W{i}" for i in range(9))  # every word of the longer titles is written
    texts = [listed, *["a"] * 9, "It is the W1 Common Name."]
    assert title_links(many, texts)[10] == {0: 1.0, 2: 1.0}
    # with 8 longer titles the rule is asked: the text names W1 Common Name alone
    assert title_links([*many[:9], "x"], [*texts[:9], *texts[10:]])[9] == {2: 1.0}


_SENTENCE_WORDS = ["married", "spouse", "wife", "Teachers", "taught", "安装", "pytorch", "İzmir"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*_SENTENCE_WORDS, "the", "x", "ΣΟΦΙΑ"]), max_size=12),
    st.lists(st.sampled_from(["spouse", "teach", "pytorch", "安装", "izmir", "σοφια"]), max_size=3),
    st.sampled_from([" ", "", ", ", "\n"]),
)
def test_a_sentence_states_a_term_where_covered_terms_finds_one(
    sentence: list[str], terms: list[str], gap: str
) -> None:
    """The planners' check of one sentence (no cache, the words it was given) agrees with
    covered_terms, relation words ("married" states "spouse") and unspaced scripts included."""
    from ctxasm.lexical import covered_terms, states_a_term, words

    text = gap.join(sentence)
    expected = bool(covered_terms(terms, text))
    assert states_a_term(terms, text, words(text)) is expected
    assert states_a_term(terms, text) is expected
