"""The evaluation at a glance: the tables of ``ctxasm eval`` and its recall-versus-budget curves,
drawn as inline SVG, in one self-contained page without script.

The page is built here as markup because it has nothing to do in a browser; every value from
the rows (strategy names above all: they come from a config) is escaped by :func:`html.escape`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ctxasm.html.page import page

__all__ = ["render_eval_html"]

# Distinguishable on white at 3:1 or more, and told apart without colour by their dashes.
_COLOURS = ("#1f6fd1", "#b35c00", "#0b6e6e", "#a0001c", "#5b3f9e", "#4a5260", "#8a5a00", "#174f99")
_DASHES = ("", "6 3", "2 3", "8 3 2 3")
_CURVES = (("all_gold", "all-gold rate"), ("gold_recall", "gold recall"))
_COLUMNS = (
    ("answer_recall", "answer", "rate"),
    ("gold_recall", "gold", "rate"),
    ("all_gold", "all-gold", "rate"),
    ("sentence_recall", "sentences", "rate"),
    ("tokens", "tokens", "0"),
    ("dup_tokens", "dup tokens", "1"),
    ("density", "gold/1k tok", "2"),
    ("ms_per_question", "ms/question", "2"),
)
_WIDTH, _HEIGHT = 480, 300
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 16, 16, 44


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _cell(value: Any, style: str) -> str:
    found = _number(value)
    if found is None:
        return "n/a"
    return f"{100 * found:.1f}%" if style == "rate" else f"{found:.{int(style)}f}"


def _table(rows: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(f'<th scope="col" class="num">{escape(name)}</th>' for _, name, _ in _COLUMNS)
    lines = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{_cell(row.get(key), style)}</td>' for key, _, style in _COLUMNS
        )
        lines.append(
            f"<tr><td>{escape(str(row.get('strategy', '')))}</td>"
            f'<td class="num">{escape(str(row.get("budget", "")))}</td>{cells}</tr>'
        )
    return (
        '<div class="scroll"><table class="wide"><caption>per strategy and budget</caption>'
        "<thead><tr>"
        f'<th scope="col">strategy</th><th scope="col" class="num">budget</th>{head}</tr>'
        f"</thead><tbody>{''.join(lines)}</tbody></table></div>"
    )


def _by_type(rows: Sequence[Mapping[str, Any]]) -> str:
    """All-gold rate (gold recall) per question type, when the rows have types."""
    kinds = sorted(
        {str(k) for row in rows if isinstance(row.get("by_type"), Mapping) for k in row["by_type"]}
    )
    if not kinds:
        return ""
    head = "".join(f'<th scope="col" class="num">{escape(kind)}</th>' for kind in kinds)
    lines = []
    for row in rows:
        given = row.get("by_type")
        split: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        cells = []
        for kind in kinds:
            entry = split.get(kind)
            found: Mapping[str, Any] = entry if isinstance(entry, Mapping) else {}
            rate, recall = found.get("all_gold"), found.get("gold_recall")
            both = f"{_cell(rate, 'rate')} ({_cell(recall, 'rate')})"
            cells.append(f'<td class="num">{both}</td>')
        lines.append(
            f"<tr><td>{escape(str(row.get('strategy', '')))}</td>"
            f'<td class="num">{escape(str(row.get("budget", "")))}</td>{"".join(cells)}</tr>'
        )
    return (
        '<h2 id="types-title">Per question type</h2><div class="scroll"><table>'
        "<caption>all-gold rate (gold recall) per question type</caption><thead><tr>"
        f'<th scope="col">strategy</th><th scope="col" class="num">budget</th>{head}</tr>'
        f"</thead><tbody>{''.join(lines)}</tbody></table></div>"
    )


def _series(rows: Sequence[Mapping[str, Any]], metric: str) -> dict[str, list[tuple[int, float]]]:
    """Per strategy, in first-seen order: (budget, value) points sorted by budget."""
    found: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        budget, value = row.get("budget"), _number(row.get(metric))
        points = found.setdefault(str(row.get("strategy", "")), [])
        if (
            isinstance(budget, int)
            and not isinstance(budget, bool)
            and budget > 0
            and value is not None
        ):
            points.append((budget, value))
    return {name: sorted(points) for name, points in found.items()}


def _curve(rows: Sequence[Mapping[str, Any]], metric: str, label: str) -> str:
    """One SVG chart: x the budget (log scale), y the metric from 0 to 1, a line per strategy."""
    series = _series(rows, metric)
    budgets = sorted({b for points in series.values() for b, _ in points})
    low, high = (math.log2(budgets[0]), math.log2(budgets[-1])) if budgets else (0.0, 1.0)
    span, plot_w, plot_h = high - low, _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def x(budget: int) -> float:
        return _LEFT + (plot_w / 2 if span == 0 else plot_w * (math.log2(budget) - low) / span)

    def y(value: float) -> float:
        return _TOP + plot_h * (1 - min(max(value, 0.0), 1.0))

    parts = [f'<title id="curve-{metric}">{escape(label)} by context budget</title>']
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{_LEFT}" x2="{_WIDTH - _RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            f'stroke="#c9d0d8"/><text x="{_LEFT - 6}" y="{y(tick) + 4:.1f}" '
            f'text-anchor="end">{100 * tick:.0f}%</text>'
        )
    for budget in budgets:
        parts.append(
            f'<text x="{x(budget):.1f}" y="{_HEIGHT - _BOTTOM + 16}" '
            f'text-anchor="middle">{budget}</text>'
        )
    parts.append(
        f'<text x="{_LEFT + plot_w / 2:.1f}" y="{_HEIGHT - 6}" text-anchor="middle">'
        "context budget (tokens)</text>"
    )
    for index, (name, points) in enumerate(series.items()):
        colour, dash = _COLOURS[index % len(_COLOURS)], _DASHES[index // len(_COLOURS) % 4]
        path = " ".join(f"{x(b):.1f},{y(v):.1f}" for b, v in points)
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<polyline class="series" data-strategy="{escape(name)}" fill="none" '
            f'stroke="{colour}" stroke-width="2"{dashes} points="{path}"/>'
        )
        for budget, value in points:
            parts.append(
                f'<circle cx="{x(budget):.1f}" cy="{y(value):.1f}" r="3.5" fill="{colour}">'
                f"<title>{escape(name)} at {budget} tokens: {100 * value:.1f}%</title></circle>"
            )
    return (
        f'<figure><figcaption>{escape(label)}</figcaption><svg class="curve" role="img" '
        f'aria-labelledby="curve-{metric}" viewBox="0 0 {_WIDTH} {_HEIGHT}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg></figure>'
    )


def _legend(rows: Sequence[Mapping[str, Any]]) -> str:
    names = list(dict.fromkeys(str(row.get("strategy", "")) for row in rows))
    items = []
    for index, name in enumerate(names):
        colour, dash = _COLOURS[index % len(_COLOURS)], _DASHES[index // len(_COLOURS) % 4]
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        items.append(
            '<li><svg width="28" height="10" aria-hidden="true"><line x1="0" x2="28" y1="5" '
            f'y2="5" stroke="{colour}" stroke-width="3"{dashes}/></svg>{escape(name)}</li>'
        )
    return f'<ul class="legend" aria-label="strategies">{"".join(items)}</ul>'


def render_eval_html(rows: Sequence[Mapping[str, Any]], *, title: str) -> str:
    """The page for ``rows`` (the dicts ``ctxasm eval --json`` prints under ``results``): the
    table of every metric per strategy and budget, the all-gold rate and gold recall curves
    against the budget, and the per-type table when the rows have question types."""
    curves = "".join(_curve(rows, metric, label) for metric, label in _CURVES)
    body = (
        f'<header><h1>{escape(title)}</h1></header><main id="main">'
        f'<h2 id="curves-title">Recall versus budget</h2>{_legend(rows)}'
        f'<div class="curves">{curves}</div>'
        f'<h2 id="table-title">All metrics</h2>{_table(rows)}{_by_type(rows)}</main>'
    )
    return page(title=title, body=body, data={"results": [dict(row) for row in rows]}, scripts=())
