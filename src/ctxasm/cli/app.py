"""The ``ctxasm`` Typer app: every command, its options and its help.

:func:`ctxasm.cli.main.run` (the console script) builds it for every command line but a plain
``ctxasm assemble``, which runs without Typer (see :mod:`ctxasm.cli.assemble_cmd`). Library
imports happen inside the commands so that ``ctxasm --help`` stays fast.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from ctxasm.cli.assemble_cmd import MAX_INDENT, AssembleOptions
from ctxasm.cli.assemble_cmd import assemble as run_assemble
from ctxasm.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED, echo
from ctxasm.cli.exits import fail as _fail
from ctxasm.cli.exits import fail_with as _fail_with
from ctxasm.cli.help import WordsCommand
from ctxasm.cli.options import (
    DEFAULT_MAX_BYTES,
    FORMATS,
    ConfigOption,
    HtmlOption,
    LineMaxBytesOption,
    MaxBytesOption,
    ProgressOption,
    ResultMaxBytesOption,
)
from ctxasm.cli.request_input import check_not_config, config_file, open_assembler
from ctxasm.errors import install_hint

if TYPE_CHECKING:
    from ctxasm.batch.jsonl import BatchStats
    from ctxasm.cli.batch_run import BatchInterruptedError

__all__ = ["app"]

app = typer.Typer(
    name="ctxasm",
    help="The context assembler for RAG: turn retrieved passages into a prompt that fits.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


RequestArgument = Annotated[
    str,
    typer.Argument(
        metavar="FILE",
        help="Request JSON, or a JSON list of retriever hits (with --query); - for standard input.",
        show_default=False,
    ),
]
QueryOption = Annotated[
    str | None,
    typer.Option(
        "--query",
        metavar="QUESTION",
        help="The question (replaces the request's query; required for a list of hits).",
        show_default=False,
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model", metavar="NAME", help="Target model (replaces the request's).", show_default=False
    ),
]
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        metavar="|".join(FORMATS),
        help="Output format (replaces the request's).",
        show_default=False,
    ),
]
MaxContextOption = Annotated[
    int | None,
    typer.Option(
        "--max-context-tokens",
        "--budget",
        min=1,
        metavar="N",
        help="Most tokens for the sources (replaces the request's; --budget, as ask names it).",
        show_default=False,
    ),
]
ReportOption = Annotated[
    bool, typer.Option("--report", help="Print a readable budget and passage table to stderr.")
]
IndentOption = Annotated[
    int | None,
    typer.Option(
        "--indent",
        metavar="N",
        min=0,
        max=MAX_INDENT,
        help=f"Indent the result JSON by N spaces, 0 to {MAX_INDENT} (default: one line).",
    ),
]


@app.command(cls=WordsCommand)
def assemble(
    source: RequestArgument = "-",
    query: QueryOption = None,
    model: ModelOption = None,
    fmt: FormatOption = None,
    max_context_tokens: MaxContextOption = None,
    report: ReportOption = False,
    html: HtmlOption = None,
    indent: IndentOption = None,
    config: ConfigOption = None,
    max_bytes: MaxBytesOption = DEFAULT_MAX_BYTES,
) -> None:
    """Assemble one request (JSON in, result JSON on stdout)."""
    options = AssembleOptions(
        source=source,
        query=query,
        model=model,
        fmt=fmt,
        max_context_tokens=max_context_tokens,
        report=report,
        html=html,
        indent=indent,
        config=config,
        max_bytes=max_bytes,
    )
    run_assemble(options)


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
    max_bytes: LineMaxBytesOption = DEFAULT_MAX_BYTES,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            metavar="local|ray",
            help="local (streaming, one process) or ray (Ray tasks; JSONL or Parquet; "
            "joins $RAY_ADDRESS when set).",
        ),
    ] = "local",
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Go on after the result lines an interrupted run left in OUT.partial "
            "(local engine; without one, run from the start).",
        ),
    ] = False,
) -> None:
    """Assemble every line of a JSONL file, streaming; bad lines get error records."""
    from ctxasm.cli.batch_run import BatchInterruptedError, kept_message, run_batch
    from ctxasm.cli.progress import shown
    from ctxasm.errors import CtxasmError

    if engine not in ("local", "ray"):
        _fail(f"--engine must be local or ray, got {engine!r}", EXIT_BAD_INPUT)
    try:
        check_not_config(config, target, "OUT", "the results")
    except CtxasmError as error:
        _fail_with(error)
    if engine == "ray":
        if resume:
            _fail("--resume works with the local engine, not --engine ray", EXIT_BAD_INPUT)
        _batch_on_ray(source, target, config, max_bytes)
        return
    for path, field in ((source, "IN"), (target, "OUT")):
        if path.lower().endswith(".parquet"):
            _fail(
                f"{path}: the local engine reads and writes JSONL; Parquet needs --engine ray "
                f"[{field}]",
                EXIT_BAD_INPUT,
            )

    try:
        assembler = open_assembler(config)
    except CtxasmError as error:
        _fail_with(error)
    try:
        stats = run_batch(
            source, target, assembler, max_bytes=max_bytes, progress=shown(progress), resume=resume
        )
    except CtxasmError as error:
        # where the lines written before it are kept, unless the output itself was refused
        kept = None if error.field in ("OUT", "--resume") else kept_message(target)
        _fail_with(error, then=kept)
    except OSError as exc:
        _fail(f"{exc.filename or source}: {exc.strerror}", EXIT_BAD_INPUT)
    except BatchInterruptedError as interrupted:
        _interrupted(interrupted, target)
    _summary(stats, target)


def _interrupted(error: BatchInterruptedError, target: str) -> NoReturn:
    """Say how far an interrupted batch got; exit as the signal would have."""
    from ctxasm.cli.batch_run import exit_code, interrupted_message

    echo(interrupted_message(error, target), err=True)
    raise typer.Exit(exit_code(error)) from None


_SHOWN_FAILURE = 300  # characters of the first failure's message shown in the summary


def _summary(stats: BatchStats, target: str) -> None:
    """The batch's last words on stderr: the counts, the first failure, the prompt-cache totals
    when any request planned for the cache; exit 1 when a request failed."""
    echo(f"ctxasm: {stats.ok} assembled, {stats.failed} failed", err=True)
    if stats.first_failure is not None:
        first = stats.first_failure
        first = first if len(first) <= _SHOWN_FAILURE else first[: _SHOWN_FAILURE - 1] + "…"
        # on one line, and no escape sequence from the input reaches the terminal
        first = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in first)
        output = "standard output" if target == "-" else target
        echo(
            f"ctxasm: the first failed request is on {first}\n"
            f"ctxasm: each failed line has an error record in {output}",
            err=True,
        )
    cache = stats.cache.summary()
    if cache is not None:
        echo(f"ctxasm: {cache}", err=True)
    if stats.failed:
        raise typer.Exit(EXIT_FAILED)


def _batch_on_ray(source: str, target: str, config: Path | None, max_bytes: int) -> None:
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        _fail(f"--engine ray needs Ray: {install_hint('ray')}", EXIT_BAD_INPUT)
    from ctxasm.cli.batch_run import BatchInterruptedError, run_ray_batch
    from ctxasm.errors import CtxasmError

    if source == "-" or target == "-":
        _fail("--engine ray reads and writes files, not standard input/output", EXIT_BAD_INPUT)
    if not Path(source).exists():
        _fail(f"cannot read {source}: no such file", EXIT_BAD_INPUT)
    try:
        open_assembler(config)  # a bad config fails here, once
        setting = config_file(config)
        # Workers open it from their own folder (or machine): named from the root, it is the
        # file this process read.
        setting = os.path.abspath(setting) if setting else None
        stats = run_ray_batch(source, target, setting, max_bytes=max_bytes)
    except CtxasmError as error:
        _fail_with(error)
    except BatchInterruptedError as interrupted:
        _interrupted(interrupted, target)
    except ConnectionError as exc:  # Ray's: the cluster, not the output file
        _fail(f"cannot join the Ray cluster (RAY_ADDRESS): {exc}", EXIT_FAILED)
    except OSError as exc:  # an output folder that cannot be written, as the local engine says
        name = str(exc.filename or target)
        if Path(name).name.startswith(f".{Path(target).name}."):  # the hidden temporary file
            name = target
        _fail(f"{name}: {exc.strerror or exc}", EXIT_BAD_INPUT)
    _summary(stats, target)


@app.command(cls=WordsCommand)
def models(
    as_json: Annotated[bool, typer.Option("--json", help="Print the registry as JSON.")] = False,
    config: ConfigOption = None,
) -> None:
    """List the model registry: windows, tokenizers, prices."""
    from ctxasm.errors import CtxasmError

    try:
        registry = open_assembler(config).config.models
    except CtxasmError as error:
        _fail_with(error)
    specs = list(registry)
    if as_json:
        echo(json.dumps([spec.to_dict() for spec in specs], indent=2))
        return
    from ctxasm.cli.report_view import print_models

    print_models(specs)


@app.command("report", cls=WordsCommand)
def report_command(
    source: Annotated[
        str,
        typer.Argument(
            metavar="RESULT",
            help="A result JSON (from assemble, ask --json or the service); - for standard input.",
            show_default=False,
        ),
    ],
    html: HtmlOption = None,
    max_bytes: ResultMaxBytesOption = DEFAULT_MAX_BYTES,
) -> None:
    """Show a saved result's report: tables on stdout, or an HTML page with --html."""
    from ctxasm.batch.files import check_not_input
    from ctxasm.cli.report_view import check_page_target, print_report, write_html
    from ctxasm.cli.request_input import decode_input, read_input
    from ctxasm.errors import CtxasmError
    from ctxasm.html import result_of

    try:
        if html is not None:  # the page is all this command prints: - writes it there
            check_page_target(html, "html", stdout=None)
            replaced = "the page would replace the result"
            check_not_input(source, html, field="html", replaced=replaced)
        result = result_of(decode_input(read_input(source, max_bytes, "result"), source, "result"))
    except CtxasmError as error:
        _fail_with(error)
    # Either view shows what it is given; a report it would show wrong is refused first.
    problem = _report_problem(result)
    if problem is not None:
        verb = "print" if html is None else "draw"
        _fail(f"{source} is not a report ctxasm can {verb}: {problem}", EXIT_BAD_INPUT)
    if html is not None:
        write_html(result, html)
        if html != "-":
            echo(f"ctxasm: wrote {html}", err=True)
        return
    try:
        print_report(result["report"], stderr=False)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        problem = _report_problem(result) or repr(exc)
        _fail(f"{source} is not a report ctxasm can print: {problem}", EXIT_BAD_INPUT)


def _report_problem(result: Any) -> str | None:
    """What is wrong with a saved result's report, naming the field as the result schema
    does; ``None`` where the schema finds nothing. Fields the schema does not know (a result
    from another release) are no problem: the views show what they know."""
    from pydantic import ValidationError

    from ctxasm.service.schemas import Report

    try:
        Report.model_validate(result.get("report") if isinstance(result, dict) else result)
    except ValidationError as invalid:
        for error in invalid.errors():
            if error["type"] != "extra_forbidden":
                where = ".".join(["report", *map(str, error["loc"])])
                return f"{where}: {error['msg']}"
    return None


def _register_commands() -> None:
    from ctxasm.cli.citations_cmd import check_citations_command
    from ctxasm.cli.eval_cmd import eval_command
    from ctxasm.cli.serve_cmd import serve_command
    from ctxasm.cli.store_cmds import ask_command, delete_command, index_command

    app.command("eval", cls=WordsCommand)(eval_command)
    app.command("check-citations", cls=WordsCommand)(check_citations_command)
    app.command("index", cls=WordsCommand)(index_command)
    app.command("delete", cls=WordsCommand)(delete_command)
    app.command("ask", cls=WordsCommand)(ask_command)
    app.command("serve", cls=WordsCommand)(serve_command)


_register_commands()


def _version(value: bool) -> None:
    if value:
        from ctxasm import __version__

        echo(f"ctxasm {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """The context assembler for RAG."""
