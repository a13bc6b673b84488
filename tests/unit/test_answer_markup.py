"""Where an answer's Markdown and HTML put code, urls and links (ctxasm.answer_markup); how
citations read markers there is tested in test_citations.py."""

from __future__ import annotations

from ctxasm.answer_markup import (
    Links,
    Spans,
    blanked,
    code_spans,
    link_destination,
    links,
    reference_key,
    url_spans,
)


def _texts(answer: str, spans: list[tuple[int, int]]) -> list[str]:
    return [answer[start:end] for start, end in spans]


def test_code_is_closed_fences_and_paired_backticks() -> None:
    answer = "a `x[1]` b\n```\n[1]\n```\n```\nopen [2]"
    spans = code_spans(answer)
    assert _texts(answer, spans) == ["`x[1]`", "```\n[1]\n```"]  # the last fence never closes
    code = Spans.of(spans)
    assert [code.holds(at) for at in (2, 8, len(answer) - 1)] == [True, False, False]


def test_urls_outside_code_end_before_citations_and_punctuation() -> None:
    answer = (
        "see https://x.org/paris[1]. and [t](https://y.org/a_(b)) `https://code.example` "
        "<https://auto.example/[2]>"
    )
    spans = url_spans(answer, Spans.of(code_spans(answer)))
    assert _texts(answer, spans) == [
        "https://x.org/paris",
        "(https://y.org/a_(b)",
        "<https://auto.example/[2]>",
    ]


def test_links_are_markdown_and_html_link_texts_with_definitions() -> None:
    answer = (
        "[see Source 2](http://x) [Source 1][]\n\n[Source 1]: <https://r.example>\n"
        "<a href='h'>x [1]</a> `[y](z)`"
    )
    found = links(answer, Spans.of(code_spans(answer)))
    assert found == Links(
        {"source 1": "https://r.example"},
        [
            (0, 14, "http://x"),
            (25, 35, "https://r.example"),
            (39, 49, "https://r.example"),
            (83, 88, "h"),
        ],
    )
    assert _texts(answer, [(s, e) for s, e, _ in found.texts]) == [
        "[see Source 2]",
        "[Source 1]",
        "[Source 1]",
        "x [1]",
    ]


def test_an_indented_definition_outside_a_list_is_code() -> None:
    answer = "    [y]: /code [y]"
    assert links(answer, Spans.of(code_spans(answer))) == Links({}, [])


def test_link_destination_reads_angled_and_nested_parentheses() -> None:
    found = [
        link_destination("[a](<b c>)", 3),
        link_destination("[a](wiki/P_(x)) y", 3),
        link_destination("[a] (b)", 3),
    ]
    assert found == ["b c", "wiki/P_(x)", None]


def test_reference_key_folds_case_white_space_and_quote_markers() -> None:
    assert reference_key("  Multi\n>  LINE ") == "multi line"


def test_blanked_keeps_length_and_line_breaks() -> None:
    assert blanked("ab\ncd ef", [(1, 4), (3, 6)]) == "a \n   ef"
