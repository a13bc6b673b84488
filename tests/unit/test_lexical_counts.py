"""``lexical.term_counts`` counts a word's forms exactly as splitting the text into words does (and
``term_counts_all``, cached, for many texts), and ``lexical.normalize`` finds the words a
regular expression's ``\\w`` finds."""

from __future__ import annotations

import re
import threading

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxasm import lexical
from ctxasm.lexical import clear_caches, normalize, term_counts, term_counts_all, words
from ctxasm.stems import search_keys, stem

# Letters whose lower case is longer or changes class, marks, digits, underscores, apostrophes,
# CJK, and separators: the characters where a shortcut would count differently from words().
ALPHABET = "aAbB_1 \n\t-.,'’İiıßẞΣσςé\u0301\u0307中文Ⅳ²٣"


def _terms(text: str) -> list[str]:
    # The terms a query gives: its words, with runs of Han, kana or Hangul read as their pairs.
    return [piece for word in words(text) for piece in lexical._pieces(word)]


def _by_words(terms: list[str], text: str) -> list[int]:
    # A word counts for a term when it has the term's stem and starts with one of its keys; a
    # pair of Han, kana or Hangul characters counts wherever it occurs.
    found = _terms(text)
    return [
        text.lower().count(term)
        if lexical._unspaced_term(term)
        else sum(1 for w in found if stem(w) == stem(term) and w.startswith(search_keys(term)))
        if term
        else 0
        for term in terms
    ]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40), st.lists(st.text(alphabet=ALPHABET, max_size=4)))
def test_term_counts_equal_the_counts_of_the_words(text: str, extra: list[str]) -> None:
    # The terms a query gives are words; any word of the text, and some that are not in it.
    terms = list(dict.fromkeys([*_terms(text), *(w for e in extra for w in _terms(e))]))
    assert term_counts(terms, text) == _by_words(terms, text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40), st.lists(st.text(alphabet=ALPHABET, max_size=4)))
def test_term_counts_that_skip_to_each_words_end_equal_the_counts_of_the_words(
    text: str, extra: list[str]
) -> None:
    # The same, with every place inside a longer word skipping to that word's end (what a
    # term met thousands of times inside longer words does after the first few).
    terms = list(dict.fromkeys([*_terms(text), *(w for e in extra for w in _terms(e))]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lexical, "_MISSES_ONE_BY_ONE", 0)
        assert term_counts(terms, text) == _by_words(terms, text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40), st.lists(st.text(alphabet=ALPHABET, max_size=4)))
def test_term_counts_of_a_long_query_equal_the_counts_of_the_words(
    text: str, extra: list[str]
) -> None:
    # The same, counted by the text's words (what a query of many terms does).
    terms = list(dict.fromkeys([*_terms(text), *(w for e in extra for w in _terms(e)), ""]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lexical, "_TERMS_BY_SEARCH", 0)
        assert term_counts(terms, text) == _by_words(terms, text)


def test_terms_inside_a_long_word_are_passed_over_word_by_word() -> None:
    # "x" ... "x" * 60 inside a word of 250,000 x's: each term's search skips to the end of
    # the word after a few misses, rather than stopping at each of its characters.
    terms = ["x" * n for n in range(1, 61)]
    text = "x" * 250_000 + " x xx"
    found: list[int] = []
    real_match = lexical._WORD_RUN.match

    class Counting:
        def match(self, string: str, pos: int) -> re.Match[str] | None:
            found.append(pos)
            return real_match(string, pos)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lexical, "_WORD_RUN", Counting())
        assert term_counts(terms, text) == [1, 1, *[0] * 58]
    assert len(terms) <= len(found) < 2 * len(terms)  # a skip or two per term, no stop per x


def test_term_counts_on_prose() -> None:
    text = "The river's source: a spring. Rivers, riverside and river-river; RIVER_1 river"
    terms = ["river", "rivers", "s", "spring", "river_1", "riv"]
    # "river" and "rivers" are one word in two forms: each counts both.
    assert term_counts(terms, text) == _by_words(terms, text) == [5, 5, 1, 1, 1, 0]


@pytest.mark.parametrize(
    ("term", "text", "count"),
    [
        ("teachers", "A teacher earns 40,000; teachers earn more.", 2),
        ("teach", "Kant taught logic and was teaching until 1796.", 2),
        ("taught", "He teaches; she will teach.", 2),
        ("children", "One child, two children.", 2),
        ("mice", "A mouse, two mice.", 2),
        ("batteries", "The battery lasts a day.", 1),
        ("died", "She dies; she was dying; she died.", 3),
        ("hoping", "We hope so.", 1),
        ("studies", "He studied what she will study.", 2),
        ("new", "The news is new.", 1),  # a different word, though it starts alike
        ("rose", "Prices rise.", 0),  # a flower too: not read as the past of "rise"
    ],
)
def test_a_term_counts_the_other_forms_of_its_word(term: str, text: str, count: int) -> None:
    assert term_counts([term], text) == _by_words([term], text) == [count]


def test_unspaced_scripts_are_read_as_pairs_of_characters() -> None:
    # Pairs that are function words are no terms: 的, 是, 多少, 如何, の, は, です, 의, 는, 입니까
    assert lexical.query_terms("东京的人口是多少？") == ["东京", "人口"]
    assert lexical.query_terms("如何安装PyTorch") == ["安装", "pytorch"]
    assert lexical.query_terms("富士山の高さ") == ["富士", "士山"]
    assert lexical.query_terms("서울의 인구는 몇 명입니까?") == ["서울", "인구", "몇", "명입"]
    assert lexical.query_terms("은행 이자") == ["은행", "이자"]  # a particle only ends a word
    text = "东京的人口约为1400万人。使用pip安装PyTorch"
    assert term_counts(["东京", "人口", "多少", "pytorch", "pip"], text) == [1, 1, 0, 1, 1]


def test_an_empty_term_counts_nothing() -> None:
    assert term_counts(["", "a"], "a a") == [0, 2]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(alphabet=ALPHABET + "\x00", max_size=30), max_size=6),
    st.lists(st.text(alphabet=ALPHABET, max_size=4)),
    st.booleans(),
)
def test_term_counts_of_many_texts_equal_those_of_each(
    texts: list[str], extra: list[str], skip: bool
) -> None:
    # The texts are searched together, joined by NUL: a NUL in a text, a word at the end of
    # one text and the start of the next, a text given twice are each counted as on their own.
    texts = [*texts, *texts[:1]]
    terms = list(dict.fromkeys([*(w for t in texts for w in _terms(t)), *_terms(" ".join(extra))]))
    expected = [tuple(_by_words(terms, t)) for t in texts]
    clear_caches()
    with pytest.MonkeyPatch.context() as patch:
        if skip:
            patch.setattr(lexical, "_MISSES_ONE_BY_ONE", 0)
        assert term_counts_all(terms, texts) == expected
        assert term_counts_all(terms, texts) == expected  # from the cache
        assert term_counts_all(terms, [*texts, "x"])[:-1] == expected  # some from the cache


def test_words_at_the_joins_of_texts_counted_together_are_their_own() -> None:
    clear_caches()
    texts = ["river", "rivers river", "\x00river\x00", "ΑΣ", "σ ς", "", "river's"]
    assert term_counts_all(["river", "σ"], texts) == [
        (1, 0),
        (2, 0),
        (1, 0),
        (0, 0),
        (0, 1),
        (0, 0),
        (1, 0),
    ]


@pytest.mark.parametrize("term, text", [("-x", "-xy"), ("😀", "😀a"), ("-", "-- a")])
def test_a_term_that_starts_with_no_word_character_is_counted_in_finite_time(
    term: str, text: str
) -> None:
    # Found at a word start, it matched an empty word there, and the search began again at the
    # same place, forever. No query gives such a term; a direct caller may.
    found: list[list[int]] = []
    worker = threading.Thread(target=lambda: found.append(term_counts([term], text)), daemon=True)
    worker.start()
    worker.join(10)
    assert found, "still searching after 10 s"
    [[count]] = found
    assert 0 <= count <= len(text)
    assert term_counts_all([term, "a"], [text, text]) == [(count, text.count("a"))] * 2


def test_term_counts_are_remembered_by_terms_and_text() -> None:
    clear_caches()
    text = "A river, a lake; a river."
    assert term_counts_all(["river", "lake"], [text, "lake"]) == [(2, 1), (0, 1)]
    remembered = {("river", "lake"): {_digest(text): (2, 1), _digest("lake"): (0, 1)}}
    assert remembered == lexical._TERM_COUNTS
    # Other terms are another entry; the same content in another string object is found.
    assert term_counts_all(["a"], [text]) == [(3,)]
    assert term_counts_all(["river", "lake"], ["".join(["A river, ", "a lake; a river."])]) == [
        (2, 1)
    ]
    assert len(lexical._TERM_COUNTS) == 2
    clear_caches()
    assert not lexical._TERM_COUNTS


def test_the_term_count_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_caches()
    monkeypatch.setattr(lexical, "_MAX_TERM_LISTS", 2)
    monkeypatch.setattr(lexical, "_MAX_COUNTED_TEXTS", 5)
    for i in range(10):
        assert term_counts_all([str(i)], [f"x {i}", "y"]) == [(1,), (0,)]
        assert len(lexical._TERM_COUNTS) <= 2
    for i in range(10):
        assert term_counts_all(["x"], [f"x {i}", f"x x {i}"]) == [(1,), (2,)]
        assert sum(map(len, lexical._TERM_COUNTS.values())) <= 5
    clear_caches()


def test_a_long_list_of_terms_is_counted_but_not_cached() -> None:
    clear_caches()
    terms = [f"w{i}" for i in range(65)]
    expected = [0] * 65
    expected[3], expected[64] = 2, 1
    assert term_counts_all(terms, ["w3 w64 w3"]) == [tuple(expected)]
    assert not lexical._TERM_COUNTS


def _digest(text: str) -> int:
    return xxhash.xxh3_128_intdigest(text.encode())


_NON_WORD = re.compile(r"\W")


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET + "\u00a0\u3000\u2013\u201c\ufb01\U0001f600\ud800", max_size=40))
def test_normalize_maps_each_non_word_character_to_a_space(text: str) -> None:
    # A lone surrogate (JSON can carry one) is no word character either.
    assert normalize(text) == _NON_WORD.sub(" ", text.lower())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_normalize_on_any_code_point(text: str) -> None:
    assert normalize(text) == _NON_WORD.sub(" ", text.lower())


def test_a_query_gives_at_most_its_first_terms() -> None:
    query = "the " + " ".join(f"w{i}" for i in range(lexical.MAX_QUERY_TERMS + 100)) + " w0"
    terms = lexical.query_terms(query)
    assert terms == [f"w{i}" for i in range(lexical.MAX_QUERY_TERMS)]


@pytest.mark.parametrize("space", [" ", "\n", "\u00a0"])
def test_a_title_with_a_long_run_of_spaces_is_read_in_linear_time(space: str) -> None:
    # The qualifier pattern (r"\s*\([^()]*\)\s*$") was tried from every place of the run:
    # 40,000 spaces took 4.8 s, and a service request stalled every other for as long.
    import time

    started = time.perf_counter()
    assert lexical.title_key("Aristotle" + space * 200_000 + "x") == "aristotle x"
    assert time.perf_counter() - started < 2.0
    assert lexical.title_key("Mercury (planet)") == "mercury"
    assert lexical.title_key("Mercury  (planet)  ") == "mercury"
    assert lexical.title_key("A (b) c)") == "a b c"


def test_long_words_are_stemmed_but_not_kept_in_the_cache() -> None:
    # A cache of every word a search found would hold what requests sent (8 MiB words, 65,536
    # of them); only words of English length are kept.
    from ctxasm import stems

    before = stems._cached_stem.cache_info().currsize
    long_word = "teach" + "x" * 100_000
    assert term_counts(["teach"], f"{long_word} teaches") == [1]
    assert stems.stem(long_word) == long_word
    assert stems._cached_stem.cache_info().currsize <= before + 1  # "teaches" at most


@pytest.mark.parametrize(
    ("term", "text"),
    [
        ("people", "A personal computer and a personality test."),  # not read as "person"
        ("leaf", "The bus leaves at noon."),  # "leaves" is a verb too
        ("win", "The price is 500 won."),  # a currency
        ("meet", "The Met opens at ten."),
    ],
)
def test_irregular_forms_that_are_other_words_are_not_read_as_their_base(
    term: str, text: str
) -> None:
    assert term_counts([term], text) == [0]
    assert term_counts(["leave"], "She leaves.") == [1]
