"""Readable views of a report: tables for ``--report``, ``ctxasm report`` and ``ctxasm models``
(with rich), and the self-contained HTML page of ``--html``.

Both draw from the report's JSON (``Report.to_dict()``, the ``report`` of a result file), so a
live assembly and a saved result look the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.table import Table

from ctxasm.cli.exits import EXIT_BAD_INPUT, fail, is_terminal, visible
from ctxasm.errors import RequestError
from ctxasm.files import write_atomic

if TYPE_CHECKING:
    from ctxasm.evaluation.runner import EvalRow
    from ctxasm.models import ModelSpec, PriceTier


__all__ = [
    "check_page_target",
    "print_eval",
    "print_models",
    "print_report",
    "why_chosen",
    "write_html",
    "write_page",
]


def _escape(text: str) -> str:
    """A string from a report (or a model's registry entry) for a table: rich markup escaped,
    and the control characters a terminal acts on written as escapes."""
    return _markup_escape(visible(text))


def print_report(
    report: Mapping[str, Any], *, hidden: str | None = None, stderr: bool = True
) -> None:
    """The budget breakdown, the included and the excluded passages of a report's JSON, on
    stderr (stdout without ``stderr``); ``hidden`` replaces the no-relevant-context line
    (``ask``: matches exist that the asker may not read)."""
    stream = sys.stderr if stderr else sys.stdout
    # Piped output keeps whole cells (for grep): 80 columns wrapped a "why chosen" cell
    # over lines and cut urls short.
    console = Console(stderr=stderr, width=None if is_terminal(stream) else 200)
    exactness = "exact" if report["exact_count"] else "ESTIMATED"
    # Every string from the report is escaped: a saved result is input, and rich would read
    # "[/b]" in a model name as markup (an error) or "[link=...]" as a terminal hyperlink.
    model, tokenizer = _escape(str(report["model"])), _escape(str(report["tokenizer"]))
    table = Table(title=f"Budget: {model} ({tokenizer}, {exactness} count)")
    table.add_column("section")
    table.add_column("tokens", justify="right")
    for name, value in report["budget"].items():
        table.add_row(_escape(name), f"{value:,}")
    # With nothing included, what the context holds is the note that says so, which the
    # budget always leaves room for: a total above "context" is that note, not an overflow.
    noted = not report["included"] and report["context_tokens"]
    used = "context used (the no-sources note)" if noted else "context used"
    table.add_row(f"[b]{used}[/b]", f"{report['context_tokens']:,}")
    table.add_row("[b]total request[/b]", f"{report['total_tokens']:,}")
    console.print(table)

    selected, considered = _escape(str(report["selected"])), _escape(str(report["considered"]))
    included = Table(title=f"Included: {selected} of {considered}")
    labels = {item["id"]: item["label"] for item in report["included"]}
    # the scores are on the scale of the method that ranked them: named, as they are not
    # comparable from one method (or retriever) to another
    relevance = report.get("relevance")
    method = relevance.get("method") if isinstance(relevance, dict) else None
    scale = f"score ({_escape(method)})" if isinstance(method, str) and method else "score"
    for column in ("pos", "label", "id", "tokens", scale, "why chosen", "source"):
        included.add_column(column, justify="right" if column in ("pos", "tokens") else "left")
    for item in report["included"]:
        source = _escape(item.get("source") or item.get("url") or "")
        tokens = str(item["tokens"])
        kept = item.get("compression")
        if kept is not None:
            tokens += (
                f" (cut: {kept['kept_sentences']}/{kept['sentences']} sentences, "
                f"{kept['kept_tokens']}/{kept['original_tokens']} tokens)"
            )
        included.add_row(
            _escape(str(item["position"])),
            _escape(item["label"]),
            _escape(item["id"]),
            _escape(tokens),
            f"{item['score']:.4g}",
            _escape(why_chosen(item.get("chosen"), labels)),
            source,
        )
    console.print(included)

    if report["excluded"]:
        excluded = Table(title=f"Excluded: {len(report['excluded'])}")
        for column in ("id", "stage", "reason", "detail"):
            excluded.add_column(column, overflow="fold")
        for exclusion in report["excluded"]:
            excluded.add_row(
                *(_escape(exclusion[key]) for key in ("id", "stage", "reason", "detail"))
            )
        console.print(excluded)
    if hidden is not None:
        console.print(f"[yellow]{_escape(hidden[:1].upper() + hidden[1:])}[/yellow]")
    elif report["no_relevant_context"]:
        console.print("[yellow]No relevant context: the prompt tells the model so.[/yellow]")
    cost = "n/a" if report["cost_usd"] is None else f"${report['cost_usd']:.6f}"
    timings = ", ".join(f"{_escape(k)} {v:.1f}" for k, v in report["timings_ms"].items())
    kind = f"query class {_escape(report['query_class'])}; " if report.get("query_class") else ""
    relevance = report.get("relevance")
    if isinstance(relevance, Mapping) and relevance.get("method"):
        note = f": {relevance['note']}" if relevance.get("note") else ""
        kind += f"relevance {_escape(str(relevance['method']) + note)}; "
    console.print(f"{kind}input cost {cost}; timings (ms): {timings}")


def check_page_target(target: str, field: str, *, stdout: str | None) -> None:
    """Refuse, as a :class:`RequestError` naming ``field``, a page ``target`` (the option's
    value as given) that names no file: exactly ``-`` where standard output carries ``stdout``
    (what the command prints there; ``None``: nothing, and ``-`` writes the page there), and a
    folder. ``./-`` names a file."""
    path = Path(target)
    if target == "-":
        if stdout is not None:
            raise RequestError(
                f"--{field} - would write the page to standard output, which carries {stdout}; "
                f"give the page a file name (--{field} report.html)",
                field=field,
            )
    elif path.is_dir():
        raise RequestError(
            f"cannot write the page to {path}: it is a folder; give a file name "
            f"(--{field} {path / 'report.html'})",
            field=field,
        )


def write_html(result: Mapping[str, Any], path: str | Path) -> None:
    """Write the self-contained HTML report of ``result`` (a result's JSON) to ``path`` (the
    string ``-``: standard output; a ``Path`` is always a file's name); a path that cannot be
    written exits 2 with one line naming it."""
    from ctxasm.html import render_report_html

    write_page(render_report_html(result), path)


def check_writable(path: Path, field: str) -> None:
    """Exit 2 naming ``path`` and the option ``field`` when it clearly cannot be written (its
    folder is missing or not writable, or it is a folder itself), before a long run whose
    result it would hold; nothing is created."""
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        why = "it is a folder"
    elif not folder.is_dir():
        why = f"no such folder {folder}"
    elif not os.access(folder, os.W_OK | os.X_OK) or (
        path.exists() and not os.access(path, os.W_OK)
    ):
        why = "permission denied"
    else:
        return
    fail(f"cannot write {path}: {why} [{field}]", EXIT_BAD_INPUT)


def write_page(page: str, path: str | Path, field: str | None = None) -> None:
    """Write an HTML ``page`` to ``path`` (the string ``-``: standard output, as UTF-8 whatever
    its encoding; a ``Path``, and any other string, ``./-`` too, is a file's name); a path that
    cannot be written exits 2 with one line naming it (and the option ``field``, when
    given)."""
    data = page.encode("utf-8", "replace")
    if path == "-":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    try:
        write_atomic(path, data)  # whole or not at all: a full disk keeps the old page
    except OSError as exc:
        where = f" [{field}]" if field else ""
        fail(f"cannot write {path}: {exc.strerror}{where}", EXIT_BAD_INPUT)


def why_chosen(chosen: Mapping[str, Any] | None, labels: Mapping[str, str]) -> str:
    """A report's ``chosen`` record in a few words: the signal that decided and what backs it
    ("link from Source 2 via 'Plato'", "query: spouse, green", "retriever score 0.91")."""
    if not chosen:
        return ""
    by, terms = chosen.get("by"), chosen.get("terms") or []
    given = chosen.get("given_score")
    if by == "link" and chosen.get("linked_from"):
        source = labels.get(chosen["linked_from"], chosen["linked_from"])
        via = f" via {chosen['via']!r}" if chosen.get("via") else ""
        found = f"link from {source}{via}"
    elif by == "score" and given is not None:
        found = f"retriever score {given:.4g}"
    elif by == "fill":
        found = "fill (budget left)"
    else:
        found = "query"
    if terms and by != "score":
        found += ": " + ", ".join(terms) if found == "query" else f" (covers {', '.join(terms)})"
    return found


def print_models(specs: Sequence[ModelSpec]) -> None:
    """The model registry as a table on stdout (``cached input``: the price of input tokens
    read from the provider's prompt cache, see docs/caching.md). A model billed at higher
    prices for long prompts has ``*`` after its prices, and its tiers are listed below the
    table, one line each, so that the columns stay one price wide."""
    table = Table(title="Model registry (prices: USD per 1M tokens)")
    columns = ("model", "provider", "window", "max output", "tokenizer", "input", "cached input")
    for column in (*columns, "output"):
        table.add_column(
            column, justify="right" if column in ("window", "max output") else "left", no_wrap=True
        )
    for spec in specs:
        mark = "*" if spec.price_tiers else ""
        table.add_row(
            _escape(spec.name),  # names and specs come from a config file: text, not markup
            _escape(spec.provider),
            f"{spec.context_window:,}",
            f"{spec.max_output:,}",
            _escape(spec.tokenizer),
            _price(spec.input_price, mark),
            _price(spec.cached_input_price, mark),
            _price(spec.output_price, mark),
        )
    # Piped output keeps full names (for grep) instead of squeezing into 80 columns.
    console = Console(width=None if is_terminal(sys.stdout) else 200)
    console.print(table)
    for spec in specs:
        for tier in spec.price_tiers:
            console.print(_escape(_tier_line(spec, tier)), soft_wrap=True)


def _price(value: float | None, mark: str = "") -> str:
    return "-" if value is None else f"{value:g}{mark}"


def _tier_line(spec: ModelSpec, tier: PriceTier) -> str:
    """``* gemini-2.5-pro, prompts over 200,000 tokens: input 2.5, cached input 0.25, ...``"""
    prices = spec.prices(tier.above + 1)
    shown = [
        f"{name} {_price(value)}"
        for name, value in (
            ("input", prices.input),
            ("cached input", prices.cached_input),
            ("output", prices.output),
        )
        if value is not None
    ]
    return f"* {spec.name}, prompts over {tier.above:,} tokens: {', '.join(shown)}"


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def print_eval(rows: Sequence[EvalRow], title: str, by_type: bool = False) -> None:
    """One line per strategy and budget, on stdout; with ``by_type``, then all-gold and gold
    recall per question type."""
    console = Console(width=160)
    table = Table(title=title)
    for column in (
        "strategy",
        "budget",
        "answer",
        "gold",
        "all-gold",
        "sentences",
        "tokens",
        "dup tokens",
        "gold/1k tok",
        "ms/question",
    ):
        table.add_column(column, justify="left" if column == "strategy" else "right")
    for row in rows:
        table.add_row(
            _escape(row.strategy),
            str(row.budget),
            _rate(row.answer_recall),
            _rate(row.gold_recall),
            _rate(row.all_gold),
            _rate(row.sentence_recall),
            f"{row.tokens:.0f}",
            f"{row.dup_tokens:.1f}",
            f"{row.density:.2f}",
            f"{row.ms_per_question:.2f}",
        )
    console.print(table)
    types = sorted({t for row in rows for t in row.by_type})
    if not by_type or not types:
        return
    split = Table(title="all-gold rate (gold recall) per question type")
    split.add_column("strategy")
    split.add_column("budget", justify="right")
    for kind in types:
        split.add_column(_escape(kind), justify="right")
    for row in rows:
        cells = []
        for kind in types:
            found = row.by_type.get(kind, {})
            cells.append(f"{_rate(found.get('all_gold'))} ({_rate(found.get('gold_recall'))})")
        split.add_row(row.strategy, str(row.budget), *cells)
    console.print(split)
