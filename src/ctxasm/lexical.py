"""Words as BM25 and deduplication see them: lower-case runs of letters, digits and underscores.

These run over every candidate's text, so they lean on C-speed string methods: text is mapped
through a byte table as UTF-8, and only the few distinct characters outside ASCII are looked at
one by one.
"""

from __future__ import annotations

import re
import string
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cache, lru_cache
from itertools import accumulate, pairwise

from ctxasm.deadline import checkpoint
from ctxasm.keys import CACHE_CHARS, HEAVY_CACHE_CHARS, content_key, text_cache
from ctxasm.stems import search_keys, stem

__all__ = [
    "PARTIAL",
    "STOPWORDS",
    "Phrases",
    "bridge_names",
    "clear_caches",
    "covered_terms",
    "entities",
    "has_unspaced_run",
    "inner_phrases",
    "key_words",
    "lone_names",
    "lower_words",
    "normalize",
    "outside_ascii",
    "phrase_key",
    "query_terms",
    "query_words",
    "sentence_spans",
    "sentence_words",
    "states_a_term",
    "term_counts",
    "term_counts_all",
    "term_forms",
    "title_aliases",
    "title_key",
    "title_links",
    "titled",
    "words",
    "writes_lower",
    "written_phrase",
]

_WORD_BYTES = (string.ascii_letters + string.digits + "_").encode()
# Every ASCII byte that is not part of a word becomes a space; the bytes of characters outside
# ASCII (all 0x80 and over in UTF-8) stay as they are.
_UTF8_TABLE = bytes(
    byte if byte in _WORD_BYTES or byte >= 0x80 else ord(" ") for byte in range(256)
)
_ASCII_BYTES = bytes(range(128))
# The same, but NUL stays NUL: a separator between pieces normalised together (:func:`entities`).
_UTF8_TABLE_KEEP_NUL = b"\x00" + _UTF8_TABLE[1:]

# Function words that carry no evidence of relevance; a query made only of these matches nothing.
STOPWORDS = frozenset(
    (
        "a about above after again against all also am an and any are as at be because been "
        "before being below between both but by can could d did do does doing down during each "
        "few for from further get got had has have having he her here hers herself him himself "
        "his how i if in into is it its itself just ll m many me more most much my myself no nor "
        "not now of off on once one ones only or other our ours ourselves out over own re s same "
        "she should so some such t than that the their theirs them themselves then there these "
        "they this those through to too under until up ve very was we were what when where which "
        "while who whom whose why will with would you your yours yourself yourselves"
    ).split()
)


# Function words of other languages written in Latin letters. A query written in one of them
# ("Wo endet die Donau?") has them removed as well: "die" is no evidence that the Rhine's
# passage answers it. A language counts as the query's when at least two of its words that are
# no English stopword are in the query, written as function words are (see
# :func:`_stopwords_of`), and more than English stopwords are: "Did the singer die in 1990?"
# keeps "die", and "Who founded De La Soul?" its "de" and "la".
_OTHER_STOPWORDS = tuple(
    frozenset(listed.split())
    for listed in (
        # German
        "aber als am an auch auf aus bei bin bis bist da dann das dass dem den der des die dies "
        "diese dieser dieses doch dort du durch ein eine einem einen einer eines er es für gegen "
        "hat hatte haben ich ihr ihre im in ist ja kein keine man mit nach nicht noch nur ob "
        "oder ohne sein seine sich sie sind so über um und uns unter vom von vor war waren was "
        "wann warum was welche welcher welches wer wie wir wird wo wurde wurden zu zum zur",
        # French
        "au aux avec ce ces cet cette comment d dans de des du elle elles en est et été était "
        "il ils je l la le les leur leurs lui ma mais me mes n ne nous on ont ou où par pas "
        "pour pourquoi quand que quel quelle quelles quels qui quoi s sa sans se ses son sont "
        "sur ta te tes tu un une vous y",
        # Spanish
        "al como cómo con cual cuál cuáles cuando cuándo de del donde dónde el él ella ellas "
        "ellos en era es esa ese esta este estos estas está están fue fueron la las le les lo "
        "los mi más muy no o para pero por qué que quien quién quienes se ser sin son su sus "
        "tu un una unas unos y yo",
        # Italian
        "a ai al alla alle che chi come con cosa da dai dal dalla dei del della delle di dove "
        "e è ed era erano fu gli i il in la le lo ma nel nella nei non o per perché più quale "
        "quali quando quella quello questa questo se si sono su sua sue suo suoi tra un una uno",
        # Portuguese
        "a ao aos as com como da das de do dos e é ela ele em era essa esse esta este foi foram "
        "mais muito na nas no nos não o onde os para pela pelo por qual quais quando que quem "
        "se sem ser seu seus sua suas um uma umas uns",
        # Dutch
        "aan als bij dat de deze die dit door een en er had heeft hebben het hij hoe ik in is "
        "maar met na naar niet nog of om onder ook op over te tot uit van voor waar wanneer "
        "waarom was wat welke werd wie wij wordt zij zijn",
    )
)


def _stopwords_of(query: str, found: Sequence[str]) -> frozenset[str]:
    """The stopwords of ``query``, whose words are ``found``: :data:`STOPWORDS`, and those of
    every other language it is written in (see ``_OTHER_STOPWORDS``). A word counts for that
    where it is written in lower case or opens the query: "De La Soul" is a name. Most queries
    hold too few such words to be read further than a set of their words."""
    distinct = set(found)
    foreign = distinct & _ANY_OTHER
    if len(foreign) < 2:
        return STOPWORDS
    english = len(distinct & STOPWORDS)
    if len(foreign) <= english:
        return STOPWORDS
    written = _WRITTEN_WORD.findall(query)
    function = {w.lower() for at, w in enumerate(written) if at == 0 or w.islower()}
    found_stopwords = STOPWORDS
    for listed in _OTHER_STOPWORDS:
        own = len((function & listed) - STOPWORDS)
        if own >= 2 and own > english:
            found_stopwords = found_stopwords | listed
    return found_stopwords


_WRITTEN_WORD = re.compile(r"\w+")
# Every other language's function words that are no English stopword.
_ANY_OTHER = frozenset().union(*_OTHER_STOPWORDS) - STOPWORDS


# Scripts written without spaces between words: Han, kana, Hangul syllables (Korean spaces its
# phrases, but particles join the words: "서울의", "서울은"). No word list splits them, so a run
# of them is read as its pairs of neighbouring characters, as Lucene's CJK analyzer does.
_UNSPACED_CHARS = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"
    "\U00020000-\U0002fa1f"
)


@cache
def _unspaced() -> re.Pattern[str]:
    """A run of those characters: compiled on first need (a class of such ranges takes 2 ms
    to compile, which every process that never meets one would pay at import)."""
    return re.compile(f"[{_UNSPACED_CHARS}]+")


def has_unspaced_run(text: str, least: int = 1) -> bool:
    """Whether ``text`` holds ``least`` or more characters in a row of a script written without
    spaces (Han, kana, Hangul)."""
    return not text.isascii() and any(len(run) >= least for run in _unspaced().findall(text))


@cache
def _spaced_word_run() -> re.Pattern[str]:
    """``_WORD_RUN`` of a text outside ASCII: word characters up to one of those scripts."""
    return re.compile(f"[^\\W{_UNSPACED_CHARS}]*")


def normalize(text: str) -> str:
    """Lower-case ``text`` with every non-word character turned into a space: one character
    for one, so where lower-casing keeps the length, positions in the result are those of
    ``text``. A word character is what ``\\w`` matches: ``str.isalnum`` or ``_``."""
    return _normalized(text, _UTF8_TABLE)


def _normalized(text: str, table: bytes) -> str:
    """:func:`normalize`, with ``table`` mapping the bytes of the lower-cased text."""
    low = text.lower()
    if low.isascii():
        return low.encode("ascii").translate(table).decode("ascii")
    # Lone surrogates (from JSON escapes) pass through the bytes and are found below.
    out = low.encode("utf-8", "surrogatepass").translate(table)
    out_text = out.decode("utf-8", "surrogatepass")
    for char in _chars_of(out.translate(None, _ASCII_BYTES)):
        if not char.isalnum():
            out_text = out_text.replace(char, " ")
    return out_text


def outside_ascii(text: str) -> frozenset[str]:
    """The distinct characters of ``text`` outside ASCII (lone surrogates included)."""
    if text.isascii():
        return frozenset()
    return _chars_of(text.encode("utf-8", "surrogatepass").translate(None, _ASCII_BYTES))


def _chars_of(data: bytes) -> frozenset[str]:
    # ``data`` is UTF-8 with its ASCII bytes deleted: every other byte belongs to a character
    # outside ASCII and none to two, so what is left decodes to exactly those characters, in
    # order. Deleting bytes runs at C speed, where searching the text for them character by
    # character (a regular expression, a set of the text) cost 6x as much on prose.
    return frozenset(data.decode("utf-8", "surrogatepass"))


def words(text: str) -> list[str]:
    """The words of ``text`` in order."""
    return normalize(text).split()


def term_counts(terms: Sequence[str], text: str) -> list[int]:
    """How often each of ``terms`` (words, as :func:`words` gives them) occurs in ``text`` in one
    of its forms: the number of words of ``words(text)`` that have the term's stem and start
    with one of its search keys (see :mod:`ctxasm.stems`: "teacher" counts for "teachers",
    "taught" for "teach"). A word is a longest run of word characters (``str.isalnum`` or
    ``_``: what ``\\w`` and :func:`normalize` mean) of the lower-cased text. Found without
    building the words: one lower-casing, and a substring search per key, whose finds at the
    start of a word are stemmed; cheaper than splitting a long text into words."""
    low = text.lower()
    if len(terms) > _TERMS_BY_SEARCH:  # a long query: the text's words counted once
        pieces = Counter(piece for word in words(text) for piece in _pieces(word))
        return [
            low.count(term) if _unspaced_term(term) else count
            for term, count in zip(terms, _counts_of_words(terms, pieces), strict=True)
        ]
    word_run = _WORD_RUN if low.isascii() else _spaced_word_run()
    return [_term_count(term, low, word_run) for term in terms]


def _term_count(term: str, low: str, word_run: re.Pattern[str]) -> int:
    """:func:`term_counts` of one term in lower-cased text ``low``, whose words ``word_run``
    reads."""
    if not term:
        return 0
    if _unspaced_term(term):
        return low.count(term)
    return len(_term_places(term, low, word_run))


def _term_places(term: str, low: str, word_run: re.Pattern[str]) -> list[int]:
    """Where the words of lower-cased text ``low`` that count for ``term`` (a spaced term)
    start, in the order found."""
    places = []
    size = len(low)
    stemmed = stem(term)
    for key in search_keys(term):
        misses = 0
        at = low.find(key)
        while at >= 0:
            if at == 0 or not _word_char(low[at - 1]):
                end = at + len(term)
                if low.startswith(term, at) and (end == size or not _word_char(low[end])):
                    places.append(at)  # the term as it is: the usual find
                else:
                    run = word_run.match(low, at)
                    assert run is not None  # \w* matches, if only the empty string
                    end = run.end()
                    if stem(run.group()) == stemmed:
                        places.append(at)
                # on past the word (a key that starts with no word character, which no term of
                # a query has, matches an empty one: "-x" in "-xy" was found there forever)
                at = low.find(key, max(end, at + 1))
                continue
            if misses < _MISSES_ONE_BY_ONE:
                misses += 1
            else:
                # Inside a longer word: so is every later place in that word (a word character
                # is before it), so the search goes on after the word ("x" in "xxx...x" was
                # found at every character, for every such term of a query).
                run = word_run.match(low, at)
                assert run is not None
                at = max(at, run.end() - 1)
            at = low.find(key, at + 1)
    return places


def _term_counts_many(terms: tuple[str, ...], texts: Sequence[str]) -> list[tuple[int, ...]]:
    """:func:`term_counts` of ``terms`` in each of ``texts``, each term searched for once in
    the texts lower-cased and joined by NUL (not a word character, so no word runs from one
    text into the next) in blocks of about ``_BLOCK_CHARS``, each find given to the text it is
    in: many short texts cost one search per key and block, not one per key and text (2,000
    passages of 750 characters: 25 ms -> 16). Between blocks the work may stop (a checkpoint
    of :mod:`ctxasm.deadline`): one term found in every sentence of 8 MB of texts took 0.2 s."""
    if len(texts) < 2 or len(terms) > _TERMS_BY_SEARCH or any("\x00" in t for t in terms):
        return [_checked_counts(terms, text) for text in texts]
    lows = [text.lower() for text in texts]
    blocks = _joined_blocks(lows)
    ascii_only = all(low.isascii() for _, low, _ in blocks)
    word_run = _WORD_RUN if ascii_only else _spaced_word_run()
    counts = [[0] * len(terms) for _ in texts]
    for column, term in enumerate(terms):
        if not term:
            continue
        if _unspaced_term(term):
            checkpoint()
            for row, piece in zip(counts, lows, strict=True):
                row[column] = piece.count(term)
            continue
        for first, low, ends in blocks:
            checkpoint()
            for at in _term_places(term, low, word_run):
                counts[first + bisect_right(ends, at)][column] += 1
    return [tuple(row) for row in counts]


def _joined_blocks(lows: Sequence[str]) -> list[tuple[int, str, list[int]]]:
    """``lows`` joined by NUL in blocks of whole texts, each of about ``_BLOCK_CHARS``
    characters (or one longer text): the index of its first text, the block, and where each
    of its texts ends, past its NUL."""
    blocks = []
    start = 0
    while start < len(lows):
        stop, size = start + 1, len(lows[start])
        while stop < len(lows) and size + len(lows[stop]) <= _BLOCK_CHARS:
            size += len(lows[stop]) + 1
            stop += 1
        part = lows[start:stop]
        blocks.append((start, "\x00".join(part), list(accumulate(len(p) + 1 for p in part))))
        start = stop
    return blocks


def _checked_counts(terms: tuple[str, ...], text: str) -> tuple[int, ...]:
    """:func:`term_counts` of one text of many, after a checkpoint (see :mod:`ctxasm.deadline`)."""
    checkpoint()
    return tuple(term_counts(terms, text))


def _counts_of_words(terms: Sequence[str], counted: Mapping[str, int]) -> list[int]:
    """:func:`term_counts` from the counts of a text's words (grouped by stem once)."""
    by_stem: dict[str, list[tuple[str, int]]] = {}
    for word, times in counted.items():
        by_stem.setdefault(stem(word), []).append((word, times))
    return [
        sum(times for word, times in by_stem.get(stem(term), ()) if word.startswith(keys))
        if (keys := search_keys(term))
        else 0
        for term in terms
    ]


# Up to this many terms, each is searched for in the text (no list of its words is built);
# beyond, the text's words are counted once and each term looked up (3,200 titles named in a
# query, against 1,600 passages, took 3.4 s searched one by one).
_TERMS_BY_SEARCH = 64
# Texts are searched together in blocks of about this many characters (see _term_counts_many).
_BLOCK_CHARS = 64 * 1024
# Places inside longer words passed one at a time, per term and text, before the search skips
# to each word's end (prose has a few: "the" in "there"; a run of one letter has thousands).
_MISSES_ONE_BY_ONE = 32
_WORD_RUN = re.compile(r"\w*")  # of an ASCII text; _spaced_word_run() of any other


def term_counts_all(terms: Sequence[str], texts: Sequence[str]) -> list[tuple[int, ...]]:
    """:func:`term_counts` of ``terms`` in each of ``texts``. Cached by the terms and each
    text's content, like token counts: the same query over passages seen before (a service,
    a batch, a retry) does not search them again."""
    key = tuple(terms)
    if len(key) > _MAX_CACHED_TERMS:  # a very long query: its counts would crowd the cache
        return _term_counts_many(key, texts)
    table = _TERM_COUNTS.get(key)
    if table is None:
        if len(_TERM_COUNTS) >= _MAX_TERM_LISTS:
            _TERM_COUNTS.clear()
        table = _TERM_COUNTS[key] = {}
    contents = [content_key(text) for text in texts]
    missing = {content: text for content, text in zip(contents, texts, strict=True)}
    for content in table.keys() & missing.keys():
        del missing[content]
    if missing:
        table.update(zip(missing, _term_counts_many(key, list(missing.values())), strict=True))
    rows = [table[content] for content in contents]
    if sum(map(len, _TERM_COUNTS.values())) > _MAX_COUNTED_TEXTS:
        _TERM_COUNTS.clear()  # past the bound only by the texts of this one call
    return rows


# term_counts_all's cache: terms -> a text's content key (ctxasm.keys; no text is kept) -> counts.
# At most _MAX_TERM_LISTS lists of at most _MAX_CACHED_TERMS terms, and _MAX_COUNTED_TEXTS
# counted texts in all; cleared when full.
_TERM_COUNTS: dict[tuple[str, ...], dict[int, tuple[int, ...]]] = {}
_MAX_TERM_LISTS = 64
_MAX_CACHED_TERMS = 64
_MAX_COUNTED_TEXTS = 16384


def _word_char(char: str) -> bool:
    """A character of a spaced word: ``\\w``, less the scripts written without spaces."""
    return (char.isalnum() and (char.isascii() or _unspaced().match(char) is None)) or char == "_"


def _pieces(word: str, *, query: bool = False) -> list[str]:
    """A word of :func:`words` as the terms it holds: itself, or where it holds characters of
    scripts written without spaces, its other parts as words and each run of those characters
    as its pairs of neighbouring characters (one character alone as itself). Of a ``query``,
    pairs that are function words (see :func:`_function_pair`) are left out."""
    if word.isascii() or _unspaced().search(word) is None:
        return [word]
    found = []
    done = 0
    for run in _unspaced().finditer(word):
        if run.start() > done:
            found.append(word[done : run.start()])
        chars = run.group()
        pairs = [chars] if len(chars) == 1 else list(map(str.__add__, chars, chars[1:]))
        if query:
            last = len(pairs) - 1
            pairs = [p for at, p in enumerate(pairs) if not _function_pair(p, at == last)]
        found.extend(pairs)
        done = run.end()
    if done < len(word):
        found.append(word[done:])
    return found


# Function words of the scripts read as pairs, which a question shares with passages on
# anything: Japanese particles and endings (pairs with hiragana: の, は, です), Chinese function
# characters and pairs (的, 是, 什么, 时候), Korean endings (입니다, 습니까) and a particle ending
# a word (서울의, 인구는). A pair of them would make any passage in the language relevant.
_HIRAGANA = re.compile("[\u3040-\u309f]")
_ZH_FUNCTION = frozenset("的了是吗呢吧啊么们这那什谁哪怎何个与之被把我你他她它")
_ZH_FUNCTION_PAIRS = frozenset("时候 可以 因为 所以 但是 如果 已经 还是 多少".split())
_KO_ENDINGS = frozenset("입니까다습요")
_KO_PARTICLES = frozenset("은는을를의에와과")


def _function_pair(pair: str, ends_run: bool) -> bool:
    """Whether ``pair`` (one or two characters of a run, ``ends_run`` when it is the run's
    last) is a function word rather than a word of what a question asks about."""
    if _HIRAGANA.search(pair) or pair in _ZH_FUNCTION_PAIRS:
        return True
    if any(char in _ZH_FUNCTION for char in pair) or all(char in _KO_ENDINGS for char in pair):
        return True
    return ends_run and pair[-1] in _KO_PARTICLES


def _unspaced_term(term: str) -> bool:
    """Whether ``term`` is characters of scripts written without spaces (counted wherever they
    occur, not as a whole word)."""
    return not term.isascii() and _unspaced().fullmatch(term) is not None


def query_terms(query: str) -> list[str]:
    """The distinct content words of a query, in first-seen order (stopwords removed: English
    ones, and those of another language the query is written in, see ``_OTHER_STOPWORDS``), with
    runs of scripts written without spaces read as pairs of characters: the first
    :data:`MAX_QUERY_TERMS` of them. Every term is weighed against every candidate, so a query
    of 16,000 distinct words against 8,000 passages took 25 s; no question has that many, and a
    pasted document's first few hundred say what it is about."""
    found = words(query)
    pieces = (piece for word in found for piece in _pieces(word, query=True))
    return _content(pieces, _stopwords_of(query, found))


def query_words(query: str) -> list[str]:
    """:func:`query_terms` with every word whole, as a store's index of words holds them."""
    found = words(query)
    return _content(found, _stopwords_of(query, found))


def _content(terms: Iterable[str], stopwords: frozenset[str]) -> list[str]:
    """The first :data:`MAX_QUERY_TERMS` distinct ``terms`` that are not ``stopwords``, in
    order."""
    seen: dict[str, None] = {}
    for term in terms:
        if term not in stopwords:
            seen.setdefault(term, None)
            if len(seen) == MAX_QUERY_TERMS:
                break
    return list(seen)


MAX_QUERY_TERMS = 512


# Named things a passage can introduce: runs of capitalised words (joined by a few lower-case
# connectives, as in "Bank of England"), numbers and years; capitals outside ASCII ("Émile
# Zola", "Łódź", "Никола Тесла") are matched through _capitals_as_ascii. The first word is
# written as one character class followed by what that character allows (a lookbehind tells
# which it was): it matches as ``[A-Z][\w'’\-]*|\d[\d,.]*\d|\d`` does, but a pattern that opens
# with a class lets the engine skip to the next position the class admits at C speed (a fifth
# faster on prose).
_ENTITY = re.compile(
    r"[A-Z\d](?:(?<=[A-Z])[\w'’\-]*|(?<=\d)(?:[\d,.]*\d)?)"
    r"(?:\s+(?:(?:of|the|de|la|del|von|van|der|and|for|du)\s+)*(?:[A-Z][\w'’\-]*|\d[\d,.]*\d|\d))*"
)


def _without_qualifier(title: str) -> str:
    """``title`` without a trailing parenthetical qualifier (and the white space around it), as
    in "Mercury (planet)". Found from the end: a pattern anchored at the end is tried from every
    start, and a long run of spaces in a title made it quadratic (40,000 spaces: 4.8 s)."""
    end = title.rstrip()
    if not end.endswith(")"):
        return title
    start = end.rfind("(", 0, len(end) - 1)
    if start == -1 or ")" in end[start + 1 : -1]:
        return title
    return end[:start].rstrip()


@text_cache(CACHE_CHARS)
def phrase_key(text: str) -> str:
    """``text`` normalised to single-spaced words, for whole-phrase matching: a phrase occurs
    in a text when ``f" {phrase_key(p)} "`` is in ``f" {phrase_key(t)} "``. Cached, like token
    counts: passages seen again (a service, a batch) are not normalised again."""
    return " ".join(normalize(text).split())


def written_phrase(key: str, text: str) -> str | None:
    """How ``text`` writes the name whose :func:`phrase_key` is ``key`` ("Steve Hillage" for
    ``steve hillage``): its words apart as a name's are (white space, or a hyphen or an
    apostrophe inside a word: "Jules Verne's"), white space shown as one space; the first such
    place that starts with a capital or a digit, as a name does, else the first; ``None`` where
    there is none ("new. York" is no "New York"). At most ``_MOST_PLACES_WRITTEN`` places are
    looked at: where the key's first word starts a word of the lower-cased text, else among
    the text's words joined by single spaces. Linear in the text's length whatever the key (a
    pattern of the key's words tried each of them at each word)."""
    wanted = key.split()
    if not wanted:
        return None
    found = _written_in_place(wanted, text)
    return _written_among_words(wanted, text) if found == _UNDECIDED else found


def _written_among_words(wanted: Sequence[str], text: str) -> str | None:
    """:func:`written_phrase` of the key whose words are ``wanted``, found among the words of
    ``text`` (all of them read)."""
    joined, spans = _written_words(text)
    needle = f" {' '.join(wanted)} "
    first_written = None
    at = joined.find(needle)
    for _ in range(_MOST_PLACES_WRITTEN):
        if at < 0:
            break
        first = joined.count(" ", 0, at + 1) - 1  # the pieces before it, each after one space
        written = _as_name(text, spans[first : first + len(wanted)])
        if written is not None:
            if written[0].isupper() or written[0].isdigit():
                return written
            first_written = first_written or written
        at = joined.find(needle, at + 1)
    return first_written


_UNDECIDED = ""  # no name is written as nothing


def _written_in_place(wanted: Sequence[str], text: str) -> str | None:
    """:func:`written_phrase` read in ``text`` lower-cased whole, where that keeps every
    character's place and case (no "İ", which lower-casing makes two characters, nor "Σ",
    whose lower case depends on what follows): the places its first word starts a word are
    read there, without splitting the whole text into words (a planner asks this of texts it
    has not seen). ``_UNDECIDED`` where it cannot be read so, or once more than
    ``_MOST_PLACES_WRITTEN`` places hold the first word but not the rest, so that the search
    stays linear in the text ("Aa Aa Aa x." many times over, for a name of as many words)."""
    if len(wanted) > _MOST_WORDS_IN_PLACE:
        return _UNDECIDED  # each place read costs up to the name's length
    low = text.lower()
    if len(low) != len(text) or "Σ" in text:
        return _UNDECIDED
    head = wanted[0]
    places = misses = 0
    first_written = None
    at = low.find(head)
    while at != -1 and places < _MOST_PLACES_WRITTEN:
        end, clean = (-1, False) if at and _joined(low[at - 1]) else _words_from(low, at, wanted)
        if end < 0:  # inside a longer word, or not the rest of the name
            misses += 1
            if misses > _MOST_MISSES:
                return _UNDECIDED
        else:
            places += 1
            if clean:
                written = " ".join(text[at:end].split())
                if written[0].isupper() or written[0].isdigit():
                    return written
                first_written = first_written or written
        at = low.find(head, at + 1)
    return first_written


def _words_from(low: str, at: int, wanted: Sequence[str]) -> tuple[int, bool]:
    """Where the words ``wanted`` end when ``low`` holds them, each whole, from ``at`` on
    with only other characters between (-1 where it does not), and whether only marks a
    name's words may hold and white space stand between them (see :func:`_as_name`)."""
    end, clean, size = at, True, len(low)
    for n, word in enumerate(wanted):
        if n:
            gap = end
            end = _NOT_WORDS.match(low, end).end()  # type: ignore[union-attr] # matches ""
            clean = clean and not low[gap:end].translate(_IN_NAME_MARKS).strip()
        if not low.startswith(word, end):
            return -1, False
        end += len(word)
        if end < size and _joined(low[end]):
            return -1, False
    return end, clean


_NOT_WORDS = re.compile(r"\W*")
# Places a name's first word is found but not the name whole, or inside a longer word ("u"
# of "U Know Yunho" in every "you"), after which a text is split into words instead.
_MOST_MISSES = 64
# Names of up to this many words are looked for in place (a name a passage shares is a few
# words; a key of 50,000 words read at 64 places took 2 s).
_MOST_WORDS_IN_PLACE = 16


@text_cache(HEAVY_CACHE_CHARS)
def _written_words(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The words of ``text`` as :func:`phrase_key` reads them, joined by single spaces (one
    before and after), and where each stands in ``text``. Cached: a planner asks how a text
    writes a name for each passage it offers, and a service asks again for texts it has seen."""
    pieces: list[str] = []
    spans: list[tuple[int, int]] = []
    for word in _WORDS.finditer(text):
        found = word.group()
        # each word as phrase_key reads it (lower-casing may part it: "İ" is "i" and a mark)
        for piece in found.lower().split() if found.isascii() else normalize(found).split():
            pieces.append(piece)
            spans.append(word.span())
    return f" {' '.join(pieces)} ", tuple(spans)


def _as_name(text: str, spans: Sequence[tuple[int, int]]) -> str | None:
    """The words of ``text`` at ``spans`` (in order) as a name writes them, white space shown
    as one space; ``None`` where something else stands between two of them."""
    for (_, end), (start, _) in pairwise(spans):
        if text[end:start].translate(_IN_NAME_MARKS).strip():  # "Winners' Cup": marks, space
            return None
    return " ".join(text[spans[0][0] : spans[-1][1]].split())


_MOST_PLACES_WRITTEN = 16
_IN_NAME_MARKS = str.maketrans("", "", "'’-")  # what a name's word may hold beside letters


@text_cache(HEAVY_CACHE_CHARS)
def key_words(text: str) -> frozenset[str]:
    """The distinct words of ``text`` (of its phrase key). Cached, like :func:`phrase_key`."""
    return frozenset(phrase_key(text).split())


@lru_cache(maxsize=16384)
def title_key(title: str | None) -> str:
    """The phrase a title names, without a trailing parenthetical qualifier; "" for no title
    and for titles too common to link on (only stopwords, or under three characters, like "It"
    or "Up"), which would otherwise match nearly any text. Cached: every stage that links
    passages asks for the same titles."""
    if not title:
        return ""
    key = phrase_key(_without_qualifier(title))
    if len(key) < 3 or all(word in STOPWORDS for word in key.split()):
        return ""
    return key


PARTIAL = 0.5  # the strength of a link made by a shorter name of a title


def title_aliases(titles: Sequence[str | None]) -> list[list[tuple[str, float]]]:
    """The phrases that name each title in a text, with their strength: the title's key (1.0),
    and, at ``PARTIAL``, the place before a comma ("Hoosick" for "Hoosick, New York"), a
    person's family name ("Nixon" for "Richard Nixon") and the first two words of a longer
    name ("Iowa State" for "Iowa State Cyclones football"). A shorter name that more than one
    title would get is dropped: it cannot say which passage a text means."""
    aliases = _distinct_aliases(Counter(titles))
    return [list(aliases[title]) for title in titles]


def _distinct_aliases(
    titles: Mapping[str | None, int],
) -> dict[str | None, tuple[tuple[str, float], ...]]:
    """:func:`title_aliases` of each distinct title, given how many of the titles it is (a
    title that stands twice gets its shorter names twice: they are dropped, as for two titles
    sharing one). Passages often share a title, so each is worked out once."""
    names = {title: _names(title) for title in titles}
    counts: dict[str, int] = {}
    for title, (_, shorter) in names.items():
        times = titles[title]
        for short in shorter:
            counts[short] = counts.get(short, 0) + times
    return {
        title: (*([(key, 1.0)] if key else ()), *((s, PARTIAL) for s in shorter if counts[s] == 1))
        for title, (key, shorter) in names.items()
    }


@lru_cache(maxsize=16384)
def _names(title: str | None) -> tuple[str, tuple[str, ...]]:
    """A title's key and its distinct shorter names other than the key (see
    :func:`title_aliases`). Cached: relevance, selection and compression ask for the same
    titles."""
    key = title_key(title)
    if not key or not title:
        return key, ()
    shorter = dict.fromkeys(_short_names(_without_qualifier(title)))
    shorter.pop(key, None)
    return key, tuple(shorter)


# Words a passage uses to state a relation a question asks about in other words ("Who is the
# spouse of X?" is answered by "X married Y"). General English, for the relations questions
# over encyclopedic text ask most, those of questions chained from single facts included ("the
# star of", "the label of", "the network of", "the paternal grandfather of"); inflections are
# found by term_forms, not listed here.
_RELATIONS: dict[str, tuple[str, ...]] = {
    "spouse": ("married", "marry", "wife", "husband", "widow", "widower"),
    "wife": ("married", "spouse", "widow"),
    "husband": ("married", "spouse", "widower"),
    "married": ("spouse", "wife", "husband"),
    "born": ("birth",),
    "birth": ("born",),
    "birthplace": ("born",),
    "died": ("death",),
    "death": ("died",),
    "father": ("son", "daughter"),
    "mother": ("son", "daughter"),
    "parent": ("son", "daughter", "subsidiary"),
    "child": ("son", "daughter", "children"),
    "children": ("son", "daughter"),
    "son": ("father", "mother"),
    "daughter": ("father", "mother"),
    "sibling": ("brother", "sister"),
    "performer": ("singer", "band", "musician", "artist", "rapper", "recorded"),
    "singer": ("vocalist", "sang", "performed"),
    "author": ("written", "wrote", "writer", "novelist"),
    "writer": ("written", "wrote", "author"),
    "wrote": ("written", "author", "writer"),
    "founded": ("established", "formed"),
    "headquarters": ("headquartered", "based"),
    "located": ("situated", "lies", "based"),
    "location": ("located", "situated", "based"),
    "owner": ("owned", "owns", "subsidiary"),
    "employer": ("worked", "employed"),
    "educated": ("attended", "graduated", "studied", "alumnus"),
    "attended": ("graduated", "studied", "educated", "alumnus"),
    "nationality": ("citizen",),
    "citizenship": ("citizen",),
    "founder": ("founded", "established", "formed"),
    "label": ("records", "signed"),
    "network": ("aired", "broadcast", "premiered"),
    "broadcaster": ("aired", "broadcast", "premiered"),
    "channel": ("aired", "broadcast", "premiered"),
    "cast": ("starring", "starred", "stars"),
    "star": ("starring", "starred", "cast"),
    "screenwriter": ("screenplay", "written", "wrote"),
    "lyricist": ("lyrics",),
    "award": ("won", "awarded"),
    "burial": ("buried", "interred"),
    "grandfather": ("father", "son", "daughter"),
    "grandmother": ("mother", "son", "daughter"),
    "paternal": ("father",),
    "maternal": ("mother",),
    "study": ("studied", "attended", "graduated", "educated", "alumnus"),
    "studied": ("attended", "graduated", "educated", "alumnus"),
}
# Inflections and derivations tried on a word's stem ("directed": director, directing, ...).
_SUFFIXES = ("ed", "er", "ers", "or", "ors", "ing", "ion", "ions", "es", "s", "e")


@lru_cache(maxsize=4096)
def term_forms(term: str) -> tuple[str, ...]:
    """The words that state a query ``term`` in a passage: the term, its inflections and
    agent nouns ("directed", "director"), and the relation words that answer it ("spouse":
    "married", "wife", ...). Cached: queries repeat their terms."""
    forms = dict.fromkeys([term])
    stem = term
    for suffix in ("ations", "ation", *sorted(_SUFFIXES, key=len, reverse=True)):
        if term.endswith(suffix) and len(term) - len(suffix) >= 4:
            stem = term[: -len(suffix)]
            break
    if len(stem) >= 4 and term.isalpha():
        forms.update(dict.fromkeys([stem, *(stem + suffix for suffix in _SUFFIXES)]))
    elif len(term) == 3 and term.isalpha():  # a short word's own inflections: end, ends, ended
        base = term[:-1] if term.endswith("e") else term
        forms.update(dict.fromkeys([term + "s", base + "ed", base + "ing"]))
    forms.update(dict.fromkeys(_RELATIONS.get(term, ())))
    return tuple(forms)


def covered_terms(
    terms: Sequence[str],
    text: str,
    title: str | None = None,
    forms: Mapping[str, tuple[str, ...]] | None = None,
    counted: Sequence[int] | None = None,
) -> list[str]:
    """The ``terms`` (query words, in their order) that ``text`` or ``title`` states in one of
    their forms: where relevance counts them (:func:`term_counts`: a word with the term's stem,
    a pair of Han, kana or Hangul characters anywhere; ``counted`` when already counted in
    :func:`titled`), or as one of :func:`term_forms` (the relation words: "married" states
    "spouse"; ``forms`` when already looked up)."""
    if counted is None:
        counted = term_counts_all(terms, [titled(title, text)])[0]
    in_text, in_title = _term_words(text), _term_words(title or "")
    found = []
    for term, count in zip(terms, counted, strict=True):
        if count:
            found.append(term)
        elif not _unspaced_term(term):
            spelled = forms[term] if forms is not None else term_forms(term)
            if not (in_text.isdisjoint(spelled) and in_title.isdisjoint(spelled)):
                found.append(term)
    return found


def states_a_term(terms: Sequence[str], text: str, text_words: Sequence[str] = ()) -> bool:
    """Whether :func:`covered_terms` of ``terms`` in ``text`` (no title) finds one, asked of a
    sentence: no cache is filled (a sentence is asked once), the relation words are looked up
    first (a set each) and the search stops at the first term found. ``text_words``: the words
    of ``text`` (:func:`words`) where the caller has them."""
    if not terms:
        return False
    if text_words and (text.isascii() or _unspaced().search(text) is None):
        in_text = frozenset(text_words)  # what _term_words reads: words() is phrase_key split
    else:
        in_text = _term_words(text)
    if any(not in_text.isdisjoint(term_forms(t)) for t in terms if not _unspaced_term(t)):
        return True
    if len(terms) > _TERMS_BY_SEARCH:
        return any(term_counts(terms, text))
    low = text.lower()
    word_run = _WORD_RUN if low.isascii() else _spaced_word_run()
    return any(_term_count(term, low, word_run) for term in terms)


def titled(title: str | None, text: str) -> str:
    """A passage's title and text as relevance reads them together (the text alone without a
    title)."""
    return f"{title}\n{text}" if title else text


def _term_words(text: str) -> frozenset[str]:
    """:func:`key_words` of ``text``, with the parts of words that hold characters of scripts
    written without spaces ("pytorch" of "安装pytorch") too."""
    found = key_words(text)
    if text.isascii() or _unspaced().search(text) is None:
        return found
    return found.union(piece for word in found for piece in _pieces(word))


def title_links(
    titles: Sequence[str | None], texts: Sequence[str], *, aligned: bool = True
) -> list[dict[int, float]]:
    """For each text, the indexes of the titles it names, with the link's strength (see
    :func:`title_aliases`): a text names a title when it contains one of its names as a whole
    phrase (a shorter name, or the one word of a capitalised title with a "(qualifier)", only
    where the text writes it capitalised, as a name: "home games" do not name "Home (Leah
    McFall song)"; "a musket" names "Musket", at the strength of a shorter name, as the common
    noun it then is rather than the page's name). When
    ``aligned`` (``titles[i]`` is the title of ``texts[i]``) a text never links to its own
    title, nor through a name its own title shares ("Green" in the text of "Green (Steve
    Hillage album)" is the passage naming itself, not "Green (R.E.M. album)"). A name written
    only inside a longer title of ``titles`` names that title alone: "What Ever Happened to
    Baby Jane?" names the film, not "What Ever Happened to...", and "Thurgood Marshall College
    Fund" not "Thurgood Marshall College". Found through an index of the texts' words, so the
    cost follows the matches, not the number of pairs."""
    named = _nameable(titles, texts) if len(titles) > _MANY_TITLES else range(len(titles))
    # Passages often share a title (windows of one document): each distinct title's names are
    # looked for once, and the texts naming one are linked to every passage with that title.
    sharing: dict[str | None, list[int]] = {}
    for j in named:
        sharing.setdefault(titles[j], []).append(j)
    names_of = {
        title: [(alias, strength, alias.split()) for alias, strength in aliases]
        for title, aliases in _distinct_aliases({t: len(js) for t, js in sharing.items()}).items()
    }
    needed = {word for aliases in names_of.values() for _, _, words_ in aliases for word in words_}
    keys, holders = _keys_and_holders(texts, needed)
    capitalised: list[set[str] | None] = [None] * len(texts)
    as_names: list[frozenset[str] | None] = [None] * len(texts)
    found: list[dict[int, float]] = [{} for _ in texts]
    # A title's own names, by title (an unnamed title has none: all its passages are unnamed).
    own = {t: {alias for alias, _, _ in names} for t, names in names_of.items()} if aligned else {}
    # The longer titles each name is a phrase of: where a text writes one of those, it names
    # that title, not the shorter one inside it (see _named_apart). Only titles of two words
    # or more whose every word some text holds can be written whole.
    longer = _longer_titles(
        (
            key
            for aliases in names_of.values()
            for key, strength, words_ in aliases
            if strength == 1.0 and len(words_) > 1 and all(map(holders.__contains__, words_))
        ),
        names_of,
    )
    for title, aliases in names_of.items():
        checkpoint()
        # A text names every passage of a title alike (its own excepted, when aligned: the
        # names of its own title), so the first passage's link speaks for all.
        passages = sharing[title]
        first = passages[0]
        whole = aliases[0][0] if aliases and aliases[0][1] == 1.0 else None  # its own key
        for alias, strength, alias_words in aliases:
            if not all(map(holders.__contains__, alias_words)):
                continue  # a word of the name is in no text: the usual case, settled at C speed
            padded = f" {alias} "
            rarest = min(alias_words, key=lambda word: len(holders[word]))
            for i in holders[rarest]:
                if aligned and alias in own.get(titles[i], ()):
                    continue  # its own title's name (the text of passage ``first`` among them)
                if strength <= found[i].get(first, 0.0) or padded not in keys[i]:
                    continue
                if alias in longer and not _named_apart(keys[i], padded, longer[alias], whole):
                    continue
                if strength < 1.0:
                    names = capitalised[i]
                    if names is None:  # read once per text, when first needed
                        checkpoint()
                        names = capitalised[i] = {w for e in entities(texts[i]) for w in e.split()}
                    if not names.issuperset(alias_words):
                        continue
                link = strength
                if strength == 1.0 and len(alias_words) == 1 and _capital_title(title):
                    written = as_names[i]
                    if written is None:
                        checkpoint()
                        written = as_names[i] = _capitalised_words(texts[i])
                    if alias not in written:
                        if _qualified_name(title):
                            continue
                        link = PARTIAL  # "a musket": a common noun, a weaker hop
                        if link <= found[i].get(first, 0.0):
                            continue
                for j in passages:
                    found[i][j] = link
    if len(sharing) == len(named):
        return found  # titles were looked for in passage order
    # Links in passage order, as if each passage's title were looked for in turn.
    return [dict(sorted(links.items())) if len(links) > 1 else links for links in found]


_MANY_TITLES = 64  # from this many titles, title_links first drops those no text can name


def _keys_and_holders(
    texts: Sequence[str], needed: set[str]
) -> tuple[list[str], dict[str, list[int]]]:
    """Each text's phrase key (padded with spaces), and which texts hold each of the words
    ``needed`` (only those words: a set intersection per text)."""
    keys: list[str] = []
    holders: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        checkpoint()
        keys.append(f" {phrase_key(text)} ")
        for word in needed.intersection(key_words(text)):
            holders.setdefault(word, []).append(i)
    return keys, holders


def _capital_title(title: str | None) -> bool:
    """Whether ``title`` starts with a capital letter (in any script): only then does a text
    that writes its one word in lower case write a common noun, not the name ("a musket" for
    "Musket"; "an ipod" still names "iPod")."""
    first = _WORDS.search(title or "")
    return first is not None and first[0][:1].isupper()


def _longer_titles(
    keys: Iterable[str], names_of: Mapping[str | None, list[tuple[str, float, list[str]]]]
) -> dict[str, list[str]]:
    """For each name in ``names_of`` that is a phrase of a longer title key of ``keys``, those
    keys: "what ever happened to" (the title "What Ever Happened to...") is one of "what ever
    happened to baby jane" (the film). Found from the keys' phrases (keys of up to
    ``_LONGER_WORDS`` words), so the cost follows the keys' lengths, not pairs of titles."""
    wanted = {alias for aliases in names_of.values() for alias, _, _ in aliases}
    longer: dict[str, list[str]] = {}
    for key in dict.fromkeys(keys):
        parts = key.split()
        if len(parts) > _LONGER_WORDS:
            continue
        for phrase in inner_phrases(parts):
            if phrase in wanted:
                found = longer.setdefault(phrase, [])
                if not found or found[-1] != key:  # keys come once each, in turn
                    found.append(key)
    return longer


def inner_phrases(words: Sequence[str]) -> Iterator[str]:
    """Every run of ``words`` shorter than all of them, joined by spaces, shortest first: the
    phrases inside a phrase key ("peter", "pan" and "peter pan" inside "peter pan live")."""
    for width in range(1, len(words)):
        for start in range(len(words) - width + 1):
            yield " ".join(words[start : start + width])


def _named_apart(key: str, padded: str, longer: Sequence[str], own: str | None) -> bool:
    """Whether the padded phrase key ``key`` of a text writes ``padded`` (a padded name of a
    title whose key is ``own``) somewhere other than inside one of the ``longer`` title keys
    that contain it, other than ``own`` (which names the same title): a text that writes "What
    Ever Happened to Baby Jane?" names the film, not "What Ever Happened to..."; one that also
    writes the shorter name on its own names both. A name written more than ``_MOST_PLACES``
    times, or inside more than ``_MOST_LONGER`` longer titles, counts as written apart (the
    rule is not asked): each check then costs a bounded number of scans of ``key``, however
    many titles share the name or however often a text repeats it."""
    if len(longer) > _MOST_LONGER + 1 or (len(longer) > _MOST_LONGER and own not in longer):
        return True  # counted, not searched: a name many titles share costs nothing more
    places = _places(key, padded, _MOST_PLACES + 1)
    if len(places) > _MOST_PLACES:
        return True
    inside: set[int] = set()
    for name in longer:
        if name == own:
            continue
        written = f" {name} "
        at = key.find(written)
        if at == -1:
            continue
        offsets = _places(written, padded, _LONGER_WORDS)
        # each place of the longer title holds a place of the name: at most _MOST_PLACES
        while at != -1:
            inside.update(at + offset for offset in offsets)
            at = key.find(written, at + 1)
    return any(at not in inside for at in places)


# Longer titles of up to this many words hide the names inside them; a name written more
# often than _MOST_PLACES in one text, or inside more than _MOST_LONGER longer titles, is
# taken as written apart (see _named_apart).
_LONGER_WORDS = 12
_MOST_PLACES = 8
_MOST_LONGER = 8


def _places(text: str, phrase: str, most: int) -> list[int]:
    """Where ``phrase`` starts in ``text``, overlapping places included: the first ``most``."""
    places: list[int] = []
    at = text.find(phrase)
    while at != -1 and len(places) < most:
        places.append(at)
        at = text.find(phrase, at + 1)
    return places


class Phrases:
    """Phrase keys to look for in sentences, indexed by their first word and length, so a
    sentence is checked with one dictionary lookup per word, and one set lookup per length of
    the phrases that start with it, rather than one comparison per phrase (thousands of names
    that start with one word, in a sentence that repeats it, were compared pair by pair).
    Phrases of more than ``_SLICED_WORDS`` words are compared by a hash of the words at each
    place (their words taken only where it matches), so a long phrase costs the same at every
    word of a sentence however long it is (a name of 15,000 capitalised words in a sentence
    repeating its first word took 0.8 s)."""

    def __init__(self, phrases: Iterable[str] = ()) -> None:
        self._by_first: dict[str, dict[int, set[tuple[str, ...]]]] = {}
        self._longest_first: dict[str, list[int]] = {}  # each first word's lengths, longest first
        # the long phrases' hashes, by length, with how many phrases have each
        self._hashes: dict[int, dict[int, int]] = {}
        self.update(phrases)

    def update(self, phrases: Iterable[str]) -> None:
        for phrase in phrases:
            parts = tuple(phrase.split())
            if not parts:
                continue
            lengths = self._by_first.setdefault(parts[0], {})
            same = lengths.setdefault(len(parts), set())
            if parts in same:
                continue
            same.add(parts)
            self._longest_first[parts[0]] = sorted(lengths, reverse=True)
            if len(parts) > _SLICED_WORDS:
                hashes = self._hashes.setdefault(len(parts), {})
                key = _Windows(parts).of(0, len(parts))
                hashes[key] = hashes.get(key, 0) + 1

    def found_in(self, sentence: Sequence[str]) -> bool:
        """Whether the word sequence ``sentence`` contains one of the phrases."""
        return bool(self.found(sentence, first=True))

    def found(self, sentence: Sequence[str], *, first: bool = False) -> set[tuple[str, ...]]:
        """The phrases (as word tuples) the word sequence ``sentence`` contains; only the
        first one met when ``first``."""
        by_first = self._by_first
        seen: set[tuple[str, ...]] = set()
        if by_first.keys().isdisjoint(sentence):  # the usual case, settled at C speed
            return seen
        windows = None  # made when a long phrase may start here
        # the long phrases found, by length and hash: a hash all of whose phrases were found
        # is not confirmed again (a phrase repeated at every word is read once)
        taken: dict[tuple[int, int], int] = {}
        for start, word in enumerate(sentence):
            lengths = by_first.get(word)
            if lengths is None:
                continue
            for length, phrases in lengths.items():
                if length > _SLICED_WORDS:
                    if start + length > len(sentence):
                        continue
                    windows = windows or _Windows(sentence)
                    key = windows.of(start, length)
                    if taken.get((length, key), 0) >= self._hashes[length].get(key, 0):
                        continue
                parts = tuple(sentence[start : start + length])
                if parts in phrases and parts not in seen:
                    seen.add(parts)
                    if length > _SLICED_WORDS:
                        taken[length, key] = taken.get((length, key), 0) + 1
                    if first:
                        return seen
        return seen

    def spans(self, words: Sequence[str]) -> Iterator[tuple[int, int, str]]:
        """The phrases the word sequence ``words`` holds, as (start, end, phrase key): the
        leftmost first, the longest where several start at one word, and none that overlaps
        one found before it."""
        by_first = self._by_first
        windows = None  # made when a long phrase may start here
        free = 0  # words before this one are part of a phrase found already
        for start, word in enumerate(words):
            lengths = by_first.get(word)
            if lengths is None or start < free:
                continue
            for length in self._longest_first[word]:
                if length > _SLICED_WORDS:
                    if start + length > len(words):
                        continue
                    windows = windows or _Windows(words)
                    if windows.of(start, length) not in self._hashes[length]:
                        continue
                parts = tuple(words[start : start + length])
                if parts in lengths[length]:
                    free = start + length
                    yield start, free, " ".join(parts)
                    break


# Phrases of up to this many words are compared word by word at each place they may start.
_SLICED_WORDS = 8
_HASH_MODULUS = (1 << 61) - 1
_HASH_BASE = 1_000_003


class _Windows:
    """Hashes of the runs of a word sequence, each in constant time once the sequence is read:
    a polynomial over the words' own hashes, modulo a Mersenne prime. Equal runs hash alike;
    unequal ones almost never do, and a match is confirmed word by word."""

    __slots__ = ("_powers", "_prefix")

    def __init__(self, words: Sequence[str]) -> None:
        prefix = [0]
        powers = [1]
        value = 0
        for word in words:
            value = (value * _HASH_BASE + hash(word)) % _HASH_MODULUS
            prefix.append(value)
            powers.append(powers[-1] * _HASH_BASE % _HASH_MODULUS)
        self._prefix = prefix
        self._powers = powers

    def of(self, start: int, length: int) -> int:
        """The hash of the ``length`` words from ``start``."""
        prefix = self._prefix
        return (prefix[start + length] - prefix[start] * self._powers[length]) % _HASH_MODULUS


def _qualified_name(title: str | None) -> bool:
    """Whether ``title`` is a capitalised name told apart from others by a "(qualifier)", as
    "Home (Leah McFall song)" is: its one word in lower case is that word, not the name. The
    name's first letter is what is capitalised ('"Heroes" (song)', "¡Home! (song)")."""
    if title is None:
        return False
    name = _without_qualifier(title)
    return name != title and _capital_title(name)


def _capitalised_words(text: str) -> frozenset[str]:
    """The phrase-key words of the words ``text`` writes with a capital (in any script)."""
    return key_words(" ".join(w for w in _WORDS.findall(text) if w[:1].isupper()))


_WORDS = re.compile(r"\w+")  # the words of a text (_WORD_RUN above also matches none)


def _nameable(titles: Sequence[str | None], texts: Sequence[str]) -> list[int]:
    """The indexes of the titles some text may name. Every name of a title is made of words of
    its key, so a title none of whose key's words is in any text cannot be named: its names
    are not looked for, nor counted when shorter names shared by two titles are dropped (such
    a name has a word in no text either). Worth the set of the texts' words only when there
    are many titles."""
    words_of_texts: set[str] = set()
    for text in texts:
        checkpoint()
        words_of_texts.update(key_words(text))
    nameable: dict[str | None, bool] = {}  # by title: passages often share one
    named = []
    for j, title in enumerate(titles):
        can = nameable.get(title)
        if can is None:
            can = nameable[title] = not words_of_texts.isdisjoint(title_key(title).split())
        if can:
            named.append(j)
    return named


@lru_cache(maxsize=16384)
def _short_names(title: str) -> tuple[str, ...]:
    """Shorter names of a title (qualifier removed), as phrase keys. Cached: the relevance
    stage and the planner both ask for the same titles."""
    names = []
    head, comma, _ = title.partition(",")
    if comma:
        names.append(phrase_key(head))
    parts = head.split()
    capital = [w[:1].isupper() for w in parts]
    if 2 <= len(parts) <= 4 and all(capital):
        names.append(phrase_key(parts[-1]))
    if len(parts) >= 3 and capital[0] and capital[1]:
        names.append(phrase_key(" ".join(parts[:2])))
    lead = 0
    while lead < len(parts) and capital[lead]:
        lead += 1
    if 0 < lead < len(parts):  # "Bantu" for "Bantu peoples"
        names.append(phrase_key(" ".join(parts[:lead])))
    return tuple(n for n in names if len(n) >= 4 and not all(w in STOPWORDS for w in n.split()))


def _capitals_as_ascii(text: str) -> str:
    """``text`` with each capital letter outside ASCII written "A": a name is one wherever its
    script writes capitals ("Émile Zola", "Łódź", "Ōfuji", "Никола Тесла"), and the patterns
    that look for capitals (``_ENTITY``, ``_SENTENCE_END``) keep their small ASCII class, which
    compiles in a fraction of the time a class of every capital takes. Both are letters and one
    character, so every match is where it is in ``text`` and matches the same word characters;
    slices of ``text`` at its spans are what was found. ASCII text and text with no such
    capital (most prose outside ASCII: dashes, quotes) come back as they are."""
    if text.isascii():
        return text
    capitals = [c for c in outside_ascii(text) if c.isalpha() and (c.isupper() or c.istitle())]
    if len(capitals) > _REPLACED_CAPITALS:  # one pass, however many (a text of every capital)
        return text.translate(dict.fromkeys(map(ord, capitals), "A"))
    for char in capitals:  # a few: one replace each, several times faster than translate
        text = text.replace(char, "A")
    return text


# Up to this many distinct capitals outside ASCII, each is replaced on its own (a pass over
# the text each); more are translated in one pass.
_REPLACED_CAPITALS = 8


@text_cache(CACHE_CHARS)
def entities(text: str, min_chars: int = 4) -> frozenset[str]:
    """The phrase keys of capitalised phrases, numbers and dates in ``text``: what a passage
    introduces that a later passage may mention. Sentence-initial function words ("The") and
    keys shorter than ``min_chars`` (except numbers) are left out. Cached: planners and
    compression ask for the same passages' entities repeatedly."""
    read = _capitals_as_ascii(text)
    if read is text:
        matches = _ENTITY.findall(text)
    else:
        matches = [text[match.start() : match.end()] for match in _ENTITY.finditer(read)]
    if not matches:
        return frozenset()
    # The matches normalised in one go, NUL between them: no match holds a NUL, and lower-casing
    # treats one as it treats the end of a text (it is neither cased nor case-ignorable, which
    # is all a final sigma looks at), so each piece is ``normalize(match)``.
    found = set()
    for piece in _normalized("\x00".join(matches), _UTF8_TABLE_KEEP_NUL).split("\x00"):
        key = " ".join(piece.split())
        if key in STOPWORDS or (len(key) < min_chars and not key.isdigit()):
            continue
        found.add(key)
    return frozenset(found)


@text_cache(CACHE_CHARS)
def bridge_names(text: str) -> frozenset[str]:
    """The names in ``text`` that may tie it to another passage about the same thing: of its
    :func:`entities`, the capitalised phrases of two words or more ("Steve Hillage",
    "University of Rochester"), less function words that open one ("During" of "During World
    War II"). Two names that "and" or "for" join, each of two words or more, are two ("Bette
    Davis and Joan Crawford"; "Marks and Spencer Group" and "Institute for Advanced Study"
    stay one; in "Seth Rogen for AMC" the one word after the joint joins the name before it,
    which is a name alone too); a number parts what it stands between ("David Byrne for the
    1985 Talking Heads"); a possessive names its owner too ("Jules Verne's Nautilus": "Jules
    Verne" and the whole). One capitalised word is as often a nationality, a country or a first
    name ("American", "France", "Thomas") as a bridge, and a number or a date two passages
    share ties nothing, so neither is one. Cached, like :func:`entities`."""
    names: set[str] = set()
    for key in entities(text):
        if " " not in key:
            continue
        words = key.split()
        if (
            _DIGIT.search(key) is None
            and words[0] not in STOPWORDS
            and words[-1] not in STOPWORDS
            and _PARTING.isdisjoint(words)
        ):
            names.add(key)  # the common name, nothing to part or trim (as _add_names reads it)
            continue
        run: list[str] = []
        for word in (*words, "0"):
            if _DIGIT.search(word) is None:
                run.append(word)
            elif run:
                if len(run) > 1:  # one word names nothing
                    _add_names(run, names)
                run = []
    return frozenset(names)


# A run of capitalised words (capitals outside ASCII are "A" in the text this reads, see
# _capitals_as_ascii): a run of two or more is a longer name, left to bridge_names whole, so
# only runs of one word are looked at further.
_CAPITALISED_RUN = re.compile(r"[A-Z]\w*(?:\s+[A-Z]\w*)*")
# What follows a word: a possessive "'s", then the next word (letters) or mark.
_AFTER = re.compile(r"(['’]s(?![^\W_]))?\s*([^\W\d_]+|\S)?")
# Marks after which a capitalised word opens a sentence or a quotation.
_OPENERS = frozenset(".!?:;\"“”'’«»")
_APOSTROPHES = frozenset("'’")
_LONGEST_LONE_NAME = 64  # letters: a longer word is no name


@text_cache(CACHE_CHARS)
def lone_names(text: str) -> frozenset[str]:
    """The single capitalised words of ``text`` of five letters or more that it writes as a
    name of their own, as phrase keys ("Viacom", "Cambridge", "Qaeda"): not opening a
    sentence or a quotation, no capitalised word or number beside them (those are part of a
    longer name, see :func:`bridge_names`), and not before a lower-case content word, which
    makes them an adjective ("Danish singer"). A possessive names its owner ("Viacom's
    studio"). Whether such a word is a name at all (a nationality or a common noun written in
    capitals) is for the caller to judge, from how other texts write it (see
    :func:`lower_words` and :func:`ctxasm.stages.relevance_utility.shared_names`). Runs of
    capitalised words are found at C speed, and a run of one word is read with the word on
    either side of it (each stretch of text read at most twice); cached, like
    :func:`entities`."""
    read = _capitals_as_ascii(text)
    found: set[str] = set()
    for match in _CAPITALISED_RUN.finditer(read):
        start, end = match.span()
        if not 5 <= end - start <= _LONGEST_LONE_NAME:
            continue
        word = text[start:end]
        if not (word[1:].isalpha() and word[1:].islower()):
            continue  # several words, or a digit or capital inside: "McCain", "Apollo11"
        if start and _joined(read[start - 1]):
            continue  # the end of a longer word: "iTunes"
        at = start - 1  # the word before: not a number, nor an opening mark
        while at >= 0 and read[at].isspace():
            at -= 1
        if at < 0 or read[at] in _OPENERS or read[at].isdigit():
            continue  # it opens the text, a sentence or a quotation
        after = _AFTER.match(read, end)
        owner, following = after is not None and after[1] is not None, after and after[2]
        if following:
            first = following[0]
            if first.isupper() or first.isdigit() or (first in _APOSTROPHES and not owner):
                continue  # "People's Republic", "Apollo 11", a closing quote
            if not owner and following.islower() and following not in STOPWORDS:
                continue  # an adjective: "Danish singer"
        key = word.lower() if word.isascii() else phrase_key(word)
        if " " not in key and key not in STOPWORDS:
            found.add(key)
    return frozenset(found)


def _joined(char: str) -> bool:
    """Whether ``char`` beside a word makes it part of a longer one (``\\w``)."""
    return char.isalnum() or char == "_"


def writes_lower(text: str, key: str) -> bool:
    """Whether ``text`` writes ``key`` (a word of :func:`lower_words`' kind: letters, lower
    case) as a word of its own, as :func:`lower_words` would find it, without reading all of
    ``text``'s words: one search, for a few keys."""
    at = text.find(key)
    while at != -1:
        end = at + len(key)
        if not (at and _joined(text[at - 1])) and not (end < len(text) and _joined(text[end])):
            return True
        # a match that failed lies inside a longer word, and so does any that overlaps it
        at = text.find(key, end)
    return False


@text_cache(CACHE_CHARS)
def lower_words(text: str) -> frozenset[str]:
    """The words of five letters or more that ``text`` writes in lower case: "the final"
    holds ``final``, "Finals", "iTunes" and "semiFinal" hold none. A capitalised word another
    text writes so is no name (see :func:`lone_names`). Cached, like :func:`entities`."""
    return frozenset(word for word in _LOWER_WORD.findall(text) if word.islower())


# A word that starts with a letter other than an ASCII capital (others are checked after).
_LOWER_WORD = re.compile(r"\b[^\W\d_A-Z][^\W\d_]{4,}\b")


def _add_names(words: list[str], names: set[str]) -> None:
    """Add to ``names`` the names of ``words``, a capitalised phrase's words with no number
    (see :func:`bridge_names`)."""
    pieces: list[list[str]] = [[]]
    joints: list[str] = []
    for word in words:
        if word in _JOINTS:
            joints.append(word)
            pieces.append([])
        else:
            pieces[-1].append(word)
    # A piece of one word joins the next ("Institute for Advanced Study", "Marks and Spencer
    # Group"), the last one the one before ("Tom Hanks and Rita").
    groups: list[list[str]] = []
    between: list[str] = []  # the joint between each group and the next
    current: list[str] = []
    lead = 0  # function words that open current (it only grows: counted on, not again)
    for at, piece in enumerate(pieces):
        current.extend(piece)
        while lead < len(current) and current[lead] in STOPWORDS:
            lead += 1
        if at < len(joints) and len(current) - lead < 2:
            current.append(joints[at])
            continue
        groups.append(current)
        current, lead = [], 0
        if at < len(joints):
            between.append(joints[at])
    if len(groups) > 1 and _short(groups[-1]):
        last = groups.pop()
        _add_name(groups[-1], names)  # "Seth Rogen" of "Seth Rogen for AMC", a name alone
        groups[-1] = [*groups[-1], between[-1], *last]
    for group in groups:
        _add_name(group, names)


def _short(words: Sequence[str]) -> bool:
    """Whether ``words`` hold less than two words past the function words that open them."""
    return _opening(words) > len(words) - 2


def _add_name(words: list[str], names: set[str]) -> None:
    """Add the name ``words`` spell to ``names`` (less function words that open or close it,
    as the "s" of a closing possessive), and the owner of a possessive in it ("jules verne" of
    "jules verne s nautilus"), where each is of two words or more."""
    end = len(words)
    while end and (words[end - 1] in STOPWORDS or words[end - 1] in _JOINTS):
        end -= 1  # "David Byrne for the" (a number came next): "David Byrne"
    words = words[:end]
    if "s" in words:
        owner = words[: words.index("s")]
        if not _short(owner):
            names.add(" ".join(owner[_opening(owner) :]))
    lead = _opening(words)
    if not _short(words):
        names.add(" ".join(words[lead:]))


def _opening(words: Sequence[str]) -> int:
    """How many function words open ``words``."""
    lead = 0
    while lead < len(words) and words[lead] in STOPWORDS:
        lead += 1
    return lead


_DIGIT = re.compile(r"\d")
# Words that may join two names in one capitalised phrase (see _ENTITY).
_JOINTS = frozenset(("and", "for"))
# Words of a name that _add_names parts it at, or reads an owner before.
_PARTING = _JOINTS | {"s"}


def clear_caches() -> None:
    """Forget cached keys, entities, term counts and sentence splits (for cold-start
    measurements)."""
    for cached in (
        phrase_key,
        _names,
        key_words,
        title_key,
        _short_names,
        entities,
        bridge_names,
        lone_names,
        lower_words,
        sentence_spans,
        sentence_words,
        _written_words,
    ):
        cached.cache_clear()
    _TERM_COUNTS.clear()


# A sentence ends at . ! or ? (with closing quotes or brackets) before white space and a
# capital letter (of any script, see _capitals_as_ascii), digit or opening quote; an abbreviation
# or an initial before the stop does not end it.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_ABBREVIATION = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Gen|Col|Lt|Sgt|Capt|Mt|Ft|vs|etc|No|Nos|Inc|Ltd|Co|"
    r"Corp|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Fig|Figs|Vol|Vols|Ed|Eds|Rev|"
    r"approx|ca|cf|al|ed|pp|ch|sec|vol|no|fig|e\.g|i\.e|a\.m|p\.m|viz|resp|"
    # ranks and titles, works and measures, and the states' abbreviations in US addresses
    r"Maj|Adm|Brig|Cmdr|Cpl|Pvt|Gov|Sen|Rep|Pres|Hon|Fr|Msgr|Rt|Supt|Op|Ch|Pt|Bros|Dept|Univ|"
    r"Assn|Ave|Blvd|Rd|est|incl|dept|ft|lb|lbs|oz|Ala|Ariz|Ark|Calif|Colo|Conn|Fla|Ga|"
    r"Ill|Ind|Kan|Kans|Ky|Md|Mass|Mich|Minn|Miss|Mo|Mont|Neb|Nebr|Nev|Okla|Ore|Pa|Penn|Tenn|"
    r"Tex|Va|Vt|Wash|Wis|Wyo)|"
    # a single letter (an initial, or "c." for circa, "p." for page) and dotted acronyms
    r"\b[A-Za-z]|\b(?:[A-Za-z]\.)+[A-Za-z])[.]$"
)


@text_cache(CACHE_CHARS)
def sentence_spans(text: str) -> tuple[tuple[int, int], ...]:
    """``(start, end)`` of each sentence of ``text``; together they cover the text exactly
    (white space after a sentence belongs to it). Splits conservatively: when unsure, two
    sentences stay one, so a cut between spans never falls inside a sentence."""
    spans = []
    start = 0
    read = _capitals_as_ascii(text)  # at the same places: "А. С. Пушкин" has initials too
    for match in _SENTENCE_END.finditer(read):
        stop = match.start() + 1
        if _ABBREVIATION.search(read[max(start, stop - 12) : stop]):
            continue
        spans.append((start, match.end()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return tuple(spans)


@text_cache(HEAVY_CACHE_CHARS)
def sentence_words(text: str) -> tuple[tuple[str, ...], ...]:
    """The words of each sentence of ``text`` (see :func:`sentence_spans`)."""
    return tuple(tuple(words(text[start:end])) for start, end in sentence_spans(text))
