"""``ctxasm eval``: how much gold evidence each strategy keeps per budget on a QA dataset.

The command reads its options and prints; which strategies and model run is decided by
:mod:`ctxasm.evaluation` (:func:`~ctxasm.evaluation.choose_strategies`,
:func:`~ctxasm.evaluation.choose_model`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ctxasm.cli.exits import EXIT_BAD_INPUT, fail, fail_with
from ctxasm.cli.options import ConfigOption, ProgressOption

if TYPE_CHECKING:
    from ctxasm.evaluation import EvalQuestion, EvalRow

__all__ = ["eval_command"]

PLOT_SUFFIXES = (".png", ".svg", ".pdf")

BudgetOption = Annotated[
    str,
    typer.Option("--budget", metavar="N,N,...", help="Context budgets in tokens, comma-separated."),
]
StrategyOption = Annotated[
    list[str] | None,
    typer.Option(
        "--strategy",
        metavar="NAME",
        help="A preset (default, bm25_greedy, bridge, ...), 'oracle', or a selection "
        "strategy name; repeat for several (default: the config's strategy).",
        show_default=False,
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="NAME",
        help="Target model (its tokenizer); default: the config's, else gpt-4o.",
        show_default=False,
    ),
]
LimitOption = Annotated[
    int | None,
    typer.Option("--limit", min=1, metavar="N", help="Only the first N questions."),
]
PlotOption = Annotated[
    Path | None,
    typer.Option(
        "--plot", metavar="FILE", help="Save recall-versus-budget curves (.png, .svg, .pdf)."
    ),
]


def eval_command(
    dataset: Annotated[
        str, typer.Argument(metavar="DATASET", help="QA dataset (JSONL, unified format).")
    ],
    budget: BudgetOption = "256,512,1024,2048",
    strategy: StrategyOption = None,
    config: ConfigOption = None,
    model: ModelOption = None,
    limit: LimitOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    by_type: Annotated[
        bool, typer.Option("--by-type", help="Also print the rates per question type.")
    ] = False,
    plot: PlotOption = None,
    progress: ProgressOption = None,
) -> None:
    """Measure how much gold evidence each strategy keeps per budget on a QA dataset."""
    from ctxasm.errors import CtxasmError

    budgets = _budgets(budget)
    if plot is not None and plot.suffix.lower() not in PLOT_SUFFIXES:
        allowed = ", ".join(PLOT_SUFFIXES)
        fail(f"--plot must end in one of {allowed}, got {plot.name!r} [plot]", EXIT_BAD_INPUT)
    try:
        questions, rows, model = _run(
            dataset, budgets, strategy or [], config, model, limit, progress
        )
        if plot is not None:
            from ctxasm.evaluation.plot import plot_rows

            plot_rows(rows, plot, title=f"{Path(dataset).name} ({model})")
    except CtxasmError as error:
        fail_with(error)
    if as_json:
        typer.echo(json.dumps({"results": [row.to_dict() for row in rows]}, indent=2))
    else:
        _print_table(dataset, questions, rows, model, by_type=by_type)


def _budgets(raw: str) -> list[int]:
    try:
        values = [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        fail(f"--budget must be comma-separated token counts, got {raw!r}", EXIT_BAD_INPUT)
    if not values or any(v < 1 for v in values):
        fail(f"--budget must be positive token counts, got {raw!r}", EXIT_BAD_INPUT)
    return values


def _run(
    dataset: str,
    budgets: list[int],
    requested: list[str],
    config: Path | None,
    model: str | None,
    limit: int | None,
    progress: bool | None,
) -> tuple[list[EvalQuestion], list[EvalRow], str]:
    """The questions, the result rows and the model they were measured with."""
    from ctxasm.assembler import Assembler
    from ctxasm.cli.progress import progress_bar, shown
    from ctxasm.evaluation import choose_model, choose_strategies, evaluate, load_dataset

    # --config, else $CTXASM_CONFIG: the configuration whose own strategy runs by default.
    source = os.environ.get("CTXASM_CONFIG") if config is None else str(config)
    assembler = Assembler(config if config is not None else source or None)
    chosen = choose_strategies(requested, config_source=source)
    model = choose_model(model, assembler.config.defaults)
    questions = load_dataset(dataset, limit=limit)
    total = len(questions) * len(budgets) * len(chosen)
    with progress_bar("evaluating", show=shown(progress), total=total) as bar:
        rows = evaluate(
            questions, chosen, budgets, model=model, config=assembler.config, progress=bar.advance
        )
    return questions, rows, model


def _print_table(
    dataset: str, questions: list[EvalQuestion], rows: list[EvalRow], model: str, *, by_type: bool
) -> None:
    from ctxasm.cli.report_view import print_eval

    gold = rows[0].n_gold if rows else 0
    title = (
        f"{Path(dataset).name}: {len(questions)} questions ({gold} with all gold passages "
        f"among the candidates, over which the gold rates are), {model}"
    )
    print_eval(rows, title=title, by_type=by_type)
