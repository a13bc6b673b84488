"""Query classes: the rules of ``classify`` and the request field ``query_class``."""

from __future__ import annotations

from typing import Any

import pytest

import ctxasm
from ctxasm.query_class import QUERY_CLASSES, classify

EXAMPLES = {
    "factoid": [
        "When was Marie Curie born?",
        "What is the capital of France?",
        "How tall is the Eiffel Tower?",
        "Who wrote Hamlet?",
    ],
    "multihop": [
        "When was the director of the film starring Tom Hanks born?",  # an "of" chain
        "Who founded the band that released Thriller?",  # a relative clause
        "What nationality is the man who directed Jaws?",
        "Where was Nolan's brother born?",  # a possessive
        "Did Ada Lovelace work with Charles Babbage?",  # two named things
    ],
    "comparison": [
        "Which is older, the Eiffel Tower or the Statue of Liberty?",
        "Were Scott Derrickson and Ed Wood of the same nationality?",
        "Are both Cadmium and Zinc metals?",
        "What is the difference between TCP and UDP?",
        "Is Paris larger than Rome?",
    ],
    "summary": [
        "Summarize the causes of the First World War.",
        "Give me an overview of photosynthesis",
        "What are the main features of Rust?",
        "Tell me about the history of Rome",
        "Explain how vaccines work",
        "List the pros and cons of nuclear power",
    ],
}


def test_the_classes() -> None:
    assert QUERY_CLASSES == ("factoid", "multihop", "comparison", "summary")
    assert set(EXAMPLES) == set(QUERY_CLASSES)


@pytest.mark.parametrize(
    ("query", "expected"),
    [(query, kind) for kind, queries in EXAMPLES.items() for query in queries],
)
def test_classify(query: str, expected: str) -> None:
    assert classify(query) == expected


def test_the_rules_run_in_order() -> None:
    # Summary wins over comparison, comparison over multihop.
    assert classify("Summarize the difference between TCP and UDP") == "summary"
    assert classify("Is the director of Jaws older than Ridley Scott?") == "comparison"
    # A number alone is not a second named thing.
    assert classify("What happened in Paris in 1889?") == "factoid"


# --- the request field -------------------------------------------------------------------------

PASSAGES = [{"id": "a", "text": "Shakespeare wrote Hamlet around 1600."}]


def _report(query: str, **fields: Any) -> ctxasm.Report:
    return ctxasm.assemble(query, PASSAGES, **fields).report


@pytest.mark.parametrize("query_class", QUERY_CLASSES)
def test_a_given_class_is_reported_as_given(query_class: str) -> None:
    report = _report("Who wrote Hamlet?", query_class=query_class)
    assert report.query_class == query_class
    assert report.to_dict()["query_class"] == query_class


@pytest.mark.parametrize("given", [{}, {"query_class": None}, {"query_class": "auto"}])
@pytest.mark.parametrize(
    ("query", "detected"),
    [("Who wrote Hamlet?", "factoid"), ("Summarize Hamlet's plot", "summary")],
)
def test_without_a_class_the_detected_one_is_reported(
    given: dict[str, Any], query: str, detected: str
) -> None:
    assert _report(query, **given).query_class == detected


@pytest.mark.parametrize("value", ["bad", "Summary", " factoid", "", 5, True, ["summary"], {}])
def test_a_bad_class_is_a_request_error(value: object) -> None:
    with pytest.raises(ctxasm.RequestError) as caught:
        _report("Who wrote Hamlet?", query_class=value)
    assert caught.value.field == "query_class"
    assert "one of auto, factoid, multihop, comparison, summary" in caught.value.message


class _Equal(str):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = str.__hash__


class _Raising(str):
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing")

    __hash__ = str.__hash__


@pytest.mark.parametrize("value", [_Equal("not-a-class"), _Raising("nope")])
def test_a_class_is_compared_as_a_plain_string(value: str) -> None:
    # A str subclass was compared by its own ==: one equal to anything passed as "auto", one
    # that raises escaped as a RuntimeError.
    with pytest.raises(ctxasm.RequestError) as caught:
        _report("Who wrote Hamlet?", query_class=value)
    assert caught.value.field == "query_class"


def test_parse_request_keeps_the_class_and_drops_auto() -> None:
    assert (
        ctxasm.parse_request({"query": "q", "passages": [], "query_class": "summary"}).query_class
        == "summary"
    )
    assert (
        ctxasm.parse_request({"query": "q", "passages": [], "query_class": "auto"}).query_class
        is None
    )


@pytest.mark.parametrize("unit", ["which , ", "more ", "older "])
def test_a_long_query_is_classified_in_time_linear_in_its_length(unit: str) -> None:
    # "which , " repeated to 5,000 characters took 12.8 s (cubic), "more " to 80,000 took 14 s
    # (quadratic); a service request stalled every other for as long.
    import time

    started = time.perf_counter()
    classify(unit * (40_000 // len(unit)))
    assert time.perf_counter() - started < 2.0


def test_a_comparison_gap_is_bounded_but_ordinary_comparisons_still_count() -> None:
    assert classify("Which is older, the Danube or the Rhine?") == "comparison"
    assert classify("Which of A, B, or C came first?") == "comparison"
    assert classify("Is Paris larger than Rome?") == "comparison"
