"""The text and the title of a Markdown file as its rendered page shows them.

A renderer (CommonMark's, GitHub's) passes raw HTML through, so a comment (``<!-- ... -->``), an
element with the ``hidden`` attribute or a ``style="display:none"`` in a README is shown to no
one who reads the page, and a link reference definition (``[//]: # (...)``, the usual way to
write a comment in Markdown) is not shown either, nor is a footnote's label (the page numbers its
notes) or a footnote that nothing refers to (no renderer shows it): a way to put words before a
model that no reader sees. A file that holds none of these is read as written, byte for byte. One
that holds any (raw HTML outside code, as CommonMark defines it: an HTML block or inline HTML,
comments included; a reference definition; or a footnote, ``[^1]: ...``) is read as its page
shows it: rendered by markdown-it-py (CommonMark, with tables, strikethrough and GitHub's
footnotes, shown at the page's end) and read with :func:`~ctxasm.store.html_text.visible_text`.
Which is which is decided from markdown-it's own tokens, so markup in a fenced or indented code
block or in a code span (literal text, shown) is never taken for HTML.

The title is the first level-one ATX heading (a line that starts with ``#`` and a space or a
tab) with some text, as it is written, without its closing ``#`` run (one after a space or a
tab: ``# Learn C#`` keeps its ``#``), outside fenced code (fences as CommonMark reads them at the
top level: a fence a list item holds is read as one at the top level). In a rendered file, it is
the first such heading that the page shows with some text (one inside a comment or an HTML block
is none; one inside hidden HTML is not shown; an image alone shows none): as written where it
holds only text, code, emphasis and strikethrough, else its shown text (a link's label, an
image's description, a footnote's label and inline HTML are not shown); else ``None`` (a
``<title>`` element is no title: a rendered Markdown page shows none).

What markdown-it cannot read is refused (:class:`UnreadableMarkdownError`), never read another way:
reading the source as an HTML page shows what the rendered page hides (a definition; a hidden
element "closed" by an end tag written in a code span). That is a file whose blocks (quotes,
lists) nest ``MAX_NESTING`` deep (markdown-it reads nothing inside the block at its limit, so
HTML there would go unseen), one with a paragraph whose brackets nest ``INLINE_NESTING`` - 1
deep (past that markdown-it reads no link: its destination and title, which the page never
shows, would be read as text), and one that may hide text and is longer than
``MAX_PARSED_CHARS``: reading is linear in the file on the shapes measured
(``benchmarks/dos_scaling.py``: about 1 us a character for prose, 20 for a table's rows, 45 on
the slowest shape, tables of short rows filled out, which also hold about 1.5 kB of memory a
character), so that bounds a file's time. Three of markdown-it's costs would grow faster than
the file, and are bounded: a link's destination and title, which every link that uses a
definition copies from it, are dropped before the page is rendered (``visible_text`` reads
neither); a table's short rows are filled out to its header's width for ``TABLE_FILL`` cells a
table at most (markdown-it fills 65,536: a table's cells grow with the square of its size up to
there), and the rows after that are read as a paragraph; and inline markup is read
``INLINE_NESTING`` deep (brackets in brackets: a link's text is scanned again at each level, so
a run of ``![`` costs time in proportion). A footnote reference's label is looked for once
per run of text, not once per ``[^`` in it (the footnote plugin's scan made a run of ``[^``
quadratic), and is at most ``MAX_LABEL_CHARS`` long. Another exception from the parser (a
``RecursionError`` among them) is the caller's to report.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING, cast

from ctxasm.store.html_text import visible_text

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.parser_block import RuleFuncBlockType
    from markdown_it.rules_core import StateCore
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token

__all__ = [
    "INLINE_NESTING",
    "MAX_LABEL_CHARS",
    "MAX_NESTING",
    "MAX_PARSED_CHARS",
    "TABLE_FILL",
    "UnreadableMarkdownError",
    "markdown_text",
]

_HEADING = re.compile(r"^#[ \t]+(\S[^\n]*)$", flags=re.MULTILINE)
# A fence that opens fenced code, with what follows it on its line, and one that may close it.
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_END = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
# The inline children of a heading whose text as written is what the page shows of it.
_AS_WRITTEN = frozenset(
    {"text", "code_inline", "em_open", "em_close", "strong_open", "strong_close", "s_open"}
    | {"s_close"}
)
# Around each candidate title in the rendered page: NUL cannot come from the file (markdown-it
# reads it as U+FFFD, as CommonMark asks), and visible_text keeps it, so these show where, and
# whether, a heading is shown.
_OPEN = "\x00{}\x01"
_CLOSE = "\x00\x02"
_MARKS = re.compile(r"\x00(?:\d+\x01|\x02)")
# The longest file parsed as Markdown (about 4 s for prose, 3 minutes at worst); a longer one
# that may hide text is refused.
MAX_PARSED_CHARS = 1 << 22
# How deep blocks are read (markdown-it's maxNesting; its CommonMark preset reads 20, which a
# list of ten levels reaches): 100 levels stay well inside Python's recursion limit.
MAX_NESTING = 100
# How deep inline markup is read (the same option of markdown-it, for the inline rules: its
# CommonMark preset's 20). A link's text nests brackets in brackets no deeper in practice.
INLINE_NESTING = 20
# The longest footnote label read (CommonMark's limit on a link label).
MAX_LABEL_CHARS = 999
# What ends a footnote reference's label ("]"), or shows that there is none (a space, a line).
_LABEL_END = re.compile(r"[ \n\]]")
_LABEL_SCAN = "ctxasm_label_scan"  # the env key of the last label scan (see _footnote_ref)
# How many empty cells a table's short rows are filled with at most (markdown-it's limit is
# 65,536): a file of such tables makes about one cell a character (tables of 8 columns and 8
# rows of one cell), as a table's own empty cells do (rows of "|||"); one of 16 by 16, under a
# limit of 256, made 2.5 and took 3 times as long.
TABLE_FILL = 64


class UnreadableMarkdownError(ValueError):
    """A Markdown file this reader cannot read for what its page hides; the message says why."""


@cache
def _parser() -> MarkdownIt:
    """The parser: blocks read ``MAX_NESTING`` deep, and their inline tokens parsed by a
    parser alike that reads ``INLINE_NESTING`` deep (markdown-it reads both limits from one
    option, which is not to change while a parser that threads share is parsing)."""
    parser = _configured(MAX_NESTING)
    parser.core.ruler.at("inline", _inline_rule(_configured(INLINE_NESTING)))
    return parser


def _configured(nesting: int) -> MarkdownIt:
    """A parser of CommonMark, tables, strikethrough and GitHub's footnotes, reading markup
    ``nesting`` deep, its tables filled with ``TABLE_FILL`` cells at most."""
    from markdown_it import MarkdownIt  # imported when a file needs it: most runs never do
    from mdit_py_plugins.footnote import footnote_plugin

    parser = MarkdownIt("commonmark", {"maxNesting": nesting})
    # GitHub's footnotes: "[^1]: ..." is a note shown at the page's end, not a definition
    parser.use(footnote_plugin, inline=False)
    parser.inline.ruler.at("footnote_ref", _footnote_ref)
    # (the blocks a table may interrupt, as markdown-it registers the rule)
    parser.block.ruler.at("table", _filled_table(), {"alt": ["paragraph", "reference"]})
    return parser.enable(["table", "strikethrough"])


def _filled_table() -> RuleFuncBlockType:
    """markdown-it's table rule, filling ``TABLE_FILL`` cells a table at most. The rule reads
    its limit from its module's ``MAX_AUTOCOMPLETED_CELLS`` at each call; setting that would
    change it for every user of markdown-it in the process, so this is the rule's code run over
    a copy of its module's globals that holds this limit."""
    from markdown_it.rules_block.table import table as rule

    if "MAX_AUTOCOMPLETED_CELLS" not in rule.__code__.co_names:
        # a table's cells would grow with the square of the file: refuse rather than hang
        raise RuntimeError("markdown-it's table rule no longer reads MAX_AUTOCOMPLETED_CELLS")
    scope = {**rule.__globals__, "MAX_AUTOCOMPLETED_CELLS": TABLE_FILL}
    copy = types.FunctionType(rule.__code__, scope, rule.__name__, rule.__defaults__)
    return cast("RuleFuncBlockType", copy)


def _footnote_ref(state: StateInline, silent: bool) -> bool:
    """The footnote plugin's reference rule, run only where a label of at most
    ``MAX_LABEL_CHARS`` closes: the plugin scans from each ``[^`` to the first space, line end
    or ``]``, so a run of ``[^`` took time in its square. Where that scan ends is kept (in the
    env) for the next ``[^`` before it, so the text is scanned once."""
    from mdit_py_plugins.footnote.index import footnote_ref

    src, start, end = state.src, state.pos + 2, state.posMax
    if not src.startswith("[^", state.pos):
        return False
    scan = state.env.get(_LABEL_SCAN)
    # (text, from, to, found): no label end in [from, to), and one at "to" where found; where
    # none was found, that says nothing past "to", where this scan may reach (a link's label
    # is parsed with a nearer end than the text around it)
    if not (
        isinstance(scan, tuple)
        and scan[0] is src
        and scan[1] <= start <= scan[2]
        and (scan[3] or end <= scan[2])
    ):
        found = _LABEL_END.search(src, start, end)
        scan = (src, start, end, False) if found is None else (src, start, found.start(), True)
        state.env[_LABEL_SCAN] = scan
    stop, closes = scan[2], scan[3]
    if not closes or stop >= end or src[stop] != "]" or stop - start > MAX_LABEL_CHARS:
        return False
    return bool(footnote_ref(state, silent))


def _inline_rule(inline: MarkdownIt) -> Callable[[StateCore], None]:
    """markdown-it's core rule that parses the inline tokens, parsing them with ``inline``;
    a paragraph whose brackets nest past what ``inline`` reads is refused."""

    def parse_inline(state: StateCore) -> None:
        for token in state.tokens:
            if token.type == "inline":
                _check_brackets(token.content)
                if token.children is None:
                    token.children = []
                inline.inline.parse(token.content, inline, state.env, token.children)

    return parse_inline


def _check_brackets(text: str) -> None:
    """Refuse ``text`` (one paragraph's, a heading's or a cell's) where its brackets nest
    ``INLINE_NESTING`` - 1 deep: markdown-it reads a link no deeper, and a link it does not read
    leaves its destination and title, which the page never shows, as text. Escaped brackets
    and those in code count too (more is refused, never less)."""
    if text.count("[") < INLINE_NESTING - 1:
        return
    depth = deepest = 0
    for bracket in _BRACKETS.findall(text):
        depth = depth + 1 if bracket == "[" else max(0, depth - 1)
        deepest = max(deepest, depth)
    if deepest >= INLINE_NESTING - 1:
        raise UnreadableMarkdownError(
            f"brackets nest {INLINE_NESTING - 1} deep or more in one paragraph, deeper than "
            "links are read"
        )


_BRACKETS = re.compile(r"[\[\]]")


def markdown_text(raw: str) -> tuple[str, str | None]:
    """The text of the Markdown file ``raw`` as indexed (``raw`` itself where the page hides
    nothing) and its title (``None`` when it has none)."""
    # Raw HTML starts with "<", and a reference definition and a footnote hold "]:": without
    # either, nothing is hidden, and the file need not be parsed.
    if "<" not in raw and "]:" not in raw:
        return raw, _markdown_title(_lines(raw))
    if len(raw) > MAX_PARSED_CHARS:
        raise UnreadableMarkdownError(
            f'it is longer than {MAX_PARSED_CHARS:,} characters and holds "<" or "]:", '
            "so raw HTML or a link reference definition in it may hide text, and it is too long "
            "to render; split it"
        )
    lines = _lines(raw)
    source = "\n".join(lines)  # markdown-it's lines, numbered
    parser = _parser()
    env: dict[str, object] = {}
    tokens = parser.parse(source, env)
    limit = parser.options.maxNesting
    html = False
    for token in _walk(tokens):
        if token.nesting == 1 and token.level + 1 >= limit:
            # nothing inside the block at the limit was read: HTML there would go unseen
            raise UnreadableMarkdownError(f"its blocks (quotes, lists) nest {limit} deep or more")
        html = html or token.type in ("html_block", "html_inline")
        if token.type in ("link_open", "image"):
            # A destination and a title are copied into every link that uses a definition:
            # rendered, n links to an n-character one would make n * n characters.
            token.attrs = {}
    if not (html or env.get("references") or _has_footnotes(env)):
        return raw, _markdown_title(lines)
    headings = _mark_headings(tokens, lines)
    shown, _ = visible_text(parser.renderer.render(tokens, parser.options, env))
    title = _shown_title(shown, headings)
    text = _MARKS.sub("", shown)
    # Lines stripped and blank ones dropped again, as visible_text leaves them: a heading's
    # marks may stand beside white space or alone on a line.
    text = "\n".join(filter(None, (line.strip() for line in text.split("\n"))))
    return text, title


def _has_footnotes(env: dict[str, object]) -> bool:
    """Whether the parsed file defines a footnote: its label is hidden (the page numbers the
    notes it shows), and so is all of it where nothing refers to it. (The plugin notes every
    label defined, and only those, in ``refs``; it makes the entry empty at any ``[``.)"""
    footnotes = env.get("footnotes")
    return isinstance(footnotes, dict) and bool(footnotes.get("refs"))


def _lines(text: str) -> list[str]:
    """The lines of ``text`` as markdown-it reads them (ended by a CR, an LF or both)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _walk(tokens: Sequence[Token]) -> Iterator[Token]:
    """Every token, its children (an inline token's, an image's, for its alt text) and theirs,
    depth first, without recursion (images nest in images as deep as a file writes them)."""
    stack = list(reversed(tokens))
    while stack:
        token = stack.pop()
        yield token
        if token.children:
            stack.extend(reversed(token.children))


def _heading_text(heading: str) -> str:
    """A heading line's text after ``# ``, without its closing sequence: a run of ``#`` that
    follows a space or a tab, or that is all of it (cut by ``rstrip``: a pattern of white space,
    ``#`` and white space at the end of a lazy group backtracked over a long run of spaces, time
    growing with its cube)."""
    text = heading.rstrip(" \t")
    before = text.rstrip("#")
    return before.rstrip(" \t") if not before or before[-1] in " \t" else text


def _markdown_title(lines: Sequence[str]) -> str | None:
    """The first level-one ATX heading with some text outside fenced code, as written, in one
    pass over the lines. A fence opens fenced code: a run of three backticks or tildes or more,
    indented up to three spaces (no backtick may follow a run of backticks on its line); a line
    of as many of its character or more, so indented, with only spaces or tabs after them,
    closes it, or the end of the file does."""
    fence = ""  # the run that opened the fenced code the line is in, or ""
    for line in lines:
        if fence:
            end = _FENCE_END.fullmatch(line)
            if end is not None and end[1][0] == fence[0] and len(end[1]) >= len(fence):
                fence = ""
        elif (opening := _FENCE.match(line)) is not None and not (
            opening[1][0] == "`" and "`" in opening[2]
        ):
            fence = opening[1]
        elif (heading := _HEADING.match(line)) is not None and (text := _heading_text(heading[1])):
            return text
    return None


def _mark_headings(tokens: Sequence[Token], lines: Sequence[str]) -> list[str | None]:
    """Put marks around each level-one ATX heading that starts its line; for each, in order,
    its text as written where that is what the page shows of it (it holds only text, code,
    emphasis and strikethrough), else ``None`` (its shown text is its title)."""
    from markdown_it.token import Token

    headings: list[str | None] = []
    for index, token in enumerate(tokens[:-1]):
        if token.type != "heading_open" or token.tag != "h1" or token.map is None:
            continue
        match = _HEADING.match(lines[token.map[0]])
        inline = tokens[index + 1]
        if match is None or inline.children is None:  # in a list or a quote, as before
            continue
        written = all(child.type in _AS_WRITTEN for child in inline.children)
        opening = Token("text", "", 0, content=_OPEN.format(len(headings)))
        inline.children = [opening, *inline.children, Token("text", "", 0, content=_CLOSE)]
        headings.append(_heading_text(match.group(1)) if written else None)
    return headings


def _shown_title(shown: str, headings: Sequence[str | None]) -> str | None:
    """The title from the first marked heading that ``shown`` (the rendered page's text) shows
    with some text (up to its closing mark, or the end of its line where what follows in it is
    hidden): as written, or as shown where that is not what it shows. One pass over the marks:
    each heading's text is looked for only up to the next mark."""
    marks = list(_MARKS.finditer(shown))
    for index, mark in enumerate(marks):
        if mark.group() == _CLOSE:
            continue
        start = mark.end()
        after = marks[index + 1] if index + 1 < len(marks) else None
        end = len(shown) if after is None else after.start()
        if after is None or after.group() != _CLOSE:  # the rest of it is hidden
            line_end = shown.find("\n", start, end)
            end = end if line_end < 0 else line_end
        heading = " ".join(shown[start:end].split())
        if heading:
            written = headings[int(mark.group()[1:-1])]
            return heading if written is None else written
    return None
