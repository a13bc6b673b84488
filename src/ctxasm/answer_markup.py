"""Where an answer's Markdown and HTML put code, links and urls, for reading its citations.

:mod:`ctxasm.citations` reads citation markers on the answer as written; this module says where
Markdown puts what changes what a marker means (``x[1]`` in code is an index, ``?page[2]=x`` in
a url is the url's, ``[see Source 2](...)`` links somewhere), as offsets into that answer:

- code (:func:`code_spans`): closed fenced blocks (a fence never closed is no fence) and inline
  code (a pair of equal backtick runs on one line; a run with no partner is literal);
- urls (:func:`url_spans`), outside code: a markdown link's destination (``[text](...)``), an
  autolink (``<https://...>``) and a bare url (``https://...`` or ``www....``), cut before
  the punctuation that ends a sentence, a ``)`` or ``]`` that closes nothing it opened, and a
  run of citation markers that ends it (``https://x.org/paris[1]``);
- links (:func:`links`), outside code: the text of each markdown link as CommonMark pairs its
  brackets (inline ``[text](...)`` with its ``)``, full ``[text][label]``, collapsed
  ``[text][]`` and shortcut ``[label]`` references; links do not nest), the link reference
  definitions that name their destinations (at the start of a line, after its block quotes and
  list items, where a paragraph may start: never inside one, nor inside an HTML block at the
  left margin (a comment, ``<script>`` and the like to their end, ``<div>`` to a blank line);
  one indented 4 columns or more only where a list item holds it), and the text of each HTML
  ``<a href>`` link, as a browser reads it (to the next ``<a`` or ``</a>`` tag, or the end).

A link is what CommonMark (for markdown) and a browser (for ``<a>`` tags) render as one, as far
as the rules above go: this is no full Markdown parser, and what it does not model (emphasis,
tables, other HTML) is read as text. A line ends at ``\\r\\n`` or ``\\r`` as at ``\\n``. Every
function is linear in the length of the answer: each line, bracket, backtick run and tag is
read a bounded number of times, and each pattern either reads a bounded stretch per attempt or
is possessive, so no scan reads the answer again.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

from ctxasm.deadline import checked
from ctxasm.formatting.labels import CITATION

__all__ = [
    "Links",
    "Spans",
    "blanked",
    "code_spans",
    "link_destination",
    "links",
    "reference_key",
    "url_spans",
]

# A list item's marker ("-", "+", "*", "1.", "2)"), and the block quote and list markers that
# open a line: its containers.
_MARK = r"(?:[-+*]|[0-9]{1,9}[.)])"
_CONTAINERS = rf"(?:[ \t]*+(?:>|{_MARK}(?=[ \t])))*+"
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
_BACKTICKS_OR_LINE = re.compile(r"`+|\n")
# White space in a link: spaces and tabs, and at most one line break (two would make a blank
# line), with the block quote markers that start the next line.
_GAP = r"[ \t]*+(?:(?:\r\n?+|\n)[ \t>]*+)?+"
# A link's title: "...", '...' or (...), backslash escapes in it, over single line breaks.
_TITLE = (
    r'(?:"(?:[^"\\\n]|\\[^\n]?+|\n(?![ \t>]*+\n))*+"'
    r"|'(?:[^'\\\n]|\\[^\n]?+|\n(?![ \t>]*+\n))*+'"
    r"|\((?:[^()\\\n]|\\[^\n]?+|\n(?![ \t>]*+\n))*+\))"
)


def _nested_parentheses(depth: int) -> str:
    """A destination written bare: no white space or control character, each parenthesis
    escaped or in a pair, pairs nested at most ``depth`` deep (CommonMark's renderers stop at
    32). Possessive at every level, so an attempt reads at most to where it fails."""
    plain = r"[^ \x00-\x1f\x7f()\\]|\\[^ \n]?+"
    pair = ""
    for _ in range(depth):
        pair = rf"\((?:{plain}{'|' + pair if pair else ''})*+\)"
    return rf"(?:{plain}|{pair})*+"


# An inline link's "(destination title)", after the "]" of its text (CommonMark 6.3): "(", the
# destination as "<...>" or bare (possibly empty), then a title after white space, then ")".
# Without its ")" it is no link. Each part either reads a bounded stretch or stops at the next
# character of its kind (a quote, a parenthesis past 32 deep), so scans do not overlap.
_INLINE_TAIL = (
    rf"\({_GAP}(?:<(?P<angled>(?:[^<>\n\\]|\\[^\n]?+)*+)>|(?!<)(?P<bare>{_nested_parentheses(32)}))"
    rf"(?:(?:[ \t]++(?:(?:\r\n?+|\n)[ \t>]*+)?+|(?:\r\n?+|\n)[ \t>]*+){_TITLE})?+{_GAP}\)"
)
_LINK_TARGET = re.compile(_INLINE_TAIL)
# A link reference definition at the start of a line, "[label]: destination" and perhaps a
# title, nothing more on its last line (CommonMark 4.7), after the containers of its line (block
# quotes, list items: see _indents): every "[label]" of the answer, and every "[text][label]",
# renders as a link to it, where a paragraph may start (see _where_paragraphs_start). Its label
# may wrap lines, not over a blank one; a title on the line after is its own, if it is one.
# Possessive: white space is never given back, so a line's containers are read once, and a
# label stops at the first bracket: each attempt reads at most to the next "[" (and 999
# characters), and a title to the next quote of its kind (so the titles that attempts read do
# not overlap) or a blank line.
_DEFINITION = re.compile(
    rf"^(?P<prefix>{_CONTAINERS}[ \t]*+)"
    r"\[(?P<label>(?:[^\[\]\\\n]|\\[^\n]?+|\n(?![ \t\r]*+\n)){1,999}+)\]:"
    r"[ \t]*+\n?+(?:[ \t]*+>)*+[ \t]*+(?:<(?P<angled>[^<>\n]*+)>|(?P<bare>[^\s<]\S*+))"
    rf"(?:[ \t]++{_TITLE})?+[ \t]*+$(?:\n[ \t>]*+{_TITLE}[ \t]*+$)?+",
    re.MULTILINE,
)
# A line: its block quote and list markers, and what follows them.
_LINE = re.compile(rf"^({_CONTAINERS})([^\n]*+)", re.MULTILINE)
# A list marker and the white space after it (on a line: see _containers).
_LIST_MARKER = re.compile(rf"{_MARK}(?=[ \t]|$)([ \t]*+)")
# What ends a paragraph and starts none (after a line's containers): a heading, a thematic
# break, a fence (one never closed too: see code_spans).
_NO_PARAGRAPH = re.compile(
    r"[ \t]{0,3}+(?:#{1,6}(?:[ \t]|$)|`{3,}|~{3,}"
    r"|(?:(?:\*[ \t]*+){3,}|(?:_[ \t]*+){3,}|(?:-[ \t]*+){3,})$)"
)
# A setext heading's underline, which ends the paragraph it goes on with.
_UNDERLINE = re.compile(r"[ \t]{0,3}+(?:=++|-++)[ \t]*+$")
# A list item empty on its first line (after a line's containers): it holds what its next,
# indented line starts, a definition too.
_EMPTY_ITEM = re.compile(rf"{_MARK}[ \t]*+$")
# The start of an HTML block that ends on the line holding its end (CommonMark 4.6, kinds 1 to
# 5: raw text, a comment, a processing instruction, a declaration, CDATA), by kind.
_HTML_BLOCK = re.compile(
    r"<(?:(?P<raw>(?i:script|pre|style|textarea)(?:[ \t>]|$))|(?P<comment>!--)"
    r"|(?P<cdata>!\[CDATA\[)|(?P<declaration>![A-Za-z])|(?P<instruction>\?))"
)
# The start of an HTML block that goes on to a blank line (CommonMark 4.6, kinds 6 and 7, as
# markdown-it reads them): a block-level tag's start or end ("<div", "</p>"), which may interrupt
# a paragraph, or a whole start or end tag alone on its line, which may not.
_BLOCK_TAG = re.compile(
    r"</?(?i:address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup"
    r"|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset"
    r"|h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol"
    r"|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr"
    r"|track|ul)(?=\s|/?>|$)"
)
_TAG_LINE = re.compile(
    r"(?:<[A-Za-z][A-Za-z0-9-]*+(?:\s++[A-Za-z_:][A-Za-z0-9:._-]*+"
    r"(?:\s*+=\s*+(?:[^\"'=<>`\x00-\x20]++|'[^']*+'|\"[^\"]*+\"))?+)*+\s*+/?>"
    r"|</[A-Za-z][A-Za-z0-9-]*+\s*+>)\s*+$"
)
_HTML_BLOCK_END = {
    "raw": re.compile(r"</(?:script|pre|style|textarea)>", re.IGNORECASE),
    "comment": re.compile(r"-->"),
    "cdata": re.compile(r"\]\]>"),
    "declaration": re.compile(r">"),
    "instruction": re.compile(r"\?>"),
}
# The containers of a line that opens a list item ("- ", "1. ", "  * ", "> 2) "), which may hold
# a definition indented 4 columns or more on a later line.
_LIST_ITEM = re.compile(
    rf"^(?=(?:[ \t]*+>)*+[ \t]*+{_MARK}(?:[ \t]|$))"
    rf"(?:[ \t]*+(?:>|{_MARK}(?=[ \t]|$)))*+[ \t]*+",
    re.MULTILINE,
)
# A line of text after a blank line, at the left margin, which no list item goes on over.
_UNINDENTED_PARAGRAPH = re.compile(r"\n[ \t\r]*+\n(?=[^\s>*+\-0-9])")
# An HTML link's start or end tag, as CommonMark reads raw HTML (attributes unquoted, or quoted
# holding any character but their quote). Its text runs to the next "<a" or "</a" tag, as a
# browser reads it (another tag inside, "<b>", is text of the link; an "<a" ends the one before
# it), or to the end of the answer. Possessive: an attempt reads one tag, at most to the
# second quote after its start, so the scan is linear.
_ANCHOR_TAG = re.compile(
    r"<(?:(/)a\s*+|a(?:\s++[A-Za-z_:][A-Za-z0-9:._-]*+"
    r"(?:\s*+=\s*+(?:\"[^\"]*+\"|'[^']*+'|[^\s\"'=<>`]++))?+)*+\s*+/?)>",
    re.IGNORECASE,
)
# One attribute of a tag _ANCHOR_TAG found: its name and its value (none for a bare name).
_ATTRIBUTE = re.compile(
    r"\s++([A-Za-z_:][A-Za-z0-9:._-]*+)(?:\s*+=\s*+(?:\"([^\"]*+)\"|'([^']*+)'|([^\s\"'=<>`]++)))?+"
)
# A bracket or a blank line, where a link's text may not go on (it may span single lines).
_BRACKET_OR_BLANK = re.compile(r"[\[\]]|\n[ \t\r]*+(?=\n)")
# A backslash and the character it escapes: an escaped bracket opens or closes nothing.
_ESCAPE = re.compile(r"\\[^\n]")
# The label of a reference after a link's text, "[label]" (or "[]"): at most 999 characters,
# over single line breaks, no unescaped bracket, so it reads at most to the next bracket.
_REFERENCE = re.compile(r"\[((?:[^\[\]\\\n]|\\[^\n]?+|\n(?![ \t\r]*+\n)){0,999}+)\]")
# A line break in a link label and the containers (block quotes) its next line repeats.
_LABEL_BREAK = re.compile(r"(?:\r\n?|\n)[ \t>]*")
# An autolink ("<https://...>"), or a url written bare: printable ASCII up to white space, "<",
# ">" or a quote (an HTML attribute's end), then cut where a ")" or "]" closes nothing the url
# opened, before the punctuation that ends a sentence, and before citations that follow it
# ("(see https://x.org)[2]", "https://x.org/paris[1]" still cite).
_BARE_URL = re.compile(
    r"<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*>"
    r"|(?:\b[A-Za-z][A-Za-z0-9+.-]{1,31}://|\bwww\.)[A-Za-z0-9\-._~:/?#\[\]@!$&()*+,;=%]*"
)
# Not the end of a url: the punctuation that ends a sentence, and a bracket that opens nothing
# in it (a marker in characters a url cannot hold follows: "https://x.org/a[１]").
_URL_TRAILING = frozenset("?!.,:;*_~[(")
# Between citation markers, or after the last: "[1],[2]", "[1]-[2]", "[1]/[2]", "[1]&".
_MARKER_JOINS = frozenset(",;/&-")
_NOT_NEWLINE = re.compile(r"[^\n]")


class Spans(NamedTuple):
    """Spans of an answer (sorted, merged: its code, see :func:`code_spans`, or its urls, see
    :func:`url_spans`) and where each starts."""

    spans: list[tuple[int, int]]
    starts: list[int]

    @classmethod
    def of(cls, spans: list[tuple[int, int]]) -> Spans:
        return cls(spans, [start for start, _ in spans])

    def holds(self, offset: int) -> bool:
        """Whether ``offset`` of the answer is in one of the spans."""
        index = bisect_right(self.starts, offset) - 1
        return index >= 0 and offset < self.spans[index][1]


def _line_ends(answer: str) -> str:
    """``answer`` with each line ending as CommonMark reads one (``\\r\\n``, ``\\r``, ``\\n``)
    written ``\\n``, offsets kept: ``\\r\\n`` becomes `` \\n`` (a space at the end of a line
    changes none of what this module reads), a lone ``\\r`` becomes ``\\n``."""
    if "\r" not in answer:
        return answer
    return answer.replace("\r\n", " \n").replace("\r", "\n")


def code_spans(answer: str) -> list[tuple[int, int]]:
    """Closed fenced code blocks and inline code spans, sorted and merged.

    An opening fence with no closing fence after it opens nothing: what follows is read as
    text. Linear: each fence line is looked at a bounded number of times.
    """
    answer = _line_ends(answer)
    fences = []
    for match in checked(_FENCE.finditer(answer)):
        run, rest = match.group(1), match.group(2)
        if run[0] == "`" and "`" in rest:
            continue  # not a fence: inline code on a line of its own
        fences.append((match.start(), match.end(), run[0], len(run), not rest.strip()))
    # the longest closing fence of each character at or after each fence
    longest: list[dict[str, int]] = [{}] * (len(fences) + 1)
    for index in range(len(fences) - 1, -1, -1):
        _, _, char, length, bare = fences[index]
        after = dict(longest[index + 1])
        if bare:
            after[char] = max(after.get(char, 0), length)
        longest[index] = after
    spans = []
    index = 0
    while index < len(fences):
        start, _, char, length, _ = fences[index]
        if longest[index + 1].get(char, 0) < length:
            index += 1
            continue
        close = index + 1
        while not (fences[close][4] and fences[close][2] == char and fences[close][3] >= length):
            close += 1
        spans.append((start, fences[close][1]))
        index = close + 1
    return _merged(sorted([*spans, *_inline_code(answer)]))


def _merged(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _inline_code(answer: str) -> list[tuple[int, int]]:
    """Pairs of equal backtick runs on one line; a run with no partner is literal."""
    runs: list[tuple[int, int]] = []  # (start, end); (-1, -1) marks a line break
    for match in checked(_BACKTICKS_OR_LINE.finditer(answer)):
        runs.append((-1, -1) if match.group() == "\n" else match.span())
    partner = [-1] * len(runs)
    seen: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        start, end = runs[index]
        if start < 0:
            seen = {}
            continue
        partner[index] = seen.get(end - start, -1)
        seen[end - start] = index
    spans = []
    index = 0
    while index < len(runs):
        if runs[index][0] >= 0 and partner[index] >= 0:
            spans.append((runs[index][0], runs[partner[index]][1]))
            index = partner[index] + 1
        else:
            index += 1
    return spans


def url_spans(answer: str, code: Spans) -> list[tuple[int, int]]:
    """Where ``answer`` writes urls, outside code: link destinations (``[text](...)``),
    autolinks (``<https://...>``) and bare urls (``https://...`` or ``www....`` up to white
    space or "<", less the punctuation that ends a sentence), sorted and merged."""
    if "(" not in answer and "://" not in answer and "www." not in answer:
        return []
    answer = _line_ends(answer)
    spans = []
    for match in _destinations(answer):
        if not code.holds(match.start()):
            angled = match.end("angled")
            spans.append((match.start(), angled + 1 if angled >= 0 else match.end("bare")))
    for match in checked(_BARE_URL.finditer(answer)):
        if not code.holds(match.start()):
            spans.append((match.start(), _url_end(answer, match)))
    return _merged(sorted(spans))


def _destinations(answer: str) -> Iterator[re.Match[str]]:
    """Each inline link's ``(destination title)`` after a ``]`` of ``answer``, as a scan for
    them finds them (none overlap): one attempt at each ``](`` (each reads a bounded stretch,
    see _INLINE_TAIL), none after the last ``)`` (each ends with one). The attempts are the
    steps the deadline counts, so that a long stretch where all of them fail passes its
    checkpoints."""
    last = answer.rfind(")")
    if last < 0:
        return
    done = 0  # where the last match ends
    for at in checked(_occurrences(answer, "](", last)):
        if at >= done:
            match = _LINK_TARGET.match(answer, at + 1)
            if match is not None:
                done = match.end()
                yield match


def _occurrences(text: str, needle: str, end: int) -> Iterator[int]:
    """Where ``needle`` starts in ``text`` before ``end``, left to right, none overlapping."""
    at = text.find(needle, 0, end)
    while at >= 0:
        yield at
        at = text.find(needle, at + len(needle), end)


def _url_end(answer: str, match: re.Match[str]) -> int:
    """Where the url ``match`` found ends: an autolink as found; a bare url before the first
    ")" or "]" that closes nothing it opened, less the punctuation that ends a sentence, and
    before a run of citation markers that ends it or is a link ("...[1](https://...)"). A
    marker inside it ("?page[2]=x") is the url's. Linear: each "[" is read once."""
    start, end = match.span()
    if answer[start] == "<":
        return end
    depth = {")": 0, "]": 0}
    unclosed: list[int] = []  # where each "[" still open starts
    for at in range(start, end):
        char = answer[at]
        if char in "([":
            depth[")" if char == "(" else "]"] += 1
            if char == "[":
                unclosed.append(at)
        elif char in ")]":
            if not depth[char]:
                end = at
                break
            depth[char] -= 1
            if char == "]":
                unclosed.pop()
    if unclosed:  # a bracket the url never closes: a marker in other characters ("[1\u200b]")
        end = min(end, unclosed[0])
    end = _without_trailing(answer, start, end)
    last = _without_trailing(answer, start, end, _MARKER_JOINS)  # what a run of markers ends
    opening = answer.find("[", start, end)
    while opening > start:
        after = _markers_from(answer, opening)
        if after < 0:
            opening = answer.find("[", opening + 1, end)
            continue
        if after >= last or answer.startswith("(", after):
            return _without_trailing(answer, start, opening)
        opening = answer.find("[", after, end)
    return end


def _without_trailing(answer: str, start: int, end: int, more: frozenset[str] = frozenset()) -> int:
    while end > start and (answer[end - 1] in _URL_TRAILING or answer[end - 1] in more):
        end -= 1
    return end


def _markers_from(answer: str, at: int) -> int:
    """The end of the run of bracket markers that starts at ``at``, joined by one of
    ``_MARKER_JOINS`` or nothing (``-1``: none starts there)."""
    end = -1
    while True:
        marker = CITATION.match(answer, at)
        if marker is None or marker.lastgroup != "bracket":
            return end
        at = end = marker.end()
        if answer[at : at + 1] in _MARKER_JOINS and answer.startswith("[", at + 1):
            at += 1


class Links(NamedTuple):
    """The links of an answer (see :func:`links`)."""

    # each link reference definition's destination, by its label as reference_key makes it
    definitions: dict[str, str]
    # the text of each markdown and HTML link: its start, end and destination, by start (the
    # outer of two at one start first)
    texts: list[tuple[int, int, str]]


def links(answer: str, code: Spans) -> Links:
    """The links of ``answer``, outside its ``code``: the destination of each link reference
    definition (``[label]: https://...``; the first of a label counts), and the text of each
    markdown link (``[text](...)``, ``[text][label]``, ``[text][]``, ``[label]``: its brackets
    included) and of each HTML link with an ``href`` (``<a href="...">text</a>``: between its
    tags), with its destination as written. Linear in the length of ``answer``."""
    # no link starts or ends in code; line ends as "\n"
    text = _code_filled(_line_ends(answer), code.spans)
    definitions = _definitions(answer, text) if "[" in answer else {}
    texts = sorted(_link_texts(answer, text, definitions)) if "[" in answer else []
    if "<" in answer:
        texts.extend(_anchor_texts(answer, text))
        texts.sort(key=lambda found: (found[0], -found[1]))  # the outer of two at one start first
    return Links(definitions, texts)


def link_destination(text: str, at: int) -> str | None:
    """The destination of the inline link whose text ends before ``at`` (``text[at]`` is its
    ``(``), as written; ``None`` where no ``(destination)`` starts there: no ``(``, or none
    that its ``)`` closes, after the destination and any title (``[a](b`` is no link)."""
    target = _LINK_TARGET.match(text, at)
    if target is None:
        return None
    angled = target.group("angled")
    return angled if angled is not None else target.group("bare")


def _code_filled(answer: str, spans: Sequence[tuple[int, int]]) -> str:
    """``answer`` with its code (``spans``: sorted, merged) filled in, offsets and line breaks
    kept: inline code as ``x`` (text of its line, holding no bracket or tag), a fenced block as
    spaces (blank lines: no paragraph goes on over it)."""
    pieces = []
    done = 0
    for start, end in spans:
        pieces.append(answer[done:start])
        code = answer[start:end]
        pieces.append(_NOT_NEWLINE.sub(" " if "\n" in code else "x", code))
        done = end
    pieces.append(answer[done:])
    return "".join(pieces)


def _span(answer: str, match: re.Match[str], group: str) -> str:
    """What ``group`` of ``match`` (found in ``answer`` with its code filled in) holds in
    ``answer``."""
    return answer[match.start(group) : match.end(group)]


def _definitions(answer: str, text: str) -> dict[str, str]:
    """The destination of each link reference definition of ``answer`` (``text``: it with its
    code filled in) by its label as references match it (the first of a label counts).

    A definition indented 4 columns or more past its containers is an indented code block
    unless a list item holds it (``- item``, a blank line, then ``    [x]: ...`` in an item
    nested two deep): one is taken when a list item opened before it, since the last paragraph
    at the left margin after a blank line, has its content that far in, give or take 3 columns.
    Linear: each line is read once.
    """
    found = []
    deep = False
    for match in _where_paragraphs_start(text, list(checked(_DEFINITION.finditer(text)))):
        indents = _indents(match.group("prefix"))
        if indents is not None:
            found.append((match, indents[0]))
            deep = deep or indents[0] > 3
    deeper = [(match.start(), indent) for match, indent in found if indent > 3]
    held = _held(text, deeper) if deep else set()
    definitions: dict[str, str] = {}
    for match, indent in found:
        if indent > 3 and match.start() not in held:
            continue  # an indented code block
        key = reference_key(_span(answer, match, "label"))
        if key:
            group = "angled" if match.group("angled") is not None else "bare"
            definitions.setdefault(key, _span(answer, match, group))
    return definitions


def _where_paragraphs_start(
    text: str, candidates: Sequence[re.Match[str]]
) -> Iterator[re.Match[str]]:
    """Of the ``candidates`` (definitions found at the start of a line of ``text``, in order)
    those where a paragraph may start, as CommonMark reads a definition (it cannot interrupt a
    paragraph): at the start of the answer, after a blank line, a heading, a thematic break or a
    fence, after another definition, or on a line that opens a block quote or a list item (see
    :func:`_interrupts`). A line that goes on with a paragraph (``> a`` then ``> [x]: y``, or
    ``[x]: y`` lazily after either) holds none.

    An HTML block of kinds 1 to 5 (CommonMark 4.6: ``<!-- ... -->``, ``<script>``, ``<pre>``,
    ``<?...?>``, ``<!DOCTYPE ...>``, CDATA) ends on the line that holds its end: it may interrupt
    a paragraph, and a paragraph may start after it. One that starts at the left margin holds
    no definition up to that line (to the end of the answer, when none does); where its
    containers or indentation make it harder to tell where it ends, its lines are read as
    Markdown. Other HTML blocks (``<div>``, ``<b>x</b>`` alone on a line) go on to a blank line,
    as a paragraph does, and hold every line up to it: a ``<pre>`` or ``<!--`` in one opens
    nothing. Where this needs more of Markdown, a definition is read rather than
    none: an indented line that opens no paragraph is taken as code (it may be a paragraph of a
    list item). Linear: each line up to the last candidate is read once."""
    if not candidates:
        return
    pending = iter(candidates)
    candidate = next(pending, None)
    paragraph: list[int] | None = None  # the containers of the paragraph open (_containers)
    done = 0  # where the last definition taken ends
    listed = False  # whether a list item may be open: one opened, no paragraph at the margin since
    html: re.Pattern[str] | None = None  # the end of the HTML block (kinds 1 to 5) open
    margin = False  # whether that block started at the left margin (it holds every line)
    block = False  # whether an HTML block of kind 6 or 7 is open at the left margin
    for line in checked(_LINE.finditer(text, 0, candidates[-1].end())):
        start = line.start()
        if start < done:
            continue  # a line of the definition before
        ended = html is not None and html.search(line.group()) is not None
        # a line of an HTML block at the left margin, whatever it starts (a blank line ends
        # one of kinds 6 and 7)
        inside = (html is not None and margin) or (block and line.group().strip(" \t") != "")
        html = None if ended else html
        if inside:
            if candidate is not None and start == candidate.start():
                candidate = next(pending, None)
            continue
        block = False
        fresh = paragraph is None or _interrupts(line.group(), paragraph)
        if candidate is not None and start == candidate.start():
            taken, candidate = candidate, next(pending, None)
            if fresh:
                yield taken
                indents = _indents(taken.group("prefix"))
                if indents is not None and indents[0] <= 3:
                    done, paragraph = taken.end(), None
                    continue
                # indented: code, unless a list item holds it (see _definitions); the lines
                # after its first are read as lines
        containers, rest = line.group(1), line.group(2)
        body = rest.lstrip(" \t")
        opened = _HTML_BLOCK.match(body) if body.startswith("<") else None
        if (
            opened is None
            and body.startswith("<")
            and not containers
            and _opens_html_block(rest, body, listed, paragraph is not None)
        ):
            block, paragraph, listed = True, None, False
            continue
        if opened is not None and opened.lastgroup is not None:
            end = _HTML_BLOCK_END[opened.lastgroup]
            if end.search(body) is None:
                html, margin = end, not containers and body == rest
                listed = listed and not margin
        # an empty list item interrupts no paragraph; "-" after one is a setext underline
        empty_item = (paragraph is None or body.rstrip() == "-") and bool(_EMPTY_ITEM.match(body))
        if (
            not body
            or ended
            or opened is not None
            or empty_item
            or _NO_PARAGRAPH.match(rest)
            or _NO_PARAGRAPH.match(line.group().lstrip(" \t>"))
            or (not fresh and _UNDERLINE.match(rest))
        ):
            paragraph = None
        elif fresh:
            white = rest[: len(rest) - len(body)]
            indented = len(white) + 3 * white.count("\t") > (4 if containers else 3)
            paragraph = None if indented else _containers(line.group(), listed)
            listed = listed if containers or rest[:1] in " \t" else False
        listed = listed or empty_item or containers.strip(" \t>") != ""


def _opens_html_block(rest: str, body: str, listed: bool, in_paragraph: bool) -> bool:
    """Whether a line with no containers (``rest``; ``body``: it less its indentation), where
    no HTML block of kinds 1 to 5 starts, opens one of kinds 6 or 7 at the left margin: indented
    at most 3 columns (not at all after a list item, which may hold it), a block-level tag, or
    a whole tag alone on the line where no paragraph goes on."""
    white = rest[: len(rest) - len(body)]
    return (
        len(white) + 3 * white.count("\t") <= 3
        and (not white or not listed)
        and (
            _BLOCK_TAG.match(body) is not None
            or (not in_paragraph and _TAG_LINE.match(body) is not None)
        )
    )


def _containers(line: str, listed: bool) -> list[int]:
    """The containers a line opens, outermost first: ``-1`` for a block quote, the column its
    content starts at for a list item (tabs to stops of 4). A line indented at the left margin
    after a list item (``listed``) is taken as in it: its paragraph goes on only as far in."""
    found = []
    column = at = 0
    while at < len(line) and line[at] in " \t":
        column += 4 - column % 4 if line[at] == "\t" else 1
        at += 1
    if column and listed:
        found.append(column)
    while True:
        while at < len(line) and line[at] in " \t":
            column += 4 - column % 4 if line[at] == "\t" else 1
            at += 1
        if line.startswith(">", at):
            found.append(-1)
            column, at = column + 1, at + 1
            if line.startswith(" ", at):
                column, at = column + 1, at + 1
            continue
        marker = _LIST_MARKER.match(line, at)
        if marker is None:
            return found
        column, at = column + marker.end() - at, marker.end()
        white = len(marker.group(1))
        found.append(column + (white if 1 <= white <= 4 else 1))
        column, at = column + min(white, 1), at + min(white, 1)


def _interrupts(line: str, paragraph: Sequence[int]) -> bool:
    """Whether ``line`` starts a block that ends the open ``paragraph`` (its containers, see
    :func:`_containers`) rather than going on with it: past the containers it keeps (a block
    quote's ``>``, a list item's indentation), a ``>`` or a list marker, indented at most 3
    columns. Where every container is kept, an ordered item must start at 1 (``2.`` cannot
    interrupt a paragraph)."""
    column = at = kept = 0
    for need in paragraph:
        back = column, at
        while at < len(line) and line[at] in " \t" and (need < 0 or column < need):
            column += 4 - column % 4 if line[at] == "\t" else 1
            at += 1
        if need < 0 and column - back[0] <= 3 and line.startswith(">", at):
            column, at = column + 1, at + 1
            if line.startswith(" ", at):
                column, at = column + 1, at + 1
        elif need < 0 or column < need:
            column, at = back
            break
        kept += 1
    white = at
    while white < len(line) and line[white] in " \t" and white - at < 4:
        white += 1
    if white - at > 3:
        return False
    if line.startswith(">", white):
        return True
    marker = _LIST_MARKER.match(line, white)
    if marker is None:
        return False
    number = line[white : marker.end() - len(marker.group(1)) - 1]
    return kept < len(paragraph) or not number or number == "1"


def _indents(prefix: str, item: bool = False, empty: bool = False) -> tuple[int, list[int]] | None:
    """Read a line's containers (``prefix``: white space, ``>`` and list markers) as CommonMark
    does, tabs to stops of 4: how far in its deepest block starts, in columns past the content
    of its innermost block quote, and the content column of each list item it opens (likewise).
    What follows a list marker and more than 4 columns is an indented code block: for a
    definition's line (not ``item``) that is ``None``; an item's content then starts a column
    past its marker, as it does for an item that is ``empty`` on its first line."""
    column = base = deepest = 0
    contents: list[int] = []
    at, size = 0, len(prefix)
    marker = -1  # where the last list marker ended; -1 when white space follows no marker
    while True:
        start = column
        while at < size and prefix[at] in " \t":
            column += 4 - column % 4 if prefix[at] == "\t" else 1
            at += 1
        if marker < 0:
            deepest = max(deepest, column - base)
        elif (at == size and empty) or column - start > 4:
            if not item:
                return None
            contents.append(marker + 1 - base)
            return deepest, contents
        else:
            contents.append(column - base)
        if at == size:
            return deepest, contents
        if prefix[at] == ">":
            column += 1
            at += 1
            base = column + 1  # its optional space: a space, or a column of a tab
            if at < size and prefix[at] == " ":
                column += 1
                at += 1
            marker = -1
        else:  # "-", "+", "*", or digits and "." or ")"
            while prefix[at] in "0123456789":
                column += 1
                at += 1
            column += 1
            at += 1
            marker = column


def _held(text: str, lines: Sequence[tuple[int, int]]) -> set[int]:
    """Of the lines (their start and indentation, see :func:`_indents`; sorted) those a list
    item may hold: their indentation is 0 to 3 columns past the content of an item opened
    before them, and no paragraph at the left margin after a blank line came between. Linear:
    each list item and each such paragraph is read once."""
    items = _LIST_ITEM.finditer(text)
    paragraphs = _UNINDENTED_PARAGRAPH.finditer(text)
    item = next(items, None)
    paragraph = next(paragraphs, None)
    contents: set[int] = set()
    held = set()
    for start, indent in checked(lines):
        while item is not None or paragraph is not None:
            at_item = item.start() if item is not None else len(text)
            at_paragraph = paragraph.end() if paragraph is not None else len(text)
            if min(at_item, at_paragraph) >= start:
                break
            if paragraph is not None and at_paragraph <= at_item:
                contents.clear()
                paragraph = next(paragraphs, None)
            elif item is not None:
                empty = text.startswith("\n", item.end()) or item.end() == len(text)
                indents = _indents(item.group(), item=True, empty=empty)
                contents.update(indents[1] if indents is not None else ())
                item = next(items, None)
        if any(indent - back in contents for back in range(4)):
            held.add(start)
    return held


def _link_texts(
    answer: str, text: str, definitions: Mapping[str, str]
) -> list[tuple[int, int, str]]:
    """The text of each markdown link in ``answer`` (``text``: it with code filled in), as its
    brackets' start and end and the link's destination.

    Brackets pair as CommonMark pairs them: nested to any depth, not escaped, not in code, and
    within a paragraph (a blank line closes every bracket still open). A pair is a link when
    ``(`` follows it (an inline link), a label that a definition names (``[text][label]``, or
    ``[text][]``), or when no label follows and its own text is a defined label (a shortcut
    reference). A pair holding a link is no link (links do not nest). Linear: each bracket is
    read once; the brackets still open are kept as integers in an array.
    """
    structure = _ESCAPE.sub("xx", text) if "\\" in text else text
    found = []
    # each bracket still open: its offset times 4, plus 2 when it holds a link, plus 1 when it
    # holds brackets
    opened = array("q")
    for match in checked(_BRACKET_OR_BLANK.finditer(structure)):
        at = match.start()
        char = structure[at]
        if char == "[":
            opened.append(at << 2)
        elif char != "]":
            del opened[:]  # a blank line
        elif opened:
            entry = opened.pop()
            start, end = entry >> 2, at + 1
            target = (
                None
                if entry & 2
                else _link_text_target(answer, text, start, end, entry & 1, definitions)
            )
            if target is not None:
                found.append((start, end, target))
            if opened:
                opened[-1] |= 1 | (2 if target is not None or entry & 2 else 0)
    return found


def _link_text_target(
    answer: str, text: str, start: int, end: int, nested: int, definitions: Mapping[str, str]
) -> str | None:
    """The destination of the link whose text is ``answer[start:end]`` (brackets included),
    or ``None`` when it is no link. A ``(`` that starts no inline link (``[a](b``, never
    closed) leaves it a shortcut reference, as CommonMark reads it."""
    if text.startswith("(", end):
        target = link_destination(answer, end)
        if target is not None:
            return target
    if not definitions:
        return None
    reference = _REFERENCE.match(text, end)
    if reference is not None and reference.end(1) > reference.start(1):
        label = answer[reference.start(1) : reference.end(1)]
    elif nested or end - start > 1001:
        return None  # a label holds no bracket, and at most 999 characters
    else:
        label = answer[start + 1 : end - 1]
    return definitions.get(reference_key(label))


def _anchor_texts(answer: str, text: str) -> list[tuple[int, int, str]]:
    """The text of each HTML link of ``answer`` (``text``: it with code filled in) with an
    ``href``, as its start, end and the ``href``: from the end of its ``<a ...>`` tag to the next
    ``<a`` or ``</a>`` tag, or the end of the answer (a browser links what follows an unclosed
    one)."""
    found = []
    opened: tuple[int, str] | None = None
    for match in checked(_ANCHOR_TAG.finditer(text)):
        if _escaped(answer, match.start()):
            continue  # "\\<a ...>" is text
        if opened is not None:
            found.append((opened[0], match.start(), opened[1]))
            opened = None
        if match.group(1) is None:
            href = _href(answer[match.start() : match.end()])
            if href is not None:
                opened = (match.end(), href)
    if opened is not None:
        found.append((opened[0], len(answer), opened[1]))
    return found


def _href(tag: str) -> str | None:
    """The ``href`` of the start tag ``tag`` (``<a ...>``), its first one as HTML reads it;
    ``None`` when it has none."""
    at = 2
    while (attribute := _ATTRIBUTE.match(tag, at)) is not None:
        if attribute.group(1).lower() == "href":
            return next((value for value in attribute.groups()[1:] if value is not None), "")
        at = attribute.end()
    return None


def _escaped(answer: str, at: int) -> bool:
    """Whether the character at ``at`` follows an odd run of backslashes (it is escaped)."""
    before = at
    while before > 0 and answer[before - 1] == "\\":
        before -= 1
    return (at - before) % 2 == 1


def reference_key(label: str) -> str:
    """A link label as references match it: case-folded, white space collapsed, and the block
    quote markers that start its later lines dropped."""
    if "\n" in label or "\r" in label:
        label = _LABEL_BREAK.sub(" ", label)
    return " ".join(label.casefold().split())


def blanked(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with every span (sorted by start, possibly overlapping) turned to spaces, line
    breaks kept."""
    pieces = []
    done = 0
    for start, end in spans:
        begin = max(start, done)
        if end <= begin:
            continue
        pieces.append(text[done:begin])
        pieces.append(_NOT_NEWLINE.sub(" ", text[begin:end]))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)
