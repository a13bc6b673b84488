"""The visible text and the title of an HTML page, read in one forward pass.

A small tokenizer after the HTML standard's, kept to what indexing needs: tags, comments and
declarations are dropped, character references are decoded, the contents of ``script``, ``style``,
``head``, ``noscript``, ``template``, ``iframe``, ``noembed`` and ``noframes`` (none of which a
browser shows as text) are skipped, block elements end lines, and a table's cells are parted by
white space (``<td>Vienna</td><td>Austria</td>`` reads "Vienna Austria"). ``title`` and
``textarea`` hold text only, and ``script``, ``style``, ``noscript`` (to a browser that runs
scripts, which this reader takes a browser to be) and the like hold raw text, up to their own
end tag, as in a browser; a ``plaintext`` holds the rest of the page as text, tags and all.

An element a page hides from its readers is not read either: one with the ``hidden`` attribute (but
``hidden="until-found"``, a collapsed section a reader opens), or with ``display: none`` in its
``style`` attribute (the last such declaration, an ``!important`` one over a plain one; CSS escapes,
comments and quoted values read as CSS reads them), with everything inside it; and one whose content
a browser never shows, whatever its attributes: a ``dialog`` without ``open`` (a script opens it), a
``datalist`` and an ``rp`` (the browser's own style sheet does not display them), and a ``video``,
an ``audio``, a ``canvas``, a ``progress`` and a ``meter``, which a browser shows as a widget (what
they hold is for a browser without them, or, a canvas's, one that runs no scripts). Where it ends is
found as a browser's tree builder finds it, from the elements open around it: at its own end tag, at
the end tag of an element it is inside, or at a tag that ends an element whose end tag may be left
out (``<p hidden>a<div>b`` shows "b": the div ends the paragraph; ``<rp>(<rt>b`` shows "b": in a
ruby, a part ends the one before it); an end tag of nothing open, or of an element outside the
table or object it stands in, is ignored, as a browser ignores it (a form's end tag ignored so
leaves no form open for the next one to end). Text hidden there was a way to put words before a
model that no one reading the page sees. What only a style sheet or a script hides (a class,
``visibility``, a colour, a size of 0) is still read.

The standard's rules that decide this are kept: an end tag of an element outside a special one (a
div, a list, a cell) is ignored (``<span><div hidden></span>x``: x is hidden); a formatting
element's end (``</b>``, and a new ``<a>``) takes it alone off the stack when a special element is
open inside it, as the adoption agency does, and the special elements stay open, but what is open
inside the innermost of them ends (an ``<svg>`` among it: what follows is HTML again), unless 8 or
more are open in it (the agency's loop stops there); a form's
end tag ends an open list item, definition, paragraph or option it holds, and leaves what else the
form holds open, in it. A table where no cell or caption is open ends the open table; a cell ends
the open cell or caption, in a row and a section a browser implies if none is open, and the end tag
of that row or section ends the cell; other content in a column group ends it (it stands outside the
table); parts of a table outside a table, or inside a template or a select outside the table, end
nothing (but the end tag of a table, a section or a row in a template in a cell, once the template
is read as a body, leaves the rest of the page unread: the current rules end the table there). An
``<input>`` or a ``<select>`` ends the select it stands in, and an ``<optgroup>`` ends an optgroup
only in a select. A hidden formatting element that something else closed stays in the
standard's list of active formatting elements and is opened again before the next text (not a
textarea's) and most start tags (``<p><b hidden>x</p><p>y``: y is hidden), up to the end tag that
takes it off the list (the last of its name: ``</b>`` after ``<b hidden>x</p><p><b>`` ends the new
one) or the end of the cell, caption, template or object (by its end tag) it stands in (the
innermost of these an end tag ends, as a browser clears the list once, up to its last marker; a
caption that something other than its end tag ends leaves them in the list, as the current rules
do, and a template that so leaves its part of the list leaves it with end tags that end nothing).
Inside ``svg`` and ``math`` a tag is theirs and ends nothing, and their text opens no formatting
element again, but an HTML tag a browser breaks out on (``<div>``, ``<p>``, ``<table>``, ...) ends
them first; in their ``foreignObject``, ``desc``, ``title`` and the like, and math's text elements
(``mi`` to ``mtext``), tags and text are HTML's again, and the text of what they never show (a
``title``, a ``desc``, a ``style``) is not read; there, a template's end tag is ignored where the
template is the innermost HTML element, and an end tag of an element outside a math
``annotation-xml`` that does not hold HTML (the standard ignores it, the current rules end that
element) leaves the rest of the page unread. A page with no DOCTYPE, or a legacy one, is read in
quirks mode, where a table does not end a paragraph. Where this reader simplifies the standard on
purpose, it errs toward keeping text hidden: a hidden formatting element the adoption agency may
keep around what follows stays open; formatting elements that hide nothing, where a browser opens
them again, are stood in for by one element that no end tag but its parent's ends, opened again
where one of them closes inside it (it is the current node, as they are, so a heading or a form's
end does not end a hidden element around it; the end tag of one of them ends what the stand-in
holds, as the adoption agency ends what the element holds); more than three hidden ones in one
cell, or outside cells, hide the rest of it, and of the cells and objects inside it (the standard
keeps three alike, comparing attributes this reader does not read, and opens each again at every
block). A select's
content is read as hidden as either of the standard's rules for it would have it: the old ones (a
browser read options only there, and ignored other tags, ``<xmp>``, a ``<plaintext>`` and a
``<form>`` among them) or the current ones, which a browser now follows (it reads them as in the
body, and only an ``<input>`` or a ``<select>`` ends it): a ``<textarea>`` or a ``<keygen>`` ends it
where nothing hides what follows and is read inside it where something does (what is opened after
it then stays open when the select ends, as the old rules hold it outside the select); the tags in
an xmp, a plaintext, a style, a title, a noscript, an iframe, a noembed or a noframes are read (not
in a template, where they hold text only), and the text up to its end tag is skipped (but an xmp's
or a plaintext's where nothing hides it); a table (outside a table), an object, an applet or a
marquee opens nothing there, and what follows is skipped up to its end tag (not one in a template
opened since, or the end of the page), which ends nothing else; a tag that would end the select
there (the old rules end it, the current ones keep the select out of scope) leaves the rest of the
page unread; a form is opened as an element (a hidden one hides what it holds), and a later form
after the select opens, but ends nothing (the current rules ignore it), and its end tag ends only
the form. An ``<svg>`` or a ``<math>`` in a select (the old rules ignore it, and all it holds) is
opened where the current rules open it there: not in a table, an object, an applet or a marquee the
select holds, nor among the tags read in an element it ignores (the current rules end it with that
element, or read it as text); an ``<input>``, a ``<keygen>``, a ``<select>`` or a ``<textarea>``
inside it (an element of svg's or math's, or out of the select's scope, to the current rules; the
select's end to the old ones), and a ``</select>`` in its ``foreignObject`` or the like, leave the
rest of the page unread, as does an svg or a math in a select only the old rules open (a
``<select>`` after a keygen or a textarea in a select), or opened after a keygen or a textarea in a
select and open when the select ends (the old rules ended the select at the keygen, and keep it
open; the current ones end it). A formatting element opened in a select (the old rules ignored it)
ends alone at its end tag, and what it holds stays open. Where a tag read in an element the select
ignored ends an element that hid that element (the current rules keep it open up to the element's
end tag), the rest of the page is not read. A form in a table, outside a cell, holds nothing, as a
browser ends it at once. It does not model every step of the adoption agency (the elements between
the one that ends and the special elements inside it stay where they were, and open).

The head ends as the standard's tree builder ends it: at ``</head>``, at the first text that is not
white space, or at the first tag a head may not hold (``<body>``, ``<p>``), so a page that omits
``</head>`` and ``<body>`` (valid HTML) shows its body. A ``<head>`` tag after anything that starts
the page (text, another tag) is ignored, as a browser ignores it, so a stray one in the body hides
nothing; in the head, a ``<noscript>``'s tags (a tracking pixel's ``<img>``), its raw text, do not
end it. The page's title is the first ``<title>`` outside ``<svg>`` and ``<math>``, wherever it
stands, as a browser's ``document.title`` is; a title is never text, and one inside ``<svg>`` or
``<math>`` (an icon's tooltip) is dropped, as a browser shows neither.

Every search moves forward from where the last one ended, and one that reaches the end of the page
ends the page (an unclosed comment or tag runs to the end, as in a browser), so the time is linear
in the page. The standard library's parser scanned to the end of the page again at every unclosed
tag: 40 kB of ``"<a "`` took 23 s, and each doubling four times as long.
"""

from __future__ import annotations

import re
from bisect import bisect_right
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
# (A noscript's is raw text to a browser that runs scripts, in the body as in the head.)
_RAW_TEXT = frozenset({"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript"})
_ESCAPABLE = frozenset({"title", "textarea"})
_TEXT_ONLY = _RAW_TEXT | _ESCAPABLE
# Elements a browser that reads a select by the standard's old rules ignored there, reading the
# tags inside them on, and that one that reads it by the current rules holds as text, tags and
# all (see _Page.read_tags_in).
_IGNORED_IN_SELECT = (_RAW_TEXT - {"script"}) | {"title", "plaintext"}
# Elements the old rules ignore in a select and the current ones open there, where the select
# is then out of scope: none is opened, and what it holds is not read, up to its end tag.
_HELD_IN_SELECT = frozenset({"table", "object", "applet", "marquee"})
# Start tags that end a select they stand in (by the old rules, all of them; by the current
# ones, an input and a select, and a textarea or a keygen where nothing hides what follows).
_ENDS_SELECT = frozenset({"input", "keygen", "select", "textarea"})
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
# Start tags that end an open paragraph (in scope), as in a browser (a table not in quirks mode).
_CLOSES_P = (
    _BLOCK - {"br", "option", "optgroup", "tr", "thead", "tbody", "tfoot", "caption", "legend"}
) | {"plaintext", "xmp", "listing"}
# The elements of svg and math that a browser counts as special and as scope markers: the ones
# inside which tags are read as HTML again (or mostly, in math's text elements). An element of
# svg or math is kept under its vocabulary's name and its own ("svg title"): "</td>" does not
# end an svg <td>, and "<svg><td>" is not a table's cell.
_INTEGRATION = frozenset(("svg foreignobject", "svg desc", "svg title"))
_MATH_TEXT = frozenset(("math mi", "math mo", "math mn", "math ms", "math mtext"))
_FOREIGN_SPECIAL = _INTEGRATION | _MATH_TEXT | {"math annotation-xml"}
# Elements of svg and math a browser does not show (a tooltip, a description, a script, an
# annotation): their text is not read, as a hidden element's.
_FOREIGN_UNSHOWN = frozenset(
    f"{space} {name}"
    for space in ("svg", "math")
    for name in ("title", "desc", "metadata", "script", "style", "annotation", "annotation-xml")
)
# HTML start tags that end the svg or math they stand in (the standard's "breakout" tags), and
# <font> with one of these attributes; any other is an element of the svg or math, which ends
# nothing.
_BREAKOUT = frozenset(
    "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i img "
    "li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt u ul "
    "var".split()
)
_FONT_BREAKOUT = frozenset(("color", "face", "size"))
_NOTED = _FONT_BREAKOUT | {"encoding", "open"}
# Elements an end tag of something opened outside them does not reach (the standard's scope
# markers): "</div>" inside a table inside a div is ignored. And a select, whose content a
# browser read as options only (it ignored other tags there) until it came to read more.
_SCOPES = frozenset(("applet", "caption", "html", "table", "td", "th", "marquee", "object"))
_SCOPES |= {"template", "select"} | _FOREIGN_SPECIAL
_BUTTON_SCOPES = _SCOPES | {"button"}
_LIST_SCOPES = _SCOPES | {"ol", "ul"}
_TABLE_SECTIONS = frozenset(("table", "tbody", "thead", "tfoot"))
# The current node (as a list of one) where white space is not text of the page's but the table's.
_IN_TABLE = [[name] for name in (*_TABLE_SECTIONS, "tr")]
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# Parts of a table, which a browser ignores outside one ("<tr><div hidden><td>x": x stays hidden)
# and inside a template outside the table ("<td><template><td>" ends nothing outside it).
_TABLE_PARTS = frozenset(("caption", "col", "colgroup", "tbody", "td", "tfoot", "th", "thead"))
_TABLE_PARTS |= {"tr"}
# Their end tags, which end nothing outside the innermost table or template (the table scope).
_TABLE_ENDS = (_TABLE_PARTS - {"col"}) | {"table"}
# In a select, the tags that end something (a browser ignored the others there, and may now
# hold them, but not end what is outside them).
_SELECT_ENDS = _TABLE_ENDS | {"option", "optgroup", "select", "template"}
_SELECT_STARTS = _TABLE_PARTS | {"table", "option", "optgroup"}
# The standard's special elements: an end tag of an element outside one of them is ignored
# ("<span><div hidden></span>x": x stays hidden), and a list item's or a definition's start
# looks for an open one to end back to the nearest of these (but address, div and p).
_SPECIAL = (
    frozenset(
        "address applet area article aside base basefont bgsound blockquote body br button "
        "caption center col colgroup dd details dir div dl dt embed fieldset figcaption figure "
        "footer form frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html iframe img input "
        "keygen li link listing main marquee menu meta nav noembed noframes noscript object ol p "
        "param plaintext pre script search section select source style summary table tbody td "
        "template textarea tfoot th thead title tr track ul wbr xmp".split()
    )
    | _FOREIGN_SPECIAL
)
# HTML elements whose content a browser never shows: the user-agent style sheet does not display
# a datalist, an rp (a ruby's parenthesis, for a browser without ruby) or a dialog that is not
# open (a script opens it), and a video, an audio, a canvas (to a browser that runs scripts), a
# progress and a meter show a widget in place of what they hold (for a browser without them).
_UNSHOWN = frozenset({"datalist", "rp", "video", "audio", "canvas", "progress", "meter"})
# Start tags that end an open rb, rp or rt (and rtc, but for rp and rt) where a ruby is in scope.
_RUBY_PARTS = frozenset({"rb", "rp", "rt", "rtc"})
# End tags the standard ends in scope (a special element inside does not stop them).
_ENDS_IN_SCOPE = _SPECIAL | {"dialog"}
# What a form's end tag ends first if it is the current node (the standard's implied end tags).
_IMPLIED_ENDS = frozenset("dd dt li optgroup option p rb rp rt rtc".split())
_ITEM_SCOPES = _SPECIAL - {"address", "div", "p", "li"}
_DEFINITION_SCOPES = _SPECIAL - {"address", "div", "p", "dt", "dd"}
# Formatting elements: one that something else closes is opened again before the next text or
# most start tags, in the next block too, up to its own end tag or the end of the cell, caption
# or object it is in (the standard's list of active formatting elements, see _Entry), and the
# elements that start a new part of that list (its markers).
_FORMATTING = frozenset("a b big code em font i nobr s small strike strong tt u".split())
_MARKERS = frozenset(("applet", "caption", "marquee", "object", "td", "template", "th"))
# Start tags before which a browser does not open those formatting elements again (it does
# before the others, and before text).
_NO_RECONSTRUCT = (
    (_CLOSES_P - {"xmp"})
    | _IN_HEAD
    | _TABLE_PARTS
    | {"body", "col", "dd", "dt", "form", "frameset", "hr", "html", "iframe", "li", "noembed"}
    | {"param", "source", "table", "textarea", "track", *_HEADINGS}
)
# How many hidden formatting elements of one name a part of that list holds at most; past it,
# what follows in that part is not read (a browser's "Noah's ark" keeps 3 of each name and
# attributes, which this reader does not compare).
_HIDDEN_KEPT = 3
# How many formatting elements a caption that something other than its end tag ended leaves in
# the list at most (see _Page._clear_part); past it, what follows in that part is not read.
_MOVED_KEPT = 8
# The kinds of element a search of the open elements stops at; for each, the innermost open
# one is kept beside every open element, so that a search costs no more than a look-up.
_BOUNDS = (
    *(_SCOPES, _BUTTON_SCOPES, _LIST_SCOPES, _ITEM_SCOPES, _DEFINITION_SCOPES, _MARKERS),
    *(_TABLE_SECTIONS, _SPECIAL),
)
_BOUND_AT = {kind: index for index, kind in enumerate(_BOUNDS)}
# Where a formatting element the adoption agency took off the stack stood (see _Page._adopt),
# or a form its end tag took (what it holds stays in it).
_GONE = ""
# Where a browser opens again a formatting element that hides nothing (one something else
# closed), the reader opens this stand-in instead (a name no tag has): it hides nothing, and is
# the current node, as the element is in a browser, so that a heading, an item or a form's end
# do not end what the browser keeps open around it ("<p><b>x</p><h2 hidden>y<h3>z": z is hidden).
_REOPENED = "#reopened"
# A DOCTYPE: its name, then a public identifier (and a system one), or a system identifier.
# One that does not match (a missing name, an unclosed quote) puts a browser in quirks mode.
_DOCTYPE = re.compile(
    r"<!doctype[\t\n\f\r ]*([^\t\n\f\r >]+)[\t\n\f\r ]*(?:public[\t\n\f\r ]*"
    r"""(?:"([^"]*)"|'([^']*)')[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)')?"""
    r"""|system[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'))?[\t\n\f\r ]*>""",
    flags=re.IGNORECASE,
)
# The public identifiers (lower case) that put a browser in quirks mode: these, any that starts
# with one of _QUIRKS_PREFIXES, and with no system identifier one of _QUIRKS_WITHOUT_SYSTEM.
_QUIRKS_IDS = frozenset(
    ("-//w3o//dtd w3 html strict 3.0//en//", "-/w3c/dtd html 4.0 transitional/en")
)
_QUIRKS_IDS |= {"html"}
_QUIRKS_PREFIXES = tuple(
    "+//silmaril//dtd html pro v0r11 19970101//|-//as//dtd html 3.0 aswedit + extensions//|"
    "-//advasoft ltd//dtd html 3.0 aswedit + extensions//|-//ietf//dtd html 2.0 level 1//|"
    "-//ietf//dtd html 2.0 level 2//|-//ietf//dtd html 2.0 strict level 1//|"
    "-//ietf//dtd html 2.0 strict level 2//|-//ietf//dtd html 2.0 strict//|"
    "-//ietf//dtd html 2.0//|-//ietf//dtd html 2.1e//|-//ietf//dtd html 3.0//|"
    "-//ietf//dtd html 3.2 final//|-//ietf//dtd html 3.2//|-//ietf//dtd html 3//|"
    "-//ietf//dtd html level 0//|-//ietf//dtd html level 1//|-//ietf//dtd html level 2//|"
    "-//ietf//dtd html level 3//|-//ietf//dtd html strict level 0//|"
    "-//ietf//dtd html strict level 1//|-//ietf//dtd html strict level 2//|"
    "-//ietf//dtd html strict level 3//|-//ietf//dtd html strict//|-//ietf//dtd html//|"
    "-//metrius//dtd metrius presentational//|"
    "-//microsoft//dtd internet explorer 2.0 html strict//|"
    "-//microsoft//dtd internet explorer 2.0 html//|"
    "-//microsoft//dtd internet explorer 2.0 tables//|"
    "-//microsoft//dtd internet explorer 3.0 html strict//|"
    "-//microsoft//dtd internet explorer 3.0 html//|"
    "-//microsoft//dtd internet explorer 3.0 tables//|-//netscape comm. corp.//dtd html//|"
    "-//netscape comm. corp.//dtd strict html//|-//o'reilly and associates//dtd html 2.0//|"
    "-//o'reilly and associates//dtd html extended 1.0//|"
    "-//o'reilly and associates//dtd html extended relaxed 1.0//|"
    "-//sq//dtd html 2.0 hotmetal + extensions//|"
    "-//softquad software//dtd hotmetal pro 6.0::19990601::extensions to html 4.0//|"
    "-//softquad//dtd hotmetal pro 4.0::19971010::extensions to html 4.0//|"
    "-//spyglass//dtd html 2.0 extended//|-//sun microsystems corp.//dtd hotjava html//|"
    "-//sun microsystems corp.//dtd hotjava strict html//|-//w3c//dtd html 3 1995-03-24//|"
    "-//w3c//dtd html 3.2 draft//|-//w3c//dtd html 3.2 final//|-//w3c//dtd html 3.2//|"
    "-//w3c//dtd html 3.2s draft//|-//w3c//dtd html 4.0 frameset//|"
    "-//w3c//dtd html 4.0 transitional//|-//w3c//dtd html experimental 19960712//|"
    "-//w3c//dtd html experimental 970421//|-//w3c//dtd w3 html//|-//w3o//dtd w3 html 3.0//|"
    "-//webtechs//dtd mozilla html 2.0//|-//webtechs//dtd mozilla html//".split("|")
)
_QUIRKS_WITHOUT_SYSTEM = (
    "-//w3c//dtd html 4.01 frameset//",
    "-//w3c//dtd html 4.01 transitional//",
)
_QUIRKS_SYSTEM = "http://www.ibm.com/data/dtd/v11/ibmxhtml1-transitional.dtd"
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


class _Part:
    """A part of the list of active formatting elements, from a marker to the next (the first
    part has none): its entries; the hidden ones that something else closed since it was last
    opened again; how many hidden entries of each name it holds (under "", of all names); whether
    it held too many (``sticky``: what follows is hidden); how many of its entries that hide
    nothing something else closed; where the stand-in opened again for those stands (-1: not
    open, see _REOPENED); and whether it was cleared (taken out of the list)."""

    __slots__ = (
        "cleared",
        "entries",
        "hidden_names",
        "plain_closed",
        "stand_in",
        "sticky",
        "waiting",
    )

    def __init__(self, sticky: bool = False) -> None:
        self.cleared = False
        self.entries: list[_Entry] = []
        self.waiting: list[_Entry] = []
        self.hidden_names: dict[str, int] = {}
        self.sticky = sticky
        self.plain_closed = 0
        self.stand_in = -1


class _Entry:
    """A formatting element in the list of active formatting elements: its name, whether it
    hides what it holds, where it stands on the stack (-1: closed, to be opened again), whether
    it is still in the list, the part of the list it is in, its place in the list, and whether
    one of the two readings the reader keeps has no such entry (``phantom``: its end tag ends
    nothing else, see _adopt): it was opened in a select, where the standard's old rules ignore
    it, or it outlived a caption or a template the current rules clear it with (see
    _clear_part and _outlived)."""

    __slots__ = ("depth", "hidden", "live", "name", "order", "part", "phantom")

    def __init__(
        self, name: str, hidden: bool, depth: int, part: _Part, order: int, phantom: bool
    ) -> None:
        self.name = name
        self.hidden = hidden
        self.depth = depth
        self.live = True
        self.part = part
        self.order = order
        self.phantom = phantom


class _Page:
    """What the tokenizer found: text parts, the title, the elements it is inside, and where it
    stands: ``"before"`` the head, in the ``"head"`` (implied or explicit, up to the body), or in
    the ``"body"``."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.title: str | None = None
        self.skip: dict[str, int] = {}
        self.phase = "before"
        # Quirks mode (see _quirky), until a DOCTYPE before anything else says otherwise.
        self.quirks = True
        self.begun = False  # a tag or text was met: a DOCTYPE after it is ignored
        # The elements open, innermost last, with where each name stands among them (a
        # browser's stack of open elements, as far as finding where an element ends needs it).
        # One of svg or math is kept as "svg name" or "math name"; a formatting element the
        # adoption agency took off the stack leaves _GONE in its place.
        self.open: list[str] = []
        self.at: dict[str, list[int]] = {}
        # Where an element taken off out of order stands (see _off_stack), with its name: it
        # stays in ``at`` until it is the last of its name there or its place is popped, so
        # that taking one off costs no search of that list (a select's end could take off
        # thousands).
        self.removed: dict[int, str] = {}
        # for each open element, how start tags inside it are read: "html", as elements of
        # "svg" or "math", or "text" (math's text elements: HTML but for mglyph and malignmark)
        self.inside: list[str] = []
        # for each kind of _BOUNDS, where the innermost open one stands, at each depth; and
        # where the innermost open HTML element stands
        self.bounds: list[list[int]] = [[] for _ in _BOUNDS]
        self.html_at: list[int] = []
        # Whether each open element hides what it holds, where those that did when opened
        # stand (in order), and where the outermost that still hides stands, while inside it.
        self.hiding: list[bool] = []
        self.hides: list[int] = []
        self.hidden: int | None = None
        # The list of active formatting elements (see _FORMATTING), in parts parted by its
        # markers, the last part the current one; for each name, the entries in the list, last
        # last; the element's entry beside each open element; and for each open stand-in, by
        # where it stands, the part it was opened for (parts opened inside it, an object's that
        # outlives it among them, may be the last when it ends).
        self.formatting: list[_Part] = [_Part()]
        self.named: dict[str, list[_Entry]] = {}
        self.entries: list[_Entry | None] = []
        self.stand_in_part: dict[int, _Part] = {}
        self.entry_count = 0
        # For each open template, innermost last, its part of that list, and how its content is
        # read so far (see _template_read): "" before its first start tag, "table" or "body".
        self.template_parts: list[_Part] = []
        self.template_modes: list[str] = []
        # How many of each formatting element were opened, and how many before each open one.
        self.formatted: dict[str, int] = {}
        self.opened_as: dict[int, int] = {}
        # The standard's form element pointer, to its old and to its current rules for a select
        # (see the module): whether each is set (a form was opened outside templates and its
        # end tag not met: another <form> is ignored), and whether they stand for different
        # forms (the old rules ignore a form, and its end tag, in a select): a <form> or a
        # </form> then ends nothing but the form, as to the rules that ignore it.
        self.form_old = False
        self.form_current = False
        self.form_apart = False
        # A select in which a textarea or a keygen was kept (see _opened), or -1, and how many
        # elements have stayed open since (those the old rules ended with the select there).
        self.kept_select = -1
        self.kept_mark = 0
        # Where the selects that only the old rules open stand (a <select> that ended one in
        # which a textarea or a keygen was kept: the current rules end it, and open none).
        self.old_selects: list[int] = []
        # Where a select that a textarea or a keygen ended (where nothing hid it) stood, or -1:
        # the current rules keep it open up to its end tag (or a <select>), and end an svg or
        # a math opened since there, which the old rules keep open: if one is, the rest of the
        # page is not read.
        self.apart_at = -1
        # The element a select ignored whose tags are being read (see read_tags_in), up to
        # its end tag (the current rules read its content as text up to there), or None.
        self.reading: str | None = None
        # While the tags inside an element a select ignored are read (see read_tags_in), where
        # the outermost element that hid it stands (else -1): if a tag read there ends it, a
        # browser that reads the element as text keeps it open, and the rest of the page is not
        # read (``lost``).
        self.guard = -1
        self.lost = False
        # For each table, object, applet or marquee a select holds (see _opened), by name, how
        # many elements were open when it was met: a template opened since holds its end tag.
        self.held_at: dict[str, list[int]] = {}

    def _last(self, name: str) -> int:
        """Where the innermost open element ``name`` stands, or -1."""
        found = self.at.get(name)
        while found and self.open[found[-1]] != name:
            found.pop()  # one _remove took off (see removed): each is passed once
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

    def _in_select(self) -> bool:
        """Whether a select is open with no other scope element inside it, where a browser
        took the tags of options and tables only (see _SELECT_ENDS), ignoring the others."""
        scope = self._bound(_SCOPES)
        return scope >= 0 and self.open[scope] == "select"

    def _push(self, key: str, hides: bool, inside: str, entry: _Entry | None = None) -> None:
        """Open the element ``key`` (see ``open``), start tags inside it read as ``inside``;
        ``entry``: the entry of a formatting element opened again."""
        depth = len(self.open)
        if entry is None and key in _FORMATTING:
            entry = self._listed(key, hides, depth)
        elif entry is not None:
            entry.depth = depth
        self.entries.append(entry)
        if key in _MARKERS:  # a new part of the list of active formatting elements
            # a part inside one that lost count hides what it holds too: a browser may have
            # opened a hidden element again around its marker
            self.formatting.append(_Part(sticky=self.formatting[-1].sticky))
            if key == "template":
                self.template_parts.append(self.formatting[-1])
                self.template_modes.append("")
        self.open.append(key)
        self.at.setdefault(key, []).append(depth)
        self.inside.append(inside)
        for kind, bound in zip(_BOUNDS, self.bounds, strict=True):
            bound.append(depth if key in kind else bound[-1] if bound else -1)
        self.html_at.append(depth if " " not in key else self.html_at[-1] if depth else -1)
        self.hiding.append(hides)
        if hides:
            self.hides.append(depth)
            if self.hidden is None:
                self.hidden = depth
        if key in _FORMATTING:
            self.opened_as[depth] = self.formatted.get(key, 0)
            self.formatted[key] = self.opened_as[depth] + 1

    def _listed(self, name: str, hides: bool, depth: int) -> _Entry | None:
        """Put the formatting element ``name`` opened at ``depth`` in the list of active
        formatting elements; its entry (none past _HIDDEN_KEPT hidden ones in the part, of any
        name, after which the part hides what follows: each is opened again at every block)."""
        part = self.formatting[-1]
        if part.sticky:
            return None
        if hides:
            counts = part.hidden_names
            if counts.get("", 0) >= _HIDDEN_KEPT:
                part.sticky = True
                return None
            counts[""] = counts.get("", 0) + 1
            counts[name] = counts.get(name, 0) + 1
        self.entry_count += 1
        entry = _Entry(name, hides, depth, part, self.entry_count, self._in_select())
        part.entries.append(entry)
        self.named.setdefault(name, []).append(entry)
        return entry

    def _entry(self, name: str) -> _Entry | None:
        """The last entry of ``name`` in the current part of the list, if any."""
        found = self.named.get(name)
        if found and found[-1].part is self.formatting[-1]:
            return found[-1]
        return None

    def _forget(self, entry: _Entry) -> None:
        """Take ``entry`` out of the list of active formatting elements."""
        entry.live = False
        found = self.named[entry.name]
        if found[-1] is entry:
            found.pop()
        else:
            found.remove(entry)
        # (a live entry's part is in the list: clearing a part takes its entries out)
        if entry.hidden:
            entry.part.hidden_names[entry.name] -= 1
            entry.part.hidden_names[""] -= 1
        elif entry.depth < 0:
            entry.part.plain_closed -= 1

    def _clear_part(self, kept: bool = False) -> None:
        """Clear the list of active formatting elements up to its last marker; ``kept``: its
        entries stay in the list, in the part before it, phantom (see _Entry), as the current
        rules keep them where something other than its end tag ends a caption: a hidden one
        is opened again, and one that hides nothing stands in the stand-in, as either reading
        has it (past _MOVED_KEPT of them, what follows in that part is not read)."""
        if len(self.formatting) == 1:
            return
        part = self.formatting.pop()
        part.cleared = True
        moved = [entry for entry in part.entries if entry.live] if kept else []
        for entry in reversed(part.entries):
            if entry.live:
                entry.live = False
                self.named[entry.name].pop()
        if not moved and not (kept and part.sticky):
            return
        outer = self.formatting[-1]
        if part.sticky or len(moved) > _MOVED_KEPT:
            outer.sticky = True
            return
        for entry in moved:
            if entry.hidden:
                if outer.hidden_names.get("", 0) >= _HIDDEN_KEPT:
                    outer.sticky = True
                    return
                outer.hidden_names[""] = outer.hidden_names.get("", 0) + 1
                outer.hidden_names[entry.name] = outer.hidden_names.get(entry.name, 0) + 1
            entry.live, entry.part, entry.phantom = True, outer, True
            outer.entries.append(entry)
            self.named[entry.name].append(entry)
            if entry.hidden:
                outer.waiting.append(entry)
            else:
                outer.plain_closed += 1
                outer.stand_in = -1

    def _outlived(self, part: _Part) -> None:
        """The part of the template that ended outlived it (an object, an applet or a marquee
        it held, left open, kept its marker, which the template's end cleared instead, as in
        the standard): the current rules clear it with the template, so its entries are
        phantom (see _Entry). Where more than one such marker was left, the rest of the page
        is not read."""
        if self.formatting[-1] is not part:
            self.lost = True
        for entry in part.entries:
            entry.phantom = True

    def _reconstruct(self) -> None:
        """Open again the hidden formatting elements of the current part of the list that
        something else closed, outermost first, as a browser does before text and most start
        tags (the others it opens again hide nothing, and are left closed: their end tags then
        end nothing, where a browser's might end a hidden element, which stays hidden); where
        one that hides nothing waits, a stand-in is opened for them (see _REOPENED)."""
        part = self.formatting[-1]
        if part.waiting:
            waiting, part.waiting = part.waiting, []
            for entry in sorted(waiting, key=lambda entry: entry.order):
                if entry.live and entry.depth < 0:
                    self._push(entry.name, True, "html", entry)
        if part.plain_closed > 0 and part.stand_in < 0:
            part.stand_in = len(self.open)
            self.stand_in_part[len(self.open)] = part
            self._push(_REOPENED, False, "html")

    def _close(self, at: int, by: str | None = None) -> None:
        """End the element at ``at`` and every element inside it (``by``: the end tag that
        ends it, if one does). A hidden formatting element among them (not the one its own end
        tag ends) is opened again before the next text, as a browser does (see _FORMATTING)."""
        end = at
        while end > 0 and self.open[end - 1] == _GONE:
            end -= 1  # nothing is left of what the adoption agency took
        while self.hides and self.hides[-1] >= end:
            self.hides.pop()
        if self.hidden is not None and self.hidden >= end:
            self.hidden = None
        if end <= self.guard:
            self.lost = True
        if end <= self.kept_select:
            self.kept_select = -1
        elif end < self.kept_mark:
            self.kept_mark = end
        while self.old_selects and self.old_selects[-1] >= end:
            self.old_selects.pop()
        # A browser clears the list of active formatting elements once, up to its last marker,
        # however many cells, captions and templates it ends ("<template><b hidden><table>
        # <caption></template>x": the template's part, and its hidden b, stay, and x is hidden).
        cleared = False
        while len(self.open) > end:
            depth = len(self.open) - 1
            key = self.open.pop()
            entry = self.entries.pop()
            if entry is not None and entry.live:
                if depth == at and key == by:
                    self._forget(entry)
                else:
                    self._left(entry)
            if key == _REOPENED:
                self._stand_in_ended(depth)
            if (
                key in _MARKERS
                and (key not in ("applet", "marquee", "object") or key == by)
                and not cleared
            ):
                # A cell, caption or template clears its part of the list; an object, applet
                # or marquee only at its end tag (its marker stays if anything else ends it).
                cleared = True
                self._clear_part(key == "caption" and not (depth == at and by == key))
            if key == "template":
                self.template_modes.pop()
                if not (part := self.template_parts.pop()).cleared:
                    self._outlived(part)
            if key != _GONE:
                self.at[key].pop()
            elif depth in self.removed:  # the last of its name, unless _last passed it
                found = self.at[self.removed.pop(depth)]
                if found and found[-1] == depth:
                    found.pop()
            self.inside.pop()
            self.html_at.pop()
            self.hiding.pop()
            for bound in self.bounds:
                bound.pop()

    def _left(self, entry: _Entry) -> None:
        """The formatting element of ``entry`` (live) was closed by something other than its
        end tag: it is opened again before the next text (see _reconstruct)."""
        entry.depth = -1  # (a live entry's part is in the list)
        if entry.hidden:
            entry.part.waiting.append(entry)
        else:
            entry.part.plain_closed += 1
            # Closed inside its part's stand-in (or with none open): a browser opens it again
            # where the next text stands, inside what holds it, so a new stand-in is opened
            # there ("<p><b>a</p>b<p><b>c<h3 hidden>d<h2>x": the b opened again in the h3 keeps
            # the h2 in it, hidden).
            entry.part.stand_in = -1

    def _stand_in_ended(self, at: int) -> None:
        """The stand-in at ``at`` ended: the part it was opened for (which need not be the
        last one now) has none open."""
        part = self.stand_in_part.pop(at)
        if part.stand_in == at:
            part.stand_in = -1

    def _unhide(self, at: int) -> None:
        """The element at ``at`` no longer hides what it holds: the next hidden element inside
        it, if any, is the outermost."""
        if not self.hiding[at]:
            return
        if at == self.guard:
            self.lost = True
        self.hiding[at] = False
        if self.hidden == at:
            found = bisect_right(self.hides, at)
            while found < len(self.hides) and not self.hiding[self.hides[found]]:
                found += 1
            self.hidden = self.hides[found] if found < len(self.hides) else None

    def _formatting_ended(self, entry: _Entry) -> None:
        """The end tag of the formatting element of ``entry``, the last of its name in the
        list: one closed earlier just leaves the list, but where a browser opened it again (at
        its stand-in) it ends that copy; an open one ends as the adoption agency ends it, if
        no scope element is open inside it."""
        if entry.depth < 0:
            stand_in = entry.part.stand_in
            self._forget(entry)
            if not entry.hidden and stand_in > self._bound(_SCOPES):
                if not entry.phantom:
                    self._end_copy(stand_in)
                elif self._foreign_after(stand_in):
                    self.lost = True  # (as for a phantom one open, see _adopt)
        elif entry.depth > (scope := self._bound(_SCOPES)):
            self._adopt(entry.depth, entry.name)
        elif self._annotation_at(scope):
            self.lost = True  # (see _annotation_at)

    def _adopt(self, at: int, tag: str) -> None:
        """The formatting element ``tag`` at ``at`` ends (its end tag, or a new ``a``), as the
        standard's adoption agency ends it: with everything inside it if no special element
        is open inside it; else that element (the furthest block) and what it holds stay open,
        moved out of it, and it alone leaves the stack ("<b><div hidden></b>x": x is hidden).
        A hidden one a browser may keep around what follows (inside more than 8 special
        elements, or after 3 more of its name, of which one may have dropped it from the list
        of formatting elements) stays open. The agency then ends what is open inside the
        innermost special element (see _end_copy). A phantom one (see _Entry), which one reading
        never opened, only leaves the stack: what it holds stays open, as that reading has it
        (but an svg or a math it holds leaves the rest of the page unread)."""
        special = self._bound(_SPECIAL)
        entry = self.entries[at]
        phantom = entry is not None and entry.phantom
        if phantom and self._foreign_after(at):
            # one reading ends the svg or the math it holds, the other keeps it open: what
            # follows is HTML to one and theirs to the other, and is not read
            self.lost = True
        if special < at and not phantom:
            self._close(at, tag)
            return
        deep = self._specials_inside(at) >= 8
        if self.hiding[at]:
            if deep or (special > at and self.formatted[tag] - self.opened_as[at] > 3):
                return
            self._unhide(at)
        self._take(at)
        if not (deep or phantom):
            self._close(special + 1)

    def _specials_inside(self, at: int) -> int:
        """How many special elements are open inside the element at ``at``, up to 8."""
        specials = self.bounds[_BOUND_AT[_SPECIAL]]
        count, special = 0, specials[-1]
        while special > at and count < 8:
            count += 1
            special = specials[special - 1]
        return count

    def _end_copy(self, at: int) -> None:
        """End what the adoption agency ends inside a formatting element that hides nothing,
        opened again at the stand-in at ``at`` (see _REOPENED), at its end tag: everything
        (not the stand-in, which stands for the others too) if no special element is open
        inside it; else the agency moves a copy of it into each special element in turn, from
        the outermost, and ends the last copy with what it holds: what is open inside the
        innermost special element ends ("<b><div><svg></b><p hidden>x": the p is not svg's,
        and hides x). Its outer loop runs 8 times at most: past 7 special elements, the last
        copy stays open, and so does what it holds."""
        special = self._bound(_SPECIAL)
        if special < at:
            self._close(at + 1)
        elif self._specials_inside(at) < 8:
            self._close(special + 1)

    def _remove(self, at: int) -> None:
        """End the element at ``at`` alone, as something other than its end tag ends it: what
        it holds stays open, no longer in it (a formatting element is opened again, see _left;
        one the adoption agency takes leaves the list instead, see _take)."""
        self._unhide(at)
        entry = self.entries[at]
        if entry is not None:
            self.entries[at] = None
            if entry.live:
                self._left(entry)
        if self.open[at] == _REOPENED:
            self._stand_in_ended(at)
        if self.old_selects and self.old_selects[-1] == at:
            self.old_selects.pop()
        self._off_stack(at)

    def _take(self, at: int) -> None:
        """Take the element at ``at`` alone off the stack: what it holds stays open, and stays
        in it (hidden, if it hides)."""
        entry = self.entries[at]
        if entry is not None:
            if entry.live:
                self._forget(entry)
            self.entries[at] = None
        # (the innermost of its name but where a capped hidden element of that name has no
        # entry, and the adoption agency then takes this one, outside it: "<b hidden>" x4)
        self._off_stack(at)

    def _off_stack(self, at: int) -> None:
        """Leave _GONE in the place of the element at ``at``, which stays listed in ``at``
        until it is the last of its name or its place is popped (see removed)."""
        self.removed[at] = self.open[at]
        self.open[at] = _GONE

    def _break_out(self) -> None:
        """End the svg or math elements open up to the innermost HTML element (or one inside
        which tags are read as HTML), as a browser does at an HTML tag that ends them."""
        depth = len(self.open)
        while depth and self.inside[depth - 1] in ("svg", "math"):
            depth -= 1
        self._close(depth)

    def _end_select(self) -> bool:
        """End the select open (see _in_select), as its end tag, an ``<input>`` or a
        ``<select>`` ends it. Where a textarea or a keygen was kept in it, the old rules ended
        it there, and hold what was opened since outside it: that stays open, and the select
        and what was open in it then end alone, outermost first (see _remove). Whether one
        was kept (the old rules then open a ``<select>``)."""
        select = self._bound(_SCOPES)
        if self.kept_select != select:
            self._close(select)
            return False
        self.kept_select = -1
        if self.kept_mark == len(self.open):
            self._close(select)
        else:
            if self._foreign_after(self.kept_mark - 1):
                # An svg or a math opened since stays open to the old rules (it is outside
                # their select) and ends with the select to the current ones: what follows
                # is theirs to one and HTML to the other, and is not read.
                self.lost = True
            for at in range(select, self.kept_mark):
                if self.open[at] != _GONE:
                    self._remove(at)
        return True

    def _implied_ends(self, tag: str) -> None:
        """End what start tag ``tag`` ends in a browser: an open table at a table where no cell
        is open, an open paragraph at a block, a link at a link, a list item at the next, a cell
        at the next, a row at a row, a table's caption or section at a part of a table."""
        if tag == "table" and (table := self._last("table")) > max(
            self._last(name) for name in ("td", "th", "caption", "template")
        ):
            self._close(table)  # "<table><table>": the open table ends
        if (
            tag in _CLOSES_P
            and not (tag == "table" and self.quirks)
            and (at := self._in_scope("p", _BUTTON_SCOPES)) >= 0
        ):
            self._close(at)
        if tag == "a" and (entry := self._entry("a")) is not None and entry.depth < 0:
            self._forget(entry)  # "<p><a>x</p><a>": the first link is not opened again
        if tag in ("a", "nobr") and (at := self._last(tag)) > max(
            self._bound(_MARKERS if tag == "a" else _SCOPES), self._last("select")
        ):
            if at < self._bound(_SCOPES):
                self._take(at)  # "<a hidden><table><a>x": x is in the first link, hidden
            else:
                self._adopt(at, tag)  # "<a hidden>x<a>y": a link ends the open one
        if tag == "button" and (at := self._in_scope("button")) >= 0:
            self._close(at)  # a button ends the open one
        if tag in _RUBY_PARTS and self._in_scope("ruby") >= 0:
            # "<rp hidden>(<rt>x": the rt is not in the rp (the standard's implied end tags)
            ends = _IMPLIED_ENDS - ({"rtc"} if tag in ("rp", "rt") else set())
            while self.open and self.open[-1] in ends:
                self._close(len(self.open) - 1)
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
            if (
                tag == "optgroup"
                and self._in_select()
                and self.open
                and self.open[-1] == "optgroup"
            ):
                self._close(len(self.open) - 1)  # outside a select, an optgroup nests
        elif tag == "tr":
            self._close(self._bound(_TABLE_SECTIONS) + 1)
        elif tag in _CELL:  # back to the row, or the table or section a row is implied in
            self._close(max(self._last("tr"), self._bound(_TABLE_SECTIONS)) + 1)
        elif tag in _TABLE_PARTS:
            self._close(self._last("table") + 1)

    def _opened(self, tag: str, hides: bool, closed: bool, attributes: dict[str, str]) -> bool:
        """Start tag ``tag``: what it ends ends, and it is open (unless it has no content, or
        it is a part of a table outside any table, which a browser ignores). Whether it is an
        element of svg or math, whose content is markup whatever its name."""
        inside = self.inside[-1] if self.inside else "html"
        if inside == "text":
            inside = "math" if tag in ("mglyph", "malignmark") else "html"
        if inside != "html" and not (tag == "svg" and self.open[-1] == "math annotation-xml"):
            if tag not in _BREAKOUT and not (tag == "font" and attributes.keys() & _FONT_BREAKOUT):
                key = f"{inside} {tag}"  # an element of svg or math: it ends nothing
                if (
                    tag in _ENDS_SELECT
                    or (tag in _TABLE_PARTS - {"col", "colgroup"} and self._last("table") >= 0)
                ) and self._select_apart():
                    self.lost = True  # (a table's part ends a select in a table, to the old rules)
                if not closed:
                    self._push(key, hides or key in _FOREIGN_UNSHOWN, _inside(key, attributes))
                return True
            self._break_out()
        if tag in _FOREIGN and not self._foreign_opens():
            return False
        if tag in _TABLE_PARTS and (
            (table := self._last("table")) <= self._last("template")
            or (tag in ("col", "colgroup") and self._last("select") > table)
        ):
            return False
        ends = True  # whether what the tag ends in a browser ends (see _implied_ends)
        if tag == "form" and self._last("template") < 0:
            in_select = self._in_select()
            if self.form_current and (self.form_old or in_select):
                return False  # a second form a browser ignores, by both rules
            if in_select:
                # The old rules ignore a form in a select, and the current ones open it there
                # (see the module): it is opened, hiding what it holds if it hides.
                self.form_current = self.form_apart = True
            else:
                # To the rules with a form already, if one has, it is ignored: it ends nothing
                # ("<select><form></select><p hidden><form>x": the p stays open, x hidden).
                ends = not (self.form_old or self.form_current)
                self.form_apart = not ends
                self.form_old = self.form_current = True
                table = self._last("table")
                if table > max(self._last("td"), self._last("th"), self._last("caption")):
                    return False  # in a table, a browser opens a form and ends it at once
        if (
            tag in _HELD_IN_SELECT
            and self._in_select()
            and (tag != "table" or self._last("table") < 0)  # (else it ends the select)
            and "template" not in self.skip
        ):
            # The old rules ignore a table, an object, an applet or a marquee in a select (and
            # a table's parts), and the current ones open it: nothing is opened, and what it
            # holds is not read, up to its end tag.
            self.skip[tag] = self.skip.get(tag, 0) + 1
            self.held_at.setdefault(tag, []).append(len(self.open))
            return False
        opens = self._select_started(tag) if tag in _ENDS_SELECT else "open"
        if opens == "ignored":
            return False
        if tag not in ("col", "template") and self.open and self.open[-1] == "colgroup":
            self._close(len(self.open) - 1)  # content ends a column group, out of the table
        if ends and (not self._in_select() or tag in _SELECT_STARTS):
            self._implied_ends(tag)
        if tag not in _NO_RECONSTRUCT:
            self._reconstruct()
        if tag == "tr" or tag in _CELL:  # a row, and a section, a browser implies
            if self.open[-1] == "table":
                self._push("tbody", False, "html")
            if tag in _CELL and self.open[-1] in _TABLE_SECTIONS:
                self._push("tr", False, "html")
        if tag in _FOREIGN:
            if not closed:
                self._push(f"{tag} {tag}", hides, tag)
        elif tag not in _VOID:
            if opens == "old":
                self.old_selects.append(len(self.open))
            unshown = tag in _UNSHOWN or (tag == "dialog" and "open" not in attributes)
            self._push(tag, hides or unshown, "html")
        return False

    def _foreign_opens(self) -> bool:
        """Whether an ``<svg>`` or a ``<math>`` here is opened. The old rules ignore it in a
        select; the current ones read it as text in an element the select ignores (see
        read_tags_in), or hold it in a table (an object, ...) the select holds, up to that
        element's end: neither has it open after that, and it is not. Where the old rules
        ended the select in such an element (they open it), or in a select only the old rules
        open (see old_selects; the current ones open it outside any select), what follows is
        theirs to one and HTML or text to the other, and the rest of the page is not read."""
        in_select = self._in_select()
        if (self.reading is not None and in_select) or self._held():
            return False
        if self.reading is not None or (
            in_select and self._bound(_SCOPES) in self.old_selects[-1:]
        ):
            self.lost = True
        return True

    def _select_started(self, tag: str) -> str:
        """What the start tag ``tag`` (one of _ENDS_SELECT) does to a select it stands in:
        ``"ignored"`` (it opens nothing), ``"old"`` (a select only the old rules open), or
        ``"open"``. A textarea or a keygen ended a select by the old rules, and is inside it by
        the current ones: where something hides it, it is kept inside, hidden, and where the
        select was open then is noted (see _end_select); else it ends the select, and where it
        stood is noted (see apart_at). Where the current rules keep the select out of their
        scope, the old rules end it (see _select_apart): what follows may be hidden by what
        either then opens, neither reading is kept, and the rest of the page is not read (a
        loss, never a leak)."""
        if self._select_apart():
            self.lost = True
            return "ignored"
        if not self._in_select():
            if (
                tag == "select"
                and self.apart_at >= 0
                and not self._foreign_after(self.apart_at - 1)
            ):
                self.apart_at = -1
                return "old"  # the current rules end their select with it, and open none
            return "open"
        if tag in ("keygen", "textarea"):
            if not self.hides_text():
                self._end_select()
                self.apart_at = len(self.open)
            elif self.kept_select != (select := self._bound(_SCOPES)):
                self.kept_select, self.kept_mark = select, len(self.open)
        elif self._end_select():
            return "old" if tag == "select" else "open"
        elif tag == "select":
            return "ignored"  # a select in a select only ends it
        return "open"

    def _ended(self, tag: str) -> bool:
        """End tag ``tag``: it ends the innermost open ``tag`` and what is inside it, unless
        the standard ignores it there (see the module). Whether it ended an element of svg or
        math, or one of their HTML integration points ignores it (see _foreign_ignores)."""
        if tag in _HELD_IN_SELECT and tag in self.skip:
            return False  # one a select held, which opened nothing (see _opened): ends nothing
        if self.open and self.open[-1] == tag and tag in _TEXT_ONLY:
            # its content was read as text (or its tags, see read_tags_in): its end tag ends
            # it, in a select too, as the standard's "text" insertion mode ends it
            self._close(len(self.open) - 1, tag)
            return False
        if self.open and " " in self.open[-1]:  # in svg or math: its own elements first
            if tag in ("br", "p"):
                self._break_out()
            else:
                at = max(self._last(f"svg {tag}"), self._last(f"math {tag}"))
                if at > self.html_at[-1]:
                    self._close(at)
                    return True
                if self._foreign_ignores(tag):
                    return True  # (a template's end leaves it in skip too)
        implied = True  # whether a form's end ends the elements it implies first
        if tag == "form" and self._last("template") < 0:
            if not (self.form_old or self.form_current):
                # No form open: ignored, and one whose end a browser ignored (outside the
                # table or object it stood in) is no longer open to it either ("<form><table>
                # </form></table><p hidden></form>x": the p stays open, and x hidden).
                return False
            if self._in_select():
                self.form_current = False  # the old rules ignore it there, and keep theirs
                return False
            # With the rules apart, one of them ignores it: only the form ends, if open.
            implied = self.form_old and self.form_current and not self.form_apart
            self.form_old = self.form_current = False
        if tag in _HEADINGS:
            at = max(self._in_scope(heading) for heading in _HEADINGS)
        else:
            at = self._last(tag)
        if tag in ("br", "body", "html"):
            return False
        if self._in_select() and tag not in _SELECT_ENDS:
            return False
        if tag in _FORMATTING and (entry := self._entry(tag)) is not None:
            self._formatting_ended(entry)
            return False
        if at < 0:
            return False
        if tag in _TABLE_ENDS:  # in table scope
            stop = max(self._last("template"), -1 if tag == "table" else self._last("table"))
        elif tag == "p":
            stop = self._bound(_BUTTON_SCOPES)
        elif tag == "li":
            stop = self._bound(_LIST_SCOPES)
        elif tag in _ENDS_IN_SCOPE:
            stop = -1 if tag == "template" else self._bound(_SCOPES)
        else:  # "any other end tag": not past a special element
            stop = self._bound(_SPECIAL)
        if tag == "select":
            self._select_ended(at, stop)
            return False
        if at < stop:
            if self._annotation_at(stop) or (tag in _TABLE_ENDS and self._template_apart(tag)):
                self.lost = True
            return False
        if tag == "form" and implied:
            while self.open[-1] in _IMPLIED_ENDS and len(self.open) - 1 > at:
                self._close(len(self.open) - 1)  # "<li>a</form>": the item ends first
        if tag == "form" and at < len(self.open) - 1:
            self._take(at)  # a browser takes the form alone off its stack
            return False
        self._close(at, tag)
        return False

    def _foreign_ignores(self, tag: str) -> bool:
        """Whether the end tag ``tag`` of a template or a table's part (which end past a scope
        marker), met in svg or math with none of their elements of its name open inside the
        innermost HTML element, is ignored: that element is ``tag`` and an element inside which
        tags are read as HTML (a ``foreignObject``, an ``mi``, ...) stands between, as the
        current rules have it ("<template><svg><foreignObject></template>x": x is in the
        template). Other end tags stop there anyway (see _ended)."""
        html = self.html_at[-1]
        if tag != "template" and tag not in _TABLE_ENDS:
            return False
        if html < 0 or self._last(tag) != html or (scope := self._bound(_SCOPES)) <= html:
            return False
        return not self._annotation_at(scope)

    def _annotation_at(self, at: int) -> bool:
        """Whether the element at ``at`` is a math ``annotation-xml`` that does not hold HTML.
        The standard counts it as special, and as a scope marker, and ignores an end tag of
        an element outside it; the rules that decide what a reader is shown here do not (they
        end that element, and read what follows as HTML): where an end tag parts them so, the
        rest of the page is not read ("<span><math><annotation-xml></span><a hidden>x")."""
        return at >= 0 and self.open[at] == "math annotation-xml" and self.inside[at] == "math"

    def _template_apart(self, tag: str) -> bool:
        """Whether the end tag ``tag`` of a table, a section or a row, met in a template whose
        content is read as a body's (its first start tag was not a part of a table) inside a
        cell, and ignored there by the standard (the template stands between), ends that cell's
        table, section or row, and the template, by the current rules."""
        template = self._last("template")
        if template < 0 or self.template_modes[-1] != "body" or tag in ("td", "th", "caption"):
            return False
        cell = max(self._last("td"), self._last("th"))
        return 0 <= self._last(tag) < template and self._last("table") < cell < template

    def _select_ended(self, at: int, stop: int) -> None:
        """``</select>``, the innermost open select at ``at``, outside the scope element at
        ``stop`` if ``at < stop``: it ends the select (see _end_select), unless the rules part
        (see _select_apart): the current ones find it out of scope (in a table, an object, ...
        the select holds, or in an svg's ``foreignObject`` or the like), and the old ones end
        it; then the rest of the page is not read."""
        if at < stop:
            if at > self._last("template") and self._foreign_after(at):
                self.lost = True
        elif self._held():
            self.lost = True
        else:
            self._end_select()

    def doctype(self, markup: str) -> None:
        """A DOCTYPE: before anything else, it sets the mode (see _quirky)."""
        if not self.begun:
            self.begun = True
            self.quirks = _quirky(markup)

    def start(
        self,
        tag: str,
        hides: bool = False,
        closed: bool = False,
        attributes: dict[str, str] | None = None,
    ) -> bool:
        """Start tag ``tag``; whether it is an element of svg or math (whose content is markup,
        whatever its name)."""
        self.begun = True
        if self.template_modes and not self.template_modes[-1] and tag not in _IN_HEAD:
            self.template_modes[-1] = "table" if tag in _TABLE_PARTS else "body"
        if self._opened(tag, hides, closed, attributes or {}):
            return True
        if self._heading() and tag not in _IN_HEAD and tag != "html":
            self._enter_body()
        if tag == "head":
            if self.phase != "before":
                return False  # a browser ignores a <head> once the page has begun
            self.phase = "head"
        elif tag in _IN_HEAD and self.phase == "before":
            self.phase = "head"  # a head is implied around it
        if tag in _SKIP:
            self.skip[tag] = self.skip.get(tag, 0) + 1
        if tag in _BLOCK:
            self.parts.append("\n")
        elif tag in _CELL:
            self.parts.append("\t")
        return False

    def end(self, tag: str) -> None:
        self.begun = True
        held = self.held_at.get(tag)
        if held and tag in self.skip and self._last("template") >= held[-1]:
            return  # a template opened in what a select holds holds this end tag
        if tag == self.reading:
            self.reading = None  # (the current rules' text ends at the first such end tag)
        if tag == "select" and self.apart_at >= 0:
            self.lost = self.lost or self._foreign_after(self.apart_at - 1)
            self.apart_at = -1
        if self._ended(tag):
            return
        if self._heading() and tag in _HEAD_ENDERS:
            self._enter_body()
        elif tag == "head" and self.phase == "before":
            self.phase = "head"  # an implied head, ended at once: a later <head> is ignored
        if self.skip.get(tag):
            self.skip[tag] -= 1
            if held:
                held.pop()
            if not self.skip[tag]:
                del self.skip[tag]
                if not self.skip:
                    self.guard = -1  # (see read_tags_in)
        if tag in _BLOCK:
            self.parts.append("\n")
        elif tag in _CELL:
            self.parts.append("\t")

    def text(self, data: str, reopen: bool = True) -> None:
        """Text ``data``; ``reopen``: whether a browser opens the formatting elements closed
        before it again (not for the content of a textarea, or another element that holds
        text only: it is inserted as it is, as a browser inserts it)."""
        if not self.begun and data.strip(_SPACE):
            self.begun = True
        # Text ends the head unless it is inside an element of the head (a script's source).
        if self._heading() and self.skip.keys() <= {"head"} and data.strip(_SPACE):
            self._enter_body()
        if self.open and self.open[-1] == "colgroup" and data.strip(_SPACE):
            self._close(len(self.open) - 1)  # text ends a column group, out of the table
        # (in svg or math, text is theirs: a browser opens no formatting element again there;
        # it does in math's text elements, mi to mtext, whose text it reads as the body's)
        foreign = bool(self.inside) and self.inside[-1] in _FOREIGN
        if (
            reopen
            and data
            and not self.skip
            and not foreign
            and (data.strip(_SPACE) or self.open[-1:] not in _IN_TABLE)
        ):
            self._reconstruct()
        if data and not self.skip and not self.hides_text():
            self.parts.append(data)

    def titled(self, data: str) -> None:
        """Take the text of a ``title`` element: the page's title if it is the first one met
        outside ``svg`` and ``math``, wherever it stands (as a browser's ``document.title``:
        a tag that ended the head early, or a page with no head, keeps its title); a title is
        never text (see the module)."""
        if self.title is None and self._last("svg svg") < 0 and self._last("math math") < 0:
            self.title = data

    def _select_apart(self) -> bool:
        """Whether a tag here is in a select to the old rules and not to the current ones:
        the innermost select is open (outside templates), with a table, an object, an applet
        or a marquee it holds (see _opened), or an svg or a math, open inside it: the old rules
        ignore these there, and all they hold. An ``<input>``, a ``<keygen>``, a ``<select>``
        or a ``<textarea>`` here ends the select by the old rules only (the current ones read
        it as svg's or math's, or find the select out of scope)."""
        select = self._last("select")
        if select <= self._last("template"):
            return False
        return self._held() or self._foreign_after(select)

    def _foreign_after(self, at: int) -> bool:
        """Whether an svg or a math opened after the element at ``at`` is open."""
        return max(self._last("svg svg"), self._last("math math")) > at

    def _held(self) -> bool:
        """Whether a table, an object, an applet or a marquee a select holds is open (nothing
        was opened for it: see _opened)."""
        return bool(self.skip.keys() & _HELD_IN_SELECT)

    def hides_text(self) -> bool:
        """Whether text here is hidden: an element that hides it is open, its part of the
        list of active formatting elements lost count (see _listed), or the page was lost
        (see read_tags_in)."""
        return self.hidden is not None or self.formatting[-1].sticky or self.lost

    def read_tags_in(self, tag: str) -> bool:
        """Whether the tags inside the element ``tag`` just opened are read, as they are in a
        select outside templates if it is one of _IGNORED_IN_SELECT. A browser that reads the
        select by the standard's old rules ignores it there, and reads its tags, which may hide
        what follows ("<select><style></select><p hidden></style>x": x is hidden); one that
        reads it by the current rules reads its content as text up to its end tag, which it
        does not show (but an xmp's where nothing hides it): that text is skipped. Where an
        element outside it hides it, the current rules keep that open up to the end tag: if a
        tag read ends it first, the rest of the page is not read (see ``guard``). A plaintext
        that something hides is read as text: that hides the rest of the page by both rules."""
        if tag not in _IGNORED_IN_SELECT or not self._in_select() or "template" in self.skip:
            return False
        if tag == "plaintext":
            return not self.hides_text()
        if tag == "title" or (tag == "xmp" and self.hides_text()):
            self.skip[tag] = self.skip.get(tag, 0) + 1  # (the others are in _SKIP)
        if self.reading is None:
            self.reading = tag
        outer = self.hidden if self.hidden != len(self.open) - 1 else None
        if self.guard < 0 and (outer is not None or self.formatting[-1].sticky):
            self.guard = self._bound(_MARKERS) if outer is None else outer
        return True

    def _heading(self) -> bool:
        """Whether what comes next may start the body: the body has not started, and this is
        not inside a template (its content is parsed apart from the page, tags and text)."""
        return self.phase != "body" and "template" not in self.skip

    def _enter_body(self) -> None:
        """The body starts: an open head ends, and no later ``<head>`` or ``<title>`` counts."""
        self.phase = "body"
        self.skip.pop("head", None)


def _inside(key: str, attributes: dict[str, str]) -> str:
    """How start tags inside the element ``key`` of svg or math are read (see _Page.inside):
    as HTML inside svg's foreignObject, desc and title, and math's annotation-xml of HTML."""
    if key in _INTEGRATION:
        return "html"
    if key == "math annotation-xml":
        encoding = attributes.get("encoding", "").lower()
        return "html" if encoding in ("text/html", "application/xhtml+xml") else "math"
    return "text" if key in _MATH_TEXT else key.partition(" ")[0]


def _quirky(markup: str) -> bool:
    """Whether a page that starts with the DOCTYPE ``markup`` is read in quirks mode, where a
    table does not end an open paragraph: no name "html", a public identifier of the
    standard's legacy list, or a DOCTYPE a browser cannot read (as the standard has it)."""
    found = _DOCTYPE.fullmatch(markup)
    if found is None or found[1].lower() != "html":
        return True
    public = next((value for value in found.groups()[1:3] if value is not None), None)
    system = next((value for value in found.groups()[3:] if value is not None), None)
    if system is not None and system.lower() == _QUIRKS_SYSTEM:
        return True
    if public is None:
        return False
    public = public.lower()
    return (
        public in _QUIRKS_IDS
        or public.startswith(_QUIRKS_PREFIXES)
        or (system is None and public.startswith(_QUIRKS_WITHOUT_SYSTEM))
    )


def _css_unescaped(match: re.Match[str]) -> str:
    """The character a CSS escape stands for (U+FFFD for none)."""
    digits, other = match.groups()
    if digits is None:
        return other
    code = int(digits, 16)
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code < 0xE000 else "\ufffd"


def _tag_end(raw: str, at: int) -> tuple[int, bool, bool, dict[str, str]]:
    """The index just past the ``>`` closing the tag whose attributes start at ``at``, or -1;
    whether they hide the element (see :func:`_hides`); whether the tag ends in ``/>``; and
    the attributes that decide how svg and math are read (``encoding``, and a font's
    ``color``, ``face`` and ``size``) and whether a dialog is shown (``open``), as a browser
    takes them (the first of each name)."""
    hides = False
    seen: set[str] = set()
    noted: dict[str, str] = {}
    while True:
        match = _ATTRIBUTE.match(raw, at)
        if match is None or match.end() == at:
            break
        at = match.end()
        name = match[1]
        if name is not None and len(name) <= 8:  # "hidden", "style" and _NOTED
            name = name.lower()
            if name not in seen and (name in ("hidden", "style") or name in _NOTED):
                seen.add(name)
                value = next((v for v in match.groups()[1:] if v is not None), None)
                if name in _NOTED:
                    noted[name] = _decoded(value or "")
                else:
                    hides = _hides(name, value) or hides
    if not raw.startswith(">", at):
        return -1, hides, False, noted
    return at + 1, hides, raw[at - 1] == "/", noted


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
        page.text(data, reopen=False)
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
            end = size if gt < 0 else gt + 1
            if raw[lt + 2 : lt + 9].lower() == "doctype":
                page.doctype(raw[lt:end])
            return end
        if raw.startswith("</>", lt):
            return lt + 3
        page.text("<")
        return lt + 1
    end, hides, closed, noted = _tag_end(raw, name.end())
    if end < 0:
        return size  # a tag the page never closes: the rest of the page is inside it
    tag = name.group().lower()
    if closing:
        page.end(tag)
        return end
    if page.start(tag, hides, closed, noted):
        return end  # in svg or math, a <title> or <style> holds markup
    if page.read_tags_in(tag):
        return end
    if tag == "plaintext":
        # The rest of the page is its text, as it is: a browser reads no tag after it, not
        # even "</plaintext>" ("<div hidden><plaintext></div>x": x is in the hidden div).
        page.text(raw[end:])
        return size
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
