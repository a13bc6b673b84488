"""One self-contained HTML page: the template, its inlined style and script, a JSON data island
and a Content-Security-Policy that lets the page load nothing from anywhere.

Data never becomes markup here. It goes into ``<script type="application/json">`` with ``<``,
``>``, ``&``, U+2028, U+2029 and lone surrogates written as JSON escapes, so no string in it can
close the element or open a comment, and the page's script reads it with ``JSON.parse``.
Placeholders are filled in one pass over the template, so text that looks like a placeholder in
an inserted value is never filled in turn. The policy allows exactly the inlined script and
style (by their SHA-256), no other source of anything, and ``connect-src`` only where a page
must call its own service.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from functools import cache
from html import escape
from importlib.resources import files
from typing import Any

__all__ = ["asset", "csp", "json_island", "page"]

_PLACEHOLDER = re.compile(r"@@(\w+)@@")
_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}
_SURROGATE = re.compile("[\ud800-\udfff]")


@cache
def asset(name: str) -> str:
    """The text of a file shipped in this package (template, script or style)."""
    return files("ctxasm.html").joinpath(name).read_text(encoding="utf-8")


def json_island(value: Any) -> str:
    """``value`` as JSON that is inert inside a ``<script type="application/json">`` element."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False).translate(_ESCAPES)
    # A lone surrogate (from a \\ud800 escape in the input) cannot be written as UTF-8.
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def csp(script: str, style: str, *, connect: bool = False) -> str:
    """The policy for a page whose only script and style are ``script`` and ``style``
    (``connect``: it may call its own origin)."""
    scripts = _sha256(script) if script else "'none'"
    origin = "'self'" if connect else "'none'"
    return (
        f"default-src 'none'; script-src {scripts}; style-src {_sha256(style)}; "
        f"connect-src {origin}; img-src 'none'; base-uri 'none'; form-action 'none'"
    )


def page(
    *, title: str, body: str, data: Any, scripts: tuple[str, ...], connect: bool = False
) -> str:
    """The whole page: ``body`` (markup of our own, never data), ``data`` in the island, and
    the named script files concatenated into one inline script."""
    style = asset("view.css")
    script = "\n".join(asset(name) for name in scripts)
    values = {
        "csp": csp(script, style, connect=connect),
        "title": escape(title),
        "style": style,
        "body": body,
        "data": json_island(data),
        "script": script,
    }
    return _PLACEHOLDER.sub(lambda found: values[found.group(1)], asset("page.html"))
