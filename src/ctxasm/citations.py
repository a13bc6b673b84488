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
``docs/citations.md`` for the rules. :mod:`ctxasm.answer_markup` finds those links, and the
urls and code an answer holds.

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
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import islice
from typing import Any, NamedTuple
from urllib.parse import quote, unquote, urlsplit

from ctxasm.answer_markup import (
    Spans,
    blanked,
    code_spans,
    link_destination,
    links,
    reference_key,
    url_spans,
)
from ctxasm.data import Assembly, Report
from ctxasm.deadline import checked, checkpoint
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
_LINE = re.compile(r"[^\r\n]+")
_WORD = re.compile(r"\w")
_SAFE_SCHEMES = frozenset({"http", "https", ""})
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
    code = Spans.of(code_spans(answer))
    urls = Spans.of(url_spans(answer, code))
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
            raise _too_many()
    markers = _with_no_labels(folded, markers, code, urls, cited)
    markers = _with_links(answer, markers, code)
    blanks = sorted([*code.spans, *((m.start, m.end) for m in markers)])
    return blanked(answer, blanks), _capped(markers, len(answer) + MAX_RANGE)


def _too_many() -> RequestError:
    return RequestError(
        f"the answer holds more than {MAX_MARKERS:,} citation markers (each number of a list, "
        "and each bracket with no label, counted); no answer a model writes cites that often: "
        "check that this is the answer",
        field="answer",
    )


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
    link = None
    if shape == "bracket" and folded.text.startswith("(", end):
        # "(" alone makes no link: "[Source 1](b" with no ")" is a bracket and text
        link = link_destination(folded.original_text, folded.original(end))
        shape = "markdown_link" if link is not None else "bracket"
    elif shape == "paren":
        shape = "parenthesis"
    raw = folded.span(start, end)
    worded = _WORDED.search(text) is not None
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


def _with_links(answer: str, markers: list[_Marker], code: Spans) -> list[_Marker]:
    """``markers`` with the link each one renders as, where it is not a ``[Source 1](...)``
    link itself: one inside the text of a link (``[see Source 1](https://...)``, over line
    breaks too), one whose brackets are a reference (``[Source 1][ref]``, or ``[Source 1]`` with
    a definition ``[Source 1]: https://...`` anywhere in the answer), one inside an HTML link
    (``<a href="https://..."><b>[Source 1]</b></a>``). The innermost link that holds a marker
    is the one it renders as. A bracket marker that is a link is no longer one
    :func:`link_citations` links."""
    if not markers or ("[" not in answer and "<" not in answer):
        return markers
    definitions, texts = links(answer, code)
    linked = []
    holding: list[tuple[int, int, str]] = []  # the links opened before a marker, innermost last
    index = 0
    for marker in checked(markers):
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
                link = definitions.get(reference_key(answer[marker.start + 1 : marker.end - 1]))
        if link is not None:
            shape = "markdown_link" if marker.shape == "bracket" else marker.shape
            form = _form(marker.raw, shape) if marker.form == marker.shape else marker.form
            linked.append(marker._replace(link=link, shape=shape, form=form))
        else:
            linked.append(marker)
    return linked


def _with_no_labels(
    folded: Folded, markers: list[_Marker], code: Spans, urls: Spans, cited: int
) -> list[_Marker]:
    """``markers`` and the worded brackets whose number is no label (one invalid citation
    each, as written), in order. A marker such a bracket holds (the ``Source 1`` of
    ``[Source 1,2.5]``) is part of it; one that starts where it starts wins (``[Source 1]``).
    Each such bracket counts against ``MAX_MARKERS``, with the ``cited`` numbers before."""
    taken = {marker.start for marker in markers}
    extra = []
    for match in checked(_NO_LABEL.finditer(folded.text)):
        start, end = folded.original(match.start()), folded.original(match.end())
        if start in taken or urls.holds(start):
            continue
        cited += 1
        if cited > MAX_MARKERS:
            raise _too_many()
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


def _sentences(
    answer: str, masked: str, markers: Sequence[_Marker]
) -> list[tuple[str, list[_Marker]]]:
    """Each countable sentence of ``answer`` with the markers it carries."""
    found: list[tuple[str, list[_Marker]]] = []
    starts = [marker.start for marker in markers]
    for line in checked(_LINE.finditer(masked), 64):
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
