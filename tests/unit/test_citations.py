"""Citation checking and linking against real assemblies."""

from __future__ import annotations

import copy
import dataclasses
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import ctxasm
from ctxasm.citations import MAX_RANGE, Citation, CitationReport, check_citations, link_citations
from ctxasm.data import Assembly
from ctxasm.errors import ArgumentTypeError, RequestError

DOCS = Path(__file__).resolve().parents[2] / "docs" / "citations.md"
PARIS = "https://example.org/paris"
SEINE = "https://example.org/seine"
EIFFEL = "https://example.org/eiffel"
PASSAGES = [
    {"id": "paris", "text": "Paris is the capital of France.", "score": 0.9, "url": PARIS},
    {"id": "seine", "text": "The Seine flows through Paris.", "score": 0.8, "url": SEINE},
    {"id": "louvre", "text": "The Louvre is a museum in Paris.", "score": 0.7},
    {"id": "eiffel", "text": "The Eiffel Tower was built in 1889.", "score": 0.6, "url": EIFFEL},
]


@cache
def assembly() -> Assembly:
    """Sources 1-4 are paris, seine, louvre (no url) and eiffel, in that order."""
    return ctxasm.assemble(
        "What is the capital of France and what is in Paris?",
        PASSAGES,
        strategy={"ordering": "retrieval"},
    )


def result() -> dict[str, Any]:
    return assembly().to_dict()


def labels(answer: str) -> list[tuple[str, bool]]:
    return [(c.label, c.valid) for c in check_citations(answer, assembly()).citations]


def test_the_assembly_labels_the_sources_in_request_order() -> None:
    included = assembly().report.included
    assert [(i.label, i.id, i.url) for i in included] == [
        ("Source 1", "paris", PARIS),
        ("Source 2", "seine", SEINE),
        ("Source 3", "louvre", None),
        ("Source 4", "eiffel", EIFFEL),
    ]


def test_a_report_alone_checks_as_its_result_does() -> None:
    # a bare report was refused with "got null", though ctxasm report takes one
    answer = "Paris is the capital of France [Source 1]. The Seine flows through it [2]."
    whole = check_citations(answer, assembly()).to_dict()
    assert check_citations(answer, assembly().report).to_dict() == whole
    assert check_citations(answer, result()["report"]).to_dict() == whole


def test_a_chat_completion_response_is_checked_as_its_answer() -> None:
    answer = "Paris is the capital of France [Source 1]. The Seine flows through it [2]."
    whole = check_citations(answer, assembly()).to_dict()
    for response in (
        {"choices": [{"message": {"content": answer}}]},
        {"choices": [{"message": {"content": [{"type": "text", "text": answer}]}}]},
        {"type": "message", "content": [{"type": "text", "text": answer}]},
        {"output": [{"type": "message", "content": [{"type": "output_text", "text": answer}]}]},
    ):
        assert check_citations(response, assembly()).to_dict() == whole  # type: ignore[arg-type]
    with pytest.raises(TypeError) as error:
        check_citations({"text": answer}, assembly())  # type: ignore[arg-type]
    assert "a chat completion response" in str(error.value)


def test_a_fully_cited_answer() -> None:
    answer = "Paris is the capital of France [Source 1]. The Seine flows through it [2]."
    report = check_citations(answer, assembly())
    assert report.citations == (
        Citation("Source 1", "paris", PARIS, valid=True),
        Citation("Source 2", "seine", SEINE, valid=True),
    )
    assert report.all_valid
    assert report.to_dict() == {
        "citations": [
            {
                "label": "Source 1",
                "id": "paris",
                "url": PARIS,
                "valid": True,
                "raw": "[Source 1]",
                "form": "bracket",
                "link": None,
                "mislinked": False,
            },
            {
                "label": "Source 2",
                "id": "seine",
                "url": SEINE,
                "valid": True,
                "raw": "[2]",
                "form": "bracket",
                "link": None,
                "mislinked": False,
            },
        ],
        "invalid": [],
        "cited_ids": ["paris", "seine"],
        "uncited_ids": ["louvre", "eiffel"],
        "uncited_sentences": [],
        "coverage": 1.0,
        "mislinked": [],
        "forms": {"bracket": 2},
    }


def test_zero_out_of_range_and_missing_numbers_are_invalid() -> None:
    report = check_citations("It is old [Source 0]. It is tall [7]. It is [Source 3].", assembly())
    assert [(c.label, c.id, c.url, c.valid) for c in report.citations] == [
        ("Source 0", None, None, False),
        ("Source 7", None, None, False),
        ("Source 3", "louvre", None, True),
    ]
    assert report.invalid == ("Source 0", "Source 7")
    assert not report.all_valid
    assert report.coverage == pytest.approx(1 / 3)


def test_a_number_no_included_source_carries_is_invalid() -> None:
    data = result()
    data["report"]["included"] = [
        item for item in data["report"]["included"] if item["label"] != "Source 2"
    ]
    report = check_citations("A [1]. B [2]. C [3].", data)
    assert [(c.label, c.valid) for c in report.citations] == [
        ("Source 1", True),
        ("Source 2", False),
        ("Source 3", True),
    ]
    assert report.uncited_ids == ("eiffel",)


@pytest.mark.parametrize(
    ("marker", "numbers"),
    [
        ("[Source 2]", [2]),
        ("[source 2]", [2]),
        ("[SOURCE2]", [2]),
        ("[ 2 ]", [2]),
        ("[1, 3]", [1, 3]),
        ("[1,3]", [1, 3]),
        ("[1; 3]", [1, 3]),
        ("[1 & 3]", [1, 3]),
        ("[1, 2, and 4]", [1, 2, 4]),
        ("[Source 1, Source 3]", [1, 3]),
        ("[Sources 1 and 3]", [1, 3]),
        ("[Source 1, 3]", [1, 3]),
        ("[2-4]", [2, 3, 4]),
        ("[2–4]", [2, 3, 4]),
        ("[2 — 4]", [2, 3, 4]),
        ("[Source 2-4]", [2, 3, 4]),
        ("[Source 2–Source 4]", [2, 3, 4]),
        ("[1, 3-4]", [1, 3, 4]),
        ("[3-3]", [3]),
        ("[S0urce 1]", [1]),  # the word's 0 is no number
        ("(S0urce 2)", [2]),
        ("[S0urces 1-2]", [1, 2]),
        ("[Source 1](https://example.org/list?page[2]=x)", [1]),  # the url's [2] is no marker
    ],
)
def test_marker_grammar(marker: str, numbers: list[int]) -> None:
    assert labels(f"Paris has sights {marker}.") == [(f"Source {n}", True) for n in numbers]


@pytest.mark.parametrize(
    "text",
    [
        "See [the guide](https://example.org/guide).",
        "- [x] done\n- [ ] open",
        "A [note] and [Source] and [Source A] and [1a] and [a, 1].",
        "The list `[1, 2]` is code.",
        "```python\nx = [1, 2]\n```\nDone.",
        "Footnote[^1].",
        "Prices rose <https://example.org/?a[7]=1> and fell.",
        "Prices rose, see https://example.org/?a[7]=1&b[Source_2]=3 today.",
        "Prices rose, see www.example.org/wiki/[3]/page.",
        "See [the list](https://example.org/list?page[2]=x).",
    ],
)
def test_links_checkboxes_words_and_code_are_not_citations(text: str) -> None:
    assert labels(text) == []


def test_reversed_and_huge_ranges_are_one_invalid_citation_each() -> None:
    huge = f"[1-{MAX_RANGE + 1}]"
    assert labels(f"Reversed [4-2]. Huge {huge}. Largest allowed [1-{MAX_RANGE}].") == [
        ("Source 4-2", False),
        (f"Source 1-{MAX_RANGE + 1}", False),
        ("Source 1", True),
        ("Source 2", True),
        ("Source 3", True),
        ("Source 4", True),
        *[(f"Source {n}", False) for n in range(5, MAX_RANGE + 1)],
    ]


def test_ranges_expand_to_at_most_as_many_numbers_as_the_answer_has_characters() -> None:
    # 40 ranges of 100 in an answer of about 300 characters: the first ones that fit the
    # answer's length (plus MAX_RANGE) expand, the rest are one invalid citation each, so
    # the report and the linked answer grow with the answer, not a hundred times faster.
    answer = "Claim [" + ", ".join([f"1-{MAX_RANGE}"] * 40) + "]."
    report = check_citations(answer, assembly())
    expanded = (len(answer) + MAX_RANGE) // MAX_RANGE
    assert len(report.citations) == expanded * MAX_RANGE + (40 - expanded)
    assert report.citations[-1] == Citation(
        f"Source 1-{MAX_RANGE}", None, None, False, f"[{answer[7:-2]}]", "bracket"
    )
    assert len(link_citations(answer, assembly())) < 60 * len(answer)
    assert labels("[1-3] [2-4]") == [(f"Source {n}", True) for n in (1, 2, 3, 2, 3, 4)]


def test_a_range_past_the_last_source_is_valid_up_to_it() -> None:
    report = check_citations("Everything [3-6].", assembly())
    assert [(c.label, c.valid) for c in report.citations] == [
        ("Source 3", True),
        ("Source 4", True),
        ("Source 5", False),
        ("Source 6", False),
    ]
    assert report.invalid == ("Source 5", "Source 6")


def test_citations_repeat_but_ids_and_invalid_labels_are_distinct() -> None:
    report = check_citations("A [2] [9]. B [2, 1] [9]. C [1].", assembly())
    assert [c.label for c in report.citations] == [
        "Source 2",
        "Source 9",
        "Source 2",
        "Source 1",
        "Source 9",
        "Source 1",
    ]
    assert report.invalid == ("Source 9",)
    assert report.cited_ids == ("seine", "paris")
    assert report.uncited_ids == ("louvre", "eiffel")


def test_uncited_sentences_and_coverage() -> None:
    answer = (
        "## Answer\n"
        "Here is what the sources say:\n"
        "Paris is the capital of France.[1] The Louvre is a museum. [3]\n"
        "- The Seine flows through Paris\n"
        "- The tower dates from 1889 [9]\n"
        "[2]\n"
        "It is lovely in spring."
    )
    report = check_citations(answer, assembly())
    assert report.uncited_sentences == (
        "- The Seine flows through Paris",
        "It is lovely in spring.",
    )
    # five sentences: two validly cited, one cited only invalidly, two uncited
    assert report.coverage == pytest.approx(2 / 5)
    assert report.cited_ids == ("paris", "louvre", "seine")


@pytest.mark.parametrize(
    ("answer", "coverage"),
    [
        ("", 1.0),
        ("  \n\n", 1.0),
        ("[1]", 1.0),
        ("I could not find the answer.", 0.0),
        ("Paris [1]. Seine [2]. Louvre [3]. Tower [4].", 1.0),
        ("Paris [1]. Seine [8]. Louvre. Tower [4].", 0.5),
    ],
)
def test_coverage_is_the_share_of_sentences_with_a_valid_citation(
    answer: str, coverage: float
) -> None:
    assert check_citations(answer, assembly()).coverage == coverage


def test_the_result_json_gives_the_same_report_as_the_assembly() -> None:
    answer = "Paris is the capital [Source 1]. It has a tower [4, 7]. It has a river."
    from_object = check_citations(answer, assembly())
    assert check_citations(answer, result()) == from_object
    assert link_citations(answer, result()) == link_citations(answer, assembly())
    assert from_object.to_dict()["invalid"] == ["Source 7"]


def test_the_result_json_may_omit_urls() -> None:
    data = result()
    for item in data["report"]["included"]:
        del item["url"]
    report = check_citations("Paris [1].", data)
    assert report.citations == (Citation("Source 1", "paris", None, valid=True),)


def _broken(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(result())
    target: Any = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({}, "report", "got no 'report'"),
        ({"report": []}, "report", "got a list"),
        ({"report": {}}, "report.included", "must be a list"),
        ({"report": {"included": "x"}}, "report.included", "got a string"),
        ({"report": {"included": [1]}}, "report.included[0]", "must be an object"),
        (_broken(("report", "included", 1, "id"), None), "report.included[1].id", "got null"),
        (_broken(("report", "included", 1, "id"), ""), "report.included[1].id", "empty"),
        (
            _broken(("report", "included", 2, "label"), "Doc C"),
            "report.included[2].label",
            "'Doc C'",
        ),
        (
            _broken(("report", "included", 2, "label"), "Source 0"),
            "report.included[2].label",
            "N from 1 to 999,999,999",
        ),
        (_broken(("report", "included", 2, "label"), 3), "report.included[2].label", "a number"),
        (
            _broken(("report", "included", 3, "label"), "Source 1"),
            "report.included[3].label",
            "twice",
        ),
        (_broken(("report", "included", 0, "url"), 5), "report.included[0].url", "string or null"),
    ],
)
def test_a_malformed_result_names_the_field(data: Any, field: str, message: str) -> None:
    with pytest.raises(RequestError) as caught:
        check_citations("Paris [1].", data)
    assert caught.value.field == field
    assert message in caught.value.message


def test_something_else_than_an_assembly_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="Assembly, its report, or the JSON of either; got list"):
        check_citations("Paris [1].", [assembly()])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            None,
            "answer must be a string (the model's reply); got null: a reply without text (a "
            "refusal or a tool call) has no citations to check",
        ),
        (b"Paris [1].", "answer must be a string (the model's reply); got bytes b'Paris [1].'"),
        (5, "answer must be a string (the model's reply); got int 5"),
    ],
)
def test_an_answer_that_is_not_a_string_is_refused(answer: Any, message: str) -> None:
    # A raw TypeError came from the regex engine ("expected string or bytes-like object").
    for check in (check_citations, link_citations):
        with pytest.raises(ArgumentTypeError) as caught:
            check(answer, assembly())
        assert (caught.value.field, caught.value.message) == ("answer", message)


def test_link_citations_links_valid_markers_only() -> None:
    answer = (
        "Paris is the capital [Source 1]. The Seine [2] and the Louvre [3] are there; "
        "not the moon [7]. Both [1, 3] and [Sources 2 and 4] and [2–4] and [3, 9]. "
        "See [the docs](https://example.org/docs) and `[1]`."
    )
    assert link_citations(answer, assembly()) == (
        f"Paris is the capital [Source 1]({PARIS}). The Seine [2]({SEINE}) and the Louvre [3] "
        "are there; not the moon [7]. "
        f"Both [1]({PARIS}), [3] and [Source 2]({SEINE}), [Source 4]({EIFFEL}) "
        f"and [2]({SEINE}), [3], [4]({EIFFEL}) and [3, 9]. "
        "See [the docs](https://example.org/docs) and `[1]`."
    )


def test_link_citations_is_idempotent_and_keeps_invalid_ranges() -> None:
    answer = "Old [4-2] and new [1, 4-2]."
    once = link_citations(answer, assembly())
    assert once == f"Old [4-2] and new [1]({PARIS}), [4-2]."
    assert link_citations(once, assembly()) == once


def test_a_citation_linked_elsewhere_than_its_source_is_reported() -> None:
    answer = (
        f"Paris [Source 1]({PARIS}). The Seine [2](https://phish.example/login). "
        "The Louvre [3](javascript:alert(1)). The tower [4](<https://x.org/a b>). "
        f"And [1](<{PARIS}>)."
    )
    report = check_citations(answer, assembly())
    assert [(c.label, c.link, c.mislinked) for c in report.citations] == [
        ("Source 1", PARIS, False),
        ("Source 2", "https://phish.example/login", True),
        ("Source 3", "javascript:alert(1)", True),  # the Louvre has no url: any link is elsewhere
        ("Source 4", "https://x.org/a b", True),
        ("Source 1", PARIS, False),
    ]
    assert report.invalid == () and report.mislinked == ("Source 2", "Source 3", "Source 4")
    assert not report.all_valid
    assert report.coverage == 1.0  # each names its source: the sentences are supported


# Answers whose [Source 1] CommonMark renders as a link to https://phish.example.
_ELSEWHERE = [
    "Paris [see Source 1](https://phish.example).",  # a marker in a link's text
    "Paris [Source 1!](https://phish.example).",
    "Paris [[Source 1]](https://phish.example).",
    "Paris [Source 1][x].\n\n[x]: https://phish.example",  # a reference link
    "Paris [Source 1][].\n\n[Source 1]:\n  <https://phish.example>",
    "Paris [Source 1].\n\n[source  1]: https://phish.example",  # a shortcut reference
    "Paris [Source 1].\n\n> [Source 1]: https://phish.example",  # defined in a quote
    'Paris <a href="https://phish.example">[Source 1]</a>.',  # an HTML link
    "Paris <A title=x HREF='https://phish.example'>see [Source 1]</a >.",
    # rv40-F3: a link's text over line breaks, nested brackets, code and escapes in it
    "Paris [see\nSource 1](https://phish.example).",
    "Paris [see\n   Source 1\n  here](https://phish.example).",
    "> Paris [see\n> Source 1](https://phish.example).",
    "Paris [a [b [Source 1]]](https://phish.example).",
    "Paris [see `]` Source 1](https://phish.example).",
    "Paris [see \\] Source 1](https://phish.example).",
    "Paris [see Source 1][the\nlink].\n\n[The  Link]: https://phish.example",
    "Paris [see\nSource 1].\n\n[see source 1]: https://phish.example",  # a shortcut
    # definitions in list items, after any containers, and over line breaks
    "- [Source 1]: https://phish.example\n\nParis [Source 1].",
    "1. [Source 1]: https://phish.example\n\nParis [Source 1].",
    "> - [Source 1]: https://phish.example\n\nParis [Source 1].",
    "- > [Source 1]: https://phish.example\n\nParis [Source 1].",
    "- item\n\n  [Source 1]: https://phish.example\n\nParis [Source 1].",
    "- item\n  - sub\n\n    [Source 1]: https://phish.example\n\nParis [Source 1].",
    "Paris [Source 1].\n\n> \t[Source 1]: https://phish.example",  # 2 columns in
    "Paris [Source 1].\n\n[Source\n1]: https://phish.example",
    "Paris [Source 1].\n\n> [Source\n> 1]: https://phish.example",
    "Paris [Source 1].\n\n- [Source\n  1]: https://phish.example",
    # an HTML link's text holds other tags, up to its </a> (or the end, unclosed)
    'Paris <a href="https://phish.example"><b>[Source 1]</b></a>.',
    "Paris <a title=\"a>b\" href='https://phish.example'><em>see</em> Source 1</a>.",
    'Paris <a href="https://phish.example">see\n\n[Source 1]</a>.',
    'Paris <a href="https://phish.example">[Source 1].',
    # rv43-4: a definition inside a paragraph, or a "(" never closed, is no link, so the
    # link around it is one
    "Notes:\n[a]: https://x.org\n\nParis [per [Source 1] and [a]](https://phish.example).",
    "Paris [see\n[x]: y [Source 1]](https://phish.example).",
    "Paris [see [x](y [Source 1]](https://phish.example).",
    "Paris [Source 1](y\n\n[Source 1]: https://phish.example",  # a shortcut after all
    # rv44-1: a definition after an HTML block that ends on its line; what one holds is
    # no definition, so the link around a label it names is one
    "<!-- note -->\n[Source 1]: https://phish.example\n\nParis [Source 1].",
    "<script>x()</script>\n[Source 1]: https://phish.example\n\nParis [Source 1].",
    "<!--\nnote\n-->\n[Source 1]: https://phish.example\n\nParis [Source 1].",
    "<!--\n[a]: https://x.org\n-->\nParis [per [Source 1] and [a]](https://phish.example).",
    "<div>\n[a]: https://x.org\n\nParis [per [Source 1] and [a]](https://phish.example).",
    # rv44-10: in a list item empty on its first line
    "1.\n   [source 1]: https://phish.example\n\nParis [Source 1].",
    "+\n  [source 1]: https://phish.example\n\nParis [Source 1].",
    # an image shows no link, but loads its url: reported (see docs/citations.md)
    "Paris ![Source 1](https://phish.example).",
    # rv45-3: a <pre>, "<!--", "<?" or <script> line in an HTML block that goes on to a
    # blank line (<div>, a tag alone on its line) opens nothing: the definition after it is
    # one
    '<div class="answer">\n<pre>\n\n[source 1]: https://phish.example\n\nParis [Source 1].',
    "<div>\n<!-- generated\n\n[source 1]: https://phish.example\n\nSee [Source 1].",
    "</div>\n<?\n\n[source 1]: https://phish.example\n[Source 1]",
    "</textarea>\n<script>\n\n[source 1]: https://phish.example\nSee [Source 1].",
    "Notes:\n<p>\n<pre>\n\n[source 1]: https://phish.example\nSee [Source 1].",
    "<span class=x>\n<!--\n\n[source 1]: https://phish.example\nSee [Source 1].",
    # rv45-5: "\r\n" and a lone "\r" end lines too
    "[source 1]: https://phish.example\r\n[Source 1]",
    "Intro\r\n\r\n[source 1]: https://phish.example\r\n\r\nSee [Source 1].",
    "Intro\r\r[source 1]:\rhttps://phish.example\r'title'\r\rSee [Source 1].",
    "Paris [Source 1](\r\nhttps://phish.example\r\n'title'\r\n).",
]


@pytest.mark.parametrize("answer", _ELSEWHERE)
def test_a_citation_rendered_as_a_link_elsewhere_is_reported(answer: str) -> None:
    report = check_citations(answer, assembly())
    assert report.mislinked == ("Source 1",) and not report.all_valid
    assert {c.link for c in report.citations} == {"https://phish.example"}
    assert "phish" not in link_citations(answer, assembly()).replace(answer, "")


# Answers whose [Source 1] CommonMark renders as a link to its source, or as no link.
_HOME = [
    f"Paris [see Source 1]({PARIS}).",
    f"Paris [Source 1][x].\n\n[x]: {PARIS}",
    "Paris `[Source 1][x]`.\n\n[x]: https://phish.example",  # code is no link
    "Paris [Source 1].\n\n    [Source 1]: https://phish.example",  # an indented code block
    "Paris [Source 1](https://EXAMPLE.org/paris).",  # a host in any case is the same host
    # rv40-F3: near misses, which CommonMark renders as no link
    "Paris [see\n\nSource 1](https://phish.example).",  # a blank line ends the text
    "Paris [see\n \t\nSource 1](https://phish.example).",
    "Paris [see Source 1]\n(https://phish.example).",
    "Paris \\[see Source 1](https://phish.example).",  # an escaped bracket
    "Paris [Source 1].\n\n```\n[Source 1]: https://phish.example\n```",  # code
    "Paris [Source 1].\n\n~~~~\n- [Source 1]: https://phish.example\n~~~~",
    "Paris [Source 1].\n\n\t[Source 1]: https://phish.example",  # a tab: 4 columns
    "Paris [Source 1].\n\n>     [Source 1]: https://phish.example",  # code in a quote
    "-     [Source 1]: https://phish.example\n\nParis [Source 1].",  # code in an item
    "- item\n\n      [Source 1]: https://phish.example\n\nParis [Source 1].",
    "- item\n\nText.\n\n    [Source 1]: https://phish.example\n\nParis [Source 1].",
    "Paris [Source 1].\n\n[Source\n\n1]: https://phish.example",  # a label over a blank line
    'Paris <a href="https://phish.example">x</a> [Source 1].',
    'Paris \\<a href="https://phish.example">[Source 1]</a>.',
    'Paris `<a href="https://phish.example">` [Source 1].',
    'Paris <a name="x">[Source 1]</a>.',
    'Paris <a href="https://phish.example">x <a name="y">[Source 1]</a>.',  # it ends the first
    'Paris <abbr title="https://phish.example">[Source 1]</abbr>.',
    f'Paris <a href="https://phish.example">[see Source 1]({PARIS})</a>.',  # the inner link
    # rv43-4: a definition inside a paragraph, and a "(" never closed, make no link
    "Paris [Source 1].\n[Source 1]: https://phish.example",
    "Paris [fig](][Source 1].",  # the marker is no part of a url
    "Paris [Source 1](https://phish.example.",
    'Paris [Source 1](https://phish.example "title" x).',
    # rv45-3: what an HTML block holds up to its end is no definition
    "<div>\n<pre>\n[source 1]: https://phish.example\n\nParis [Source 1].",
    "Notes:\n<pre>\n\n[source 1]: https://phish.example\n\nParis [Source 1].",
    "<span>\n</div>\n> [source 1]: https://phish.example\n\nParis [Source 1].",
    "Paris [Source 1].\r\n\r\n<pre>\r\n\r\n[source 1]: https://phish.example",
]


@pytest.mark.parametrize("answer", _HOME)
def test_a_citation_rendered_as_a_link_to_its_source_or_not_as_a_link_is_valid(
    answer: str,
) -> None:
    report = check_citations(answer, assembly())
    assert report.all_valid and report.cited_ids[:1] == ("paris",)


@pytest.mark.parametrize("ending", ["\r\n", "\r"])
def test_lines_ended_by_a_carriage_return_read_as_lines_ended_by_a_line_feed(ending: str) -> None:
    # rv45-5: CommonMark ends a line at "\r\n" and "\r" as at "\n"
    for answer in (answer for answer in _ELSEWHERE if "\r" not in answer):
        crlf = answer.replace("\n", ending)
        assert check_citations(crlf, assembly()).mislinked == ("Source 1",), crlf
    for answer in (answer for answer in _HOME if "\r" not in answer):
        crlf = answer.replace("\n", ending)
        assert check_citations(crlf, assembly()).all_valid, crlf


def test_markers_written_in_wider_characters_are_linked_by_their_shape() -> None:
    # The form a marker needed (full-width, look-alike) stood in for its shape, so bare,
    # parenthesised and linked markers were linked as brackets, losing a character at each end.
    answer = (
        "Bare Source ２. Linked [Source ２](https://x.org/a). In (Ѕource 1). "
        "Wide ［Source ２］ and ［１］́ here."
    )
    once = link_citations(answer, assembly())
    assert once == (
        "Bare Source ２. Linked [Source ２](https://x.org/a). In (Ѕource 1). "
        f"Wide [Source 2]({SEINE}) and [1]({PARIS}) here."
    )
    assert link_citations(once, assembly()) == once


def test_link_citations_only_links_safe_urls_and_escapes_them() -> None:
    data = result()
    included = data["report"]["included"]
    included[0]["url"] = "javascript:alert(1)"
    included[1]["url"] = "https://example.org/a page (draft)"
    included[2]["url"] = "/docs/louvre.md"
    included[3]["url"] = "http://[::1"
    assert link_citations("A [1]. B [2]. C [3]. D [4].", data) == (
        "A [1]. B [2](https://example.org/a%20page%20%28draft%29). C [3](/docs/louvre.md). D [4]."
    )


@pytest.mark.parametrize(
    "url",
    [
        "javascript&colon;alert(1)",
        "javascript&#58;alert(document.domain)",
        "JavaScript&#x3a;alert(1)",
        "javascript&#58alert(1)",  # no semicolon: a browser decodes it in an href
        "data&colon;text/html,<script>alert(1)</script>",
    ],
)
def test_a_url_whose_scheme_a_renderer_decodes_is_not_linked(url: str) -> None:
    # Markdown decodes character references in a link's destination, and a browser in an href:
    # each of these is a javascript: or data: url once rendered.
    data = result()
    data["report"]["included"][0]["url"] = url
    assert link_citations("Paris [1].", data) == "Paris [1]."


def test_ampersands_are_written_as_references_that_read_back_as_the_url() -> None:
    # No "&" is left for a renderer to read as the start of a character reference; rendered,
    # the destination is the url again, and check_citations knows the link as its source's.
    from markdown_it import MarkdownIt

    data = result()
    data["report"]["included"][0]["url"] = "https://example.org/find?q=1&amp=2&lt;x"
    linked = link_citations("Paris [1].", data)
    assert linked == "Paris [1](https://example.org/find?q=1&amp;amp=2&amp;lt;x)."
    href = MarkdownIt("commonmark").parseInline(linked)[0].children[1].attrs["href"]
    assert href == "https://example.org/find?q=1&amp=2&lt;x"
    assert check_citations(linked, data).all_valid
    written = "Paris [1](https://example.org/find?q=1&amp;amp=2&amp;lt;x)."
    assert check_citations(written, data).all_valid
    # a url a link only hides behind references is still another url
    other = "Paris [1](https://example.org/find?q=1&amp;amp=3)."
    assert check_citations(other, data).mislinked == ("Source 1",)


def test_brackets_in_urls_are_linked_encoded_and_stay_no_citation() -> None:
    data = result()
    data["report"]["included"][0]["url"] = "https://example.org/list?page[2]=x"
    linked = link_citations("Paris [1].", data)
    assert linked == "Paris [1](https://example.org/list?page%5B2%5D=x)."
    assert link_citations(linked, data) == linked
    written = "Paris [Source 1](https://example.org/list?page[2]=x)."
    for answer in (linked, written):
        report = check_citations(answer, data)
        assert [c.label for c in report.citations] == ["Source 1"]
        assert report.all_valid


@pytest.mark.parametrize(
    ("answer", "labels"),
    [
        ("See https://example.org [2].", ["Source 2"]),
        ("(see https://example.org)[2]", ["Source 2"]),  # a ")" the url did not open ends it
        ("See www.example.org.[1]", ["Source 1"]),  # a citation right after a url is one
        ("See https://example.org/paris[1].", ["Source 1"]),
        ("See https://example.org/p[1](https://example.org).", ["Source 1"]),
        ('See "https://example.org"[2].', ["Source 2"]),
        ("See https://example.org/wiki/Plato_(philosopher) [1].", ["Source 1"]),
        ("See https://example.org/?a[7]=1&b[2].", ["Source 2"]),
        ("See https://example.org/?a[7]=1 ok.", []),  # inside it: the url's
        ("See https://example.org/a.[Source 1]", ["Source 1"]),
        ("See https://example.org/a[1][2]", ["Source 1", "Source 2"]),
        ("See https://example.org/a,[2][3]", ["Source 2", "Source 3"]),
        ("See https://example.org/a[1, 2]", ["Source 1", "Source 2"]),
        ("See https://example.org/a\u30101\u3011", ["Source 1"]),
        ("Per [the paper](https://example.org)[2].", ["Source 2"]),
        ("See https://example.org/a[1],[2]", ["Source 1", "Source 2"]),
        ("See https://example.org/a[1]-[2]", ["Source 1", "Source 2"]),
        ("| https://example.org/a[1]| cell |", ["Source 1"]),  # a table cell
        ("See https://example.org/a[\uff11]", ["Source 1"]),  # a full-width digit
        ("See https://example.org/a[\u0405ource 1]", ["Source 1"]),  # a Cyrillic S
        ("See https://example.org/a[1\u200b]", ["Source 1"]),  # an invisible character
    ],
)
def test_citations_next_to_a_url_are_read(answer: str, labels: list[str]) -> None:
    assert [c.label for c in check_citations(answer, assembly()).citations] == labels


def test_a_numbered_list_item_is_one_sentence() -> None:
    report = check_citations(
        "1. Paris is the capital [1]\n2. Berlin is big\n3) The Seine flows [2]", assembly()
    )
    assert report.uncited_sentences == ("2. Berlin is big",)
    assert report.coverage == pytest.approx(2 / 3)


def test_an_unknown_link_style_names_the_choices() -> None:
    with pytest.raises(RequestError, match="choose one of markdown") as caught:
        link_citations("A [1].", assembly(), style="html")
    assert caught.value.field == "style"


def test_report_is_frozen() -> None:
    report = check_citations("A [1].", assembly())
    assert isinstance(report, CitationReport)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.coverage = 0.0  # type: ignore[misc]


def test_the_example_in_the_docs_runs() -> None:
    example = re.search(r"```python\n(.*?)```", DOCS.read_text(), re.DOTALL)
    assert example is not None
    exec(compile(example.group(1), str(DOCS), "exec"), {})


def test_an_answer_with_more_citation_markers_than_any_model_writes_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ctxasm import citations

    monkeypatch.setattr(citations, "MAX_MARKERS", 10)
    assert len(check_citations("Paris [1].\n" * 10, assembly()).citations) == 10
    with pytest.raises(RequestError) as raised:
        check_citations("Paris [1].\n" * 11, assembly())
    assert raised.value.field == "answer"
    assert "more than 10 citation markers" in raised.value.message


def test_each_number_of_a_list_counts_against_the_marker_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One marker listing a million numbers took 7.7 s and 1 GB (review rv40-F1)
    from ctxasm import citations

    monkeypatch.setattr(citations, "MAX_MARKERS", 10)
    assert len(check_citations("Paris [Source 1" + ", 1" * 9 + "].", assembly()).citations) == 10
    for answer in ("Paris [Source 1" + ", 1" * 10 + "].", "Paris [1, 2].\n" * 5 + "Lyon [1]."):
        with pytest.raises(RequestError) as raised:
            check_citations(answer, assembly())
        assert raised.value.field == "answer"


@pytest.mark.parametrize(
    "answer",
    ["Paris [Sources 1 to 3].", "Paris (Sources 1 through 3).", "Paris [Source 1 thru 3]."],
)
def test_a_range_in_words_is_every_source_in_it(answer: str) -> None:
    # "[Sources 1 to 9]" was read as Source 1 alone: a made-up Source 9 passed as valid. Only
    # in brackets or parentheses that say "Source(s)" (review rv44-2, below).
    sources = {"report": {"included": [{"id": f"d{n}", "label": f"Source {n}"} for n in (1, 2, 3)]}}
    assert [c.label for c in check_citations(answer, sources).citations] == [
        "Source 1",
        "Source 2",
        "Source 3",
    ]
    made_up = check_citations(answer.replace("3", "9"), sources)
    assert not made_up.all_valid
    assert made_up.invalid[:2] == ("Source 4", "Source 5")
    assert [c.label for c in check_citations("See Source 1 to learn more.", sources).citations] == [
        "Source 1"
    ]


@pytest.mark.parametrize(
    ("answer", "labels"),
    [
        ("Take Source 2 to 3 times a day with food.", ["Source 2"]),
        ("On a scale [1 to 10], how likely are you to recommend us?", []),
        ("He scored [3 to 1].", []),
        ("See Sources 1 through 3 below.", ["Source 1"]),
    ],
)
def test_a_range_in_words_outside_a_worded_bracket_is_prose(answer: str, labels: list[str]) -> None:
    # rv44-2: "Source 2 to 3 times" cited Source 3, and "[1 to 10]" was ten citations
    sources = {"report": {"included": [{"id": f"d{n}", "label": f"Source {n}"} for n in (1, 2, 3)]}}
    assert [c.label for c in check_citations(answer, sources).citations] == labels


def test_each_bracket_with_no_label_counts_against_the_marker_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 100,000 "[Source 1.5]" were read whole into 100,000 invalid citations (review rv43-3)
    from ctxasm import citations

    monkeypatch.setattr(citations, "MAX_MARKERS", 10)
    for form in ("[Source 1.5] ", "[Source -1] ", "[Source 1, 2.5] "):
        if form != "[Source 1, 2.5] ":  # whose "Source 1" is read first, and counted too
            assert len(check_citations("Paris [1]. " + form * 9, assembly()).citations) == 10
        with pytest.raises(RequestError) as raised:
            check_citations("Paris [1]. " + form * 10, assembly())
        assert raised.value.field == "answer"
        assert "each bracket with no label" in raised.value.message


def test_a_long_answer_with_few_markers_stops_at_its_deadline() -> None:
    # The link finder, the brackets with no label and the sentences checked no deadline: an
    # answer of 8 MB held a service worker 3-8 s past request_timeout_s (review rv43-1)
    from ctxasm.deadline import Deadline
    from ctxasm.errors import DeadlineError

    for answer in ("- [x]\n" * 200_000, "[Source 1.5] " * 30_000, "Paris is big.\n" * 100_000):
        limit = Deadline(60.0)
        limit.cancel()
        with limit.applied(), pytest.raises(DeadlineError):
            check_citations(answer, assembly())


def test_many_different_links_to_one_long_url_are_compared_once_per_url() -> None:
    # Each link used to be compared with the url encoded again: a long url cited by many
    # different links was quadratic. The verdicts are the same.
    from ctxasm import citations

    citations._targets.cache_clear()
    long_url = "https://example.org/" + "a b" * 2000
    sources = {"report": {"included": [{"id": "x", "label": "Source 1", "url": long_url}]}}
    answer = " ".join(f"[Source 1](https://example.org/{i})" for i in range(200))
    answer += f" [Source 1]({long_url.replace(' ', '%20')})"
    report = check_citations(answer, sources)
    assert [c.mislinked for c in report.citations] == [True] * 200 + [False]
    assert citations._targets.cache_info().misses == 1


def test_a_url_holding_a_lone_surrogate_is_left_unlinked() -> None:
    # Only a Python mapping can hold one (JSON paths refuse it); it cannot be percent-encoded.
    data = result()
    data["report"]["included"][0]["url"] = "https://example.org/\ud800"
    assert link_citations("Paris [1].", data) == "Paris [1]."
    assert check_citations("Paris [1].", data).all_valid


def test_a_name_a_reference_would_have_without_its_semicolon_is_left_as_it_is() -> None:
    # html.unescape read "&copy" in "?page=2&copy=1" as "©", which markdown does not: a link
    # to the source, written with its "é" percent-encoded, was reported as mislinked.
    data = result()
    data["report"]["included"][0]["url"] = "https://example.com/wiki/Café?page=2&copy=1"
    for link in (
        "https://example.com/wiki/Caf%C3%A9?page=2&copy=1",
        "https://EXAMPLE.com/wiki/Café?page=2&copy=1",
    ):
        assert check_citations(f"Paris [1]({link}).", data).mislinked == ()
