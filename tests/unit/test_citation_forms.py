"""Every way of writing a citation that a model or an attacker would use (issue 10, item 10):
each is read, so a citation of a source that does not exist is reported invalid and one of a
source that does is valid, and the report says how it was spelled."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import cache

import pytest

import ctxasm
from ctxasm.citations import (
    FORMS,
    LINK_ALLOWANCE,
    LINK_GROWTH,
    REPORT_ALLOWANCE,
    check_citations,
    link_citations,
)
from ctxasm.data import Assembly

PASSAGES = [
    {
        "id": f"p{n}",
        "text": f"Fact number {n} about Paris.",
        "score": 1 - n / 10,
        "url": f"https://example.org/p{n}",
    }
    for n in range(1, 5)
]
FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


@cache
def assembly() -> Assembly:
    """Sources 1 to 4; Source 9 does not exist."""
    return ctxasm.assemble("Paris facts", PASSAGES, strategy={"ordering": "retrieval"})


def _fw(n: int) -> str:
    return str(n).translate(FULLWIDTH)


def _sup(n: int) -> str:
    return str(n).translate(SUPERSCRIPT)


# (how a citation of source n is written, the form it is reported in)
SPELLINGS: list[tuple[Callable[[int], str], str]] = [
    (lambda n: f"[Source {n}]", "bracket"),
    (lambda n: f"[source {n}]", "bracket"),
    (lambda n: f"[SOURCE{n}]", "bracket"),
    (lambda n: f"[{n}]", "bracket"),
    (lambda n: f"[ Source  {n} ]", "bracket"),
    (lambda n: f"[Source: {n}]", "bracket"),
    (lambda n: f"[Source #{n}]", "bracket"),
    (lambda n: f"[Source {n}.]", "bracket"),
    (lambda n: f"[Source\u00a0{n}]", "bracket"),
    (lambda n: f"[Source {n}, 1]", "bracket"),
    (lambda n: f"[Sources 1-{n}]", "bracket"),
    (lambda n: f"[Sources 1 – {n}]", "bracket"),
    (lambda n: f"[Source 1; Source {n}]", "bracket"),
    (lambda n: f"[Source 1][Source {n}]", "bracket"),
    (lambda n: f"[Source {n}](https://example.org/p{n})", "markdown_link"),
    (lambda n: f"[{n}](<https://example.org/p{n}>)", "markdown_link"),
    (lambda n: f"(Source {n})", "parenthesis"),
    (lambda n: f"(source: {n})", "parenthesis"),
    (lambda n: f"as Source {n} says", "bare"),
    (lambda n: f"see source {n}", "bare"),
    (lambda n: f"Source: {n}", "bare"),
    (lambda n: f"Sources 1 and {n}", "bare"),
    (lambda n: f"[Source {_fw(n)}]", "fullwidth"),
    (lambda n: f"［Source {n}］", "fullwidth"),
    (lambda n: f"［Ｓｏｕｒｃｅ {_fw(n)}］", "fullwidth"),
    (lambda n: f"【Source {n}】", "cjk_bracket"),
    (lambda n: f"〔Source {n}〕", "cjk_bracket"),
    (lambda n: f"〖Source {n}〗", "cjk_bracket"),
    (lambda n: f"[Ѕource {n}]", "confusable"),  # Cyrillic S
    (lambda n: f"[Sоurce {n}]", "confusable"),  # Cyrillic o
    (lambda n: f"[ѕоurсе {n}]", "confusable"),  # Cyrillic s, o, c, e
    (lambda n: f"[𝐒𝐨𝐮𝐫𝐜𝐞 {n}]", "confusable"),  # mathematical bold
    (lambda n: f"[\u015aource {n}]", "confusable"),  # composed S with acute (NFC)
    (lambda n: f"[S\u0301ource {n}]", "confusable"),  # the same, decomposed (NFD)
    (lambda n: f"[So\u0303urce {n}]", "confusable"),  # o with tilde, decomposed
    (lambda n: f"[S\u00f5urce {n}]", "confusable"),  # o with tilde, composed
    (lambda n: f"[Sou\u200brce {n}]", "confusable"),  # zero-width space
    (lambda n: f"[Sour\u00adce {n}]", "confusable"),  # soft hyphen
    (lambda n: f"[Source {_sup(n)}]", "superscript"),
    (lambda n: f"[{_sup(n)}]", "superscript"),
    (lambda n: f"[Source {str(n).translate(ARABIC_INDIC)}]", "unicode"),
    (lambda n: f"```\nan unclosed fence\n[Source {n}]", "bracket"),
    (lambda n: f"```\n[Source {n}]\n```", "bracket"),  # worded markers count in code
    (lambda n: f"`[Source {n}]`", "bracket"),
]


@pytest.mark.parametrize(("spell", "form"), SPELLINGS)
def test_a_citation_of_a_missing_source_is_invalid_in_every_spelling(
    spell: Callable[[int], str], form: str
) -> None:
    written = spell(9)
    report = check_citations(f"Paris is old {written}.", assembly())
    assert "Source 9" in report.invalid
    assert not report.all_valid
    missing = [c for c in report.citations if c.label == "Source 9"]
    assert [c.form for c in missing] == [form]
    assert missing[0].raw in written


@pytest.mark.parametrize(("spell", "form"), SPELLINGS)
def test_a_citation_of_an_included_source_is_valid_in_every_spelling(
    spell: Callable[[int], str], form: str
) -> None:
    report = check_citations(f"Paris is old {spell(2)}.", assembly())
    assert report.all_valid
    assert "p2" in report.cited_ids
    assert {c.form for c in report.citations if c.label == "Source 2"} == {form}


def test_there_are_38_or_more_spellings_and_every_form_is_covered() -> None:
    assert len(SPELLINGS) >= 38
    assert {form for _, form in SPELLINGS} == set(FORMS)


def test_raw_spellings_and_forms_are_in_the_json() -> None:
    answer = "A [Ѕource 9]. B (Source 2). C 【Source 1】."
    citations = check_citations(answer, assembly()).to_dict()["citations"]
    assert [(c["label"], c["raw"], c["form"], c["valid"]) for c in citations] == [
        ("Source 9", "[Ѕource 9]", "confusable", False),
        ("Source 2", "(Source 2)", "parenthesis", True),
        ("Source 1", "【Source 1】", "cjk_bracket", True),
    ]
    assert check_citations(answer, assembly()).forms == {
        "confusable": 1,
        "parenthesis": 1,
        "cjk_bracket": 1,
    }


@pytest.mark.parametrize(
    "text",
    [
        "Open source 2.0 was released.",
        "The source code is on GitHub; sources differ.",
        "A resource 9 and opensource 3 are not sources.",
        "See (1) the map and (2) the list.",
        "The room is 10 m² and the box 2 m³.",
        "A [note], [Source], [Source A], [1a] and [a, 1].",
        "- [x] done\n- [ ] open",
        "Footnote[^1].",
        "The list `[1, 2]` is code.",
        "```python\nx = [1, 2]\n```\nDone.",
        "Sourcebook 2 is a title.",
        "The interval [1.5] and the pair [2.0, 3.5] are numbers.",
    ],
)
def test_benign_text_is_not_a_citation(text: str) -> None:
    assert check_citations(text, assembly()).citations == ()


@pytest.mark.parametrize(
    ("answer", "label"),
    [
        ("Paris [Source 1.5].", "Source 1.5"),
        ("Paris [Source 1234567890].", "Source 1234567890"),
        ("Paris [source: 99999999999].", "Source 99999999999"),
        ("Paris [Source 1e3].", "Source 1e3"),
        ("Paris [Source 2-].", "Source 2-"),
        ("Paris [Source \u06f1.\u06f5].", "Source 1.5"),  # Persian digits, folded
        ("Paris `[Source 1.5]`.", "Source 1.5"),  # worded: counts in code too
        ("Paris [Source 1,2.5].", "Source 1,2.5"),  # one citation, not Source 1 inside it
        # a sign, and lists with a space or "and" (review rv40-F2: they were skipped)
        ("Paris [Source -1].", "Source -1"),
        ("Paris [Source: -1].", "Source -1"),
        ("Paris [Source 1, 2.5].", "Source 1, 2.5"),
        ("Paris [Source 2, 1e3].", "Source 2, 1e3"),
        ("Paris [Sources 1 and\n 2.5].", "Source 1 and 2.5"),
    ],
)
def test_a_worded_bracket_whose_number_is_no_label_is_one_invalid_citation(
    answer: str, label: str
) -> None:
    # They were no citation at all, so all_valid stayed true for a made-up label.
    report = check_citations(answer, assembly())
    assert [(c.label, c.valid, c.id) for c in report.citations] == [(label, False, None)]
    assert (report.invalid, report.all_valid, report.coverage) == ((label,), False, 0.0)
    assert link_citations(answer, assembly()) == answer


def test_citations_after_an_unclosed_fence_still_count() -> None:
    answer = "Paris [1].\n```\nno closing fence\nThe moon [Source 9]. Lyon [2]."
    report = check_citations(answer, assembly())
    assert [(c.label, c.valid) for c in report.citations] == [
        ("Source 1", True),
        ("Source 9", False),
        ("Source 2", True),
    ]


def test_numbers_in_closed_code_are_not_citations_but_worded_labels_are() -> None:
    answer = "Code:\n```\nx = a[9]\ny = '[Source 9]'\n```\nInline `b[7]` too."
    assert [c.label for c in check_citations(answer, assembly()).citations] == ["Source 9"]


def test_link_citations_links_bracket_markers_outside_code_only() -> None:
    data = assembly().to_dict()
    for item in data["report"]["included"]:
        item["url"] = f"https://example.org/{item['id']}"
    answer = (
        "A [Source 1](https://x.org). B (Source 2). C Source 3. D `[Source 4]`. E 【Source 4】."
    )
    assert link_citations(answer, data) == answer.replace(
        "【Source 4】", "[Source 4](https://example.org/p4)"
    )
    assert link_citations(link_citations(answer, data), data) == link_citations(answer, data)


@pytest.mark.parametrize(
    "shape",
    [
        "[Source ",
        "［Ѕource ",
        "Sources 1, ",
        "[1, 1, 1 ",
        "`a``b```",
        "```\n",
        "~~~x\n",
        "[ ",
        "Source ",
        "[Source 1.",
        "[Source 1.5]",
        "[Source 9999999999",
    ],
)
def test_a_large_adversarial_answer_is_checked_in_linear_time(shape: str) -> None:
    answer = shape * (800_000 // len(shape))
    started = time.perf_counter()
    try:
        check_citations(answer, assembly())
    except ctxasm.RequestError as error:  # over MAX_MARKERS: refused once read that far
        assert error.field == "answer"
        assert "citation markers" in error.message
    # a quadratic scan of 800,000 characters takes hours; a linear one about a second
    assert time.perf_counter() - started < 20


def test_links_grow_an_answer_by_a_bounded_amount_however_long_the_urls() -> None:
    """A source's url comes from its document, and each citation of it repeats it: the links
    add at most LINK_GROWTH times the answer plus LINK_ALLOWANCE characters, and a marker past
    that stays as it is."""
    data = assembly().to_dict()
    url = "https://example.org/" + "/".join(f"part{j}" for j in range(10_000))  # 88 kB
    for item in data["report"]["included"]:
        item["url"] = url
    answer = "Paris [Source 1-4]. " * 2_000  # 40 kB: 8,000 links, 700 MB if each were made
    linked = link_citations(answer, data)
    assert len(linked) <= len(answer) + LINK_GROWTH * len(answer) + LINK_ALLOWANCE
    first = f"[Source 1]({url}), [Source 2]({url}), [Source 3]({url}), [Source 4]({url})"
    assert linked.startswith(f"Paris {first}. ")  # the first markers are linked
    assert linked.endswith("Paris [Source 1-4]. ")  # the last is left as it was
    assert check_citations(linked, data).all_valid  # what was left is still a valid citation
    # a short url is linked everywhere, as before
    for item in data["report"]["included"]:
        item["url"] = "https://example.org/p"
    assert "[Source 1-4]" not in link_citations(answer, data)


def _with_url(url: str) -> dict[str, object]:
    data = assembly().to_dict()
    data["report"]["included"][0]["url"] = url
    return data


@pytest.mark.parametrize(
    ("answer", "url"),
    [
        # each citation repeated the source's 1 MB url: 150 markers made a 150 MB report
        ("[Source 1] " * 150, "https://example.org/" + "a" * 1_000_000),
        # a long url cited in one list of many numbers
        ("[" + ", ".join(["1"] * 2_000) + "]", "https://example.org/" + "a" * 200_000),
    ],
    ids=["long-url", "long-list"],
)
def test_a_report_out_of_proportion_to_its_answer_is_refused_as_json(answer: str, url: str) -> None:
    report = check_citations(answer, _with_url(url))  # the objects share the strings
    with pytest.raises(ctxasm.RequestError) as caught:
        report.to_dict()
    assert caught.value.field == "answer"
    assert "characters of JSON" in caught.value.message


def test_a_long_list_marker_is_shown_cut_so_its_report_stays_linear() -> None:
    # each of its numbers repeated the whole list as its marker: for 60,000 numbers, 32 GB
    answer = "[" + ", ".join(["1"] * 10_000) + "]"
    report = check_citations(answer, assembly())
    assert len(report.citations) == 10_000
    assert {len(c.raw) for c in report.citations} == {200}
    assert report.citations[0].raw.startswith("[1, 1, 1") and report.citations[0].raw[-1] == "…"
    assert len(json.dumps(report.to_dict())) < 30 * len(answer) + REPORT_ALLOWANCE


def test_a_large_report_in_proportion_is_checked() -> None:
    # a thousand citations of a source with a 2 kB url: 2 MB of JSON, under the allowance
    url = "https://example.org/" + "a" * 2_000
    report = check_citations("Paris [Source 1]. " * 1000, _with_url(url))
    assert len(report.citations) == 1000 and report.all_valid
    assert len(json.dumps(report.to_dict())) < REPORT_ALLOWANCE
