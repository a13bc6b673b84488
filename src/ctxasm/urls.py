"""Which urls a source's header may show: one rule for the formats that show a url and for the
stage that stitches windows, which must know whether a window's header names its document.

Only http(s) urls and relative ones are shown. ``javascript:``, ``data:``, ``file:`` and any
other scheme, a url that does not parse (an unclosed IPv6 bracket) and one of white space alone
are never shown: a header with such a url and no title names its source by its id.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

__all__ = ["SHOWN_SCHEMES", "shown_split", "shows_url"]

SHOWN_SCHEMES = frozenset({"http", "https"})


def shown_split(url: str) -> tuple[str, SplitResult] | None:
    """``url`` on one line (runs of white space made one space) with its parts, or ``None``
    when no header shows it (see the module docstring)."""
    url = " ".join(url.split())
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:  # such as an unclosed or invalid IPv6 bracket
        return None
    if parts.scheme and parts.scheme.lower() not in SHOWN_SCHEMES:
        return None
    return url, parts


def shows_url(url: str | None) -> bool:
    """Whether a header can show ``url`` (its characters are then made safe to show)."""
    return url is not None and shown_split(url) is not None
