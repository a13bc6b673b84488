"""Where an answer's Markdown and HTML put code, urls and links (ctxasm.answer_markup); how
citations read markers there is tested in test_citations.py."""

from __future__ import annotations

import pytest

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


def test_link_destination_needs_the_parenthesis_that_closes_it() -> None:
    # rv43-4: "(" and a destination with no ")" was read as an inline link
    deep = "(" * 32 + "x" + ")" * 32
    found = [
        link_destination("[a](b", 3),
        link_destination("[a](b c)", 3),
        link_destination("[a](][Source 1].", 3),
        link_destination('[a](b "t" x)', 3),
        link_destination('[a](b "t")', 3),
        link_destination("[a](\n  b\n)", 3),
        link_destination("[a]()", 3),
        link_destination(f"[a]({deep})", 3),
        link_destination(f"[a](({deep}))", 3),  # past the 32 levels renderers allow
    ]
    assert found == [None, None, None, None, "b", "b", "", deep, None]


def _defined(answer: str) -> list[str]:
    return sorted(links(answer, Spans.of(code_spans(answer))).definitions)


def test_a_definition_is_one_only_where_a_paragraph_may_start() -> None:
    # rv43-4: a definition cannot interrupt a paragraph, and nothing but a title may follow it
    assert _defined("[a]: /1\n[b]: /2 'title'\n[c]: /3\n\"title\"\n[d]: /4") == list("abcd")
    assert _defined("Notes:\n[a]: /1\n> b\n> [b]: /2\n- c\n  [c]: /3") == []
    assert _defined("Notes:\n> [a]: /1\n\n> b\n>\n> [b]: /2") == ["a", "b"]
    assert _defined("Notes:\n- [a]: /1\n- [b]: /2\n\n# c\n[c]: /3\n\n---\n[d]: /4") == list("abcd")
    assert _defined("Notes:\n2. [a]: /1\n1. [b]: /2") == ["b"]  # "2." does not interrupt
    assert _defined("[a]: /1 junk\n[b]: /2\n\n[c]: /3 'title' junk") == []


def test_a_definition_may_follow_an_html_block_that_ends_on_its_line() -> None:
    # rv44-1: CommonMark ends an HTML block of kinds 1 to 5 on the line holding its end, and a
    # definition may follow it; a link to it renders
    for html in (
        "<!-- note -->",
        "<script>x()</script>",
        "<pre>x</pre>",
        "<?php echo 1; ?>",
        "<!DOCTYPE html>",
        "<!--\nnote\n-->",
        "<STYLE>\nb {}\n</style> end",
        "<![CDATA[\nx\n]]>",
        "Notes:\n<!-- x -->",
        "> <!--\n> x -->",
    ):
        assert _defined(f"{html}\n[a]: /1") == ["a"], html
    # what such a block holds is no definition; other HTML blocks go on to a blank line
    assert _defined("<!--\n[a]: /1\n-->\n[b]: /2") == ["b"]
    assert _defined("<!-- never closed\n[a]: /1\n\n[b]: /2") == []
    assert _defined("<div>\n[a]: /1\n\n[b]: /2") == ["b"]
    assert _defined("<b>x</b>\n[a]: /1") == []


def test_an_html_block_that_goes_on_to_a_blank_line_holds_every_line_up_to_it() -> None:
    # rv45-3: a <pre>, "<!--", "<?" or <script> line in a <div> block, or after a tag alone on
    # its line, opens nothing; the block ends at the blank line
    for block in (
        '<div class="answer">\n<pre>',
        "<div>\n<!-- generated",
        "</div>\n<?",
        "</textarea>\n<script>",
        "   <DIV>\n<pre>",
        "Notes:\n<p>\n<![CDATA[",
        "<span class=x>\n<!--",
        "<a href='x' b>\n<style>",
    ):
        assert _defined(f"{block}\n[a]: /1\n\n[b]: /2") == ["b"], block
    # a tag alone on its line interrupts no paragraph: a <pre> after it opens a block
    assert _defined("Notes:\n<span>\n<pre>\n\n[a]: /1") == []
    # indented 4 columns, or in a container, it opens no block at the margin
    assert _defined("    <div>\n<pre>\n\n[a]: /1") == []
    assert _defined("> <div>\n<pre>\n\n[a]: /1") == []
    # its lines hold no definition, a quote's or a list item's included
    assert _defined("<div>\n> [a]: /1\n- [b]: /2\n# c\n[c]: /3\n\n[d]: /4") == ["d"]


def test_lines_may_end_with_a_carriage_return() -> None:
    # rv45-5: CommonMark ends lines at "\r\n" and "\r" too; offsets are the answer's
    assert _defined("[a]: /1\r\n[b]:\r\n/2\r\n'title'\r[c]: /3 \"t\"\r\n\r\n[d]: /4") == list(
        "abcd"
    )
    assert _defined("Notes:\r\n[a]: /1\r\r[b]: /2\r\n<!--\r\n[c]: /3") == ["b"]
    answer = "[x]: <https://x.org/a>\r\n[Se\r\n e]: https://y.org\r\n"
    assert links(answer, Spans.of([])).definitions == {
        "x": "https://x.org/a",
        "se e": "https://y.org",
    }
    answer = "```\r\n[1]\r\n```\r\na `b\rc` d"
    assert _texts(answer, code_spans(answer)) == ["```\r\n[1]\r\n```\r"]
    answer = "[a](\r\n<https://x.org>\r\n 't'\r\n) b"
    assert link_destination(answer, 3) == "https://x.org"
    assert _texts(answer, url_spans(answer, Spans.of([]))) == ["(\r\n<https://x.org>"]


def test_a_definition_may_follow_a_list_item_empty_on_its_first_line() -> None:
    # rv44-10: the item holds what its next, indented line starts
    for item in ("-\n  ", "+\n  ", "*\n  ", "1.\n   ", "1)\n   ", "10.\n    ", "> 2.\n>    "):
        assert _defined(f"{item}[a]: /1") == ["a"], item
    # an empty item interrupts no paragraph: the lines go on with it
    assert _defined("Notes:\n+\n  [a]: /1\n\nNotes:\n1.\n   [b]: /2") == []
    assert _defined("Notes:\n-\n[a]: /1") == ["a"]  # "-" underlines a heading


def test_link_destinations_are_found_at_each_closing_bracket_under_the_deadline() -> None:
    # rv44-3: one scan for them failed in one call over 8 MB of "[a](", past the deadline
    from ctxasm.deadline import Deadline
    from ctxasm.errors import DeadlineError

    answer = "[a](b) [c](" + "[a](" * 1000 + " x y) [d](<e f>) g](h)"
    assert [answer[start:end] for start, end in url_spans(answer, Spans.of([]))] == [
        "(b",
        "(<e f>",
        "(h",
    ]
    limit = Deadline(60.0)
    limit.cancel()
    with limit.applied(), pytest.raises(DeadlineError):
        url_spans("[a](" * 1000 + " x y)", Spans.of([]))  # each attempt fails


def test_reference_key_folds_case_white_space_and_quote_markers() -> None:
    assert reference_key("  Multi\n>  LINE ") == "multi line"


def test_blanked_keeps_length_and_line_breaks() -> None:
    assert blanked("ab\ncd ef", [(1, 4), (3, 6)]) == "a \n   ef"
