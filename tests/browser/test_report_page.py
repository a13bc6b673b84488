"""The HTML report in a real headless Chromium: what it shows, that it loads nothing, that a
hostile corpus stays text, and that it reads on a narrow window and from the keyboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chromium import Browser
from pages import READY, big_request, contrast_failures, foreign_requests, shoot, write_page

from ctxasm import Assembler
from ctxasm.html import render_report_html

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "request.json"

# Each payload would set window.__pwned (or open a dialog) if the page ran it.
PAYLOADS = (
    "<script>window.__pwned=1;alert(1)</script>",
    '<img src=x onerror="window.__pwned=2;alert(2)">',
    "javascript:window.__pwned=3",
    "data:text/html,<script>window.__pwned=4</script>",
    "</script><script>window.__pwned=5</script>",
    '</textarea><svg onload="window.__pwned=6">',
    "{{7*7}} ${window.__pwned=7} @@data@@ @@script@@",
    "line\u2028break\u2029end <!-- <b onmouseover=alert(8)>",
    '"><iframe src="javascript:window.__pwned=9"></iframe>',
    'https://example.org/"><script>window.__pwned=10</script>',
)


def _open(page: Browser, folder: Path, name: str, result: dict[str, Any]) -> str:
    url = write_page(folder, name, render_report_html(result))
    page.open(url, ready=READY)
    return url


def _example() -> dict[str, Any]:
    request = json.loads(EXAMPLE.read_text())
    return Assembler().assemble(request).to_dict()


def test_the_report_shows_every_passage_where_it_sits(
    page: Browser, tmp_path: Path, artifacts: Path
) -> None:
    result = _example()
    report = result["report"]
    url = _open(page, tmp_path, "report.html", result)
    rows = page.evaluate(
        "[...document.querySelectorAll('tr.passage')]"
        ".map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [row[2] for row in rows] == [item["id"] for item in report["included"]]
    assert [row[0] for row in rows] == [str(item["position"]) for item in report["included"]]
    assert [row[1] for row in rows] == [item["label"] for item in report["included"]]
    assert [row[3] for row in rows] == [f"{item['tokens']:,}" for item in report["included"]]
    # Each row's label links to its place in the prompt, and that place links back.
    links = page.evaluate(
        "[...document.querySelectorAll('tr.passage a[href^=\"#prompt-\"]')].map(a => "
        "{const t = document.getElementById(a.getAttribute('href').slice(1)); "
        "return t && [t.textContent, t.getAttribute('href')]})"
    )
    assert links == [
        [f"[{item['label']}]", f"#row-{item['position']}"] for item in report["included"]
    ]
    assert foreign_requests(page, url) == []
    assert page.events.exceptions == [] and page.events.dialogs == []
    shoot(page, artifacts, "report.png")


def test_every_excluded_reason_is_a_group_with_each_passage(page: Browser, tmp_path: Path) -> None:
    result = Assembler().assemble(big_request(300)).to_dict()
    excluded = result["report"]["excluded"]
    _open(page, tmp_path, "groups.html", result)
    groups = page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('details.group')].map(d => "
        "[d.dataset.reason, [...d.querySelectorAll('tr.excluded')].map(r => "
        "[...r.cells].map(c => c.textContent))]))"
    )
    expected: dict[str, list[list[str]]] = {}
    for item in excluded:
        expected.setdefault(item["reason"], []).append([item["id"], item["stage"], item["detail"]])
    assert groups == expected
    assert set(groups) == {"below_threshold", "duplicate", "over_budget"}
    # Collapsed until asked; a summary opens its group from the keyboard too.
    assert (
        page.evaluate("[...document.querySelectorAll('details.group')].some(d => d.open)") is False
    )
    page.evaluate("document.querySelector('details.group summary').focus()")
    page.press("Enter", "Enter", 13, "\r")
    assert page.evaluate("document.querySelector('details.group').open") is True


def test_budget_segments_are_proportional_to_their_tokens(page: Browser, tmp_path: Path) -> None:
    result = _example()
    budget = result["report"]["budget"]
    _open(page, tmp_path, "budget.html", result)
    bars = page.evaluate(
        "[...document.querySelectorAll('.bar')].map(b => ({width: b.clientWidth, segments: "
        "[...b.querySelectorAll('.seg')].map(s => [s.className, +s.dataset.tokens, "
        "s.getBoundingClientRect().width, s.getAttribute('title')])}))"
    )
    window_bar, prompt_bar = bars
    tokens = [segment[1] for segment in window_bar["segments"]]
    assert sum(tokens) == budget["context_window"]
    assert tokens[-1] == budget["reserve_output"]
    for bar in bars:
        whole = sum(segment[1] for segment in bar["segments"])
        for name, count, width, title in bar["segments"]:
            assert abs(width - bar["width"] * count / whole) <= 1.0, (name, count, width)
            assert f"{count:,} tokens" in title
    assert sum(segment[1] for segment in prompt_bar["segments"]) == result["report"]["total_tokens"]
    passages = [s for s in prompt_bar["segments"] if "seg-passage" in s[0]]
    assert [s[1] for s in passages] == [item["tokens"] for item in result["report"]["included"]]


def _hostile_result() -> dict[str, Any]:
    """A result whose every string a corpus or a caller can set is a payload."""
    n = len(PAYLOADS)
    included = [
        {
            "id": payload,
            "label": f"Source {i}",
            "tokens": 10,
            "score": 0.5,
            "position": i,
            "source": payload,
            "url": payload,
            "compression": None,
            "flags": [payload],
            "chosen": {"by": "link", "linked_from": PAYLOADS[0], "via": payload, "terms": []},
        }
        for i, payload in enumerate(PAYLOADS, start=1)
    ]
    excluded = [{"id": p, "stage": "dedup", "reason": p, "detail": p} for p in PAYLOADS]
    content = "\n".join(f"[Source {i}] {p}\n```\n{p}\n```" for i, p in enumerate(PAYLOADS, 1))
    return {
        "id": PAYLOADS[0],
        "metadata": {"user": PAYLOADS[1]},
        "messages": [{"role": PAYLOADS[2], "content": content}],
        "system": PAYLOADS[3],
        "text": None,
        "report": {
            "model": PAYLOADS[4],
            "tokenizer": PAYLOADS[5],
            "exact_count": True,
            "budget": {
                "context_window": 1000,
                "reserve_output": 100,
                "system": 10,
                "query": 10,
                "history": 0,
                "overhead": 5,
                "margin": 0,
                "context": 500,
            },
            "total_tokens": 10 * n + 25,
            "context_tokens": 10 * n,
            "considered": 2 * n,
            "selected": n,
            "no_relevant_context": False,
            "included": included,
            "excluded": excluded,
            "cost_usd": None,
            "timings_ms": {p: 1.0 for p in PAYLOADS},
            "query_class": PAYLOADS[6],
            "history": None,
        },
    }


def _hostile_request() -> dict[str, Any]:
    return {
        "query": "What do these pages say?",
        "model": "gpt-4o-mini",
        "passages": [
            {"id": p, "title": p, "url": p, "source": p, "text": f"{p} text {i}", "score": 0.9}
            for i, p in enumerate(PAYLOADS)
        ]
        + [
            {"id": f"copy-{i}", "text": f"{p} text {i}", "score": 0.8}
            for i, p in enumerate(PAYLOADS)
        ],
    }


INERT = """({
  pwned: window.__pwned === undefined,
  scripts: document.scripts.length,
  injected: document.querySelectorAll(
    'img, iframe, svg, object, embed, b, textarea, [onerror], [onload], [onmouseover]').length,
  links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))
    .filter(h => !/^(#|https?:\\/\\/)/.test(h)),
})"""


@pytest.mark.parametrize("source", ["report", "assembled"])
def test_a_hostile_corpus_renders_as_inert_text(
    page: Browser, tmp_path: Path, artifacts: Path, source: str
) -> None:
    result = (
        _hostile_result()
        if source == "report"
        else Assembler().assemble(_hostile_request()).to_dict()
    )
    url = _open(page, tmp_path, "hostile.html", result)
    assert page.evaluate(INERT) == {"pwned": True, "scripts": 2, "injected": 0, "links": []}
    assert page.events.dialogs == [] and page.events.exceptions == []
    assert foreign_requests(page, url) == []
    shown = page.evaluate("document.body.textContent")
    ids = [item["id"] for item in result["report"]["included"] + result["report"]["excluded"]]
    assert all(shown.count(i) > 0 for i in ids)
    if source == "report":
        assert all(payload in shown for payload in PAYLOADS)
        # Urls of other schemes are text, not links; the one https url is a link.
        hrefs = page.evaluate(
            "[...document.querySelectorAll('tr.passage a[href^=\"http\"]')].map(a => a.textContent)"
        )
        assert hrefs == [PAYLOADS[-1]]
    shoot(page, artifacts, f"hostile-{source}.png")


def test_why_each_passage_was_chosen(page: Browser, tmp_path: Path) -> None:
    result = _example()
    included = result["report"]["included"]
    included[0]["chosen"] = {
        "by": "query",
        "terms": ["spouse", "Green"],
        "linked_from": None,
        "via": None,
        "given_score": None,
    }
    included[1]["chosen"] = {
        "by": "link",
        "terms": [],
        "linked_from": included[0]["id"],
        "via": "Green (album)",
        "given_score": None,
    }
    included[2]["chosen"] = {"by": "score", "terms": [], "given_score": 0.91}
    _open(page, tmp_path, "chosen.html", result)
    reasons = page.evaluate("[...document.querySelectorAll('td.chosen')].map(c => c.textContent)")
    assert reasons == [
        "covers: spouse, Green",
        "linked from [Source 1] via 'Green (album)'",
        "retriever score 0.91",
    ]
    del included[0]["chosen"]
    included[1]["chosen"] = None
    _open(page, tmp_path, "unchosen.html", result)
    reasons = page.evaluate("[...document.querySelectorAll('td.chosen')].map(c => c.textContent)")
    assert reasons == [
        f"score {included[0]['score']:.4g}",
        f"score {included[1]['score']:.4g}",
        "retriever score 0.91",
    ]


def test_a_narrow_window_keeps_the_page_readable(
    page: Browser, tmp_path: Path, artifacts: Path
) -> None:
    page.resize(360, 800)
    _open(page, tmp_path, "narrow.html", _example())
    # Nothing but the tables' own scroll boxes is wider than the window.
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    assert page.evaluate("document.querySelector('.bar').getBoundingClientRect().right") <= 360
    shoot(page, artifacts, "report-narrow.png")


def test_labels_keyboard_and_contrast(page: Browser, tmp_path: Path) -> None:
    _open(page, tmp_path, "a11y.html", _example())
    assert page.evaluate("document.documentElement.lang") == "en"
    assert contrast_failures(page) == []
    # The window's segments are reachable with Tab and say what they are.
    labels = page.evaluate(
        "[...document.querySelectorAll('.bar:first-of-type [tabindex=\"0\"]')]"
        ".map(s => s.getAttribute('aria-label'))"
    )
    assert [label.split(":")[0] for label in labels] == [
        "system",
        "query",
        "history",
        "sources",
        "format overhead",
        "unused",
        "margin",
        "reserved output",
    ]
    reached = []
    for _ in range(12):
        page.press("Tab", "Tab", 9)
        reached.append(
            page.evaluate(
                "document.activeElement.getAttribute('aria-label')"
                " || document.activeElement.textContent"
            )
        )
    assert reached[0] == "Skip to the content"
    assert reached[1].startswith("system: ")
    assert reached[8].startswith("reserved output: ")


def test_a_2000_passage_report_shows_every_row(page: Browser, tmp_path: Path) -> None:
    result = Assembler().assemble(big_request(2000)).to_dict()
    report = result["report"]
    _open(page, tmp_path, "big.html", result)
    counts = page.evaluate(
        "[document.querySelectorAll('tr.passage').length,"
        " document.querySelectorAll('tr.excluded').length]"
    )
    assert counts == [len(report["included"]), len(report["excluded"])]
    assert counts[0] + counts[1] == 2000
