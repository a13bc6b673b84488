"""The visible text and the title of an HTML page, read in one forward pass.

A small tokenizer after the HTML standard's, kept to what indexing needs: tags, comments and
declarations are dropped, character references are decoded, the contents of ``script``, ``style``,
``head``, ``noscript``, ``template``, ``iframe``, ``noembed`` and ``noframes`` (none of which a
browser shows as text) are skipped, block elements end lines, and a table's cells are parted by
white space (``<td>Vienna</td><td>Austria</td>`` reads "Vienna Austria"). ``title`` and
``textarea`` hold text only, and ``script``, ``style`` and the like hold raw text, up to their
own end tag, as in a browser.

An element a page hides from its readers is not read either: one with the ``hidden``
attribute (but ``hidden="until-found"``, a collapsed section a reader opens), or with
``display: none`` in its ``style`` attribute (the last such declaration, an ``!important`` one
over a plain one; CSS escapes, comments and quoted values read as CSS reads them), with
everything inside it. Where it ends is found as a browser's tree builder finds it, from the
elements open around it: at its own end tag, at the end tag of an element it is inside, or at
a tag that ends an element whose end tag may be left out (``<p hidden>a<div>b`` shows "b": the
div ends the paragraph); an end tag of nothing open, or of an element outside the table or
object it stands in, is ignored, as a browser ignores it. Text hidden there was a way to put
words before a model that no one reading the page sees. What only a style sheet or a script
hides (a class, ``visibility``, a colour, a size of 0) is still read.

The head ends as the standard's tree builder ends it: at ``</head>``, at the first text that is
not white space, or at the first tag a head may not hold (``<body>``, ``<p>``), so a page that
omits ``</head>`` and ``<body>`` (valid HTML) shows its body. A ``<head>`` tag after anything that
starts the page (text, another tag) is ignored, as a browser ignores it, so a stray one in the
body hides nothing; in the head, a ``<noscript>``'s tags (a tracking pixel's ``<img>``) do not
end it, as they do not in a browser that runs scripts. The page's title is the first
``<title>`` outside ``<svg>`` and ``<math>``, wherever it stands, as a browser's
``document.title`` is; a title is never text, and one inside ``<svg>`` or ``<math>`` (an icon's
tooltip) is dropped, as a browser shows neither.

Every search moves forward from where the last one ended, and one that reaches the end of the page
ends the page (an unclosed comment or tag runs to the end, as in a browser), so the time is linear
in the page. The standard library's parser scanned to the end of the page again at every unclosed
tag: 40 kB of ``"<a "`` took 23 s, and each doubling four times as long.
"""

from __future__ import annotations

import re
from functools import cache
from html import unescape

__all__ = ["visible_text"]

_SKIP = frozenset(
    {"script", "style", "head", "noscript", "template", "iframe", "noembed", "noframes"}
)
# Elements a browser shows as blocks of their own (the HTML standard's rendering section:
# display block, list-item or a table's rows and captions), which end lines, and the cells of
# a table's row, which a browser shows apart on one line (a tab between them, as innerText).
_BLOCK = frozenset(
    {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "section", "article"}
    | {"aside", "nav", "header", "footer", "main", "search", "address", "blockquote", "center"}
    | {"pre", "listing", "plaintext", "xmp", "figure", "figcaption", "details", "summary"}
    | {"dialog", "ul", "ol", "menu", "dir", "dl", "dt", "dd", "form", "fieldset", "legend"}
    | {"hgroup", "table", "caption", "thead", "tbody", "tfoot", "tr", "option", "optgroup"}
)
_CELL = frozenset({"td", "th"})
# Elements whose content ends only at their own end tag: raw text, and text with references.
_RAW_TEXT = frozenset({"script", "style", "xmp", "iframe", "noembed", "noframes"})
_ESCAPABLE = frozenset({"title", "textarea"})
# Elements of other vocabularies: a <title> inside one is an icon's tooltip, not the page's.
_FOREIGN = frozenset({"svg", "math"})
# What a head may hold (a second <head> is ignored there); any other start tag (<body> among
# them) ends it, as in a browser, so a page that never closes its head still shows its body.
_IN_HEAD = frozenset(
    {"head", "title", "meta", "link", "style", "script", "base", "basefont", "bgsound"}
    | {"noscript", "noframes", "template"}
)
# End tags that end a head (or the time before it) as text does; others there are ignored.
_HEAD_ENDERS = frozenset({"body", "html", "br"})
# White space to the HTML standard: text of only these leaves a head open.
_SPACE = " \t\n\f\r"

_NAME = re.compile(r"[A-Za-z][^\t\n\f\r />]*")
# One attribute (name, then "=" and a value), or none: after the tag name, up to ">" or the end.
# A quote opens a value only right after "=", as in the standard; an unclosed one is read as an
# unquoted value (a quote search that fails leaves no quote of its kind later in the page).
_ATTRIBUTE = re.compile(
    r"[\t\n\f\r /]*(?:([^\t\n\f\r />][^\t\n\f\r />=]*)[\t\n\f\r ]*"
    r"""(?:=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r >]*)))?)?"""
)
# Elements with no content, whose start tag is the whole element: hiding one hides nothing.
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param"}
    | {"source", "track", "wbr", "basefont", "bgsound", "frame", "keygen"}
)
# Start tags that end an open paragraph (in scope), as in a browser.
_CLOSES_P = (
    _BLOCK - {"br", "option", "optgroup", "tr", "thead", "tbody", "tfoot", "caption", "legend"}
) | {"plaintext", "xmp", "listing"}
# Elements an end tag of something opened outside them does not reach (the standard's scope
# markers): "</div>" inside a table inside a div is ignored.
_SCOPES = frozenset(("applet", "caption", "html", "table", "td", "th", "marquee", "object"))
_SCOPES |= {"template"}
_BUTTON_SCOPES = _SCOPES | {"button"}
_TABLE_SECTIONS = frozenset(("table", "tbody", "thead", "tfoot"))
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# Parts of a table, which a browser ignores outside one ("<tr><div hidden><td>x": x stays hidden).
_TABLE_PARTS = frozenset(("caption", "col", "colgroup", "tbody", "td", "tfoot", "th", "thead"))
_TABLE_PARTS |= {"tr"}
# The standard's special elements: a list item's or a definition's start looks for an open one
# to end back to the nearest of these (but address, div and p).
_SPECIAL = frozenset(
    "address applet area article aside base basefont bgsound blockquote body br button "
    "caption center col colgroup dd details dir div dl dt embed fieldset figcaption figure "
    "footer form frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html iframe img input "
    "keygen li link listing main marquee menu meta nav noembed noframes noscript object ol p "
    "param plaintext pre script search section select source style summary table tbody td "
    "template textarea tfoot th thead title tr track ul wbr xmp".split()
)
_ITEM_SCOPES = _SPECIAL - {"address", "div", "p", "li"}
_DEFINITION_SCOPES = _SPECIAL - {"address", "div", "p", "dt", "dd"}
# Formatting elements: one that something else closes is opened again before the next text, in
# the next block too, up to its own end tag or the end of the cell, caption or object it is in.
_FORMATTING = frozenset("a b big code em font i nobr s small strike strong tt u".split())
_MARKERS = frozenset(("applet", "caption", "marquee", "object", "td", "template", "th"))
# The kinds of element a search of the open elements stops at; for each, the innermost open
# one is kept beside every open element, so that a search costs no more than a look-up.
_BOUNDS = (_SCOPES, _BUTTON_SCOPES, _ITEM_SCOPES, _DEFINITION_SCOPES, _MARKERS, _TABLE_SECTIONS)
_BOUND_AT = {kind: index for index, kind in enumerate(_BOUNDS)}
# A CSS escape: up to six hex digits and one white space after them, or any other character.
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n\r\f]?|(.))", flags=re.DOTALL)
# A declaration: up to a ";" outside quotes.
_DECLARATION = re.compile(r"""(?:"[^"]*"|'[^']*'|[^;"'])+""")
_CSS_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", flags=re.DOTALL)
_COMMENT_END = re.compile(r"--!?>")
# A numeric character reference: its digits after any leading zeros in group 1 (hex) or 2,
# then its ";" if it has one.
_NUMERIC_REFERENCE = re.compile(r"&#(?:[xX]0*([0-9a-fA-F]+)|0*([0-9]+))(;?)")


@cache
def _end_tag(name: str) -> re.Pattern[str]:
    """Where the content of a raw-text element ends: its own end tag, in any case."""
    return re.compile(rf"</{re.escape(name)}[\t\n\f\r />]", flags=re.IGNORECASE)


class _Page:
    """What the tokenizer found: text parts, the title, the elements it is inside, and where it
    stands: ``"before"`` the head, in the ``"head"`` (implied or explicit, up to the body), or in
    the ``"body"``."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.title: str | None = None
        self.skip: dict[str, int] = {}
        self.phase = "before"
        self.foreign = 0  # open <svg> and <math> elements, whose titles name no page
        # The elements open, innermost last, with where each name stands among them (a
        # browser's stack of open elements, as far as finding where an element ends needs it),
        # and where the element the page hides stands, while inside it.
        self.open: list[str] = []
        self.at: dict[str, list[int]] = {}
        # for each kind of _BOUNDS, where the innermost open one stands, at each depth
        self.bounds: list[list[int]] = [[] for _ in _BOUNDS]
        self.hidden: int | None = None
        # A hidden formatting element that something else closed (see _FORMATTING): its name,
        # and where the cell or object it stands in stands (-1: none), up to whose end it hides.
        self.reopened: tuple[str, int] | None = None

    def _last(self, name: str) -> int:
        """Where the innermost open element ``name`` stands, or -1."""
        found = self.at.get(name)
        return found[-1] if found else -1

    def _bound(self, kind: frozenset[str]) -> int:
        """Where the innermost open element of ``kind`` (one of _BOUNDS) stands, or -1."""
        found = self.bounds[_BOUND_AT[kind]]
        return found[-1] if found else -1

    def _in_scope(self, name: str, scopes: frozenset[str] = _SCOPES) -> int:
        """Where the innermost open ``name`` stands if no element of ``scopes`` (one of
        _BOUNDS) was opened inside it (else -1)."""
        at = self._last(name)
        return at if at > self._bound(scopes) else -1

    def _close(self, at: int, by: str | None = None) -> None:
        """End the element at ``at`` and every element inside it (``by``: the end tag that
        ends it, if one does)."""
        hidden = self.hidden
        if hidden is not None and hidden >= at:
            tag = self.open[hidden]
            if tag in _FORMATTING and not (hidden == at and by == tag):
                self.reopened = (tag, self._bound(_MARKERS))
            self.hidden = None
        while len(self.open) > at:
            self.at[self.open.pop()].pop()
            for bound in self.bounds:
                bound.pop()
        if self.reopened is not None and self.reopened[1] >= len(self.open):
            self.reopened = None  # the cell or object it stood in ended

    def _implied_ends(self, tag: str) -> None:
        """End what start tag ``tag`` ends in a browser: an open paragraph at a block, a list
        item at the next, a cell or a row at the next."""
        if tag in _CLOSES_P and (at := self._in_scope("p", _BUTTON_SCOPES)) >= 0:
            self._close(at)
        if tag in ("a", "nobr") and (at := self._last(tag)) > self._bound(_MARKERS):
            self._close(at, tag)  # "<a hidden>x<a>y": a link ends the open one
        if tag in _HEADINGS and self.open and self.open[-1] in _HEADINGS:
            self._close(len(self.open) - 1)  # "<h2>a<h3>": the h2 ends
        if tag == "li" and (at := self._in_scope("li", _ITEM_SCOPES)) >= 0:
            self._close(at)
        elif tag in ("dt", "dd"):
            at = max(
                self._in_scope("dt", _DEFINITION_SCOPES), self._in_scope("dd", _DEFINITION_SCOPES)
            )
            if at >= 0:
                self._close(at)
        elif tag in ("option", "optgroup"):
            if self.open and self.open[-1] == "option":
                self._close(len(self.open) - 1)
            if tag == "optgroup" and self.open and self.open[-1] == "optgroup":
                self._close(len(self.open) - 1)
        elif tag == "tr":
            section = self._bound(_TABLE_SECTIONS)
            if section >= 0:
                self._close(section + 1)
        elif tag in _CELL and (row := self._last("tr")) > self._last("table"):
            self._close(row + 1)
        elif tag in ("tbody", "thead", "tfoot", "caption") and (table := self._last("table")) >= 0:
            self._close(table + 1)

    def _opened(self, tag: str, hides: bool, closed: bool) -> None:
        """Start tag ``tag``: what it ends ends, and it is open (unless it has no content, or
        it is a part of a table outside any table, which a browser ignores)."""
        if tag in _TABLE_PARTS and self._last("table") < 0:
            return
        self._implied_ends(tag)
        if tag in _VOID or (closed and self.foreign):  # "<rect/>" in an svg is whole
            return
        depth = len(self.open)
        self.at.setdefault(tag, []).append(depth)
        self.open.append(tag)
        for kind, bound in zip(_BOUNDS, self.bounds, strict=True):
            bound.append(depth if tag in kind else bound[-1] if bound else -1)
        if hides and self.hidden is None:
            self.hidden = len(self.open) - 1

    def _ended(self, tag: str) -> None:
        """End tag ``tag``: it ends the innermost open ``tag`` and what is inside it, unless
        that is outside a table or the like that is open (or none is open: it is ignored). Any
        heading's end tag ends the open heading; a form's ends nothing inside it."""
        if self.reopened is not None and self.reopened[0] == tag:
            self.reopened = None
        if tag in _HEADINGS:
            at = max(self._in_scope(heading) for heading in _HEADINGS)
        else:
            at = self._last(tag)
        if at < 0 or tag in ("br", "body", "html"):
            return
        if tag not in _SCOPES and at < self._bound(_SCOPES):
            return
        if tag == "form":  # a browser takes the form alone off its stack: what it holds stays
            if self.hidden == at:
                self.hidden = None
            return
        self._close(at, tag)

    def start(self, tag: str, hides: bool = False, closed: bool = False) -> None:
        self._opened(tag, hides, closed)
        # In a head, a noscript's content is text to a browser that runs scripts: its tags (a
        # tracking pixel's <img>) do not end the head.
        if (
            self._heading()
            and tag not in _IN_HEAD
            and tag != "html"
            and "noscript" not in self.skip
        ):
            self._enter_body()
        if tag in _FOREIGN:
            self.foreign += 1
        if tag == "head":
            if self.phase != "before":
                return  # a browser ignores a <head> once the page has begun
            self.phase = "head"
        elif tag in _IN_HEAD and self.phase == "before":
            self.phase = "head"  # a head is implied around it
        if tag in _SKIP:
            self.skip[tag] = self.skip.get(tag, 0) + 1
        if tag in _BLOCK:
            self.parts.append("\n")
        elif tag in _CELL:
            self.parts.append("\t")

    def end(self, tag: str) -> None:
        self._ended(tag)
        if tag in _FOREIGN and self.foreign:
            self.foreign -= 1
        if self._heading() and tag in _HEAD_ENDERS:
            self._enter_body()
        elif tag == "head" and self.phase == "before":
            self.phase = "head"  # an implied head, ended at once: a later <head> is ignored
        if self.skip.get(tag):
            self.skip[tag] -= 1
            if not self.skip[tag]:
                del self.skip[tag]
        if tag in _BLOCK:
            self.parts.append("\n")
        elif tag in _CELL:
            self.parts.append("\t")

    def text(self, data: str) -> None:
        # Text ends the head unless it is inside an element of the head (a script's source).
        if self._heading() and self.skip.keys() <= {"head"} and data.strip(_SPACE):
            self._enter_body()
        if data and not self.skip and self.hidden is None and self.reopened is None:
            self.parts.append(data)

    def titled(self, data: str) -> None:
        """Take the text of a ``title`` element: the page's title if it is the first one met
        outside ``svg`` and ``math``, wherever it stands (as a browser's ``document.title``:
        a tag that ended the head early, or a page with no head, keeps its title); a title is
        never text (see the module)."""
        if not self.foreign and self.title is None:
            self.title = data

    def _heading(self) -> bool:
        """Whether what comes next may start the body: the body has not started, and this is
        not inside a template (its content is parsed apart from the page, tags and text)."""
        return self.phase != "body" and "template" not in self.skip

    def _enter_body(self) -> None:
        """The body starts: an open head ends, and no later ``<head>`` or ``<title>`` counts."""
        self.phase = "body"
        self.skip.pop("head", None)


def _css_unescaped(match: re.Match[str]) -> str:
    """The character a CSS escape stands for (U+FFFD for none)."""
    digits, other = match.groups()
    if digits is None:
        return other
    code = int(digits, 16)
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code < 0xE000 else "\ufffd"


def _tag_end(raw: str, at: int) -> tuple[int, bool, bool]:
    """The index just past the ``>`` closing the tag whose attributes start at ``at``, or -1;
    whether they hide the element (see :func:`_hides`); and whether the tag ends in ``/>``."""
    hides = False
    seen: set[str] = set()
    while True:
        match = _ATTRIBUTE.match(raw, at)
        if match is None or match.end() == at:
            break
        at = match.end()
        name = match[1]
        if name is not None and len(name) <= 6:  # "hidden" or "style"; a browser takes the first
            name = name.lower()
            if name in ("hidden", "style") and name not in seen:
                seen.add(name)
                value = next((v for v in match.groups()[1:] if v is not None), None)
                hides = _hides(name, value) or hides
    if not raw.startswith(">", at):
        return -1, hides, False
    return at + 1, hides, raw[at - 1] == "/"


def _hides(name: str, value: str | None) -> bool:
    """Whether attribute ``name`` (lower case) with ``value`` hides its element: ``hidden``
    but ``hidden="until-found"``, or a ``style`` whose ``display`` is ``none`` (the last
    declaration, an ``!important`` one over plain ones)."""
    text = "" if value is None else _decoded(value)
    if name == "hidden":  # any other value (" until-found" too) is the plain hidden state
        return text.lower() != "until-found"
    display, important = "", False
    css = _CSS_ESCAPE.sub(_css_unescaped, _CSS_COMMENT.sub(" ", text))
    for declaration in _DECLARATION.findall(css):
        prop, colon, given = declaration.partition(":")
        if not colon or prop.strip(_SPACE).lower() != "display":
            continue
        given = given.strip(_SPACE).lower()
        marked = given.endswith("important") and given[:-9].rstrip(_SPACE).endswith("!")
        if marked:
            given = given[:-9].rstrip(_SPACE)[:-1].rstrip(_SPACE)
        if marked or not important:
            display, important = given, marked
    return display == "none"


def _contents(raw: str, at: int, tag: str, page: _Page) -> int:
    """Read the content of a raw-text or text-only element from ``at``; where it ends."""
    found = _end_tag(tag).search(raw, at)
    stop = len(raw) if found is None else found.start()
    data = raw[at:stop] if tag in _RAW_TEXT else _decoded(raw[at:stop])
    if tag == "title":
        page.titled(data)
    else:
        page.text(data)
    return stop


def _decoded(text: str) -> str:
    """``text`` with its character references decoded as :func:`html.unescape` decodes them,
    but a numeric one of more than 8 digits after its leading zeros, beyond every code point,
    becomes U+FFFD as in a browser. ``unescape`` converts the digits with ``int()``, which
    refuses more than 4,300 of them (ValueError), leading zeros included: they are dropped."""
    if "&#" in text:
        text = _NUMERIC_REFERENCE.sub(_short_reference, text)
    return unescape(text)


def _short_reference(match: re.Match[str]) -> str:
    """A numeric reference without its leading zeros, or U+FFFD for one too long to be a
    code point (the longest, 1114111, has 7 digits)."""
    hexadecimal, decimal, end = match.groups()
    if len(hexadecimal or decimal) > 8:
        return "\ufffd"
    return f"&#x{hexadecimal}{end}" if hexadecimal else f"&#{decimal}{end}"


def _read(raw: str, page: _Page) -> None:
    at, size = 0, len(raw)
    while at < size:
        lt = raw.find("<", at)
        if lt < 0:
            page.text(_decoded(raw[at:]))
            return
        page.text(_decoded(raw[at:lt]))
        at = _markup(raw, lt, page)


def _markup(raw: str, lt: int, page: _Page) -> int:
    """Read the markup that starts with the ``<`` at ``lt``; where reading goes on."""
    size = len(raw)
    if raw.startswith("<!--", lt):
        if raw.startswith(">", lt + 4) or raw.startswith("->", lt + 4):
            return lt + 5 if raw[lt + 4] == ">" else lt + 6
        found = _COMMENT_END.search(raw, lt + 4)
        return size if found is None else found.end()
    closing = raw.startswith("</", lt)
    name = _NAME.match(raw, lt + (2 if closing else 1))
    if name is None:
        if raw.startswith(("<!", "<?"), lt) or (closing and not raw.startswith("</>", lt)):
            gt = raw.find(">", lt)  # a declaration or another bogus comment, up to ">"
            return size if gt < 0 else gt + 1
        if raw.startswith("</>", lt):
            return lt + 3
        page.text("<")
        return lt + 1
    end, hides, closed = _tag_end(raw, name.end())
    if end < 0:
        return size  # a tag the page never closes: the rest of the page is inside it
    tag = name.group().lower()
    if closing:
        page.end(tag)
        return end
    page.start(tag, hides, closed)
    if tag in _RAW_TEXT or tag in _ESCAPABLE:
        end = _contents(raw, end, tag, page)
    return end


def visible_text(raw: str) -> tuple[str, str | None]:
    """The text of an HTML page (a line per block, spaces and tabs folded, blank lines dropped)
    and its title (white space folded; ``None`` when it has none)."""
    page = _Page()
    _read(raw, page)
    text = re.sub(r"[ \t]+", " ", "".join(page.parts))
    # Each line stripped and blank lines dropped, a line at a time: a pattern with white space
    # either side of "\n" retried every start of a long run of other white space (quadratic).
    text = "\n".join(filter(None, (line.strip() for line in text.split("\n"))))
    title = " ".join((page.title or "").split()) or None
    return text, title
