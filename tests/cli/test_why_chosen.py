"""The report table's "why chosen" column, from the report's ``chosen`` records."""

from __future__ import annotations

from ctxasm.cli.report_view import why_chosen

LABELS = {"a": "Source 1", "b": "Source 2"}


def test_each_signal_reads_as_a_few_words() -> None:
    link = {"by": "link", "terms": ["spouse"], "linked_from": "a", "via": "Steve Hillage"}
    assert why_chosen(link, LABELS) == "link from Source 1 via 'Steve Hillage' (covers spouse)"
    assert why_chosen({"by": "query", "terms": ["green", "performer"]}, LABELS) == (
        "query: green, performer"
    )
    assert why_chosen({"by": "score", "given_score": 0.91, "terms": ["x"]}, LABELS) == (
        "retriever score 0.91"
    )
    assert why_chosen({"by": "fill", "terms": []}, LABELS) == "fill (budget left)"


def test_older_results_without_the_record_show_nothing() -> None:
    assert why_chosen(None, LABELS) == ""
    assert why_chosen({}, LABELS) == ""


def test_a_link_to_a_passage_not_in_the_prompt_names_its_id() -> None:
    assert why_chosen({"by": "link", "linked_from": "gone", "via": None}, LABELS) == (
        "link from gone"
    )
