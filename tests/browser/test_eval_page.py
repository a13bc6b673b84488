"""The evaluation page in a real headless Chromium: one curve per strategy with a point per
budget, every row in the table, no script at all, and strategy names drawn as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chromium import Browser
from pages import contrast_failures, foreign_requests, shoot, write_page

from ctxasm.evaluation.runner import EvalRow
from ctxasm.html import render_eval_html

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


def _rows() -> list[dict[str, Any]]:
    rows = []
    for index, strategy in enumerate(("default", "bm25_greedy", HOSTILE)):
        for budget in (256, 512, 1024, 2048):
            share = min(1.0, 0.2 * index + budget / 2600)
            rows.append(
                EvalRow(
                    strategy=strategy,
                    budget=budget,
                    answer_recall=share,
                    gold_recall=share,
                    all_gold=None if budget == 256 and index == 0 else share / 2,
                    sentence_recall=share,
                    tokens=budget * 0.9,
                    dup_tokens=1.5,
                    density=4.2,
                    ms_per_question=3.25,
                    n=20,
                    n_gold=18,
                    by_type={"bridge": {"all_gold": share / 2, "gold_recall": share}},
                ).to_dict()
            )
    return rows


def test_the_eval_page_draws_curves_and_tables(
    page: Browser, tmp_path: Path, artifacts: Path
) -> None:
    rows = _rows()
    url = write_page(tmp_path, "eval.html", render_eval_html(rows, title="HotpotQA, 20 questions"))
    page.open(url)
    curves = page.evaluate(
        "[...document.querySelectorAll('svg.curve')].map(svg => "
        "[...svg.querySelectorAll('polyline.series')].map(line => "
        "[line.dataset.strategy, line.getAttribute('points').split(' ').length]))"
    )
    # all-gold rate leaves out the one unknown value; gold recall has every point
    assert curves == [
        [["default", 3], ["bm25_greedy", 4], [HOSTILE, 4]],
        [["default", 4], ["bm25_greedy", 4], [HOSTILE, 4]],
    ]
    cells = page.evaluate(
        "[...document.querySelector('table.wide').tBodies[0].rows].map(r => "
        "[r.cells[0].textContent, r.cells[1].textContent, r.cells[4].textContent])"
    )
    assert cells == [
        [
            row["strategy"],
            str(row["budget"]),
            "n/a" if row["all_gold"] is None else f"{100 * row['all_gold']:.1f}%",
        ]
        for row in rows
    ]
    assert page.evaluate("document.querySelectorAll('table').length") == 2  # with per-type
    assert page.evaluate("[window.__pwned, document.querySelectorAll('img').length]") == [None, 0]
    assert page.evaluate("document.title") == "HotpotQA, 20 questions"
    assert foreign_requests(page, url) == [] and page.events.dialogs == []
    assert contrast_failures(page) == []
    shoot(page, artifacts, "eval.png")
