"""The measured tables of docs/evaluation.md are the committed results in docs/eval/*.json.

Those files are written by the command the page gives (``ctxasm eval ... --json``); after a
rerun, paste the tables this test prints on failure into the page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = DOCS / "evaluation.md"
PARTS = {  # "What each part adds": the configurations and the strategy each one is
    "BM25 over the text, greedy (`bm25_greedy`)": "bm25_greedy",
    "+ title and link signals (`utility_greedy`)": "utility_greedy",
    "+ multi-hop planning (`bridge`)": "bridge",
    "+ compression, `auto` mode (`default`)": "default",
}


def _results(name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((DOCS / "eval" / f"{name}.json").read_text())["results"]
    return rows


def _pct(value: float) -> str:
    return f"{value * 100:.1f}"


def _full_table(name: str) -> str:
    rows = _results(name)
    lines = [
        f"### {name} ({rows[0]['n']} questions; gold metrics over the {rows[0]['n_gold']} whose "
        "gold passages are all candidates)",
        "",
        "| strategy | budget | answer % | gold % | all-gold % | sentences % | tokens | dup tokens "
        "| gold/1k tok | ms/question | all-gold bridge % | all-gold comparison % |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cells = [
            r["strategy"],
            str(r["budget"]),
            *(_pct(r[k]) for k in ("answer_recall", "gold_recall", "all_gold", "sentence_recall")),
            f"{r['tokens']:.0f}",
            f"{r['dup_tokens']:.1f}",
            f"{r['density']:.2f}",
            f"{r['ms_per_question']:.2f}",
            _pct(r["by_type"]["bridge"]["all_gold"]),
            _pct(r["by_type"]["comparison"]["all_gold"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _parts_table() -> str:
    all_gold = {
        (r["strategy"], r["budget"]): r["all_gold"] for r in _results("hotpotqa_distractor")
    }
    lines = ["| configuration | 256 | 512 | 1024 |", "|---|---|---|---|"]
    for label, strategy in PARTS.items():
        cells = [_pct(all_gold[strategy, budget]) for budget in (256, 512, 1024)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _page_table(starting: str) -> str:
    """The page's lines from the one starting with ``starting`` to the end of the table."""
    match = re.search(
        rf"^{re.escape(starting)}.*?(?=\n\n(?!\|)|\n*\Z)", PAGE.read_text(), re.M | re.S
    )
    assert match is not None, f"docs/evaluation.md has no table starting with {starting!r}"
    return match[0]


def test_full_tables_are_the_committed_results() -> None:
    for name in ("hotpotqa_distractor", "hotpotqa_fullwiki"):
        expected = _full_table(name)
        assert _page_table(f"### {name} (") == expected, f"paste into the page:\n{expected}"


def test_what_each_part_adds_is_the_committed_results() -> None:
    expected = _parts_table()
    assert _page_table("| configuration |") == expected, f"paste into the page:\n{expected}"
