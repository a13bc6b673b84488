"""Words as BM25 and deduplication see them: lower-case runs of letters, digits and underscores.

These run over every candidate's text, so they lean on C-speed string methods: ASCII text is
mapped through a byte table, other text through one regular expression.
"""

from __future__ import annotations

import re
import string

__all__ = ["STOPWORDS", "normalize", "query_terms", "words"]

_WORD_BYTES = (string.ascii_letters + string.digits + "_").encode()
_ASCII_TABLE = bytes(
    byte if byte in _WORD_BYTES else ord(" ") for byte in range(256)
)  # every ASCII byte that is not part of a word becomes a space
_NON_WORD = re.compile(r"[\W]+")

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


def normalize(text: str) -> str:
    """Lower-case ``text`` with every non-word character turned into a space."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_TABLE).decode("ascii").lower()
    return _NON_WORD.sub(" ", text.lower())


def words(text: str) -> list[str]:
    """The words of ``text`` in order."""
    return normalize(text).split()


def query_terms(query: str) -> list[str]:
    """The distinct content words of a query, in first-seen order (stopwords removed)."""
    seen: dict[str, None] = {}
    for word in words(query):
        if word not in STOPWORDS:
            seen.setdefault(word, None)
    return list(seen)
