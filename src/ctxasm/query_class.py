"""Query classes: which kind of evidence a question needs, by simple documented rules.

- ``summary``: asks for an overview rather than a fact ("summarize", "overview of", "explain",
  "describe", "what are the main ...", "pros and cons", "history of", "tell me about", "list").
- ``comparison``: weighs two things against each other ("which is older, A or B", "both",
  "the same", "more ... than", "difference between", "compared to", "in common").
- ``multihop``: reaches its answer through another entity: a relative clause after a noun
  ("the band that released ...", "the man who ..."), a possessive or "of" chain between named
  things ("the director of the film starring X"), or two or more named things.
- ``factoid``: everything else: one fact about one thing.

The rules run in that order; the first that matches decides. They are deliberately simple: a
caller that knows better passes ``query_class`` in the request.
"""

from __future__ import annotations

import re

from ctxasm.lexical import entities

__all__ = ["QUERY_CLASSES", "classify"]

QUERY_CLASSES = ("factoid", "multihop", "comparison", "summary")

_SUMMARY = re.compile(
    r"^\s*(?:summari[sz]e|give (?:me )?an overview|overview|outline|explain|describe|list|"
    r"tell me about)\b|\b(?:overview of|summary of|history of|pros and cons|what are the "
    r"(?:main|key|major)|in detail)\b",
    re.IGNORECASE,
)
# The most characters between the words of a comparison ("older ... than", "which ..., ... or"):
# with gaps of any length, a query of "which , " repeated took time cubic in its length (5,000
# characters: 12.8 s, and a service request stalled every other for as long).
_GAP = 200
_COMPARISON = re.compile(
    r"\b(?:both|the same|in common|difference between|differ|compared? (?:to|with)|versus|vs\.?|"
    r"(?:more|less|fewer|greater|longer|shorter|older|younger|larger|smaller|bigger|higher|"
    r"lower|earlier|later|first|further|farther|closer)\b[^?]{0,_GAP}?\b(?:than|or)\b|"
    r"\bwhich\b[^?,]{0,_GAP},[^?]{0,_GAP}?\bor\b)".replace("_GAP", str(_GAP)),
    re.IGNORECASE,
)
_RELATIVE = re.compile(
    r"\b[a-z]+\s+(?:that|who|whom|whose|which|where|when)\s+(?:[a-z]+\s+)?"
    r"(?:is|was|were|are|has|had|did|does|released|played|starred|wrote|directed|founded|"
    r"won|made|became|served|formed|produced|published|[a-z]+ed)\b",
    re.IGNORECASE,
)
_CHAIN = re.compile(r"\b(?:of|by|for|in) (?:the|a|an) [a-z]+ (?:of|by|starring|featuring)\b|'s\b")


def classify(query: str) -> str:
    """The class of ``query``: ``factoid``, ``multihop``, ``comparison`` or ``summary``."""
    if _SUMMARY.search(query):
        return "summary"
    if _COMPARISON.search(query):
        return "comparison"
    if _RELATIVE.search(query) or _CHAIN.search(query):
        return "multihop"
    named = [e for e in entities(query) if not e.isdigit()]
    if len(named) >= 2:
        return "multihop"
    return "factoid"
