"""``ctxasm index``, ``ctxasm delete`` and ``ctxasm ask``: a document store on the command line.

Sending the assembled prompt to a model is optional: set ``CTXASM_LLM_BASE_URL`` to an
OpenAI-compatible API (for example ``https://api.openai.com/v1``), ``CTXASM_LLM_API_KEY`` (or
``OPENAI_API_KEY``) and optionally ``CTXASM_LLM_MODEL`` (default: the ``--model`` name).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxasm.cli.ask_fields import (
    MinScoreOption,
    StrategyOption,
    SystemPromptOption,
    TopKOption,
    ask_fields,
)
from ctxasm.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED, echo
from ctxasm.cli.exits import fail as _fail
from ctxasm.cli.exits import fail_with as _fail_with
from ctxasm.cli.notices import nothing_fit
from ctxasm.cli.options import FORMATS, ConfigOption, HtmlOption, ProgressOption

if TYPE_CHECKING:
    from ctxasm.store import IndexReport

__all__ = ["ask_command", "delete_command", "index_command"]


StoreOption = Annotated[
    str,
    typer.Option(
        "--store",
        metavar="URL",
        help="Store URL: sqlite:///path.db or postgresql://... (default: $CTXASM_STORE).",
        envvar="CTXASM_STORE",
    ),
]
RootOption = Annotated[
    Path | None,
    typer.Option(
        "--root",
        metavar="DIR",
        help="Folder that files' document ids are paths relative to, so that they are the same "
        "from any working folder (default: $CTXASM_ROOT, else the working folder).",
        envvar="CTXASM_ROOT",
        show_default=False,
    ),
]


def _names(raw: str | None, option: str) -> list[str] | None:
    """The comma-separated names of ``option``; a blank one (``a,,b``, ``" , "``) stops the
    run, as a blank reader in JSONL does: dropped, it would quietly change who may read."""
    if raw is None:
        return None
    names = [name.strip() for name in raw.split(",")]
    if not all(names):
        _fail(f"{option} {raw!r} has an empty name; give names separated by commas", EXIT_BAD_INPUT)
    return names


PathsArgument = Annotated[
    list[Path], typer.Argument(metavar="PATH", help="Files or folders (.txt .md .html .jsonl).")
]
DefaultTenantOption = Annotated[
    str | None,
    typer.Option("--tenant", metavar="NAME", help="Tenant of documents that name none."),
]
DefaultReadersOption = Annotated[
    str | None,
    typer.Option(
        "--readers",
        metavar="NAMES",
        help="Comma-separated readers (users or groups) of documents that name none.",
    ),
]
ChunkTokensOption = Annotated[
    int, typer.Option("--chunk-tokens", min=8, metavar="N", help="Tokens per chunk, at most.")
]
OverlapOption = Annotated[
    int,
    typer.Option(
        "--overlap",
        min=0,
        metavar="N",
        help="Tokens each chunk repeats from the one before (at most half a chunk).",
    ),
]
WorkersOption = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=0,
        metavar="N",
        help="Processes that chunk documents while the store is written (default: 1 on a "
        "machine with two or more CPUs; 0: chunk in this process).",
    ),
]


def index_command(
    paths: PathsArgument,
    store: StoreOption,
    tenant: DefaultTenantOption = None,
    readers: DefaultReadersOption = None,
    chunk_tokens: ChunkTokensOption = 256,
    overlap: OverlapOption = 32,
    progress: ProgressOption = None,
    workers: WorkersOption = None,
    root: RootOption = None,
) -> None:
    """Ingest documents: chunk them by tokens with overlap, keep offsets and access data. A
    file's document id is its path relative to --root (default: the working folder)."""
    from ctxasm.cli.progress import progress_bar, shown
    from ctxasm.errors import CtxasmError
    from ctxasm.store import index_paths, open_store

    if overlap > chunk_tokens // 2:
        _fail(
            f"--overlap must be at most half of --chunk-tokens ({chunk_tokens // 2})",
            EXIT_BAD_INPUT,
        )
    # A missing path is skipped like an unreadable file: the others are indexed, the exit is 1.
    reader_names = _names(readers, "--readers")  # before the store is opened or created
    folder = _root_folder(root)
    missing = [(str(p), "no such file or folder") for p in paths if not p.exists()]
    paths = [p for p in paths if p.exists()]
    try:
        opened = open_store(store)
        with progress_bar("indexing", show=shown(progress)) as bar:
            report = index_paths(
                opened,
                paths,
                tenant=tenant,
                readers=reader_names,
                chunk_tokens=chunk_tokens,
                overlap=overlap,
                progress=bar.update,
                workers=workers,
                root=folder,
            )
    except CtxasmError as error:
        _fail_with(error)
    except KeyboardInterrupt:  # Typer would exit 130 without a word
        echo(
            "ctxasm: interrupted: the documents written before are kept, each whole; run the "
            "same command again to index the rest (what is stored already is skipped as "
            "unchanged)",
            err=True,
        )
        raise typer.Exit(130) from None
    report.failed[:0] = missing
    _print_index_report(report)
    if report.failed:
        raise typer.Exit(EXIT_FAILED)
    if not report.added + report.updated + report.unchanged:
        # a folder of other files, or an empty one, said only as counts, looked indexed
        why = (
            "the folders given hold no file of a type ctxasm reads"
            if report.passed_over
            else "the paths given hold no document (an empty folder or .jsonl file)"
        )
        _fail(f"nothing was indexed: {why}", EXIT_FAILED)


def _print_index_report(report: IndexReport) -> None:
    """The files skipped, the public documents and the counts, on standard error."""
    for path, reason in report.failed:
        echo(f"ctxasm: skipped {path}: {_reason(path, reason)}", err=True)
    if report.duplicates:
        written, stored = report.duplicates[0]
        more = len(report.duplicates) - 1
        alike = f" ({more} more file(s) alike)" if more else ""
        echo(
            f"ctxasm: warning: {written} is also in the store as {stored}, its id when indexed "
            f"from another working folder{alike}; ask returns both: give --root DIR for the same "
            "ids from any folder, and `ctxasm delete` the old one",
            err=True,
        )
    if report.public:
        echo(
            f"ctxasm: {report.public} document(s) have neither tenant nor readers: they are "
            "public, and `ctxasm ask` shows them only with --allow-public",
            err=True,
        )
    if report.passed_over:
        echo(f"ctxasm: {_passed_over(report.passed_over)}", err=True)
    echo(
        f"ctxasm: {report.added} added, {report.updated} updated, {report.unchanged} unchanged "
        f"({report.chunks} chunks written), {len(report.failed)} failed",
        err=True,
    )


def _passed_over(paths: list[str]) -> str:
    """What the report line says of the files a folder walk passed over for their type."""
    from ctxasm.store.documents import SUFFIXES

    types = sorted({Path(path).suffix.lower() or "no suffix" for path in paths})
    shown = ", ".join(types[:8]) + (f" and {len(types) - 8} more" if len(types) > 8 else "")
    files = "1 file" if len(paths) == 1 else f"{len(paths)} files"
    reads = ", ".join(SUFFIXES)
    return f"{files} passed over: not a type ctxasm reads ({shown}); it reads {reads}"


def _reason(where: str, reason: str) -> str:
    """``reason`` without the file name it starts with: the message names the file once."""
    if not reason.startswith(where):
        return reason
    rest = reason[len(where) :].lstrip(":. ")
    return rest if not rest.startswith("must") else f"it {rest}"


def delete_command(
    doc_id: Annotated[
        str,
        typer.Argument(
            metavar="DOC_ID",
            help="The document to remove: its id, or a file's path as `index` took it (with "
            "the same --root).",
        ),
    ],
    store: StoreOption,
    root: RootOption = None,
) -> None:
    """Remove a document with its chunks, readers and index rows."""
    from ctxasm.errors import CtxasmError
    from ctxasm.store import open_store

    as_file = _file_id(doc_id, _root_folder(root))
    try:
        opened = open_store(store, create=False)
        # The id as given first: a JSONL document's id is whatever its line says.
        removed = next(
            (given for given in (doc_id, as_file) if given is not None and opened.delete(given)),
            None,
        )
    except CtxasmError as error:
        _fail_with(error)
    if removed is None:
        where = "here" if root is None else f"with --root {root}"
        also = (
            "" if as_file is None else f", nor {as_file!r}, the id `index` gives that path {where}"
        )
        _fail(f"no document {doc_id!r} in the store{also}", EXIT_BAD_INPUT)
    echo(f"ctxasm: deleted {removed}", err=True)


def _root_folder(root: Path | None) -> Path | None:
    """``--root`` resolved, or ``None`` when not given; exit 2 naming it when it is no folder
    (checked before the store is opened or created)."""
    if root is None:
        return None
    from ctxasm.errors import RequestError
    from ctxasm.store.documents import id_root

    default = os.environ.get("CTXASM_ROOT")
    # a stale $CTXASM_ROOT is named, or "--root" would puzzle whoever typed none
    option = "--root ($CTXASM_ROOT)" if default and Path(default) == root else "--root"
    try:
        return id_root(root, option)
    except RequestError as error:
        _fail(error.message, EXIT_BAD_INPUT)


def _file_id(doc_id: str, root: Path | None) -> str | None:
    """The id ``ctxasm index`` gives a file at the path ``doc_id`` from the working folder
    (``./docs/a.md`` and ``/abs/path/docs/a.md`` are ``docs/a.md``), relative to ``root`` when
    given, where it differs from ``doc_id``; the file need not exist any more."""
    from ctxasm.store import file_doc_id

    try:
        as_file = file_doc_id(Path(doc_id), root)
    except (OSError, ValueError, RuntimeError):  # a NUL, a symlink loop: no path
        return None
    return None if as_file == doc_id else as_file


PrincipalOption = Annotated[
    str | None,
    typer.Option("--principal", metavar="ID", help="Who asks (access is checked for them)."),
]
TenantOption = Annotated[str | None, typer.Option("--tenant", metavar="NAME", help="Their tenant.")]
GroupsOption = Annotated[
    str | None, typer.Option("--groups", metavar="NAMES", help="Their groups, comma-separated.")
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model", metavar="NAME", help="Target model.", show_default="the config's, else gpt-4o"
    ),
]
BudgetOption = Annotated[
    int | None,
    typer.Option(
        "--budget",
        min=1,
        metavar="N",
        help="Most tokens for the sources.",
        show_default="all the model's window leaves after the reserved output",
    ),
]
FormatOption = Annotated[
    str | None,
    typer.Option(
        "--format",
        metavar="|".join(FORMATS),
        help="Prompt format.",
        show_default="the config's, else openai",
    ),
]
KOption = Annotated[int, typer.Option("--k", min=1, metavar="N", help="Chunks to retrieve.")]
AllowPublicOption = Annotated[
    bool,
    typer.Option("--allow-public", help="Also use documents with neither tenant nor readers."),
]
AskJsonOption = Annotated[
    bool,
    typer.Option("--json", help="Print one JSON object: the result (and answer, citations)."),
]
QuietOption = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", help="Print only the prompt and the answer: no report on stderr."
    ),
]


def ask_command(
    question: Annotated[str, typer.Argument(metavar="QUESTION", help="The question.")],
    store: StoreOption,
    principal: PrincipalOption = None,
    tenant: TenantOption = None,
    groups: GroupsOption = None,
    model: ModelOption = None,
    budget: BudgetOption = None,
    fmt: FormatOption = None,
    k: KOption = 50,
    min_score: MinScoreOption = None,
    top_k: TopKOption = None,
    strategy: StrategyOption = None,
    system_prompt: SystemPromptOption = None,
    allow_public: AllowPublicOption = False,
    config: ConfigOption = None,
    as_json: AskJsonOption = False,
    html: HtmlOption = None,
    quiet: QuietOption = False,
) -> None:
    """Retrieve what the principal may read, assemble the prompt, and (with a model endpoint
    configured) ask the model and check its citations."""
    if principal is None and (tenant or groups):
        _fail("--tenant and --groups need --principal", EXIT_BAD_INPUT)
    if html is not None:  # before the store is opened or anything written
        _check_html(html, store, config)
    fields = ask_fields(
        {
            "model": model,
            "format": fmt,
            "max_context_tokens": budget,
            "min_score": min_score,
            "top_k": top_k,
            "strategy": strategy,
            "system_prompt": system_prompt,
        }
    )
    result, hidden, reasoning = _assemble_from_store(
        question,
        store,
        (principal, tenant, groups),
        k=k,
        allow_public=allow_public,
        config=config,
        fields=fields,
    )
    if html is not None:
        from ctxasm.cli.report_view import write_html

        write_html(result.to_dict(), html)
    if not as_json:
        notice = _hidden_notice(principal is not None, allow_public) if hidden else None
        _print_prompt(result, quiet=quiet, hidden=notice)
    warning = nothing_fit(result.report.to_dict())
    if warning is not None:  # said even with --quiet or --json, as it is before the answer
        echo(f"ctxasm: {warning}", err=True)
    answered = _answer(result, reasoning, readable=not as_json, quiet=quiet)
    reported = True
    if as_json:
        output = result.to_dict()
        output["hidden_matches"] = hidden
        if answered is not None:
            output["answer"], output["citations"] = answered[0], _citations(answered[1])
            reported = output["citations"] is not None
        echo(json.dumps(output, ensure_ascii=False, indent=2))
    if answered is not None:
        from ctxasm.cli.citations_cmd import print_citation_problems

        checked = answered[1]
        if checked is not None:
            print_citation_problems(checked)
        if checked is None or not checked.all_valid or not reported:
            raise typer.Exit(EXIT_FAILED)


def _check_html(html: str, store: str, config: Path | None) -> None:
    """Exit 2 when ``--html`` names no file (``-``: standard output carries what ``ask``
    prints; a folder) or a file ``ask`` reads: the store's database (or a journal beside it) or
    the config file. The page would replace it: a whole store lost."""
    from ctxasm.batch.files import check_not_input
    from ctxasm.cli.report_view import check_page_target
    from ctxasm.cli.request_input import check_not_config
    from ctxasm.errors import CtxasmError, RequestError
    from ctxasm.store import store_files

    try:
        check_page_target(html, "html", stdout="what ask prints")
        replaced = "the page would replace the store"
        target = os.path.realpath(html)
        for path in store_files(store):  # a Path: a file named "-" is no standard input
            check_not_input(Path(path), html, field="html", replaced=replaced)
            # by name too: a journal that does not exist now (a store closed cleanly has no
            # -wal or -shm) is created when ask opens the store, and the page with it
            if os.path.realpath(path) == target:
                raise RequestError(
                    f"the output {html} is the store's file {path}: {replaced}; choose "
                    "another output file",
                    field="html",
                )
        check_not_config(config, html, "html", "the page")
    except CtxasmError as error:
        _fail_with(error)


def _citations(checked: Any) -> dict[str, Any] | None:
    """The citation check as JSON, or ``None`` (said on standard error) when it would be out
    of proportion to the answer: the prompt and the answer are printed all the same."""
    from ctxasm.errors import CtxasmError

    if checked is None:  # said already
        return None
    try:
        data: dict[str, Any] = checked.to_dict()
    except CtxasmError as error:
        echo(f"ctxasm: the citation check is left out (citations: null): {error.message}", err=True)
        return None
    return data


def _assemble_from_store(
    question: str,
    store: str,
    asker: tuple[str | None, str | None, str | None],
    *,
    k: int,
    allow_public: bool,
    config: Path | None,
    fields: dict[str, Any],
) -> tuple[Any, bool, bool]:
    """The assembly of what ``asker`` (principal, tenant, groups) may read in ``store``,
    whether the store holds matches that ``asker`` may not read when it may read none (see
    :meth:`ctxasm.store.Store.hidden_matches`: one bit, nothing about which), and whether its
    model is a reasoning model (``reasoning`` in the registry, the config's overrides
    included)."""
    from ctxasm.assembler import Assembler
    from ctxasm.cli.request_input import config_file
    from ctxasm.data import Principal
    from ctxasm.errors import CtxasmError
    from ctxasm.store import open_store

    principal, tenant, groups = asker
    try:
        assembler = Assembler(config_file(config))
        # Principal checks the names (blank, control characters such as NUL) before any SQL.
        who = (
            None
            if principal is None
            else Principal(principal, tenant, tuple(_names(groups, "--groups") or ()))
        )
        opened = open_store(store, create=False)
        passages = opened.retrieve(question, who, k, allow_public=allow_public)
        hidden = not passages and opened.hidden_matches(question, who, allow_public=allow_public)
        request: dict[str, Any] = {
            "query": question,
            "passages": passages,
            "allow_public": allow_public,
            **fields,
        }
        if who is not None:
            request["principal"] = {"id": who.id, "tenant": who.tenant, "groups": list(who.groups)}
        result = assembler.assemble(request)
        reasoning = assembler.config.models.get(result.report.model).reasoning
        return result, hidden, reasoning
    except CtxasmError as error:
        _fail_with(error)


def _hidden_notice(has_principal: bool, allow_public: bool) -> str:
    """What ``ask`` says when every match is one the asker may not read (never which)."""
    who = "this principal" if has_principal else "an asker without --principal"
    public = (
        "" if allow_public else " (documents with neither tenant nor readers need --allow-public)"
    )
    return (
        f"no context {who} may read: the store holds documents that match, but {who} may not "
        f"read them{public}. Which documents they are is not shown."
    )


def _print_prompt(result: Any, *, quiet: bool, hidden: str | None = None) -> None:
    """The prompt on stdout; the report on stderr unless ``quiet``. ``hidden`` (matches exist
    that the asker may not read) is said on stderr even when ``quiet``."""
    if result.system is not None:
        echo(f"--- system ---\n{result.system}\n")
    for message in result.messages:
        echo(f"--- {message['role']} ---\n{message['content']}\n")
    if result.text is not None:
        echo(result.text)
    if not quiet:
        from ctxasm.cli.report_view import print_report

        print_report(result.report.to_dict(), hidden=hidden)
    elif hidden is not None:
        echo(f"ctxasm: {hidden}", err=True)


def chat_messages(result: Any) -> list[dict[str, str]]:
    """The prompt as OpenAI chat messages, whatever its format: a separate system prompt
    (anthropic) goes first; a text prompt (markdown, text) is one user message."""
    messages = [dict(message) for message in result.messages]
    if result.system is not None:
        messages.insert(0, {"role": "system", "content": result.system})
    if not messages and result.text is not None:
        messages.append({"role": "user", "content": result.text})
    return messages


def _answer(result: Any, reasoning: bool, *, readable: bool, quiet: bool) -> tuple[str, Any] | None:
    """The model's answer and its citation check, when an endpoint is configured (printed when
    ``readable``). The model may write at most the output the budget reserved: sent as
    ``max_tokens``, which every OpenAI-compatible server takes, or for a ``reasoning`` model
    as ``max_completion_tokens``, the one OpenAI's reasoning models take (they refuse
    ``max_tokens``, and count their hidden reasoning against the limit)."""
    base = os.environ.get("CTXASM_LLM_BASE_URL")
    if not base:
        if not quiet:
            echo(
                "ctxasm: no model endpoint configured; set CTXASM_LLM_BASE_URL (an "
                "OpenAI-compatible API) and CTXASM_LLM_API_KEY to send this prompt and check "
                "the answer's citations",
                err=True,
            )
        return None
    from ctxasm.citations import check_citations
    from ctxasm.cli.citations_cmd import print_citation_text
    from ctxasm.errors import CtxasmError

    body = {
        "model": os.environ.get("CTXASM_LLM_MODEL", result.report.model),
        "messages": chat_messages(result),
        "max_completion_tokens" if reasoning else "max_tokens": result.report.budget.reserve_output,
    }
    answer = _complete(base, body, REASONING_SECONDS if reasoning else ANSWER_SECONDS)
    try:
        checked = check_citations(answer, result)
    except CtxasmError as error:  # an answer no check can be made of: it is printed all the same
        checked = None
        echo(f"ctxasm: the citation check is left out (citations: null): {error.message}", err=True)
    if readable:
        echo(f"--- answer ---\n{answer}\n\n--- citations ---")
        if checked is not None:
            print_citation_text(checked)
    return answer, checked


# The most ctxasm waits for a model's answer (the whole call; a reasoning model thinks for
# minutes before it answers), and the most it reads of it.
ANSWER_SECONDS = 120.0
REASONING_SECONDS = 600.0
ANSWER_BYTES = 16 * 1024 * 1024


def _complete(base: str, body: dict[str, Any], seconds: float) -> str:
    """The answer of an OpenAI-compatible chat-completions endpoint, waited for at most
    ``seconds`` (see :mod:`ctxasm.endpoint` for what the call refuses). An answer the output
    limit cut is said to be cut (on standard error), and an empty one so cut fails: the model,
    a reasoning one, spent the limit thinking."""
    from ctxasm.endpoint import EndpointError, endpoint_url, post_json

    key = os.environ.get("CTXASM_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY") or ""
    try:
        url = endpoint_url(base, "chat/completions", name="CTXASM_LLM_BASE_URL")
        data = post_json(
            url,
            body,
            {"authorization": f"Bearer {key}"},
            timeout=seconds,
            max_bytes=ANSWER_BYTES,
        )
    except EndpointError as error:
        _fail(f"the model endpoint failed: {error.message}", EXIT_FAILED)
    answer = _content(data)
    if answer is None:
        _fail(
            "the model endpoint failed: its answer has no choices[0].message.content text (an "
            "OpenAI chat completion)",
            EXIT_FAILED,
        )
    if _finish_reason(data) == "length":
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if not answer.strip():
            _fail(
                f"the model wrote no answer within its limit of {limit} output tokens (a "
                "reasoning model spends them thinking first): raise reserve_output_tokens",
                EXIT_FAILED,
            )
        echo(f"ctxasm: the answer was cut at the limit of {limit} output tokens", err=True)
    return answer


def _finish_reason(data: dict[str, Any]) -> Any:
    """``choices[0].finish_reason`` of a chat completion (``None`` where it has none)."""
    first = data["choices"][0]  # there, since the content was read
    return first.get("finish_reason")


def _content(data: Any) -> str | None:
    """``choices[0].message.content`` of a chat completion, when it is text."""
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else None
