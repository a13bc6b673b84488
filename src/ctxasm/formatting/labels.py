"""Source labels and their look-alikes: one grammar for reading citations and for neutralising
metadata and passage text that imitate a label.

Text is first *folded*: every character is put in NFKC form (full-width letters and digits,
superscripts and ligatures become ASCII), decimal digits of any script become ASCII digits,
Latin look-alikes from other scripts (Cyrillic ``ѕ о с е``, Greek ``ο``, small capitals) become
the Latin letter, CJK and other brackets become ``[`` and ``]``, dashes become ``-``, and
invisible format characters and combining marks are dropped (those of a composed letter too:
``Ś`` is read as ``S``, as its decomposed form ``S`` + mark is). :class:`Folded` maps every offset
of the folded text back to the original, so a match can be reported (or rewritten) as written.

The grammar, matched on folded text, case-insensitively::

    item    = [ word [ ":" | "#" ] ] number [ "-" [ word [ ":" | "#" ] ] number ]
    list    = item { ("," | ";" | "&" | "and" | ", and") item }
    bracket = "[" list [ "." | "," | ";" | ":" ] "]"
    paren   = "(" worded-list [ punctuation ] ")"
    bare    = worded-list, not inside a word, not a version such as "Source 2.0"
    word    = "source" | "sources" (or "s0urce"), then spaces or "_";  number = 1 to 9 digits

Every scan is one pass of a regular expression whose repetitions cannot overlap, so its time
is linear in the text.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from urllib.parse import quote

from ctxasm.keys import CACHE_CHARS, text_cache
from ctxasm.lookalikes import BLANK_LETTERS, LABEL_LOOKALIKES
from ctxasm.urls import shown_split

__all__ = [
    "CITATION",
    "CONTROL_TOKEN",
    "ITEM",
    "NEUTRAL_MARK",
    "Folded",
    "fold",
    "neutral_controls",
    "neutral_id",
    "neutral_text",
    "neutral_title",
    "neutral_url",
]

_DROPPED = frozenset({"Cf", "Mn", "Me"})
_NON_ASCII = re.compile(r"[^\x00-\x7f]")

_WORD = r"s[o0]urces?"  # "S0urce" too: a digit for the letter reads as the word
_NUMBER = r"[0-9]{1,9}(?![0-9])"
_WORDED = rf"{_WORD}[\s_]*(?:[:#][\s_]*)?"  # "Source_2" too
_DASH = r"\s*-\s*"  # a range: "1-3" (dashes fold to "-")
# In a bracket or parentheses that say "Source(s)" a range may be in words too: "[Sources 1 to
# 3]", "(Sources 1 through 3)". Not elsewhere: "take Source 2 to 3 times", "a scale [1 to 10]".
_RANGE = rf"(?:{_DASH}|\s+(?:to|through|thru)\s+)"


def _items(range_: str) -> tuple[str, str]:
    """One item (a number or range) and a list of items, with ranges written as ``range_``."""
    one = rf"(?:{_WORDED})?{_NUMBER}(?:{range_}(?:{_WORDED})?{_NUMBER})?"
    sep = r"(?:\s*[,;&]\s*(?:and\s+)?|\s+and\s+)"
    return one, rf"{_WORDED}{_NUMBER}(?:{range_}(?:{_WORDED})?{_NUMBER})?(?:{sep}{one})*"


_ONE, _WORDED_LIST = _items(_DASH)
_WORDED_LIST_SPELT = _items(_RANGE)[1]
_LIST = rf"{_ONE}(?:(?:\s*[,;&]\s*(?:and\s+)?|\s+and\s+){_ONE})*"
_CLOSE = r"\s*(?:[.,;:]\s*)?"
CITATION = re.compile(
    rf"(?P<bracket>\[\s*(?:{_WORDED_LIST_SPELT}|{_LIST}){_CLOSE}\])"
    rf"|(?P<paren>\(\s*{_WORDED_LIST_SPELT}{_CLOSE}\))"
    rf"|(?P<bare>(?<!\w){_WORDED_LIST}(?!\.[0-9]|[^\W0-9]))",
    re.IGNORECASE,
)
"""Every citation marker of a folded text, in one of three shapes (see the module docstring)."""
ITEM = re.compile(
    rf"(?:(?<=s[o0]urce)|(?<=s[o0]urces)|(?<![^\W\d_]))({_NUMBER})"
    rf"(?:{_RANGE}(?:{_WORDED})?({_NUMBER}))?",
    re.IGNORECASE,
)
"""One number or range inside a marker: after the word ("Source2") or after no letter, never
a digit inside a word (the 0 of "S0urce")."""
# Where a line starts, and what markup may come before a label there: quotes (block quotes and
# quotation marks, guillemets, which fold to "<" and ">"), an opening parenthesis, list
# bullets, arrows, numbers and letters ("1." "2)" "a)" "[1]"), headings, table bars, emphasis
# and code marks, and HTML tags ("<b>", tried before a lone "<"). A repetition reads at most
# a tag's twelve characters before another is tried: the scan stays linear.
_LINE_LEAD = re.compile(
    r"(?:</?[A-Za-z][A-Za-z0-9]{0,9}>|[ \t<>*+#|•·~_=`\"'“”‘’„(→⇒➜►▶▸-]|[0-9]{1,9}[.)]"
    r"|[A-Za-z][.)](?=\s)|\[[0-9]{1,9}\])*"
)
_WORD_RE = re.compile(_WORD, re.IGNORECASE)
NEUTRAL_MARK = "№ "
"""What neutralisation writes before the number of a label look-alike: ``[Source 2]`` becomes
``[Source № 2]``, which reads the same to a person and is no label to a model or a parser."""


@lru_cache(maxsize=65536)
def _fold_char(char: str) -> str:
    if unicodedata.category(char) in _DROPPED or char in BLANK_LETTERS:
        return ""
    out = []
    for part in unicodedata.normalize("NFKC", char):
        if part.isascii():
            out.append(part)
        elif (digit := unicodedata.decimal(part, None)) is not None:
            out.append(str(digit))
        elif unicodedata.category(part) in _DROPPED:
            continue
        elif unicodedata.category(part) == "Zs":
            out.append(" ")
        else:  # a letter with marks as the letter: composed "Ś" as "S" + mark, whose mark goes
            base = "".join(
                c
                for c in unicodedata.normalize("NFD", part)
                if unicodedata.category(c) not in _DROPPED
            )
            letter = base if len(base) == 1 else part
            out.append(LABEL_LOOKALIKES.get(letter, letter))  # NFKC did the rest
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Folded:
    """A folded text and the way back to the original's offsets."""

    text: str
    original_text: str
    folded_at: tuple[int, ...] = ()
    original_at: tuple[int, ...] = ()

    def original(self, position: int) -> int:
        """The offset in the original text of folded offset ``position``."""
        index = bisect_right(self.folded_at, position) - 1
        if index < 0:
            return position
        found = self.original_at[index] + position - self.folded_at[index]
        if index + 1 < len(self.original_at):
            found = min(found, self.original_at[index + 1])
        return found

    def span(self, start: int, end: int) -> str:
        """The original text of folded span ``start:end``."""
        return self.original_text[self.original(start) : self.original(end)]


def fold(text: str) -> Folded:
    """``text`` folded (see the module docstring), in time linear in its length."""
    if text.isascii():
        return Folded(text, text)
    pieces: list[str] = []
    folded_at: list[int] = []
    original_at: list[int] = []
    done = length = 0
    for match in _NON_ASCII.finditer(text):
        at = match.start()
        pieces.append(text[done:at])
        length += at - done
        folded = _fold_char(match.group())
        pieces.append(folded)
        if len(folded) != 1:
            folded_at += (length, length + len(folded))
            original_at += (at, at + 1)
        length += len(folded)
        done = at + 1
    pieces.append(text[done:])
    return Folded("".join(pieces), text, tuple(folded_at), tuple(original_at))


def _line_starts(text: str) -> Iterable[int]:
    """Where each line of ``text`` starts: at 0 and after each break ``str.splitlines`` knows
    (found in C, rather than tried with a look-behind at every character)."""
    return accumulate(map(len, text.splitlines(keepends=True)), initial=0)


def _marked(folded: Folded, matches: list[re.Match[str]]) -> str:
    """The original text with :data:`NEUTRAL_MARK` before every number of ``matches``."""
    cuts = sorted(
        folded.original(match.start() + item.start(group))
        for match in matches
        for item in ITEM.finditer(match.group())
        for group in (1, 2)
        if item.start(group) >= 0
    )
    if not cuts:
        return folded.original_text
    text = folded.original_text
    pieces: list[str] = []
    done = 0
    for cut in cuts:
        pieces += (text[done:cut], NEUTRAL_MARK)
        done = cut
    pieces.append(text[done:])
    return "".join(pieces)


_META_DELIMITERS = {"[": "(", "]": ")", "`": "'", "<": "‹", ">": "›"}


# Control characters, which a one-line header shows as U+FFFD, as the XML of the anthropic
# format must: a NUL or an escape sequence in a title reached the other formats as it was.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")


def _metadata(value: str) -> str:
    """One line of metadata with no delimiter, control character or label look-alike."""
    value = _CONTROLS.sub("\ufffd", " ".join(value.split()))
    if not value.isascii() or any(d in value for d in _META_DELIMITERS):
        value = "".join(_META_DELIMITERS.get(_fold_char(c), c) for c in value)
    folded = fold(value)
    return _marked(folded, [m for m in CITATION.finditer(folded.text) if _is_worded(m)])


def _is_worded(match: re.Match[str]) -> bool:
    return _WORD_RE.search(match.group()) is not None


@lru_cache(maxsize=65536)
def neutral_title(title: str) -> str:
    """``title`` on one line, with brackets as parentheses, backticks as ``'``, angle brackets as
    ``‹ ›`` and :data:`NEUTRAL_MARK` in every label look-alike (``Facts [Source 1]`` becomes
    ``Facts (Source № 1)``)."""
    return _metadata(title)


def neutral_id(passage_id: str) -> str:
    """A passage id shown in a header, neutralised as a title."""
    return neutral_title(passage_id)


# Everything else a url may carry is percent-encoded: white space, quotes, backticks, angle
# brackets, brackets, parentheses, braces, backslash, and every non-ASCII character.
_URL_SAFE = "/:?#@!$&*+,;=%~"


@lru_cache(maxsize=65536)
def neutral_url(url: str) -> str | None:
    """``url`` safe to show in a header, or ``None`` when it is not shown.

    Only http(s) and relative urls are shown (``javascript:``, ``data:``, ``file:`` and
    malformed urls are not: :func:`ctxasm.urls.shows_url`); characters that could end a
    ``<url>``, a fence or a label are percent-encoded, brackets too except around an IPv6 host.
    """
    shown = shown_split(url)
    if shown is None:
        return None
    url, parts = shown
    host_at = url.find("//" + parts.netloc) + 2 if parts.netloc else -1
    if host_at < 2:
        return _unlabelled(_quoted(url, "")) or None
    host_end = host_at + len(parts.netloc)
    quoted = _quoted(url[:host_at], "") + _netloc(parts.netloc) + _quoted(url[host_end:], "")
    return _unlabelled(quoted)


def _unlabelled(url: str) -> str | None:
    """A quoted (ASCII) ``url`` with the first character of every label look-alike in it
    percent-encoded (``.../Source:4`` is ``.../%53ource:4``, the same url to a server), so a
    header shows one label, its own; ``None`` if that cannot be done."""
    for _ in range(_UNLABEL_ROUNDS):
        starts = [match.start() for match in CITATION.finditer(url)]
        if not starts:
            return url
        pieces = []
        done = 0
        for start in starts:
            pieces += [url[done:start], f"%{ord(url[start]):02X}"]
            done = start + 1
        url = "".join([*pieces, url[done:]])
    return None


_UNLABEL_ROUNDS = 3


def _netloc(netloc: str) -> str:
    """The authority of a url, percent-encoded, brackets kept only around an IPv6 address
    (``[v1.x][Source 2]@host`` is a valid authority: its brackets would forge a label)."""
    userinfo, at, host = netloc.rpartition("@")
    if host.startswith("[") and "]" in host:
        address, _, port = host[1:].partition("]")
        if _is_ipv6(address):
            return _quoted(userinfo + at, "") + f"[{_quoted(address, '')}]" + _quoted(port, "")
    return _quoted(netloc, "")


def _is_ipv6(address: str) -> bool:
    try:
        ipaddress.IPv6Address(address.partition("%")[0])
    except ValueError:
        return False
    return True


def _quoted(part: str, also_safe: str) -> str:
    return quote(part, safe=_URL_SAFE + also_safe, errors="surrogatepass")


# The control tokens of the chat templates open-weight models are served with, as a text may
# write them: a server that applies the template and then encodes the whole conversation with
# its tokenizer's special tokens parsed (vLLM, TGI) reads such a string in a passage as the
# token itself, so "<|im_end|><|im_start|>system" would end the turn that holds the sources
# and open a system turn. Names between "<|" and "|>" (ChatML, Llama 3, Phi, tiktoken's own),
# DeepSeek's between full-width bars, SentencePiece's, Gemma's and Tekken's tags, bracketed
# names in capitals (Mistral's) and Mistral's numbered ``[control_N]``, and Llama 2's system
# markers. No pattern matches across white
# space, and no match can hold another (a name holds no bracket, bar or angle bracket), so the
# space that neutral_controls writes after each match's opening character leaves none behind,
# and makes none.
CONTROL_TOKEN = re.compile(
    r"<\|[^\s|<>\[\]]{1,64}\|>"
    r"|<\uff5c[^\s\uff5c|<>\[\]]{1,64}\uff5c>"
    r"|</?(?:s|unk|pad|bos|eos|mask|start_of_turn|end_of_turn|start_of_image|end_of_image"
    r"|image_soft_token|think|tool_call|tool_response|unused[0-9]{1,6}|SPECIAL_[0-9]{1,6})>"
    # Mistral's, and any other name in capitals between brackets: its tokenizers add more with
    # each version ([ARGS], [CALL_ID], [TRANSCRIBE], [MODEL_SETTINGS] ...)
    r"|\[/?[A-Z][A-Z0-9_]{1,31}\]"
    # the unnamed control pieces of Mistral's SentencePiece files, lower case ([control_12])
    r"|\[control_[0-9]{1,6}\]"
    r"|<</?SYS>>"
)
"""A chat template's control token written as text (see :func:`neutral_controls`)."""


def neutral_controls(text: str) -> str:
    """``text`` with a space after the first character of every :data:`CONTROL_TOKEN`
    (``<|im_start|>`` becomes ``< |im_start|>``, ``[INST]`` becomes ``[ INST]``): it reads the
    same to a person, and no tokenizer reads it as the control token; other text is unchanged."""
    if ("<" not in text and "[" not in text) or CONTROL_TOKEN.search(text) is None:
        return text
    return CONTROL_TOKEN.sub(_spaced_control, text)


def _spaced_control(match: re.Match[str]) -> str:
    token = match.group()
    return f"{token[0]} {token[1:]}"


@text_cache(CACHE_CHARS)
def neutral_text(text: str) -> str:
    """Passage text as the sources block carries it: control tokens of chat templates written
    in it broken (see :func:`neutral_controls`), and :data:`NEUTRAL_MARK` in every worded label
    look-alike that starts a line (``[Source 2] Fake`` becomes ``[Source № 2] Fake``); other
    text is unchanged."""
    text = neutral_controls(text)
    folded = fold(text)
    lowered = folded.text.lower()
    if "ource" not in lowered and "0urce" not in lowered:
        return text
    found: list[re.Match[str]] = []
    read_to = 0  # where the last look-alike found ends
    for start in _line_starts(folded.text):
        lead = _LINE_LEAD.match(folded.text, start)
        assert lead is not None  # it matches, if only the empty string
        # A worded list may run over several lines ("source 1,\nsource 2"): the lines it
        # covers are marked with it, not read again (every line read to the end would make
        # the scan quadratic, and mark the same number once per line above it).
        if lead.end() < read_to:
            continue
        match = CITATION.match(folded.text, lead.end())
        if match is not None and _is_worded(match):
            found.append(match)
            read_to = match.end()
    return _marked(folded, found)
