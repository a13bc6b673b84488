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

from ctxasm.cli.exits import EXIT_BAD_INPUT, echo, fail, fail_with
from ctxasm.cli.options import ConfigOption, ProgressOption, page_file

if TYPE_CHECKING:
    from ctxasm.evaluation import EvalQuestion, EvalRow

__all__ = ["eval_command"]

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
# The names --subset and --scores take; checked before the dataset is read (ctxasm.evaluation
# holds the same lists as SUBSETS and SCORE_KINDS; importing it here would slow --help).
SUBSET_NAMES = ("hard", "composed", "comention")
SCORE_NAMES = ("bm25", "dense", "noisy-oracle", "random")

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
SubsetOption = Annotated[
    str | None,
    typer.Option(
        "--subset",
        metavar="NAME",
        help="Evaluate on a subset built from DATASET: 'hard' (bridge questions padded to 20 "
        "candidates with look-alike distractors; needs full-wiki style data), 'composed' "
        "(chains of 2 to 4 passages that name one another, asked as one question, among 20 "
        "candidates) or 'comention' (chains of 2 or 3 passages whose texts name one entity, "
        "neither's title, asked as one question, among 20 candidates).",
        show_default=False,
    ),
]
IdsOption = Annotated[
    Path | None,
    typer.Option(
        "--ids",
        metavar="FILE",
        help="Only the questions whose ids FILE lists (one a line), in its order, before "
        "--subset and --limit (docs/eval/ lists those of the published tables).",
        show_default=False,
    ),
]
SaveSubsetOption = Annotated[
    str | None,
    typer.Option(
        "--save-subset",
        metavar="FILE",  # a str, as given: ./- names a file, - is refused (see eval_command)
        help="Also write the --subset questions to FILE (JSONL, the unified format).",
        show_default=False,
    ),
]
ScoresOption = Annotated[
    str | None,
    typer.Option(
        "--scores",
        metavar="KIND",
        help="Give every candidate a retriever score first: bm25, dense, noisy-oracle or "
        "random (default: no scores).",
        show_default=False,
    ),
]
EmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder",
        metavar="SPEC",
        help="Embedder of --scores dense: 'hashing' or 'sentence-transformers:/path'.",
    ),
]
SeedOption = Annotated[
    int,
    typer.Option("--seed", min=0, metavar="N", help="Seed of --subset and the random --scores."),
]
PlotOption = Annotated[
    Path | None,
    typer.Option(
        "--plot", metavar="FILE", help="Save recall-versus-budget curves (.png, .svg, .pdf)."
    ),
]
HtmlOption = Annotated[
    str | None,
    typer.Option(
        "--html",
        metavar="FILE",
        parser=page_file,
        help="Also write the tables and recall-versus-budget curves as one self-contained "
        "HTML page.",
        show_default=False,
    ),
]


def eval_command(
    dataset: Annotated[
        str,
        typer.Argument(
            metavar="DATASET",
            help="QA dataset: JSONL in the unified format, or one of HotpotQA's own JSON files.",
        ),
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
    html: HtmlOption = None,
    subset: SubsetOption = None,
    save_subset: SaveSubsetOption = None,
    scores: ScoresOption = None,
    embedder: EmbedderOption = "hashing",
    seed: SeedOption = 0,
    progress: ProgressOption = None,
    ids: IdsOption = None,
) -> None:
    """Measure how much gold evidence each strategy keeps per budget on a QA dataset."""
    from ctxasm.errors import CtxasmError

    budgets = _budgets(budget)
    if plot is not None and plot.suffix.lower() not in PLOT_SUFFIXES:
        allowed = ", ".join(PLOT_SUFFIXES)
        fail(f"--plot must end in one of {allowed}, got {plot.name!r} [plot]", EXIT_BAD_INPUT)
    _check_choice("--subset", subset, SUBSET_NAMES)
    _check_choice("--scores", scores, SCORE_NAMES)
    if save_subset is not None and subset is None:
        fail(
            "--save-subset needs --subset NAME (the subset to write) [save_subset]",
            EXIT_BAD_INPUT,
        )
    if save_subset in ("-", ""):  # standard output carries the results; ./- names a file
        where = "to standard output, which carries the results" if save_subset else "nowhere"
        fail(
            f"--save-subset {save_subset or repr('')} would write the subset {where}; give the "
            "subset a file name (--save-subset subset.jsonl) [save_subset]",
            EXIT_BAD_INPUT,
        )
    subset_file = Path(save_subset) if save_subset is not None else None
    _check_outputs(dataset, ids, config, {"plot": plot, "html": html, "save_subset": save_subset})
    try:
        questions = _questions(dataset, ids, subset, subset_file, (scores, embedder), seed, limit)
        rows, model = _run(questions, budgets, strategy or [], config, model, progress)
        if plot is not None:
            from ctxasm.evaluation.plot import plot_rows

            plot_rows(rows, plot, title=f"{_label(dataset, subset, scores)} ({model})")
    except CtxasmError as error:
        fail_with(error)
    if html is not None:
        _write_html(html, rows, f"{_label(dataset, subset, scores)} ({model})")
    if as_json:
        echo(json.dumps({"results": [row.to_dict() for row in rows]}, indent=2))
    else:
        _print_table(_label(dataset, subset, scores), questions, rows, model, by_type=by_type)


def _check_outputs(
    dataset: str, ids: Path | None, config: Path | None, outputs: dict[str, str | Path | None]
) -> None:
    """Exit 2 for an output (by its option's field) that cannot be written or is the dataset,
    the ids file or the config, before the run: it may take minutes, and the inputs are read
    after they are checked."""
    from ctxasm.batch.files import check_not_input
    from ctxasm.cli.report_view import check_page_target, check_writable
    from ctxasm.cli.request_input import check_not_config
    from ctxasm.errors import CtxasmError

    source = Path(dataset)  # a file's name: "-" is no standard input here
    written: dict[str, str] = {}  # a file's real path -> the output that writes it
    for field, path in outputs.items():
        if path is None:
            continue
        if not (field == "html" and str(path) == "-"):  # two outputs would write one file
            real = os.path.realpath(path)
            if real in written:
                fail(
                    f"--{written[real].replace('_', '-')} and --{field.replace('_', '-')} both "
                    f"name {os.fsdecode(path)}: give each its own file [{field}]",
                    EXIT_BAD_INPUT,
                )
            written[real] = field
        check_writable(Path(path), field)
        what = {"plot": "the plot", "html": "the page"}.get(field, "the subset")
        try:
            if field == "html":  # as given (a str): ./- is a file, - standard output
                check_page_target(str(path), field, stdout="the results")
            check_not_input(source, path, field=field, replaced=f"{what} would replace the dataset")
            if ids is not None:
                check_not_input(ids, path, field=field, replaced=f"{what} would replace the ids")
            check_not_config(config, path, field, what)
        except CtxasmError as error:
            fail_with(error)


def _write_html(path: str, rows: list[EvalRow], title: str) -> None:
    """The evaluation page at ``path``; a path that cannot be written exits 2 naming it."""
    from ctxasm.cli.report_view import write_page
    from ctxasm.html import render_eval_html

    write_page(render_eval_html([row.to_dict() for row in rows], title=title), path, "html")


def _check_choice(option: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        field = option.removeprefix("--")
        fail(
            f"{option} must be one of {', '.join(allowed)}, got {value!r} [{field}]",
            EXIT_BAD_INPUT,
        )


def _label(dataset: str, subset: str | None, scores: str | None) -> str:
    """The dataset's name, with the subset and the scores it was evaluated with."""
    # a file name that is not UTF-8 (its bytes kept as surrogates) is shown with U+FFFD
    label = os.fsencode(Path(dataset).name).decode("utf-8", "replace")
    if subset is not None:
        label += f" ({subset} subset)"
    if scores is not None:
        label += f", {scores} scores"
    return label


def _budgets(raw: str) -> list[int]:
    from ctxasm.validation import MAX_INTEGER  # not at import: --help loads no library module

    try:
        values = [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        fail(f"--budget must be comma-separated token counts, got {raw!r}", EXIT_BAD_INPUT)
    if not values or any(not 1 <= v <= MAX_INTEGER for v in values):
        fail(f"--budget must be token counts from 1 to 2**53, got {raw!r}", EXIT_BAD_INPUT)
    return list(dict.fromkeys(values))  # each once: a repeated budget repeats its rows


def _questions(
    dataset: str,
    ids: Path | None,
    subset: str | None,
    save_subset: Path | None,
    scores: tuple[str | None, str],
    seed: int,
    limit: int | None,
) -> list[EvalQuestion]:
    """The questions to evaluate: the dataset's (those ``ids`` lists, when given), or the
    subset built from all of them (written whole to ``save_subset``), the first ``limit`` of
    them, with ``scores`` (a kind and the embedder of ``dense``) attached."""
    from ctxasm.evaluation import (
        attach_scores,
        comention_subset,
        composed_subset,
        hard_subset,
        load_dataset,
        select_ids,
        write_dataset,
    )

    loaded = load_dataset(dataset, limit=limit if subset is None and ids is None else None)
    if ids is not None:
        loaded = select_ids(loaded, _id_lines(ids), ids.name)
    if subset is None:
        questions = loaded[:limit] if limit is not None else loaded
    else:
        builders = {"hard": hard_subset, "composed": composed_subset, "comention": comention_subset}
        questions = builders[subset](loaded, seed=seed)
        if save_subset is not None:
            write_dataset(questions, save_subset)
        questions = questions[:limit] if limit is not None else questions
    kind, embedder = scores
    if kind is not None:
        questions = attach_scores(questions, kind, seed=seed, embedder=embedder)
    return questions


_MOST_ID_BYTES = 16 * 1024 * 1024  # an ids file: HotpotQA's largest split has 90,447


def _id_lines(path: Path) -> list[str]:
    """The lines of the ids file ``path`` (UTF-8, at most ``_MOST_ID_BYTES``)."""
    from ctxasm.errors import RequestError
    from ctxasm.files import TooLargeError, read_bounded

    try:
        return read_bounded(path, _MOST_ID_BYTES).decode("utf-8-sig").splitlines()
    except TooLargeError:
        raise RequestError(
            f"{path} is too large for a list of ids (more than {_MOST_ID_BYTES:,} bytes)",
            field="ids",
        ) from None
    except UnicodeDecodeError:
        raise RequestError(f"{path} is not UTF-8 text", field="ids") from None
    except OSError as exc:
        raise RequestError(f"cannot read {path}: {exc.strerror}", field="ids") from None


def _run(
    questions: list[EvalQuestion],
    budgets: list[int],
    requested: list[str],
    config: Path | None,
    model: str | None,
    progress: bool | None,
) -> tuple[list[EvalRow], str]:
    """The result rows and the model they were measured with."""
    from ctxasm.assembler import Assembler
    from ctxasm.cli.progress import progress_bar, shown
    from ctxasm.evaluation import choose_model, choose_strategies, evaluate

    # --config, else $CTXASM_CONFIG: the configuration whose own strategy runs by default.
    source = os.environ.get("CTXASM_CONFIG") if config is None else str(config)
    assembler = Assembler(config if config is not None else source or None)
    chosen = choose_strategies(requested, config_source=source)
    model = choose_model(model, assembler.config.defaults)
    total = len(questions) * len(budgets) * len(chosen)
    with progress_bar("evaluating", show=shown(progress), total=total) as bar:
        rows = evaluate(
            questions, chosen, budgets, model=model, config=assembler.config, progress=bar.advance
        )
    return rows, model


def _print_table(
    label: str, questions: list[EvalQuestion], rows: list[EvalRow], model: str, *, by_type: bool
) -> None:
    from ctxasm.cli.report_view import print_eval

    gold = rows[0].n_gold if rows else 0
    title = (
        f"{label}: {len(questions)} questions ({gold} with all gold passages "
        f"among the candidates, over which the gold rates are), {model}"
    )
    print_eval(rows, title=title, by_type=by_type)
