"""Checking the ``[Source N]`` citations of a model's answer against the sources it was given.

The formats label every included passage ``Source 1``, ``Source 2``, ... and ask the model to
cite them. :func:`check_citations` reads the answer back: which labels it cites, which of those
name no included source (a hallucinated citation), which sources it never cites, and which of
its sentences cite nothing. :func:`link_citations` turns valid citations into links to their
sources' urls.

Markers are read on folded text (:mod:`ctxasm.formatting.labels`: NFKC, digits of any
script, Latin look-alikes, CJK brackets, invisible characters dropped), case-insensitively::

    item    = [ word [ ":" | "#" ] ] number [ dash [ word [ ":" | "#" ] ] number ]
    list    = item { ("," | ";" | "&" | "and" | ", and") item }
    bracket = "[" list [ "." | "," | ";" | ":" ] "]"      followed by "(": a markdown link
    paren   = "(" list starting with a word ")"
    bare    = list starting with a word, not inside a word, not a version ("Source 2.0")
    word    = "source" | "sources" (or "s0urce"), then spaces or "_";  number = 1 to 9 digits

A marker that Markdown renders as (part of) a link carries the link's destination: a bracket
followed by ``(``, a marker inside a link's text (``[see Source 2](...)``, over line breaks
too), a reference (``[Source 2][x]``), a bracket a definition names (``[Source 2]: https://...``
at the start of a line, in block quotes and list items too, makes every ``[Source 2]`` a link)
and a marker inside an HTML link (``<a href="..."><b>[Source 2]</b></a>``); see
``docs/citations.md`` for the rules.

So ``[Source 2]``, ``[2]``, ``[1, 3]``, ``[Sources 1 and 3]``, ``[2-4]``, ``[Source: 2]``,
``[Source 2](https://...)``, ``(Source 2)``, ``Source 2``, ``［Source ２］``, ``【Source 2】``,
``[Ѕource 2]`` (Cyrillic) and ``[Source ²]`` are citations; ``[the docs](https://...)``,
``[x]``, ``[note]``, ``(2)`` and ``Source 2.0`` are not. In closed code (a fenced block, or
inline code) only worded markers count: ``x[1]`` is an index there. A fence that is never closed
is no fence. A range cites every number in it; a reversed range (``[4-2]``) or one of more than
:data:`MAX_RANGE` numbers is one invalid citation, never expanded, and so is a range once the
answer's ranges have expanded to as many numbers as it has characters (plus :data:`MAX_RANGE`).
Brackets inside a url are the url's (``?page[2]=x`` in a link's destination, an autolink
``<https://...>`` or a bare ``https://...``), and :func:`link_citations` percent-encodes them.
``0``, a number past the last source and a number no included source carries are invalid, and
so is a worded bracket whose number is no label (``[Source 1.5]``, ``[Source 1e3]``, ten digits
or more), as written.
Every scan is linear in the length of the answer, and so are the report and the linked answer
(times a url's length).

Sentences: the answer is cut at line breaks, then with :func:`ctxasm.lexical.sentence_spans`.
A marker belongs to the sentence it ends (``... in 1889 [1].`` and ``... in 1889. [1]`` both
cite that sentence). Not counted as sentences: blank ones, ones made only of markers and
punctuation, markdown headings (``# ...``), lead-ins that end with ``:``, and code; a list
item's number or bullet (``1.``, ``2)``, ``-``) is not part of its sentence.
"""

from __future__ import annotations

import html
import re
import unicodedata
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, urlsplit

from ctxasm.data import Assembly, Report
from ctxasm.deadline import checkpoint
from ctxasm.errors import ArgumentTypeError, RequestError
from ctxasm.formatting.labels import CITATION, ITEM, Folded, fold
from ctxasm.lexical import sentence_spans
from ctxasm.validation import plain, received, shown, visible

__all__ = [
    "FORMS",
    "LINK_ALLOWANCE",
    "LINK_GROWTH",
    "MAX_RANGE",
    "REPORT_ALLOWANCE",
    "REPORT_GROWTH",
    "Citation",
    "CitationReport",
    "check_citations",
    "completion_text",
    "link_citations",
]

MAX_RANGE = 100
"""The most numbers one range may cite; a longer range is an invalid citation."""

FORMS = (
    "bracket",
    "markdown_link",
    "parenthesis",
    "bare",
    "fullwidth",
    "cjk_bracket",
    "superscript",
    "confusable",
    "unicode",
)
"""The spellings a citation is recognised in (see :class:`Citation`)."""

MAX_MARKERS = 50_000
"""The most citation markers an answer may hold, each number of a list counted as one marker
(``[Source 1, 2, 3]`` counts 3; each costs a few tens of microseconds to read: a request of
millions would hold a worker for many seconds); more is an error on ``answer``."""
REPORT_GROWTH = 16
REPORT_ALLOWANCE = 1 << 24
"""A report's JSON may take ``REPORT_GROWTH`` times the answer and its sources' ids and urls,
plus ``REPORT_ALLOWANCE`` characters (16 MiB); :meth:`CitationReport.to_dict` refuses a larger
one."""
# The longest marker a citation shows whole (``Citation.raw``); a longer one is cut.
_RAW_SHOWN = 200
# The characters of one citation's JSON besides its id, url, marker and link: keys, label,
# validity, form and punctuation.
_CITATION_JSON = 160

LINK_STYLES = ("markdown",)
# A linked answer adds at most LINK_GROWTH times the answer's length plus LINK_ALLOWANCE
# characters: a source's url comes from its document and may be long, and each citation of it
# (each number of a range) repeats it.
LINK_GROWTH = 16
LINK_ALLOWANCE = 1 << 20

_WORDED = re.compile(r"sources?", re.IGNORECASE)
# A worded bracket whose number is no label: "[Source 1.5]", "[Source 1e3]", "[Source 2-]", or
# ten digits and more. No marker (the grammar takes 1 to 9 digits), so one invalid citation, as
# written, instead of nothing at all. The run stops at a bracket, so matches never overlap.
# A worded bracket of numbers, signs and separators that no marker reads whole: "[Source -1]",
# "[Source 1, 2.5]", "[Sources 1 and 2e3]". The run is possessive (nothing is given back to
# look for the "]" earlier), so a long one that never closes is read once.
_NO_LABEL = re.compile(
    r"\[\s*sources?\s*(?:[:#]\s*)?(?P<number>[-+]?[0-9](?:[0-9.,eE+_\s-]|and\b)*+)\]",
    re.IGNORECASE,
)
_LABEL = re.compile(r"Source ([1-9][0-9]{0,8})")  # as many digits as an answer's markers
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
_BACKTICKS_OR_LINE = re.compile(r"`+|\n")
_LINE = re.compile(r"[^\r\n]+")
_WORD = re.compile(r"\w")
_SAFE_SCHEMES = frozenset({"http", "https", ""})
# The destination of a markdown link, after the marker's "]": "(" then "<...>" or a run with
# no white space and parentheses nested one deep, as CommonMark writes urls such as
# wiki/Plato_(philosopher). Each run stops at the next parenthesis, so scans do not overlap.
_LINK_TARGET = re.compile(r"\(\s*(?:<([^<>\n]*)>|([^\s()]*(?:\([^\s()]*\)[^\s()]*)*))")
# A link reference definition at the start of a line, "[label]: destination" (CommonMark 4.7),
# after the containers of its line (block quotes, list items: see _indents): every "[label]" of
# the answer, and every "[text][label]", renders as a link to it. Its label may wrap lines, not
# over a blank one. Possessive: white space is never given back, so a line's containers are
# read once, and a label stops at the first bracket: each attempt reads at most to the next "["
# (and 999 characters).
_DEFINITION = re.compile(
    r"^(?P<prefix>(?:[ \t]*+(?:>|(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t])))*+[ \t]*+)"
    r"\[(?P<label>(?:[^\[\]\\\n]|\\[^\n]?+|\n(?![ \t\r]*+\n)){1,999}+)\]:"
    r"[ \t]*+\n?+(?:[ \t]*+>)*+[ \t]*+(?:<(?P<angled>[^<>\n]*+)>|(?P<bare>[^\s<]\S*+))",
    re.MULTILINE,
)
# The containers of a line that opens a list item ("- ", "1. ", "  * ", "> 2) "), which may hold
# a definition indented 4 columns or more on a later line.
_LIST_ITEM = re.compile(
    r"^(?=(?:[ \t]*+>)*+[ \t]*+(?:[-+*]|[0-9]{1,9}[.)])(?:[ \t]|$))"
    r"(?:[ \t]*+(?:>|(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t]|$)))*+[ \t]*+",
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
_LABEL_BREAK = re.compile(r"\n[ \t>]*")
# A link's destination, after the "]" that ends its text: "(" and what _LINK_TARGET reads (its
# runs stop at a parenthesis or white space, so the scan is linear).
_DESTINATION = re.compile(r"(?<=\])\(\s*(?:<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)")
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
# A list item's number or bullet at the start of a line: not a sentence of its own.
_LIST_MARK = re.compile(r"[ \t]*(?:[0-9]{1,9}[.)]|[-*+\u2022])[ \t]+")


@dataclass(frozen=True, slots=True)
class Citation:
    """One cited number: its label, and the source it names (``None`` when it names none).

    ``raw`` is the marker as the answer wrote it (``[Ѕource 9]``, ``Sources 1 and 2``; one of
    over 200 characters is cut, ending in ``…``) and
    ``form`` how it was recognised, one of :data:`FORMS`: the normalisation it needed
    (``confusable``, ``cjk_bracket``, ``fullwidth``, ``superscript``, ``unicode``) or else its
    shape (``bracket``, ``markdown_link``, ``parenthesis``, ``bare``). Every number of one marker
    shares them. Two citations are equal when label, id, url and validity are.
    """

    label: str
    id: str | None
    url: str | None
    valid: bool
    raw: str = field(default="", compare=False)
    form: str = field(default="bracket", compare=False)
    link: str | None = field(default=None, compare=False)

    @property
    def mislinked(self) -> bool:
        """A valid citation written as a link to somewhere else than its source's url
        (``[Source 1](https://elsewhere.example)``, or a link where the source has no url)."""
        return self.valid and self.link is not None and not _same_target(self.link, self.url)

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "id": self.id,
            "url": self.url,
            "valid": self.valid,
            "raw": self.raw,
            "form": self.form,
            "link": self.link,
            "mislinked": self.mislinked,
        }


@dataclass(frozen=True, slots=True)
class CitationReport:
    """What an answer cites, checked against the sources of its assembly.

    ``citations`` has one entry per cited number, in order of appearance (a repeated citation
    appears again). ``invalid`` holds the distinct invalid labels in first-seen order;
    ``cited_ids`` the distinct ids validly cited, in first-citation order; ``uncited_ids`` the
    included ids never validly cited, in label order. ``uncited_sentences`` are the answer's
    sentences that carry no citation marker at all; ``coverage`` is the share of sentences
    with at least one valid citation (``1.0`` for an answer with no sentences: nothing in it
    lacks support).
    """

    citations: tuple[Citation, ...]
    invalid: tuple[str, ...]
    cited_ids: tuple[str, ...]
    uncited_ids: tuple[str, ...]
    uncited_sentences: tuple[str, ...]
    coverage: float
    mislinked: tuple[str, ...] = ()
    # The characters of the answer and its sources' ids and urls, which bound to_dict()
    _given: int = field(default=0, repr=False, compare=False)

    @property
    def all_valid(self) -> bool:
        """Whether every citation names an included source, and every one written as a link
        links to that source's url (true for an answer citing none)."""
        return not self.invalid and not self.mislinked

    @property
    def forms(self) -> dict[str, int]:
        """How many citations were recognised in each form, in order of first appearance."""
        counts: dict[str, int] = {}
        for citation in self.citations:
            counts[citation.form] = counts.get(citation.form, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data. A :class:`~ctxasm.errors.RequestError` (on ``answer``)
        when that would take more than :data:`REPORT_GROWTH` times the answer and its sources'
        ids and urls, plus :data:`REPORT_ALLOWANCE` characters: every citation repeats its
        source's id and url, so a long url cited many times would make it hundreds of times
        its input (counted before anything is built)."""
        size = sum(
            _CITATION_JSON + len(c.id or "") + len(c.url or "") + len(c.raw) + len(c.link or "")
            for c in self.citations
        )
        if size > REPORT_GROWTH * self._given + REPORT_ALLOWANCE:
            raise RequestError(
                f"the report of this answer would take about {size:,} characters of JSON: its "
                f"{len(self.citations):,} citations each repeat their source's id and url; a "
                f"report may take {REPORT_GROWTH} times the answer and the sources' ids and "
                f"urls, plus {REPORT_ALLOWANCE:,} characters. Check a shorter answer, or "
                "sources with shorter urls",
                field="answer",
            )
        return {
            "citations": [citation.to_dict() for citation in self.citations],
            "invalid": list(self.invalid),
            "cited_ids": list(self.cited_ids),
            "uncited_ids": list(self.uncited_ids),
            "uncited_sentences": list(self.uncited_sentences),
            "coverage": self.coverage,
            "mislinked": list(self.mislinked),
            "forms": self.forms,
        }


class _Source(NamedTuple):
    id: str
    url: str | None


class _Item(NamedTuple):
    """One number or range of a marker; ``first == last`` for a single number; ``capped``
    when the answer's ranges expanded to their limit before it (see :func:`_capped`)."""

    first: int
    last: int
    capped: bool = False
    written: str | None = None  # a number that is no label, as written (see _NO_LABEL)

    @property
    def expandable(self) -> bool:
        return self.first <= self.last and self.last - self.first < MAX_RANGE and not self.capped

    def label(self) -> str:
        if self.written is not None:
            return f"Source {self.written}"
        if self.first == self.last:
            return f"Source {self.first}"
        return f"Source {self.first}-{self.last}"


class _Marker(NamedTuple):
    start: int  # offsets in the answer as written
    end: int
    items: tuple[_Item, ...]
    worded: bool  # written with the word "source", as in [Source 1, 3]
    raw: str
    form: str  # as reported: the normalisation it needed, or else its shape
    in_code: bool
    shape: str  # bracket, markdown_link, parenthesis or bare, however it was written
    link: str | None  # a markdown link's destination, as written

    @property
    def linkable(self) -> bool:
        """A bracket marker outside code, not already a link: what :func:`link_citations`
        rewrites (by its shape: a full-width ``(Source ２)`` is no bracket marker)."""
        return not self.in_code and self.shape == "bracket"

    def citations(self, sources: Mapping[int, _Source]) -> Iterator[Citation]:
        # Every number of a marker repeats it: a long one (a list of thousands of numbers) is
        # shown shortened, so the report stays linear in the answer.
        raw = self.raw if len(self.raw) <= _RAW_SHOWN else f"{self.raw[: _RAW_SHOWN - 1]}…"
        for item in self.items:
            if not item.expandable:
                yield Citation(item.label(), None, None, False, raw, self.form)
                continue
            for number in range(item.first, item.last + 1):
                found = sources.get(number)
                label = f"Source {number}"
                if found is None:
                    yield Citation(label, None, None, False, raw, self.form, self.link)
                else:
                    yield Citation(label, found.id, found.url, True, raw, self.form, self.link)


def check_citations(answer: str, assembly: Assembly | Report | Mapping[str, Any]) -> CitationReport:
    """Check the citation markers of ``answer`` against the sources ``assembly`` included.

    ``assembly`` is an :class:`~ctxasm.data.Assembly`, its report, or the JSON of either (a
    mapping with ``report.included[]``, or ``included[]``, each with ``id``, ``label`` and
    ``url``). A malformed mapping raises
    :class:`~ctxasm.errors.RequestError` naming the field, such as ``report.included[2].label``.
    """
    answer = _answer(answer)
    sources = _sources(assembly)
    masked, markers = _scan(answer)
    citations = [citation for marker in markers for citation in marker.citations(sources)]
    cited = dict.fromkeys(c.id for c in citations if c.id is not None)
    sentences = _sentences(answer, masked, markers)
    supported = sum(
        any(c.valid for marker in found for c in marker.citations(sources))
        for _, found in sentences
    )
    given = len(answer) + sum(len(s.id) + len(s.url or "") for s in sources.values())
    return CitationReport(
        _given=given,
        citations=tuple(citations),
        invalid=tuple(dict.fromkeys(c.label for c in citations if not c.valid)),
        cited_ids=tuple(cited),
        mislinked=tuple(dict.fromkeys(c.label for c in citations if c.mislinked)),
        uncited_ids=tuple(
            dict.fromkeys(s.id for _, s in sorted(sources.items()) if s.id not in cited)
        ),
        uncited_sentences=tuple(text for text, found in sentences if not found),
        coverage=supported / len(sentences) if sentences else 1.0,
    )


def link_citations(
    answer: str, assembly: Assembly | Report | Mapping[str, Any], style: str = "markdown"
) -> str:
    """``answer`` with every valid bracket citation turned into a link to its source's url.

    ``[Source 2]`` becomes ``[Source 2](https://...)`` and ``[2]`` becomes ``[2](https://...)``;
    a list or range becomes one link per number (``[1, 3]`` -> ``[1](...), [3](...)``), each
    number that cannot be linked kept as a plain marker. Invalid citations, sources without a
    url and urls that are neither http(s) nor relative (``javascript:``, ``file:``) are left as
    they are, so is a marker with nothing to link, a marker in code, one in parentheses or a
    bare one (``Source 2``). Markers already linked are left alone, so linking twice changes
    nothing. The links add at most :data:`LINK_GROWTH` times the answer's length plus
    :data:`LINK_ALLOWANCE` characters (a megabyte); a marker whose links would go past that is
    left as it is.
    """
    if style not in LINK_STYLES:
        raise RequestError(
            f"unknown link style {style!r}; choose one of {', '.join(LINK_STYLES)}",
            field="style",
        )
    answer = _answer(answer)
    sources = _sources(assembly)
    urls = {number: url for number, s in sources.items() if (url := _link_target(s.url))}
    _, markers = _scan(answer)
    parts = []
    done = 0
    room = LINK_GROWTH * len(answer) + LINK_ALLOWANCE  # characters the links may add
    for marker in markers:
        if not marker.linkable:
            continue
        text = answer[marker.start : marker.end]
        linked = _linked(text, marker, urls, room + len(text))
        if linked is None:  # past the room: this marker stays as it is
            continue
        parts.append(answer[done : marker.start])
        parts.append(linked)
        room -= len(linked) - len(text)
        done = marker.end
    parts.append(answer[done:])
    return "".join(parts)


def _linked(text: str, marker: _Marker, urls: Mapping[int, str], most: int) -> str | None:
    """``text`` (the marker) linked, or ``None`` where that takes more than ``most``
    characters (measured as it is built, so a long range stops early)."""
    items = marker.items
    if len(items) == 1 and items[0].first == items[0].last:
        url = urls.get(items[0].first)
        if url is None:
            return text
        if text.isascii():
            label = text[1:-1].strip()
        else:  # its brackets may be wider, or carry marks: written anew, as ASCII
            label = f"Source {items[0].first}" if marker.worded else str(items[0].first)
        return f"[{label}]({url})" if len(label) + len(url) + 4 <= most else None
    if not any(
        item.expandable and any(n in urls for n in range(item.first, item.last + 1))
        for item in items
    ):
        return text
    prefix = "Source " if marker.worded else ""
    parts = []
    size = -2  # the first part has no ", " before it
    for item in items:
        numbers = range(item.first, item.last + 1) if item.expandable else (None,)
        for number in numbers:
            if number is None:
                label, url = f"[{prefix}{item.first}-{item.last}]", None
            else:
                label, url = f"[{prefix}{number}]", urls.get(number)
            size += len(label) + 2 + (0 if url is None else len(url) + 2)
            if size > most:
                return None
            parts.append(label if url is None else f"{label}({url})")
    return ", ".join(parts)


@lru_cache(maxsize=4096)  # an answer repeats its links
def _same_target(link: str, url: str | None) -> bool:
    """Whether a markdown link's destination ``link`` is ``url``: as given, as
    :func:`link_citations` writes it, or the same once percent-decoded."""
    if url is None:
        return False
    link = link.strip()
    given, linked, decoded, lowered, plain = _targets(url)
    if link in (given, linked):
        return True
    found = unquote(_references(link))  # as a renderer reads it, then as a browser does
    return found == decoded or (found.lower() == lowered and _plain(found) == plain)


# A character reference as CommonMark decodes one in a link: closed by ";" (html.unescape also
# reads about a hundred old names without it, "&copy" in "?a=1&copy=2", which neither markdown
# nor a browser decodes in a link).
_CHARACTER_REFERENCE = re.compile(
    r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{0,31});"
)


def _references(text: str) -> str:
    """``text`` with each character reference closed by ";" decoded."""
    if "&" not in text:
        return text
    return _CHARACTER_REFERENCE.sub(lambda found: html.unescape(found.group()), text)


def _plain(url: str) -> str:
    """``url`` with its scheme and host in lower case, which name the same place in any case."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    return parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower()).geturl()


@lru_cache(maxsize=64)  # a source's url is compared with every link that cites it
def _targets(url: str) -> tuple[str, str | None, str, str, str]:
    """``url`` as given (stripped), as :func:`link_citations` writes it, percent-decoded,
    that in lower case, and with its scheme and host in lower case (see :func:`_plain`):
    worked out once per url, not once per link (a long url cited by many different links
    was encoded again for each)."""
    url = url.strip()
    decoded = unquote(url)
    return url, _link_target(url), decoded, decoded.lower(), _plain(decoded)


def _link_target(url: str | None) -> str | None:
    """``url`` made safe inside a markdown link, or ``None`` when it should not be linked."""
    url = (url or "").strip()
    try:
        # Its scheme as a renderer reads it: markdown decodes character references in a link's
        # destination (and a browser does in an href), so "javascript&colon;..." is a
        # javascript: url, though it has no colon for urlsplit.
        schemes = {urlsplit(url).scheme.lower(), urlsplit(html.unescape(url)).scheme.lower()}
        encoded = quote(url, safe="/:?#@!$&'*+,;=%~")
    except (ValueError, UnicodeError):  # an unclosed IPv6 bracket; a lone surrogate
        return None
    if not url or not schemes <= _SAFE_SCHEMES:
        return None
    # Percent-encoding white space, parentheses and angle brackets keeps the url from ending
    # the link early.
    # Brackets too: a "[2]" in a query string ("?page[2]=x") would read as a citation.
    # And "&" is written "&amp;" (read back as "&"), so no character reference is left for a
    # renderer to decode into something the scheme check did not see.
    return encoded.replace("&", "&amp;")


def _scan(answer: str) -> tuple[str, list[_Marker]]:
    """The markers of ``answer``, and ``answer`` with code and markers blanked out (same
    length, so offsets agree) for cutting sentences.

    In code (a closed fence, or a pair of equal backtick runs on one line) only markers
    written with the word "source" count: ``x[1]`` in code is an index, ``[Source 9]`` is
    still a claim about a source.
    """
    code = _Code.of(_code_spans(answer))
    urls = _Code.of(_url_spans(answer, code))
    folded = fold(answer)
    markers = []
    cited = 0  # the numbers of the markers so far: a list of a million is a million citations
    for match in CITATION.finditer(folded.text):
        checkpoint()
        start = folded.original(match.start())
        if urls.holds(start):
            continue  # part of a url: "?page[2]=x", ".../[Source_4]"
        marker = _marker(folded, match, in_code=code.holds(start))
        if marker.in_code and not marker.worded:
            continue
        markers.append(marker)
        cited += len(marker.items)
        if cited > MAX_MARKERS:
            raise RequestError(
                f"the answer holds more than {MAX_MARKERS:,} citation markers (each number of "
                "a list counted); no answer a model writes cites that often: check that this "
                "is the answer",
                field="answer",
            )
    markers = _with_links(answer, _with_no_labels(folded, markers, code, urls), code)
    blanks = sorted([*code.spans, *((m.start, m.end) for m in markers)])
    return _blanked(answer, blanks), _capped(markers, len(answer) + MAX_RANGE)


def _url_spans(answer: str, code: _Code) -> list[tuple[int, int]]:
    """Where ``answer`` writes urls, outside code: link destinations (``[text](...)``),
    autolinks (``<https://...>``) and bare urls (``https://...`` or ``www....`` up to white
    space or "<", less the punctuation that ends a sentence), sorted and merged."""
    if "(" not in answer and "://" not in answer and "www." not in answer:
        return []
    spans = []
    for match in _DESTINATION.finditer(answer):
        if not code.holds(match.start()):
            spans.append((match.start(), match.end()))
    for match in _BARE_URL.finditer(answer):
        if not code.holds(match.start()):
            spans.append((match.start(), _url_end(answer, match)))
    return _merged(sorted(spans))


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


def _capped(markers: list[_Marker], limit: int) -> list[_Marker]:
    """``markers`` with the ranges that would take the numbers their ranges expand to, in
    order, past ``limit`` capped (one invalid citation each): ``[1-100, 1-100, ...]`` would
    otherwise make a report and a linked answer a hundred times the answer's length."""
    left = limit
    out = []
    for marker in markers:
        items = []
        for item in marker.items:
            size = item.last - item.first + 1
            if item.expandable and size > 1:
                if size > left:
                    items.append(item._replace(capped=True))
                    continue
                left -= size
            items.append(item)
        out.append(marker._replace(items=tuple(items)))
    return out


def _marker(folded: Folded, match: re.Match[str], in_code: bool) -> _Marker:
    start, end = match.start(), match.end()
    text = match.group()
    # One more than the answer may hold is enough to refuse it (see _scan).
    found = islice(ITEM.finditer(text), MAX_MARKERS + 1)
    items = tuple(_Item(int(item[1]), int(item[2] or item[1])) for item in found)
    shape = match.lastgroup or "bare"
    if shape == "bracket":
        shape = "markdown_link" if folded.text.startswith("(", end) else "bracket"
    elif shape == "paren":
        shape = "parenthesis"
    raw = folded.span(start, end)
    worded = _WORDED.search(text) is not None
    link = None
    if shape == "markdown_link":
        target = _LINK_TARGET.match(folded.original_text, folded.original(end))
        if target is not None:
            link = target.group(1) if target.group(1) is not None else target.group(2)
    return _Marker(
        folded.original(start),
        folded.original(end),
        items,
        worded,
        raw,
        _form(raw, shape),
        in_code,
        shape,
        link,
    )


def _with_links(answer: str, markers: list[_Marker], code: _Code) -> list[_Marker]:
    """``markers`` with the link each one renders as, where it is not a ``[Source 1](...)``
    link itself: one inside the text of a link (``[see Source 1](https://...)``, over line
    breaks too), one whose brackets are a reference (``[Source 1][ref]``, or ``[Source 1]`` with
    a definition ``[Source 1]: https://...`` anywhere in the answer), one inside an HTML link
    (``<a href="https://..."><b>[Source 1]</b></a>``). The innermost link that holds a marker
    is the one it renders as. A bracket marker that is a link is no longer one
    :func:`link_citations` links."""
    if not markers or ("[" not in answer and "<" not in answer):
        return markers
    text = _code_filled(answer, code.spans)  # no link starts or ends in code
    definitions = _definitions(answer, text) if "[" in answer else {}
    texts = sorted(_link_texts(answer, text, definitions)) if "[" in answer else []
    if "<" in answer:
        texts.extend(_anchor_texts(answer, text))
        texts.sort(key=lambda found: (found[0], -found[1]))  # the outer of two at one start first
    linked = []
    holding: list[tuple[int, int, str]] = []  # the links opened before a marker, innermost last
    index = 0
    for marker in markers:
        while index < len(texts) and texts[index][0] <= marker.start:
            holding.append(texts[index])
            index += 1
        while holding and holding[-1][1] < marker.end:
            holding.pop()  # it ends before this marker, so before every later one
        link = None
        if marker.link is None or marker.in_code:  # "(...)" after a marker in code is text
            if holding:
                link = holding[-1][2]
            elif marker.shape == "bracket" and not marker.in_code and answer[marker.start] != "[":
                # brackets in other characters ("【Source 1】") are no markdown link: the
                # definition of their label still says where they point
                link = definitions.get(_reference_key(answer[marker.start + 1 : marker.end - 1]))
        if link is not None:
            shape = "markdown_link" if marker.shape == "bracket" else marker.shape
            form = _form(marker.raw, shape) if marker.form == marker.shape else marker.form
            linked.append(marker._replace(link=link, shape=shape, form=form))
        else:
            linked.append(marker)
    return linked


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
    for match in _DEFINITION.finditer(text):
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
        key = _reference_key(_span(answer, match, "label"))
        if key:
            group = "angled" if match.group("angled") is not None else "bare"
            definitions.setdefault(key, _span(answer, match, group))
    return definitions


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
    for start, indent in lines:
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
    for match in _BRACKET_OR_BLANK.finditer(structure):
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
    or ``None`` when it is no link."""
    if text.startswith("(", end):
        target = _LINK_TARGET.match(answer, end)
        if target is None:
            return None
        return target.group(1) if target.group(1) is not None else target.group(2)
    if not definitions:
        return None
    reference = _REFERENCE.match(text, end)
    if reference is not None and reference.end(1) > reference.start(1):
        label = answer[reference.start(1) : reference.end(1)]
    elif nested or end - start > 1001:
        return None  # a label holds no bracket, and at most 999 characters
    else:
        label = answer[start + 1 : end - 1]
    return definitions.get(_reference_key(label))


def _anchor_texts(answer: str, text: str) -> list[tuple[int, int, str]]:
    """The text of each HTML link of ``answer`` (``text``: it with code filled in) with an
    ``href``, as its start, end and the ``href``: from the end of its ``<a ...>`` tag to the next
    ``<a`` or ``</a>`` tag, or the end of the answer (a browser links what follows an unclosed
    one)."""
    found = []
    opened: tuple[int, str] | None = None
    for match in _ANCHOR_TAG.finditer(text):
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


def _reference_key(label: str) -> str:
    """A link label as references match it: case-folded, white space collapsed, and the block
    quote markers that start its later lines dropped."""
    if "\n" in label:
        label = _LABEL_BREAK.sub(" ", label)
    return " ".join(label.casefold().split())


class _Code(NamedTuple):
    """An answer's closed code spans (sorted, merged: see :func:`_code_spans`) and where each
    starts."""

    spans: list[tuple[int, int]]
    starts: list[int]

    @classmethod
    def of(cls, spans: list[tuple[int, int]]) -> _Code:
        return cls(spans, [start for start, _ in spans])

    def holds(self, offset: int) -> bool:
        """Whether ``offset`` of the answer is in code."""
        index = bisect_right(self.starts, offset) - 1
        return index >= 0 and offset < self.spans[index][1]


def _with_no_labels(
    folded: Folded, markers: list[_Marker], code: _Code, urls: _Code
) -> list[_Marker]:
    """``markers`` and the worded brackets whose number is no label (one invalid citation
    each, as written), in order. A marker such a bracket holds (the ``Source 1`` of
    ``[Source 1,2.5]``) is part of it; one that starts where it starts wins (``[Source 1]``)."""
    taken = {marker.start for marker in markers}
    extra = []
    for match in _NO_LABEL.finditer(folded.text):
        start, end = folded.original(match.start()), folded.original(match.end())
        if start in taken or urls.holds(start):
            continue
        in_code = code.holds(start)
        raw = folded.span(match.start(), match.end())
        item = _Item(0, -1, written=" ".join(match.group("number").split()))
        form = _form(raw, "bracket")
        extra.append(_Marker(start, end, (item,), True, raw, form, in_code, "bracket", None))
    if not extra:
        return markers
    starts = [marker.start for marker in extra]

    def held(marker: _Marker) -> bool:
        index = bisect_right(starts, marker.start) - 1
        return index >= 0 and marker.start < extra[index].end

    kept = [marker for marker in markers if not held(marker)]
    return sorted([*kept, *extra], key=lambda marker: marker.start)


def _form(raw: str, shape: str) -> str:
    """The normalisation ``raw`` needed, the most telling first, or else its ``shape``."""
    if raw.isascii():
        return shape
    kinds = {_char_kind(char) for char in raw if not char.isascii()}
    for kind in ("confusable", "cjk_bracket", "fullwidth", "superscript", "unicode"):
        if kind in kinds:
            return kind
    return shape


def _char_kind(char: str) -> str:
    tag = unicodedata.decomposition(char).split(" ", 1)[0]
    if tag == "<wide>":
        return "fullwidth"
    if tag in ("<super>", "<sub>"):
        return "superscript"
    category = unicodedata.category(char)
    if category in ("Ps", "Pe"):
        return "cjk_bracket"
    if category.startswith("L") or category in ("Cf", "Mn", "Me"):
        return "confusable"
    # typographic spaces and dashes are ordinary writing, not a disguise
    return "" if category in ("Zs", "Pd") else "unicode"


def _code_spans(answer: str) -> list[tuple[int, int]]:
    """Closed fenced code blocks and inline code spans, sorted and merged.

    An opening fence with no closing fence after it opens nothing: what follows is read as
    text. Linear: each fence line is looked at a bounded number of times.
    """
    fences = []
    for match in _FENCE.finditer(answer):
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
    for match in _BACKTICKS_OR_LINE.finditer(answer):
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


def _blanked(text: str, spans: Sequence[tuple[int, int]]) -> str:
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


_NOT_NEWLINE = re.compile(r"[^\n]")


def _sentences(
    answer: str, masked: str, markers: Sequence[_Marker]
) -> list[tuple[str, list[_Marker]]]:
    """Each countable sentence of ``answer`` with the markers it carries."""
    found: list[tuple[str, list[_Marker]]] = []
    starts = [marker.start for marker in markers]
    for line in _LINE.finditer(masked):
        # "1. Paris [1]": the number opens the item's first sentence, not a sentence of its own
        mark = _LIST_MARK.match(line.group())
        lead = 0 if mark is None else mark.end()
        offset = line.start() + lead
        for index, (relative_start, relative_end) in enumerate(sentence_spans(line.group()[lead:])):
            start, end = relative_start + offset, relative_end + offset
            if index == 0:
                start = line.start()
            bare = masked[start:end].strip()
            if not _WORD.search(bare) or bare.startswith("#") or bare.endswith(":"):
                continue
            inside = list(markers[bisect_left(starts, start) : bisect_left(starts, end)])
            found.append((answer[start:end].strip(), inside))
    return found


def completion_text(data: Mapping[str, Any]) -> str | None:
    """The answer of a chat completion response ``data`` (OpenAI's chat
    ``choices[0].message.content``, a string or text parts, or a Responses API ``output``;
    Anthropic's text blocks of ``content``), or ``None`` for another shape."""
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        message = choices[0].get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        return content if isinstance(content, str) else _text_parts(content)
    if data.get("type") == "message":  # Anthropic's Messages API
        return _text_parts(data.get("content"))
    output = data.get("output")
    if isinstance(output, list):  # OpenAI's Responses API
        messages = [o for o in output if isinstance(o, Mapping) and o.get("type") == "message"]
        texts = [_text_parts(m.get("content")) for m in messages]
        if any(t is not None for t in texts):
            return "".join(t for t in texts if t is not None)
    return None


def is_completion(data: Mapping[str, Any]) -> bool:
    """Whether ``data`` has the shape of a chat completion response that
    :func:`completion_text` reads (an OpenAI chat completion with its message, an Anthropic
    assistant message, an OpenAI Responses API response), text or not."""
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        return isinstance(choices[0].get("message"), Mapping)
    if data.get("type") == "message":
        return data.get("role") == "assistant"
    return data.get("object") == "response" and isinstance(data.get("output"), list)


NO_TEXT = (
    "answer is a chat completion response with no text (a refusal, a tool call, or empty "
    "content): it has no citations to check"
)


def reply_text(data: Mapping[str, Any]) -> str | None:
    """The answer of a chat completion response ``data`` (:func:`completion_text`), ``None``
    for another shape; an :class:`ArgumentTypeError` on ``answer`` for a completion with no
    text that shows (a refusal, a tool call, empty content), which would pass every check."""
    found = completion_text(data)
    if (found is None or not visible(found)) and is_completion(data):
        raise ArgumentTypeError(NO_TEXT, field="answer")
    return found


def _text_parts(content: Any) -> str | None:
    """The text of a list of content parts (``{"type": "text" | "output_text", "text"}``),
    ``None`` where there is none."""
    if not isinstance(content, list):
        return None
    texts = [
        part["text"]
        for part in content
        if isinstance(part, Mapping)
        and part.get("type") in ("text", "output_text")
        and isinstance(part.get("text"), str)
    ]
    return "".join(texts) if texts else None


def _answer(answer: object) -> str:
    """``answer`` as a plain string: the text itself, or a chat completion response as its
    provider's JSON (see :func:`completion_text`). ``None`` is refused, not read as an empty
    answer: a reply with no text (a refusal, a tool call) would otherwise pass every check."""
    if isinstance(answer, Mapping):
        found = reply_text(answer)
        if found is None:
            raise ArgumentTypeError(
                "answer must be a string (the model's reply) or a chat completion response "
                "(OpenAI's choices[0].message.content or Responses output, Anthropic's text "
                f"content); got an object of no such shape: {shown(answer)}",
                field="answer",
            )
        answer = found
    if isinstance(answer, str):
        text: str = plain(answer)
        return text
    if answer is None:
        raise ArgumentTypeError(
            "answer must be a string (the model's reply); got null: a reply without text (a "
            "refusal or a tool call) has no citations to check",
            field="answer",
        )
    raise ArgumentTypeError(
        f"answer must be a string (the model's reply); got {received(answer)}",
        field="answer",
    )


def _sources(assembly: Assembly | Report | Mapping[str, Any]) -> dict[int, _Source]:
    """The included sources by label number."""
    if isinstance(assembly, Assembly | Report):
        found = assembly.report if isinstance(assembly, Assembly) else assembly
        included: Any = [item.to_dict() for item in found.included]
    elif isinstance(assembly, Mapping):
        # the result JSON, or its report alone (as ctxasm report takes it)
        report = assembly if "report" not in assembly and "included" in assembly else None
        report = assembly.get("report") if report is None else report
        if not isinstance(report, Mapping):
            got = "no 'report'" if "report" not in assembly else _json_type(report)
            raise RequestError(
                f"report must be an object with an 'included' list (the result JSON of "
                f"ctxasm assemble, or its report); got {got}",
                field="report",
            )
        included = report.get("included")
    else:
        raise ArgumentTypeError(
            "assembly must be an Assembly, its report, or the JSON of either; got "
            f"{type(assembly).__name__}",
            field="result",
        )
    if not isinstance(included, list | tuple):
        raise RequestError(
            f"report.included must be a list of included passages; got {_json_type(included)}",
            field="report.included",
        )
    sources: dict[int, _Source] = {}
    for index, item in enumerate(included):
        number, source = _source(item, f"report.included[{index}]")
        if number in sources:
            raise RequestError(
                f"report.included[{index}].label 'Source {number}' appears twice; "
                "every included passage has its own label",
                field=f"report.included[{index}].label",
            )
        sources[number] = source
    return sources


def _source(item: Any, where: str) -> tuple[int, _Source]:
    if not isinstance(item, Mapping):
        raise RequestError(f"{where} must be an object; got {_json_type(item)}", field=where)
    ident, label, url = item.get("id"), item.get("label"), item.get("url")
    if not isinstance(ident, str) or not ident:
        raise RequestError(
            f"{where}.id must be a non-empty string; got {_json_type(ident)}", field=f"{where}.id"
        )
    match = _LABEL.fullmatch(label) if isinstance(label, str) else None
    if match is None:
        shown = repr(label) if isinstance(label, str) else _json_type(label)
        raise RequestError(
            f"{where}.label must be 'Source N' with N from 1 to 999,999,999; got {shown}",
            field=f"{where}.label",
        )
    if url is not None and not isinstance(url, str):
        raise RequestError(
            f"{where}.url must be a string or null; got {_json_type(url)}", field=f"{where}.url"
        )
    return int(match.group(1)), _Source(ident, url or None)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
