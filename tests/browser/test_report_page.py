"""The HTML report in a real headless Chromium: what it shows, that it loads nothing, that a
hostile corpus stays text, and that it reads on a narrow window and from the keyboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from chromium import Browser
from pages import READY, big_request, contrast_failures, foreign_requests, shoot, write_page

import ctxasm
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


def _sections(result: dict[str, Any]) -> dict[str, int]:
    """The window's sections as the report states them, with the sources join: what
    ``total_tokens`` holds beyond the sections and the sources block."""
    report = result["report"]
    budget = report["budget"]
    drawn = {
        "system": budget["system"],
        "query": budget["query"],
        "history": budget["history"],
        "sources": report["context_tokens"],
        "overhead": budget["overhead"],
    }
    join = report["total_tokens"] - sum(drawn.values())
    if join:
        drawn["join"] = join
    limit = budget["context_window"] - budget["reserve_output"] - budget["margin"]
    drawn["unused"] = limit - report["total_tokens"]
    drawn["margin"] = budget["margin"]
    drawn["reserved"] = budget["reserve_output"]
    return drawn


@pytest.mark.parametrize(
    ("model", "fmt", "join"),
    [("gpt-4o", "openai", 1), ("claude-sonnet-4-5", "anthropic", -1), ("gpt-4o", "anthropic", 0)],
)
def test_every_budget_figure_is_the_reports_own(
    page: Browser, tmp_path: Path, model: str, fmt: str, join: int
) -> None:
    passages = [
        {"id": f"p{i}", "text": f"The Danube {i} ends in the Black Sea near Sulina."}
        for i in range(5)
    ]
    history = [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": "hello"}]
    result = ctxasm.assemble(
        "Where does the Danube end?", passages, model=model, format=fmt, history=history
    ).to_dict()
    expected = _sections(result)
    assert expected.get("join", 0) == join  # the seam this case is here for
    _open(page, tmp_path, "figures.html", result)
    window, prompt = page.evaluate(
        "[...document.querySelectorAll('.bar')].map(b => [...b.querySelectorAll('.seg')]"
        ".map(s => [s.className.replace('seg seg-', ''), +s.dataset.tokens]))"
    )
    assert dict(window) == expected
    assert [key for key, _ in window] == list(expected)
    assert sum(tokens for _, tokens in window) == result["report"]["budget"]["context_window"]
    assert sum(tokens for _, tokens in prompt) == result["report"]["total_tokens"]
    assert [tokens for key, tokens in prompt if key in ("overhead", "join")] == [
        expected["overhead"],
        *([join] if join else []),
    ]
    legend = page.evaluate("[...document.querySelectorAll('.legend li')].map(li => li.textContent)")
    assert ("sources join " + str(join) in legend) is bool(join)
    assert f"format overhead {expected['overhead']}" in legend


def test_the_sources_join_of_a_cache_plans_content_blocks_is_explained(
    page: Browser, tmp_path: Path
) -> None:
    # A cache plan in the anthropic format sends each source as a content block of its own,
    # counted apart in total_tokens: the join grows with the sources, and the page says so.
    passages = [
        {
            "id": f"p{i}",
            "title": f"River {i}",
            "text": f"The river number {i} flows through the valley of town {i} "
            "and reaches the sea. " * 12,
            "score": 1 - i / 100,
        }
        for i in range(30)
    ]
    result = ctxasm.assemble(
        "Which river flows through the valley?",
        passages,
        previous=None,
        model="claude-sonnet-4",
        format="anthropic",
        max_context_tokens=40000,
    ).to_dict()
    assert len(result["messages"][0]["content"]) == 31  # 30 sources and the question
    expected = _sections(result)
    assert expected["join"] == 17 and expected["unused"] > 0
    _open(page, tmp_path, "join.html", result)
    legend = page.evaluate("[...document.querySelectorAll('.legend li')].map(li => li.textContent)")
    assert "sources join 17" in legend
    notes = page.evaluate(
        "[...document.querySelectorAll('p.muted')].map(p => p.textContent)"
        ".filter(t => t.startsWith('sources join:'))"
    )
    assert len(notes) == 1
    assert "the tokens where the sources meet the rest of the prompt and each other" in notes[0]
    assert (
        "sends each source as a content block of its own, up to about one per source" in (notes[0])
    )


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


def _cached_turns() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two turns of a Claude session planning for the prompt cache: the first writes a
    breakpoint, the second reads it."""
    words = ("river", "sea", "city", "bridge", "delta", "water")
    passages = [
        {
            "id": f"p{i}",
            "title": f"Doc {i}",
            "text": " ".join(f"{words[(i + n) % 6]} {n}" for n in range(700)),
        }
        for i in range(3)
    ]
    ask = {"model": "claude-sonnet-4-5", "format": "anthropic"}
    first = ctxasm.assemble("river sea?", passages, previous=None, **ask)
    second = ctxasm.assemble("river delta?", passages, previous=first.to_dict(), **ask)
    return first.to_dict(), second.to_dict()


PROMPT = """[...document.querySelectorAll('.message')].map(m => ({
  role: m.querySelector('h3').textContent,
  text: [...m.querySelector('pre').childNodes].filter(n => !n.classList ||
    !n.classList.contains('cache-mark')).map(n => n.textContent).join(''),
  marks: [...m.querySelectorAll('.cache-mark')].map(k => k.textContent),
}))"""


def test_content_blocks_show_their_text_and_cache_breakpoints(
    page: Browser, tmp_path: Path, artifacts: Path
) -> None:
    result = _cached_turns()[1]
    blocks = result["messages"][0]["content"]
    assert isinstance(blocks, list) and any("cache_control" in b for b in blocks)
    result["system"] = [
        {"type": "text", "text": "Answer from the sources."},
        {"type": "text", "text": "Cite them.", "cache_control": {"type": "ephemeral"}},
    ]
    _open(page, tmp_path, "blocks.html", result)
    shown = page.evaluate(PROMPT)
    marked = ["cache_control breakpoint (ephemeral)"]
    assert shown == [
        {
            "role": "system (sent apart)",
            "text": "Answer from the sources.Cite them.",
            "marks": marked,
        },
        {
            "role": "user",
            "text": "".join(b["text"] for b in blocks),
            "marks": marked * sum("cache_control" in b for b in blocks),
        },
        {"role": "user", "text": result["messages"][1]["content"], "marks": []},
    ]
    # Each mark sits right after the block that carries the breakpoint.
    tails = page.evaluate(
        "[...document.querySelectorAll('.cache-mark')]"
        ".map(k => k.previousSibling.textContent.slice(-20))"
    )
    assert tails == ["Cite them.", *(b["text"][-20:] for b in blocks if "cache_control" in b)]
    # Each row's label still links to where its passage starts, and back.
    links = page.evaluate(
        "[...document.querySelectorAll('tr.passage a[href^=\"#prompt-\"]')].map(a => "
        "{const t = document.getElementById(a.getAttribute('href').slice(1)); "
        "return t && [t.textContent, t.getAttribute('href')]})"
    )
    included = result["report"]["included"]
    assert links == [[f"[{i['label']}]", f"#row-{i['position']}"] for i in included]
    assert "[object Object]" not in page.evaluate("document.getElementById('view').textContent")
    shoot(page, artifacts, "report-blocks.png")


def _usd(cost: float) -> str:
    """A cost as the report has it (8 decimals at most), as the page writes it."""
    return "$" + f"{cost:.8f}".rstrip("0").rstrip(".")


def test_the_prompt_cache_figures_are_shown(page: Browser, tmp_path: Path) -> None:
    first, second = _cached_turns()
    for result in (first, second):
        cache = result["report"]["cache"]
        _open(page, tmp_path, "cache.html", result)
        facts = page.evaluate(
            "Object.fromEntries([...document.querySelectorAll('dl.facts div')]"
            ".map(d => [d.querySelector('dt').textContent, d.querySelector('dd').textContent]))"
        )
        assert facts["identical prefix"] == (
            f"{cache['prefix_tokens']:,} tokens, {cache['prefix_sources']} sources "
            f"({cache['reused_context_tokens']:,} tokens of sources)"
        )
        assert facts["read from the cache"] == f"{cache['cached_tokens']:,} tokens"
        assert facts["written to the cache"] == f"{cache['written_tokens']:,} tokens"
        costs = [_usd(cache["cost_usd"]), _usd(cache["cost_usd_uncached"])]
        assert [facts["input cost with the cache"], facts["input cost without"]] == costs
        assert facts["input cost"] == f"{costs[0]} with the prompt cache, {costs[1]} without"
        rows = page.evaluate(
            "[...document.querySelectorAll('tr.breakpoint')].map(r => "
            "[...r.cells].map(c => c.textContent))"
        )
        assert rows == [
            [str(b["after_sources"]), f"{b['tokens']:,}", b["reason"]] for b in cache["breakpoints"]
        ]
        assert rows  # both turns place one: the page must draw it
    assert second["report"]["cache"]["cached_tokens"] > 0
    # Without a cache section there is none on the page, and the cost is the report's.
    result = _example()
    _open(page, tmp_path, "nocache.html", result)
    assert page.evaluate("document.getElementById('cache-title')") is None
    cost = page.evaluate(
        "[...document.querySelectorAll('dl.facts div')].find(d => "
        "d.querySelector('dt').textContent === 'input cost').querySelector('dd').textContent"
    )
    assert cost == _usd(result["report"]["cost_usd"])


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def test_bidi_controls_in_data_are_drawn_as_escapes(page: Browser, tmp_path: Path) -> None:
    passages = [
        {
            "id": "doc\u202egpj.exe",
            "title": "Report\u202egpj.exe",
            "url": "https://evil.example/\u202egpj.exe",
            "source": f"all{BIDI}",
            "text": "The Danube ends in the Black Sea.\u2067",
        },
        {
            "id": "other",
            "text": "Sulina is the port where the Danube ends.",
            "url": "https://user:pw@bank.example@evil.example/",
        },
        {"id": "gone\u202e", "text": "Nothing about rivers."},
    ]
    result = ctxasm.assemble(
        "Where does the Danube end?\u202e", passages, min_score=0.2, system_prompt="Be brief.\u200f"
    ).to_dict()
    result["report"]["timings_ms"]["stage\u2066"] = 1.0
    _open(page, tmp_path, "bidi.html", result)
    drawn = page.evaluate(
        "[document.getElementById('view').textContent, document.title, ...[...document"
        ".querySelectorAll('#view *')].flatMap(n => [...n.attributes]"
        ".filter(a => a.name !== 'href').map(a => a.value))]"
    )
    controls = BIDI[:9]  # embeddings, overrides and isolates; the rest are marks
    assert [s for s in drawn if any(c in s for c in controls)] == []
    # a mark stays only where right-to-left prose needs it: in the prompt's own text
    prompts = page.evaluate("[...document.querySelectorAll('pre.prompt')].map(p => p.textContent)")
    assert any("Be brief.\u200f" in prompt for prompt in prompts)
    outside = drawn[0]
    for prompt in prompts:
        outside = outside.replace(prompt, "")
    assert [c for c in outside if c in BIDI] == []
    assert [s for s in drawn[1:] if any(c in s for c in BIDI)] == []  # title and attributes
    shown = drawn[0]
    escaped = "".join(f"\\u{ord(c):04X}" for c in BIDI)
    assert escaped in shown
    for written in ("doc\\u202Egpj.exe", "Where does the Danube end?\\u202E", "stage\\u2066"):
        assert written in shown
    assert "gone\\u202E" in page.evaluate(
        "[...document.querySelectorAll('tr.excluded td')].map(c => c.textContent).join(' ')"
    )
    links = page.evaluate(
        "[...document.querySelectorAll('tr.passage a[rel]')].map(a => "
        "[a.getAttribute('href'), a.textContent, a.parentElement.textContent])"
    )
    assert sorted(links) == [
        [
            "https://evil.example/%E2%80%AEgpj.exe",
            "https://evil.example/\\u202Egpj.exe",
            "https://evil.example/\\u202Egpj.exe",
        ],
        [
            "https://user:pw%40bank.example@evil.example/",
            "https://user:pw@bank.example@evil.example/",
            "https://user:pw@bank.example@evil.example/ (host evil.example)",
        ],
    ]


def test_right_to_left_prose_keeps_its_marks_and_its_direction(
    page: Browser, tmp_path: Path
) -> None:
    # Hebrew and Arabic text writes RLM and ALM marks; they reorder no letter, so the prompt
    # shows them as they are, each of its lines in the direction of its first letter.
    hebrew = (
        "\u05d4\u05d3\u05e0\u05d5\u05d1\u05d4 \u05e0\u05e9\u05e4\u05da\u200f "
        "\u05dc\u05d9\u05dd (2,850 \u05e7\u05f4\u05de)."
    )
    passages = [{"id": "he\u200f", "title": "\u05d3\u05e0\u05d5\u05d1\u05d4", "text": hebrew}]
    result = ctxasm.assemble(
        "\u05dc\u05d0\u05df \u05d4\u05d3\u05e0\u05d5\u05d1\u05d4?", passages
    ).to_dict()
    _open(page, tmp_path, "rtl.html", result)
    prompt = page.evaluate(
        "[...document.querySelectorAll('pre.prompt')].map(p => p.textContent).join('')"
    )
    assert hebrew in prompt and "\\u200F" not in prompt
    assert (
        page.evaluate("getComputedStyle(document.querySelector('pre.prompt')).unicodeBidi")
        == "plaintext"
    )
    ids = page.evaluate("[...document.querySelectorAll('tr.passage td')].map(c => c.textContent)")
    assert "he\\u200F" in ids  # an id is a name: its mark is shown


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
        "sources join",
        "unused",
        "margin",
        "reserved output",
    ]
    reached = []
    for _ in range(13):
        page.press("Tab", "Tab", 9)
        reached.append(
            page.evaluate(
                "document.activeElement.getAttribute('aria-label')"
                " || document.activeElement.textContent"
            )
        )
    assert reached[0] == "Skip to the content"
    assert reached[1].startswith("system: ")
    assert reached[9].startswith("reserved output: ")


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


def test_the_score_column_names_the_scale_of_its_scores(page: Browser, tmp_path: Path) -> None:
    result = _example()
    _open(page, tmp_path, "scale.html", result)
    headers = page.evaluate(
        "[...document.querySelectorAll('tr.passage')[0].closest('table').querySelectorAll('th')]"
        ".map(h => h.textContent)"
    )
    assert f"score ({result['report']['relevance']['method']})" in "|".join(headers)
