"""Text as the guard reads it: folded for matching, and short encoded payloads decoded.

Folding undoes the disguises an injection uses to slip past word lists, for matching only (the
passage itself is never changed): NFKC (full-width and mathematical letters), case folding,
Latin accents removed, invisible characters (every format character: zero-width space and
joiners, word joiners, the soft hyphen, the byte-order mark, bidirectional controls, Unicode tag
characters...; variation selectors, fillers, and control characters other than white space)
removed, and so are the combining marks on look-alike letters.
Look-alike letters from other scripts (Cyrillic ``о``, Greek ``ο``) and leetspeak digits
(``1gn0r3``) are folded per word by ``stages.guard_phrases``, where both spellings are looked up.

Every function here is one pass over its input: no pattern can rescan.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import unicodedata
from collections.abc import Iterator
from functools import cache
from itertools import compress, repeat
from operator import le
from urllib.parse import unquote

from ctxasm import lexical, unicode_text

__all__ = [
    "APOSTROPHES",
    "CONFUSABLES",
    "LEET",
    "REVERSED_WORDS",
    "ROT13_WORDS",
    "camel_read",
    "clear_text_cache",
    "decoded_payloads",
    "encoded_runs",
    "fold",
    "fold_spaced",
    "load_fold_table",
    "long_words",
    "markdown_read",
    "markup_read",
    "outside_ascii",
    "separated_read",
    "symbols_read",
    "tag_text",
    "uncommented_read",
    "without_padding",
]

# Characters removed before matching: invisible, or used to split a word for the eye only:
# every format character (Unicode category Cf), the variation selectors, fillers, and the
# control characters that are not white space to Unicode ("ig\x00nore" is read as "ignore";
# the separators U+001C to U+001F are not, though Python's ``str.split`` splits at them).
_INVISIBLE_BMP_CHARS = (
    "\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f"
    "\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
)
_INVISIBLE_ASTRAL_CHARS = (
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef"
)
_INVISIBLE = re.compile(f"[{_INVISIBLE_BMP_CHARS}{_INVISIBLE_ASTRAL_CHARS}]+")
# ASCII text keeps only the check for its control characters (found at C speed in its bytes).
_ASCII_CONTROLS = bytes((*range(0x09), *range(0x0E, 0x20), 0x7F))  # not \t \n \v \f \r
_NOT_ASCII_CONTROLS = bytes(c for c in range(256) if c not in _ASCII_CONTROLS)
_DROP_ASCII_CONTROLS = dict.fromkeys(_ASCII_CONTROLS)
_SPACE_ASCII_CONTROLS = dict.fromkeys(_ASCII_CONTROLS, " ")
# Accents on Latin letters only: Cyrillic й and ї keep theirs. Every block of combining marks
# that can follow a letter: the diacritics and their extension and supplement, those for
# symbols, half marks, and the musical ones ("ig\u1dc0nore" is read as "ignore").
_MARKS = re.compile(
    "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
    "\U0001d165-\U0001d169\U0001d16d-\U0001d172\U0001d17b-\U0001d182\U0001d185-\U0001d18b"
    "\U0001d1aa-\U0001d1ad]+"
)
_UNDOTTED = str.maketrans("ıđ", "id")  # Turkish dotless i, Vietnamese d with stroke

# Letters from other scripts that look like Latin ones (a compact hand-made subset of the
# Unicode confusables table: the letters that can spell English words).
_LOOK_ALIKES = (  # pairs: look-alike letter, Latin letter
    "аa ɑa αa вb βb сc ϲc ԁd еe εe һh іi ιi ӏl Ӏl јj кk κk мm ոn ηn оo οo рp ρp"
    " ԛq ѕs тt τt սu υu νv ѵv ԝw хx χx уy ᴢz ɡg"
    # Armenian
    " օo հh ցg զq քp"
    # Latin small capitals
    " ᴀa ʙb ᴄc ᴅd ᴇe ꜰf ɢg ʜh ɪi ᴊj ᴋk ʟl ᴍm ɴn ᴏo ᴘp ʀr ꜱs ᴛt ᴜu ᴠv ᴡw ʏy"
    # Cherokee (folding leaves its capitals as they are)
    " Ꭺa Ᏼb Ꮯc Ꭰd Ꭼe Ꮐg Ꮋh Ꭵi Ꭻj Ꮶk Ꮮl Ꮇm Ꮲp Ꭱr Ꮪs Ꭲt Ꮩv Ꮃw Ꮓz"
    # Lisu
    " ꓮa ꓐb ꓚc ꓓd ꓰe ꓝf ꓖg ꓧh ꓲi ꓙj ꓗk ꓡl ꓟm ꓠn ꓳo ꓑp ꓣr ꓢs ꓔt ꓴu ꓦv ꓪw ꓫx ꓬy ꓜz"
)
# Typographic apostrophes read as the ASCII one that terms are written with ("don’t follow").
APOSTROPHES = "\u2019\u02bc"
CONFUSABLES = str.maketrans(
    {pair[0]: pair[1] for pair in _LOOK_ALIKES.split()} | dict.fromkeys(APOSTROPHES, "'")
)
LEET = str.maketrans("013457@$8", "oieastasb")
_LOOK_ALIKE_LETTERS = frozenset(pair[0] for pair in _LOOK_ALIKES.split())

# Unicode tag characters spell ASCII invisibly (U+E0020..U+E007E mirror ' '..'~').
_TAGS = re.compile("[\U000e0020-\U000e007e]+")
_FIRST_TAG = "\U000e0020"

# A failed match reads at most MIN_ENCODED_CHARS characters: the scan stays linear.
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_HEX_RUN = re.compile(r"(?:[0-9a-fA-F]{2}){12,}")
_BINARY_RUN = re.compile(r"[01]{8}(?:[ ]?[01]{8})+")
# Hex written a byte at a time: "49 67 6e", "49:67:6e", "0x49, 0x67", 16 bytes at least.
_SPACED_HEX_RUN = re.compile(
    r"(?<![0-9A-Za-z])(?:0[xX])?[0-9A-Fa-f]{2}"
    r"(?:(?:[ :\-]|,[ ]?)(?:0[xX])?[0-9A-Fa-f]{2}){15,}(?![0-9A-Za-z])"
)
_HEX_PAIR = re.compile(r"[0-9A-Fa-f]{2}(?![0-9A-Fa-f])")
_ESCAPES = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})")
# Character codes written as numbers: 16 or more decimal (or octal) codes of 2 or 3 digits,
# one kind of separator between them ("73 103 110", "73,103,110", "fromCharCode(73,103,...)");
# C octal escapes ("\\111\\147", 8 or more); JavaScript's "%u0049" and "U+0049" code points
# (8 or more); quoted-printable ("=49=67", "Ignore=20all").
_NUMBER_RUN = re.compile(r"(?<![\d.])\d{2,3}(?:(?:[ ,]|, )\d{2,3}){15,}(?![\d.])")
_NUMBER_BYTES = bytes(ord("n" if chr(c) in "0123456789 ," else " ") for c in range(256))
_NUMBER_SPAN = b"n" * 47  # 16 codes of two digits, one separator between each two
_OCTAL_ESCAPES = re.compile(r"(?:\\[0-7]{3}){8,}")
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")
_PERCENT_U = re.compile(r"%u([0-9a-fA-F]{4})")
_CODE_POINTS = re.compile(r"[Uu]\+[0-9a-fA-F]{4,6}(?:[ ,]{0,2}[Uu]\+[0-9a-fA-F]{4,6}){7,}")
_CODE_POINT = re.compile(r"[Uu]\+([0-9a-fA-F]{4,6})")
# Quoted-printable is decoded only where the text has its structure: a soft line break ("=" at
# the end of a line), three escapes in a row ("=49=67=6E"), two escaped bytes outside ASCII in
# a row ("Caf=C3=A9": one character's UTF-8), or spaces escaped between letters three times
# ("Ignore=20all=20previous=20..."). Query strings ("?v=20240101&h=20") and "Preis=20 EUR"
# have none of these.
_QUOTED_PRINTABLE = re.compile(
    r"=\r?\n|(?:=[0-9A-F]{2}){3}|=[89A-F][0-9A-F]=[89A-F][0-9A-F]"
    r"|(?P<space>[A-Za-z]=(?:20|09)(?=[A-Za-z]))"
)

# Text in ROT13 or written backwards: common English words so spelled (with spaces around)
# say whether to read it once more, decoded.
_ROT13 = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM",
)
ROT13_WORDS = (" gur ", " naq ", " lbhe ", " lbh ", " nyy ", " bs ", " vafgehpgvbaf ", " vtaber ")
REVERSED_WORDS = (
    " eht ",
    " dna ",
    " ruoy ",
    " uoy ",
    " lla ",
    " fo ",
    " snoitcurtsni ",
    " erongi ",
)
# Text turned upside down ("suoıʇɔnɹʇsuı snoıʌǝɹd llɐ ǝɹouƃı"): each letter rotated half a
# turn, read from the end. Three or more of the rotated letters no alphabet writes as letters
# of its own say whether to read it once more, turned back (IPA text that holds as many reads
# back as nothing).
_UPSIDE_DOWN = str.maketrans("ɐqɔpǝɟƃɥıɾʞlɯuodbɹsʇnʌʍxʎz˙¿¡", "abcdefghijklmnopqrstuvwxyz.?!")
_ROTATED = frozenset("ɐǝɹʇɔƃʌʍʎɥɯɟɾʞ")
# Morse code: runs of dots and dashes separated by spaces or slashes (bounded groups only).
_MORSE_RUN = re.compile(r"(?:[.\-]{1,7}[ /]{1,5}){8,}[.\-]{0,7}")
# Every Morse run holds 16 or more of ".- /" in a row, every binary run 8 binary digits in a
# row: with each such character as one byte ("m", "b") and every other as "x", a text without
# that many in a row is passed over at C speed, before a regular expression reads it.
_MORSE_BYTES = bytes(ord("m") if chr(c) in ".- /" else ord("x") for c in range(256))
_MORSE_SPAN = b"m" * 16
_BINARY_BYTES = bytes(ord("b") if chr(c) in "01" else ord("x") for c in range(256))
_BINARY_SPAN = b"b" * 8
_SPACED_HEX_BYTES = bytes(
    ord("h" if chr(c) in "0123456789abcdefABCDEFxX :,-" else " ") for c in range(256)
)
_SPACED_HEX_SPAN = b"h" * 47  # 16 bytes, one separator between each two
_MORSE = dict(
    pair.split("=")
    for pair in (
        ".-=a -...=b -.-.=c -..=d .=e ..-.=f --.=g ....=h ..=i .---=j -.-=k .-..=l --=m -.=n"
        " ---=o .--.=p --.-=q .-.=r ...=s -=t ..-=u ...-=v .--=w -..-=x -.--=y --..=z"
        " -----=0 .----=1 ..---=2 ...--=3 ....-=4 .....=5 -....=6 --...=7 ---..=8 ----.=9"
    ).split()
)
_DIGIT = re.compile("[0-9]")
_BASE64_ONLY = re.compile(r"[A-Za-z0-9+/=_-]*")
# What each base85 decoder accepts: ascii85's digits "!" to "u", "z" for four zero bytes and
# the white space it skips; base85's alphabet (RFC 1924). A run with any other character would
# be refused, so it is not handed to the decoder (a URL reached both, slowly, on every scan).
_BASE85_DECODERS = (
    (bytes(range(ord("!"), ord("u") + 1)) + b"z \t\n\r\v", base64.a85decode),
    (
        b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~",
        base64.b85decode,
    ),
)


def _digit_values(alphabet: bytes) -> bytes:
    """A ``bytes.translate`` table giving each digit of ``alphabet`` its value (the others
    stay as they are, to be deleted by ``translate(None, alphabet)``)."""
    table = bytearray(range(256))
    for value, digit in enumerate(alphabet):
        table[digit] = value
    return bytes(table)


# Per decoder, the table of its digits' values: ascii85's "!" to "u", base85's whole alphabet.
_DIGIT_VALUES = (
    (bytes(range(ord("!"), ord("u") + 1)), _digit_values(bytes(range(ord("!"), ord("u") + 1)))),
    (_BASE85_DECODERS[1][0], _digit_values(_BASE85_DECODERS[1][0])),
)

MIN_ENCODED_CHARS = 16  # shorter runs are not decoded
_PRINTABLE = bytes(ord("x" if 0x21 <= c <= 0x7E else " ") for c in range(256))
_ENCODED = b"x" * MIN_ENCODED_CHARS
MAX_PAYLOADS = 64  # decoded segments per text, and ...
MAX_PAYLOAD_CHARS = 65_536  # ... characters of decoded text per text


def fold(text: str) -> str:
    """``text`` as matched: lower case, NFKC, no Latin accents, no invisible characters."""
    if text.isascii():
        return _without_controls(text.lower())
    others = outside_ascii(text)
    table = _simple_folds()
    if not others <= table.keys():
        return _fold(text, others)
    # Common prose: each character folds on its own (and the folded text's characters outside
    # ASCII are known).
    for char in others:
        text = text.replace(char, table[char])
    text = _without_controls(text.lower())
    _remember(text, frozenset(c for char in others for c in table[char] if not c.isascii()))
    return text


# A run of white space and invisible characters long enough to be padding.
_PADDING = re.compile(f"[\\s{_INVISIBLE_BMP_CHARS}{_INVISIBLE_ASTRAL_CHARS}]{{8,}}")
_PADDING_CHAR = re.compile(f"[\\s{_INVISIBLE_BMP_CHARS}{_INVISIBLE_ASTRAL_CHARS}]")
# The bytes of the ASCII characters padding is made of (white space and controls) as 0, every
# other byte as 1: in UTF-8 text without other padding characters, a run of eight 0s is one.
_PADDING_BYTES = bytes(0 if c <= 0x20 or c == 0x7F else 1 for c in range(256))


def without_padding(text: str) -> str:
    """``text`` with each run of eight or more white-space or invisible characters made one: a
    line break where the run holds one, a space where it holds other white space, otherwise
    its first character. The guard cuts long texts into windows after this, so padding cannot
    carry two words of a phrase into two windows; every reading stays as it was."""

    def one(run: re.Match[str]) -> str:
        chars = run.group()
        if "\n" in chars:
            return "\n"
        return " " if any(map(str.isspace, chars)) else chars[0]

    return _PADDING.sub(one, text) if _may_pad(text) else text


def _may_pad(text: str) -> bool:
    """Whether ``text`` may hold padding (see :func:`without_padding`): told at C speed where
    no character outside ASCII is one padding is made of (the pattern reads every character
    at several times the cost)."""
    if not text.isascii() and any(map(_PADDING_CHAR.match, outside_ascii(text))):
        return True
    return b"\x00" * 8 in text.encode("utf-8", "surrogatepass").translate(_PADDING_BYTES)


def fold_spaced(text: str) -> str | None:
    """``text`` folded with its invisible characters read as spaces rather than dropped, or
    ``None`` where it has none. Dropped, one inside a word is read through ("ig\u200bnore");
    as a space, one between two words keeps them apart ("ignore\u180eall"); which it is
    cannot be told, so the guard reads the text both ways."""
    if text.isascii():
        if not text.encode("ascii").translate(None, _NOT_ASCII_CONTROLS):
            return None
        return fold(text.translate(_SPACE_ASCII_CONTROLS))
    if not _has_invisible(text, outside_ascii(text)):
        return None
    return fold(_INVISIBLE.sub(" ", text))


def _has_invisible(text: str, others: frozenset[str]) -> bool:
    """Whether ``text``, whose characters outside ASCII are ``others``, holds a character
    ``_INVISIBLE`` removes: ``others`` against the set of them, the ASCII controls found at C
    speed in the bytes (a pattern searching the text took several times as long)."""
    return not others.isdisjoint(_invisible_outside_ascii()) or bool(
        text.encode("utf-8", "surrogatepass").translate(None, _NOT_ASCII_CONTROLS)
    )


@cache
def _invisible_outside_ascii() -> frozenset[str]:
    """The characters outside ASCII that ``_INVISIBLE`` matches (about 500), from its ranges."""
    found: set[str] = set()
    spec = _INVISIBLE_BMP_CHARS + _INVISIBLE_ASTRAL_CHARS
    at = 0
    while at < len(spec):
        if at + 2 < len(spec) and spec[at + 1] == "-":
            first, last, at = spec[at], spec[at + 2], at + 3
        else:
            first = last = spec[at]
            at += 1
        found.update(map(chr, range(max(ord(first), 0x80), ord(last) + 1)))
    return frozenset(found)


# A symbol that stands for a letter ("@ll", "in$tructions", "!gnore", "ru|e$"): one before a
# letter, one between two letters or digits, and "@", "$" or "|" after one ("pr3v10u$"). A
# "!" that ends a word ("Stop!"), a price ("$5") and the "@" of an address are none.
_SYMBOL_LETTER = re.compile(
    # every branch starts with its symbol, so the engine skips to the symbols at C speed
    r"[$|](?:(?=[^\W\d_])|(?<=[^\W_].)(?!\d))"
    r"|!(?:(?=[^\W\d_])|(?<=[^\W_].)(?=\w))"
    r"|@(?:(?=[^\W\d_])(?![\w-]{1,63}\.[^\W\d_])|(?<=[^\W_].)(?![\w-]{1,63}\.))"
)
_SYMBOL_LETTERS = str.maketrans("@$!|", "asil")


def symbols_read(folded: str) -> str | None:
    """``folded`` text with the symbols that stand for letters read as them, or ``None`` where
    none does: "in$tructions" is "instructions", "!gnore" "ignore". Which reading is meant
    cannot be told (an address, "user@example.org"), so the guard reads the text both ways."""
    if not ("$" in folded or "@" in folded or "!" in folded or "|" in folded):
        return None  # most text: four scans at C speed
    if _SYMBOL_LETTER.search(folded) is None:
        return None
    # twice: a symbol before another ("d!$regard") is one before a letter once that is read
    for _ in range(2):
        folded = _SYMBOL_LETTER.sub(_as_letter, folded)
    return folded


def _as_letter(match: re.Match[str]) -> str:
    return match.group().translate(_SYMBOL_LETTERS)


# Letters written one at a time with a symbol between them ("i_g_n_o_r_e", "i|g|n|o|r|e",
# "i/g/n/o/r/e"): three letters or more, one symbol repeated, no letter or digit either side.
# Spaces, dots and hyphens between letters are read elsewhere (``spell``, ``with_parts``).
_SEPARATORS = "_|/+^,*~"
_SEPARATED_LETTERS = re.compile(
    rf"(?<![^\W_])[^\W\d_]([{re.escape(_SEPARATORS)}])[^\W\d_](?:\1[^\W\d_])+(?![^\W_])"
)
# ASCII letters as "a", the separators as "s", every other byte a space: a separated run has
# b"asas" (found at C speed, before the pattern reads the text).
_SEPARATED_BYTES = bytes(
    ord("a" if chr(c).isalpha() and c < 0x80 else "s" if chr(c) in _SEPARATORS else " ")
    for c in range(256)
)


def separated_read(folded: str) -> str | None:
    """``folded`` text with the symbols between letters written one at a time removed, or
    ``None`` where it has no such run: "i_g_n_o_r_e a|l|l" is "ignore all". A joined run
    counts only where it spells a word of the tables, so "a/c/g/t" and "s|m|l" stay harmless."""
    if not _has_span(folded, _SEPARATED_BYTES, b"asas"):
        return None  # most text: one translation at C speed
    joined = _SEPARATED_LETTERS.sub(_without_separator, folded)
    return None if joined == folded else joined


def _without_separator(run: re.Match[str]) -> str:
    return run.group().replace(run.group(1), "")


# ASCII lower-case letters as "a", upper-case as "A", every other byte a space: a capital
# after a small letter is b"aA", found at C speed (a pattern tried at every letter took 12 µs
# a passage).
_LETTER_CASES = bytes(
    ord("a") if 0x61 <= c <= 0x7A else ord("A") if 0x41 <= c <= 0x5A else ord(" ")
    for c in range(256)
)
# Four or more capitalised words joined, not inside a longer word: "IgnoreAllPreviousRules".
# An identifier in code starts lower case (getSystemPrompt) or joins two or three
# (PreviousVersion, SystemPromptBuilder).
_PASCAL_RUN = re.compile(r"[A-Z](?<![A-Za-z].)[a-z]+(?:[A-Z][a-z]+){3,}(?![A-Za-z])")
_PASCAL_JOINT = re.compile(r"(?<=[a-z])(?=[A-Z])")


def camel_read(text: str) -> str | None:
    """``text`` (not folded: case tells) with the words that a run of four or more
    capitalised words joins written apart, folded; ``None`` where it has no such run:
    "IgnoreAllPreviousInstructions" is "ignore all previous instructions"."""
    if text.encode("utf-8", "surrogatepass").translate(_LETTER_CASES).count(b"aA") < 3:
        return None  # no run of four capitalised words
    spaced = _PASCAL_RUN.sub(lambda run: _PASCAL_JOINT.sub(" ", run.group()), text)
    return None if spaced == text else fold(spaced)


# An HTML tag as a renderer reads it: a name (custom elements have hyphens: "<x-b>"), then
# attributes up to the closing bracket on one line. Each is tried from its "<" up to the next
# "<", ">" or line break: linear.
_MARKUP_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9-]{0,63})(?:[\s/][^<>\n]{0,1024})?>")
# Tags a renderer shows as a break between words; every other tag is read as nothing
# ("ign<b></b>ore" is "ignore", "<b>ignore</b> <b>all</b>" is "ignore all").
_BREAKING_TAGS = frozenset(
    "address article aside blockquote br dd div dl dt figcaption figure footer h1 h2 h3 h4 "
    "h5 h6 header hr li main nav ol p pre section table tbody td tfoot th thead tr ul".split()
)


def markup_read(text: str) -> str | None:
    """``text`` as its HTML renders (not folded): tags dropped (those that break a line read
    as a line break), then character references decoded (``&nbsp;`` a space); ``None`` where
    it has neither. A model reads what the markup shows, so the guard reads the text both ways
    ("Ignore&nbsp;all&nbsp;previous", "<b>Set</b> <b>aside</b> ...")."""
    tagged = "<" in text and ">" in text
    referenced = "&" in text  # "&nbsp" needs no ";"
    if not (tagged or referenced):
        return None  # most text: three scans at C speed
    shown = text
    if tagged:
        shown = _MARKUP_TAG.sub(_tag_shown, shown)
    if referenced:
        shown = html.unescape(shown)
    return None if shown == text else shown


# Markdown's inline markup as a renderer reads it: emphasis, strong emphasis, strikethrough and
# code spans, whose delimiters are shown as nothing, inside a word too ("Ign**ore**",
# "I~~g~~nore", "Ign`o`re"). A span holds no delimiter of its own kind and no line break, and
# neither starts nor ends with white space ("a * b * c" is no span); it is read up to its first
# delimiter character or 64 characters: linear. Underscores are read as emphasis only around
# letters that no letter or digit follows ("sys__tem__", "instruc_tions_"), so snake_case
# names ("get_user_id", "MAX_RETRIES") stay as they are.
_MD_SPAN = re.compile(
    r"(\*{1,3}|~{1,2}|`{1,3})(?=[^\s*~`])([^*~`\n]{1,64}?)(?<=[^\s*~`])\1"
    r"|(_{1,3})([^\W\d_]{1,64})\3(?![^\W_])"
)


def markdown_read(text: str) -> str | None:
    """``text`` as its Markdown renders (not folded): the delimiters of emphasis,
    strikethrough and code spans dropped, inside words too ("Ign**ore** all prev*ious*" is
    "Ignore all previous"); ``None`` where it has none. A model reads what the markup shows,
    so the guard reads the text both ways."""
    if not ("*" in text or "_" in text or "~" in text or "`" in text):
        return None  # most prose: four scans at C speed
    shown = _MD_SPAN.sub(_md_shown, text)
    return None if shown == text else shown


def _md_shown(span: re.Match[str]) -> str:
    shown = span.group(2)
    if shown is None:
        return span.group(4)
    if span.group(1)[0] == "`":  # a code span inside a word is read through ("Ign`o`re"),
        # a whole one stays a name in code ("- `assistant`: the role of ...")
        text, start, end = span.string, span.start(), span.end()
        inside = (start and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum())
        return shown if inside else span.group()
    return shown


def uncommented_read(text: str) -> str | None:
    """:func:`markup_read` of ``text`` without its HTML comments and CDATA sections, which a
    browser shows as nothing ("ign<!-- -->ore" is "ignore"); ``None`` where it has none. A
    model reads what is inside them too, so this is one more reading, not the rendered one."""
    if "<!" not in text:
        return None
    uncommented = _without_comments(text)
    if uncommented == text:
        return None
    return markup_read(uncommented) or uncommented


def _without_comments(text: str) -> str:
    """``text`` without its HTML comments and CDATA sections (which a browser shows as
    nothing, "ign<!-- -->ore" is "ignore"). Linear: each opening is searched for again only
    once the text read has passed the last one found, and once one is not closed, none after
    it can be."""
    parts = []
    at = 0
    comment, cdata = text.find("<!--"), text.find("<![CDATA[")
    while True:
        if 0 <= comment < at:
            comment = text.find("<!--", at)
        if 0 <= cdata < at:
            cdata = text.find("<![CDATA[", at)
        start = min((found for found in (comment, cdata) if found != -1), default=-1)
        if start == -1:
            break
        # "<!-->" and "<!--->" are whole (empty) comments
        closing, after = ("-->", start + 2) if start == comment else ("]]>", start + 9)
        end = text.find(closing, after)
        if end == -1:
            break
        parts.append(text[at:start])
        at = end + len(closing)
    parts.append(text[at:])
    return "".join(parts) if len(parts) > 1 else text


def _tag_shown(tag: re.Match[str]) -> str:
    return "\n" if tag.group(1).lower() in _BREAKING_TAGS else ""


def _without_controls(text: str) -> str:
    """``text`` without its ASCII control characters other than white space (NUL, DEL...)."""
    if text.encode("utf-8", "surrogatepass").translate(None, _NOT_ASCII_CONTROLS):
        return text.translate(_DROP_ASCII_CONTROLS)
    return text


def _fold(text: str, others: frozenset[str] | None = None) -> str:
    """:func:`fold` of a text whose characters outside ASCII are ``others`` (when known)."""
    if others is None:
        others = lexical.outside_ascii(text)
    if others and max(others) >= _FIRST_ENCLOSED and not _ENCLOSED.isdisjoint(others):
        text = text.translate(_ENCLOSED_LETTERS)  # letters NFKC leaves as symbols: 🅸🅶🅽🅾🆁🅴
    if _has_invisible(text, others):
        text = _INVISIBLE.sub("", text)
    # the first form in linear time (see ctxasm.unicode_text); its output is in canonical order
    text = unicodedata.normalize("NFKD", unicode_text.normalize("NFKC", text, others).casefold())
    if _MARKS.search(text):
        text = _MARKS.sub(_latin_marks, text)
    text = unicodedata.normalize("NFC", text)
    if _ANGLE_LOOKALIKES.search(text):  # a tag written with them reads as one to a model
        text = text.translate(_ANGLES)
    return text.translate(_UNDOTTED) if "ı" in text or "đ" in text else text


# Enclosed letters with no compatibility decomposition, read as letters by a model: negative
# circled (U+1F150), negative squared (U+1F170) and regional indicators (U+1F1E6, which spell
# flags in pairs: "🇺🇸" reads "us").
_ENCLOSED_LETTERS = str.maketrans(
    {
        chr(first + offset): chr(ord("a") + offset)
        for first in (0x1F150, 0x1F170, 0x1F1E6)
        for offset in range(26)
    }
)
_ENCLOSED = frozenset(map(chr, _ENCLOSED_LETTERS))
_FIRST_ENCLOSED = min(_ENCLOSED)


# Angle brackets that NFKC leaves alone but a model reads as "<" and ">": single guillemets
# (which the renderers themselves put for "<" in a title), modifier letters, Canadian
# syllabics, CJK and mathematical angle brackets.
_ANGLES = str.maketrans("‹›˂˃ᐸᐳ〈〉⟨⟩⦑⦒", "<><><><><><>")
_ANGLE_LOOKALIKES = re.compile("[‹›˂˃ᐸᐳ〈〉⟨⟩⦑⦒]")


# Letters and punctuation (Latin, Greek, Cyrillic, general punctuation) that fold one at a
# time: not invisible, not combining, not composing with a neighbour (no script here composes
# two starters), decomposing to a starter first, folding to characters that fold to
# themselves. In a text of ASCII and these only, folding is a replacement per character.
_SIMPLE_RANGES = ((0x80, 0x24F), (0x370, 0x4FF), (0x1E00, 0x1EFF), (0x2010, 0x205E))


def load_fold_table() -> None:
    """Build the table of characters that fold one at a time now (otherwise built by the first
    text outside ASCII that is folded)."""
    _simple_folds()


@cache
def _simple_folds() -> dict[str, str]:
    table = {}
    for low, high in _SIMPLE_RANGES:
        for char in map(chr, range(low, high + 1)):
            if _INVISIBLE.search(char) or unicodedata.category(char) in ("Cc", "Cn", "Co"):
                continue
            folded = _fold(char)
            starts = (
                unicodedata.normalize("NFKD", char),
                unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", char).casefold()),
            )
            if (
                unicodedata.combining(char) == 0
                and all(start and unicodedata.combining(start[0]) == 0 for start in starts)
                and folded.lower() == folded
                and all(c.isascii() or _fold(c) == c for c in folded)
            ):
                table[char] = folded
    return table


def _latin_marks(match: re.Match[str]) -> str:
    """The combining marks of ``match`` removed when they follow a Latin letter or a letter
    that looks like one: a mark on a Cyrillic or Greek look-alike ("іnstruсtіо\u0301ns", the
    Russian stress mark; "ӧ" is "о" with one) would otherwise keep the word from reading as
    Latin. Other letters keep theirs (Cyrillic й)."""
    start = match.start()
    if not start:
        return match.group()
    before = match.string[start - 1]
    return "" if "a" <= before <= "z" or before in _LOOK_ALIKE_LETTERS else match.group()


def outside_ascii(text: str) -> frozenset[str]:
    """The characters of ``text`` outside ASCII (kept for the last few texts: the checks of a
    text share them)."""
    found = _OUTSIDE.get(text)
    if found is None:
        found = lexical.outside_ascii(text)
        _remember(text, found)
    return found


_OUTSIDE: dict[str, frozenset[str]] = {}


def clear_text_cache() -> None:
    """Forget the characters outside ASCII of the last texts (for cold-start measurements)."""
    _OUTSIDE.clear()


def _remember(text: str, outside: frozenset[str]) -> None:
    if len(_OUTSIDE) >= 8:
        _OUTSIDE.clear()
    _OUTSIDE[text] = outside


def tag_text(text: str) -> str:
    """The ASCII that Unicode tag characters in ``text`` spell (empty if none)."""
    if text.isascii() or max(outside_ascii(text)) < _FIRST_TAG:
        return ""
    return " ".join(
        "".join(chr(ord(ch) - 0xE0000) for ch in match.group()) for match in _TAGS.finditer(text)
    )


def long_words(text: str) -> list[str]:
    """The runs of ``text`` without whitespace of ``MIN_ENCODED_CHARS`` or more, in order: an
    encoded run is inside one of them (split and measured at C speed, no regex)."""
    parts = text.split()
    return list(compress(parts, map(le, repeat(MIN_ENCODED_CHARS), map(len, parts))))


def encoded_runs(text: str) -> list[str]:
    """``long_words(text)``, or ``[]`` where none of them can hold an encoded run: base64,
    base32, hex, ascii85 and base85 are ``MIN_ENCODED_CHARS`` or more printable ASCII
    characters in a row, found at C speed in the bytes of ``text``."""
    if not _has_span(text, _PRINTABLE, _ENCODED):
        return []
    return long_words(text)


def decoded_payloads(
    text: str, runs: list[str] | None = None, ciphers: tuple[bool, bool] | None = None
) -> list[str]:
    """Readable text hidden in ``text`` as base64/base32, hex, binary, percent- or
    backslash-escapes, character codes, tag characters, or upside down, once or twice over
    (base64 of base64), up to ``MAX_PAYLOADS`` segments; ``runs`` is
    ``encoded_runs(text)`` when already known, ``ciphers`` whether ``text`` may hold two of
    ``ROT13_WORDS`` and two of ``REVERSED_WORDS`` as words (``None``: look)."""
    found: list[str] = []
    budget = MAX_PAYLOAD_CHARS
    nesting = MAX_PAYLOAD_CHARS  # characters of decoded text decoded once more
    runs = encoded_runs(text) if runs is None else runs
    tried = frozenset(runs)
    # Once MAX_PAYLOADS or MAX_PAYLOAD_CHARS is spent, no decoding could be kept: none more is
    # made (the generators stop where they are).
    for decoded in _decodings(text, runs, ciphers):
        if not decoded:
            continue
        if _readable(decoded):
            found.append(decoded[:budget])
            budget -= len(decoded)
            if len(found) >= MAX_PAYLOADS or budget <= 0:
                break
        if nesting <= 0 or len(decoded) < MIN_ENCODED_CHARS:
            continue  # a short decoding holds no run worth decoding again
        # Each decoding is decoded once more, readable or not (base64 of base64, of
        # percent-escapes, of ROT13; percent-escapes of percent-escapes), the runs already
        # tried left out; the characters so read are bounded, so the scan stays linear.
        inner = decoded[:nesting]
        nesting -= len(inner)
        inner_runs = [run for run in encoded_runs(inner) if run not in tried]
        for nested in _decodings(inner, inner_runs, None):
            if nested and _readable(nested):
                found.append(nested[:budget])
                budget -= len(nested)
                if len(found) >= MAX_PAYLOADS or budget <= 0:
                    return found
    return found


def _decodings(
    text: str, runs: list[str], ciphers: tuple[bool, bool] | None
) -> Iterator[str | None]:
    """Every decoding ``decoded_payloads`` tries, in order (``None`` or empty where one fails)."""
    yield tag_text(text)
    if runs:  # base64 and hex runs have no spaces: they are found in the long words only
        spaced = " ".join(runs)
        for run in _BASE64_RUN.findall(spaced):
            if _looks_encoded(run):
                yield _from_base64(run) or _from_base32(run)
        for run in _HEX_RUN.findall(spaced):
            yield _bytes_text(binascii.unhexlify(run))
    data = text.encode("utf-8", "surrogatepass")  # for the tests at C speed below
    if text.count("0") + text.count("1") >= 16 and _BINARY_SPAN in data.translate(_BINARY_BYTES):
        for match in _BINARY_RUN.finditer(text):  # two bytes of bits at least
            bits = match.group().replace(" ", "")
            yield _bytes_text(bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8)))
    # a run of decimal codes ("73 103 110") is one of the characters of spaced hex too
    hex_like = _SPACED_HEX_SPAN in data.translate(_SPACED_HEX_BYTES)
    if hex_like:
        for match in _SPACED_HEX_RUN.finditer(text):
            yield _bytes_text(binascii.unhexlify("".join(_HEX_PAIR.findall(match.group()))))
    if runs:  # ascii85 and base85 runs have no spaces either
        for run in runs:
            yield _from_base85(run)
    # ROT13, reversed text and Morse are read in any text: one accented word or curly quote
    # beside them (a title, a benign lead sentence) must not hide them.
    rot13, backwards = (True, True) if ciphers is None else ciphers
    lowered = f" {text.lower()} " if rot13 or backwards else ""
    if rot13 and sum(word in lowered for word in ROT13_WORDS) >= 2:
        yield text.translate(_ROT13)
    if backwards and sum(word in lowered for word in REVERSED_WORDS) >= 2:
        yield text[::-1]
    if not text.isascii() and len(_ROTATED.intersection(outside_ascii(text))) >= 3:
        yield text[::-1].translate(_UPSIDE_DOWN)
    if text.count("-") + text.count(".") >= 16 and _MORSE_SPAN in data.translate(_MORSE_BYTES):
        yield _from_morse(text)
    numbered = hex_like and _NUMBER_SPAN in data.translate(_NUMBER_BYTES)
    if numbered or "\\" in text or "+" in text:
        yield from _char_codes(text, numbered)
    yield _unescaped(text)


def _unescaped(text: str) -> str | None:
    """``text`` with every kind of escape in it decoded, one kind after the other in one copy:
    JavaScript's ``%u0049``, quoted-printable (where the text has its structure), ``\\u`` and
    ``\\x``, percent-escapes, HTML character references ("ign&#111;re"). One reading, however
    many kinds are mixed (a text that mixes them is read whole, and once, not once a kind).
    Escapes decode only where one is valid; "100%" or a path with "\\x" left as it was, or a
    text changed in its white space only, is the text already read: ``None``, so it is not read
    twice (nor named an encoded blob for what its own words say)."""
    decoded = text
    if "%u" in decoded:
        decoded = _PERCENT_U.sub(lambda m: chr(int(m.group(1), 16)), decoded)
    if decoded.count("=") >= 3 and _quoted_printable(decoded):
        decoded = _bytes_text(binascii.a2b_qp(decoded.encode("utf-8", "surrogatepass"))) or decoded
    if "\\" in decoded and ("\\u" in decoded or "\\x" in decoded):
        decoded = _ESCAPES.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), decoded)
    if decoded.count("%") >= 3:
        decoded = unquote(decoded)
    if "&" in decoded and ";" in decoded:
        decoded = html.unescape(decoded)
    return None if decoded is text or _same_words(decoded, text) else decoded


def _char_codes(text: str, numbered: bool) -> Iterator[str | None]:
    """The text that character codes written as numbers in ``text`` spell (see
    ``_NUMBER_RUN``): decimal and octal lists (only where ``numbered``: a run of digits,
    spaces and commas as long as one is, found at C speed), C octal escapes, ``U+`` code
    points (``%u`` and quoted-printable: ``_unescaped``). Each is looked for only where a test
    at C speed finds it may be."""
    if numbered:
        for match in _NUMBER_RUN.finditer(text):
            numbers = match.group().replace(",", " ").split()
            yield _codes_text(numbers, 10)
            if not any(digit in match.group() for digit in "89"):
                yield _codes_text(numbers, 8)
    if text.count("\\") >= 8:
        for match in _OCTAL_ESCAPES.finditer(text):
            yield _codes_text(_OCTAL_ESCAPE.findall(match.group()), 8)
    if "+" in text and ("U+" in text or "u+" in text):
        for match in _CODE_POINTS.finditer(text):
            yield "".join(_code_point(code) for code in _CODE_POINT.findall(match.group()))


def _codes_text(numbers: list[str], base: int) -> str | None:
    """The characters ``numbers`` (in ``base``) code, where each is printable ASCII or white
    space (a list of measurements or ports is none)."""
    codes = [int(number, base) for number in numbers]
    if all(32 <= code < 127 or code in (9, 10, 13) for code in codes):
        return "".join(map(chr, codes))
    return None


def _code_point(code: str) -> str:
    value = int(code, 16)
    return chr(value) if value <= 0x10FFFF else ""


def _quoted_printable(text: str) -> bool:
    """Whether ``text`` has the structure of quoted-printable (see ``_QUOTED_PRINTABLE``):
    a soft line break or a run of escapes once, or spaces escaped between letters three
    times."""
    for spaces, match in enumerate(_QUOTED_PRINTABLE.finditer(text), 1):
        if match.lastgroup != "space" or spaces >= 3:
            return True  # a soft line break, escapes in a row, or a third space escaped
    return False


def _same_words(decoded: str, text: str) -> bool:
    """Whether ``decoded`` is ``text`` up to white space: a decoding that only spelled spaces
    differently says nothing the text did not, so it is not named an encoded blob."""
    return decoded.split() == text.split()


def _worded(decoded: str) -> bool:
    """Whether ``decoded`` (not ASCII) has its words apart by white space other than the ASCII
    space (U+00A0, U+3000) or holds a run of four characters of a script written without
    spaces."""
    if any(char.isspace() for char in outside_ascii(decoded)):
        return True
    return lexical.has_unspaced_run(decoded, 4)


def _has_span(text: str, table: bytes, span: bytes) -> bool:
    """Whether ``span`` occurs in the UTF-8 bytes of ``text`` mapped through ``table``: with
    ``table`` giving one byte to the characters a run is made of, whether ``text`` holds so many
    of them in a row (found at C speed)."""
    return span in text.encode("utf-8", "surrogatepass").translate(table)


def _from_base85(run: str) -> str | None:
    """A run in ascii85 (``<~...~>`` or bare) or base85, when it uses characters outside
    base64's (those are base64 candidates already)."""
    body = run[2:-2] if run.startswith("<~") and run.endswith("~>") else run
    if len(body) < 20 or not body.isascii() or _BASE64_ONLY.fullmatch(body):
        return None
    raw = body.encode("ascii")
    for (digits, decode), (group, values) in zip(_BASE85_DECODERS, _DIGIT_VALUES, strict=True):
        if raw.translate(None, digits):  # a character this decoder refuses (found at C speed)
            continue
        head = raw[:5]  # a whole first group ("z" and white space are none): may it be text?
        if len(head) == 5 and not head.translate(None, group) and not _may_start_text(head, values):
            continue
        try:
            decoded = _bytes_text(decode(raw))
        except ValueError:
            continue
        if decoded:
            return decoded
    return None


def _may_start_text(head: bytes, values: bytes) -> bool:
    """Whether a run that starts with the five digits ``head`` (``values`` maps each to its
    value) may decode to UTF-8 text: both decoders turn each group of five digits into four
    bytes on its own, in order, so when the first group's bytes cannot start UTF-8 (or
    overflow), the whole run's cannot either. Most runs of prose and ids that reach a decoder
    ("5a8b3c...#8") are refused here, without decoding them (the decoders are pure Python)."""
    a, b, c, d, e = head.translate(values)
    group = (((a * 85 + b) * 85 + c) * 85 + d) * 85 + e
    try:
        codecs.utf_8_decode(group.to_bytes(4, "big"), "strict", False)
    except (OverflowError, UnicodeDecodeError):  # over four bytes, or no start of UTF-8
        return False
    return True


def _from_morse(text: str) -> str:
    """The letters that the Morse runs of ``text`` spell ("/" or three spaces between words)."""
    words = []
    for match in _MORSE_RUN.finditer(text):
        for word in re.split(r"\s*/\s*|\s{3,}", match.group()):
            words.append("".join(_MORSE.get(code, "") for code in word.split()))
    return " ".join(words)


def _looks_encoded(run: str) -> bool:
    # The run is ASCII ([A-Za-z0-9+/_-] and "="): case and digits are found at C speed.
    upper = run.lower() != run
    lower = run.upper() != run
    digit = _DIGIT.search(run) is not None
    if upper and not lower:  # base32 is upper case and digits 2-7
        return digit or run.endswith("=")
    return upper and lower and (digit or run.endswith("=") or len(run) >= 24)


def _from_base64(run: str) -> str | None:
    body = run.rstrip("=")
    padded = body + "=" * (-len(body) % 4)
    try:
        return _bytes_text(base64.b64decode(padded, altchars=b"-_" if "-" in run else None))
    except (binascii.Error, ValueError):
        return None


def _from_base32(run: str) -> str | None:
    body = run.rstrip("=")
    if not body.isupper():
        return None
    try:
        return _bytes_text(base64.b32decode(body + "=" * (-len(body) % 8)))
    except (binascii.Error, ValueError):
        return None


def _bytes_text(data: bytes) -> str | None:
    """``data`` as UTF-8, or as UTF-16LE where every other byte is NUL (ASCII so encoded, as
    PowerShell's ``-EncodedCommand`` is)."""
    try:
        if b"\x00" in data and len(data) % 2 == 0 and not data[1::2].strip(b"\x00"):
            return data.decode("utf-16-le")
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _readable(decoded: str) -> bool:
    """Mostly printable, with words: spaced (by any white space) or in a script written
    without spaces (Chinese, Japanese): text, not binary data."""
    if len(decoded) < 8:
        return False
    if " " not in decoded and (decoded.isascii() or not _worded(decoded)):
        return False
    if decoded.replace("\n", "").replace("\t", "").isprintable():
        return True  # the common case, read at C speed: every character counts
    printable = sum(1 for c in decoded if c.isprintable() or c.isspace())
    return printable >= 0.95 * len(decoded)
