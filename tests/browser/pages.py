"""What the page tests check in the browser, shared by the report, playground and eval tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from chromium import Browser

__all__ = ["READY", "contrast_failures", "foreign_requests", "shoot", "write_page"]

# The report view marks the moment it has drawn everything (performance.mark in view.js).
READY = "performance.getEntriesByName('ctxasm-ready').length > 0"

# Text colour against the first opaque background behind it, as WCAG computes contrast.
_CONTRAST = """
(() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const back = (node) => {
    for (let n = node; n; n = n.parentElement) {
      const c = rgb(getComputedStyle(n).backgroundColor);
      if (c.length === 3 || c[3] > 0.99) return c;
    }
    return [255, 255, 255];
  };
  const failures = [];
  const seen = new Set();
  for (const node of document.querySelectorAll('body *')) {
    const own = [...node.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim());
    if (!own || !node.getClientRects().length) continue;
    const style = getComputedStyle(node);
    const key = [style.color, back(node).join(','), node.tagName, node.className].join('|');
    if (seen.has(key)) continue;
    seen.add(key);
    const a = lum(rgb(style.color)), b = lum(back(node));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) failures.push(`${node.tagName}.${node.className}: ${ratio.toFixed(2)}`);
  }
  return failures;
})()
"""


def write_page(folder: Path, name: str, html: str) -> str:
    """Save ``html`` as ``folder/name`` and return its file url."""
    path = folder / name
    path.write_text(html, encoding="utf-8")
    return path.as_uri()


def foreign_requests(browser: Browser, own: str) -> list[str]:
    """Requests the page made anywhere but ``own`` (its own file, or its own host and port)."""
    mine = urlsplit(own)

    def is_own(url: str) -> bool:
        found = urlsplit(url)
        if mine.scheme == "file":
            return url.split("#", maxsplit=1)[0] == own
        return (found.scheme, found.netloc) == (mine.scheme, mine.netloc)

    return [url for url in browser.events.requests if not is_own(url)]


def contrast_failures(browser: Browser) -> Any:
    """Elements whose text is under 4.5:1 against its background."""
    return browser.evaluate(_CONTRAST)


def shoot(browser: Browser, folder: Path, name: str) -> Path:
    path = browser.screenshot(folder / name)
    print(f"screenshot: {path}")
    return path


def big_request(passages: int = 2000) -> dict[str, Any]:
    """A request with ``passages`` passages: most relevant, every tenth an exact copy of the one
    before, every seventh under the score threshold, and more than the budget holds."""
    kinds = ("river", "city", "bridge", "castle", "market", "harbour", "museum", "garden")
    found: list[dict[str, Any]] = []
    for i in range(passages):
        text = (
            found[i - 1]["text"]
            if i % 10 == 9
            else f"Passage {i} tells how the {kinds[i % 8]} of town {i} grew along the Danube "
            f"after the year {1000 + i}, and which trades it lived on."
        )
        score = 0.1 if i % 7 == 0 else round(1 - i / (2 * passages), 4)
        found.append(
            {
                "id": f"p{i}",
                "title": f"Town {i}",
                "url": f"https://example.org/town/{i}",
                "text": text,
                "score": score,
            }
        )
    return {
        "query": "How did the towns along the Danube grow?",
        "model": "gpt-4o-mini",
        "max_context_tokens": 15 * passages,
        "min_score": 0.3,
        "passages": found,
    }
