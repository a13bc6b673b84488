"""Where the stores look for the other forms of a question's words, and which they keep (the
stores themselves: tests/contract/test_store_contract.py)."""

from __future__ import annotations

from ctxasm.store.forms import KEY_WORDS, QUERY_WORDS, form_ranges, with_forms


def test_each_search_key_is_one_range_of_the_sorted_vocabulary() -> None:
    ranges, limit = form_ranges(["teach", "park", "parking"])
    assert ranges == [("park", "parl"), ("taught", "taughu"), ("teach", "teaci")]
    assert limit == KEY_WORDS


def test_a_range_never_ends_at_a_surrogate() -> None:
    ranges, _ = form_ranges(["a\ud7ff"])
    assert ranges == [("a\ud7ff", "a\ue000")]


def test_a_question_with_many_keys_shares_the_words_read() -> None:
    terms = [f"word{n}x" for n in range(QUERY_WORDS // KEY_WORDS * 4)]
    ranges, limit = form_ranges(terms)
    assert len(ranges) == len(terms)
    assert limit * len(ranges) <= QUERY_WORDS
    assert limit == QUERY_WORDS // len(ranges)


def test_forms_follow_their_term_each_once_with_its_stem_and_key() -> None:
    read = ["meals", "mealy", "meal", "parking", "parka", "teaches", "taught", "parked"]
    assert with_forms(["meal", "park", "parking", "taught"], read) == [
        "meal",
        "meals",  # "mealy" has another stem
        "park",
        "parked",
        "parking",  # a term of the question too: once, where it came first; "parka" is not one
        "taught",
        "teaches",
    ]
    assert with_forms(["meal"], []) == ["meal"]
