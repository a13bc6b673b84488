"""``ctxasm``: assemble prompts from the command line.

Exit codes: 0 success; 1 the batch had failed lines, check-citations found an invalid
citation, or ctxasm itself failed (a tokenizer that cannot load, an internal error); 2 bad input
(the message names the field and what is allowed); 130 or 143 a batch stopped by SIGINT or
SIGTERM (its output left unwritten).
Library imports happen inside the commands so that ``ctxasm --help`` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer

from ctxasm.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED
from ctxasm.cli.exits import fail as _fail
from ctxasm.cli.exits import fail_with as _fail_with
from ctxasm.cli.help import WordsCommand

if TYPE_CHECKING:
    from ctxasm.assembler import Assembler

__all__ = ["app", "run"]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024

app = typer.Typer(
    name="ctxasm",
    help="The context assembler for RAG: turn retrieved passages into a prompt that fits.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="TOML or JSON config: request defaults, models, limits (default: $CTXASM_CONFIG).",
        show_default=False,
    ),
]
MaxBytesOption = Annotated[
    int,
    typer.Option(
        "--max-bytes",
        min=1,
        metavar="N",
        help="Refuse a request (or batch line) larger than N bytes.",
    ),
]
ProgressOption = Annotated[
    bool | None,
    typer.Option(
        "--progress/--no-progress",
        help="Progress bar on standard error (default: on a terminal).",
        show_default=False,
    ),
]
FORMATS = ("openai", "anthropic", "markdown", "text")


def _assembler(config: Path | None) -> Assembler:
    from ctxasm.assembler import Assembler

    source = config if config is not None else os.environ.get("CTXASM_CONFIG") or None
    return Assembler(source)


def _read_input(source: str, max_bytes: int) -> bytes:
    """At most ``max_bytes`` of the input; over that, an error stating the input's real size."""
    try:
        if source == "-":
            stream = sys.stdin.buffer
            data = stream.read(max_bytes + 1)
            size = len(data) + _drain(stream) if len(data) > max_bytes else len(data)
        else:
            with Path(source).open("rb") as handle:
                data = handle.read(max_bytes + 1)
                size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        _fail(f"cannot read {source}: {exc.strerror}", EXIT_BAD_INPUT)
    if len(data) > max_bytes:
        from ctxasm.jsonio import too_large

        error = too_large(max_bytes, size=max(size, len(data)))
        _fail(f"{error.message} [request]", EXIT_BAD_INPUT)
    return data


def _drain(stream: BinaryIO) -> int:
    """Bytes left in ``stream``, read and dropped (a pipe has no size to ask for)."""
    total = 0
    while chunk := stream.read(1 << 20):
        total += len(chunk)
    return total


HITS_HINT = "for a list of retriever hits, give the question with --query"


def _request(raw: bytes, overrides: dict[str, Any]) -> dict[str, Any]:
    """The request object, or one built from a bare list of hits and ``--query``; the options
    given on the command line replace the request's fields."""
    from ctxasm.errors import InvalidJSONError
    from ctxasm.hits import passages_from_hits
    from ctxasm.jsonio import decode_json, decode_object

    value = decode_json(raw)
    if isinstance(value, list):
        if "query" not in overrides:
            raise InvalidJSONError(
                f"the request must be a JSON object, got an array; {HITS_HINT}", field="request"
            )
        value = {"passages": passages_from_hits(value)}
    elif not isinstance(value, dict):
        decode_object(raw)  # the message every entry point gives for a JSON value of this kind
    return {**value, **overrides}


@app.command(cls=WordsCommand)
def assemble(
    source: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help="Request JSON, or a JSON list of retriever hits (with --query); "
            "- for standard input.",
            show_default=False,
        ),
    ] = "-",
    query: Annotated[
        str | None,
        typer.Option(
            "--query",
            metavar="QUESTION",
            help="The question (replaces the request's query; required for a list of hits).",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="NAME",
            help="Target model (replaces the request's).",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            metavar="|".join(FORMATS),
            help="Output format (replaces the request's).",
            show_default=False,
        ),
    ] = None,
    max_context_tokens: Annotated[
        int | None,
        typer.Option(
            "--max-context-tokens",
            min=1,
            metavar="N",
            help="Most tokens for the sources (replaces the request's).",
            show_default=False,
        ),
    ] = None,
    report: Annotated[
        bool, typer.Option("--report", help="Print a readable budget and passage table to stderr.")
    ] = False,
    indent: Annotated[
        int | None,
        typer.Option(
            "--indent", metavar="N", help="Indent the result JSON by N spaces (default: one line)."
        ),
    ] = None,
    config: ConfigOption = None,
    max_bytes: MaxBytesOption = DEFAULT_MAX_BYTES,
) -> None:
    """Assemble one request (JSON in, result JSON on stdout)."""
    from ctxasm.errors import CtxasmError
    from ctxasm.schema import request_envelope

    given = {"query": query, "model": model, "format": fmt}
    overrides: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if max_context_tokens is not None:
        overrides["max_context_tokens"] = max_context_tokens
    try:
        assembler = _assembler(config)
        data = _request(_read_input(source, max_bytes), overrides)
        result = assembler.assemble(data)
        output = {**request_envelope(data), **result.to_dict()}
    except CtxasmError as error:
        _fail_with(error)
    typer.echo(json.dumps(output, ensure_ascii=False, indent=indent))
    if report:
        from ctxasm.cli.report_view import print_report

        print_report(result.report)


@app.command(cls=WordsCommand)
def batch(
    source: Annotated[
        str,
        typer.Argument(metavar="IN", help="Input JSONL (one request per line), or - for stdin."),
    ],
    target: Annotated[
        str,
        typer.Argument(metavar="OUT", help="Output JSONL (one result per line), or - for stdout."),
    ],
    progress: ProgressOption = None,
    config: ConfigOption = None,
    max_bytes: MaxBytesOption = DEFAULT_MAX_BYTES,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            metavar="local|ray",
            help="local (streaming, one process) or ray (Ray tasks; JSONL or Parquet; "
            "joins $RAY_ADDRESS when set).",
        ),
    ] = "local",
) -> None:
    """Assemble every line of a JSONL file, streaming; bad lines get error records."""
    from ctxasm.cli.batch_run import (
        BatchInterruptedError,
        exit_code,
        interrupted_message,
        run_batch,
    )
    from ctxasm.errors import CtxasmError

    if engine not in ("local", "ray"):
        _fail(f"--engine must be local or ray, got {engine!r}", EXIT_BAD_INPUT)
    if engine == "ray":
        _batch_on_ray(source, target, config, max_bytes)
        return

    try:
        assembler = _assembler(config)
    except CtxasmError as error:
        _fail_with(error)
    show = sys.stderr.isatty() if progress is None else progress
    try:
        stats = run_batch(source, target, assembler, max_bytes=max_bytes, progress=show)
    except OSError as exc:
        _fail(f"{exc.filename or source}: {exc.strerror}", EXIT_BAD_INPUT)
    except BatchInterruptedError as interrupted:
        typer.echo(interrupted_message(interrupted, target), err=True)
        raise typer.Exit(exit_code(interrupted)) from None
    typer.echo(f"ctxasm: {stats.ok} assembled, {stats.failed} failed", err=True)
    if stats.failed:
        raise typer.Exit(EXIT_FAILED)


def _batch_on_ray(source: str, target: str, config: Path | None, max_bytes: int) -> None:
    try:
        from ctxasm.batch.ray_engine import run_batch as run_on_ray
    except ImportError:
        _fail("--engine ray needs Ray: pip install 'ctxasm[ray]'", EXIT_BAD_INPUT)
    from ctxasm.errors import CtxasmError

    if source == "-" or target == "-":
        _fail("--engine ray reads and writes files, not standard input/output", EXIT_BAD_INPUT)
    if not Path(source).exists():
        _fail(f"cannot read {source}: no such file", EXIT_BAD_INPUT)
    try:
        _assembler(config)  # a bad config fails here, once
        setting = str(config) if config is not None else os.environ.get("CTXASM_CONFIG")
        stats = run_on_ray(source, target, setting, max_bytes=max_bytes)
    except CtxasmError as error:
        _fail_with(error)
    typer.echo(f"ctxasm: {stats.ok} assembled, {stats.failed} failed", err=True)
    if stats.failed:
        raise typer.Exit(EXIT_FAILED)


@app.command(cls=WordsCommand)
def models(
    as_json: Annotated[bool, typer.Option("--json", help="Print the registry as JSON.")] = False,
    config: ConfigOption = None,
) -> None:
    """List the model registry: windows, tokenizers, prices."""
    from ctxasm.errors import CtxasmError

    try:
        registry = _assembler(config).config.models
    except CtxasmError as error:
        _fail_with(error)
    specs = list(registry)
    if as_json:
        typer.echo(json.dumps([spec.to_dict() for spec in specs], indent=2))
        return
    from ctxasm.cli.report_view import print_models

    print_models(specs)


PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def _budgets(raw: str) -> list[int]:
    try:
        values = [int(part) for part in raw.split(",") if part.strip()]
    except ValueError:
        _fail(f"--budget must be comma-separated token counts, got {raw!r}", EXIT_BAD_INPUT)
    if not values or any(v < 1 for v in values):
        _fail(f"--budget must be positive token counts, got {raw!r}", EXIT_BAD_INPUT)
    return values


@app.command("eval", cls=WordsCommand)
def eval_(
    dataset: Annotated[
        str, typer.Argument(metavar="DATASET", help="QA dataset (JSONL, unified format).")
    ],
    budget: Annotated[
        str,
        typer.Option(
            "--budget", metavar="N,N,...", help="Context budgets in tokens, comma-separated."
        ),
    ] = "256,512,1024,2048",
    strategy: Annotated[
        list[str] | None,
        typer.Option(
            "--strategy",
            metavar="NAME",
            help="A preset (default, bm25_greedy, bridge, ...), 'oracle', or a selection "
            "strategy name; repeat for several (default: the config's strategy).",
            show_default=False,
        ),
    ] = None,
    config: ConfigOption = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="NAME",
            help="Target model (its tokenizer); default: the config's, else gpt-4o.",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, metavar="N", help="Only the first N questions."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    by_type: Annotated[
        bool, typer.Option("--by-type", help="Also print the rates per question type.")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", metavar="FILE", help="Save recall-versus-budget curves (.png, .svg, .pdf)."
        ),
    ] = None,
    progress: ProgressOption = None,
) -> None:
    """Measure how much gold evidence each strategy keeps per budget on a QA dataset."""
    from ctxasm.cli.report_view import print_eval
    from ctxasm.errors import CtxasmError
    from ctxasm.evaluation import EvalStrategy, evaluate, load_dataset, resolve_strategy

    budgets = _budgets(budget)
    if plot is not None and plot.suffix.lower() not in PLOT_SUFFIXES:
        allowed = ", ".join(PLOT_SUFFIXES)
        _fail(f"--plot must end in one of {allowed}, got {plot.name!r} [plot]", EXIT_BAD_INPUT)
    try:
        assembler = _assembler(config)
        # With a config (--config or $CTXASM_CONFIG) and no --strategy, its own strategy is the
        # one evaluated, named after the file; --strategy presets run on its models and defaults.
        source = os.environ.get("CTXASM_CONFIG") if config is None else str(config)
        if strategy:
            chosen = [resolve_strategy(name) for name in strategy]
        elif source:
            chosen = [EvalStrategy(Path(source).stem)]
        else:
            chosen = [resolve_strategy("default")]
        model = model or str(assembler.config.defaults.get("model", "gpt-4o"))
        questions = load_dataset(dataset, limit=limit)
        total = len(questions) * len(budgets) * len(chosen)
        show = sys.stderr.isatty() if progress is None else progress
        if show:
            from rich.progress import Progress

            with Progress(transient=True) as bar:
                task = bar.add_task("evaluating", total=total)
                rows = evaluate(
                    questions,
                    chosen,
                    budgets,
                    model=model,
                    config=assembler.config,
                    progress=lambda n: bar.advance(task, n),
                )
        else:
            rows = evaluate(questions, chosen, budgets, model=model, config=assembler.config)
        if plot is not None:
            from ctxasm.evaluation.plot import plot_rows

            plot_rows(rows, plot, title=f"{Path(dataset).name} ({model})")
    except CtxasmError as error:
        _fail_with(error)
    if as_json:
        typer.echo(json.dumps({"results": [row.to_dict() for row in rows]}, indent=2))
    else:
        gold = rows[0].n_gold if rows else 0
        title = (
            f"{Path(dataset).name}: {len(questions)} questions ({gold} with all gold passages "
            f"among the candidates, over which the gold rates are), {model}"
        )
        print_eval(rows, title=title, by_type=by_type)


def _register_commands() -> None:
    from ctxasm.cli.citations_cmd import check_citations_command
    from ctxasm.cli.serve_cmd import serve_command
    from ctxasm.cli.store_cmds import ask_command, delete_command, index_command

    app.command("check-citations", cls=WordsCommand)(check_citations_command)
    app.command("index", cls=WordsCommand)(index_command)
    app.command("delete", cls=WordsCommand)(delete_command)
    app.command("ask", cls=WordsCommand)(ask_command)
    app.command("serve", cls=WordsCommand)(serve_command)


_register_commands()


def _version(value: bool) -> None:
    if value:
        from ctxasm import __version__

        typer.echo(f"ctxasm {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """The context assembler for RAG."""


def run() -> Any:
    """Console-script entry point."""
    try:
        return app(standalone_mode=True)
    except KeyboardInterrupt:
        typer.echo("ctxasm: interrupted", err=True)
        raise SystemExit(130) from None
    except Exception as exc:  # a bug, not a user mistake: one line, traceback on request
        if os.environ.get("CTXASM_DEBUG"):
            raise
        typer.echo(
            f"ctxasm: internal error: {type(exc).__name__}: {exc} "
            "(set CTXASM_DEBUG=1 for the traceback, and please report it)",
            err=True,
        )
        raise SystemExit(EXIT_FAILED) from None
