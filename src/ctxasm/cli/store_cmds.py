"""``ctxasm index``, ``ctxasm delete`` and ``ctxasm ask``: a document store on the command line.

Sending the assembled prompt to a model is optional: set ``CTXASM_LLM_BASE_URL`` to an
OpenAI-compatible API (for example ``https://api.openai.com/v1``), ``CTXASM_LLM_API_KEY`` (or
``OPENAI_API_KEY``) and optionally ``CTXASM_LLM_MODEL`` (default: the ``--model`` name).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxasm.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED
from ctxasm.cli.exits import fail as _fail
from ctxasm.cli.exits import fail_with as _fail_with

if TYPE_CHECKING:
    pass

__all__ = ["ask_command", "delete_command", "index_command"]


StoreOption = Annotated[
    str,
    typer.Option(
        "--store",
        help="Store URL: sqlite:///path.db (default: $CTXASM_STORE).",
        envvar="CTXASM_STORE",
    ),
]


def _names(raw: str | None) -> list[str] | None:
    if raw is None:
        return None
    return [name.strip() for name in raw.split(",") if name.strip()]


def index_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders (.txt .md .html .jsonl).")],
    store: StoreOption,
    tenant: Annotated[
        str | None, typer.Option("--tenant", help="Tenant of documents that name none.")
    ] = None,
    readers: Annotated[
        str | None,
        typer.Option("--readers", help="Comma-separated readers (users or groups) for them."),
    ] = None,
    chunk_tokens: Annotated[int, typer.Option("--chunk-tokens", min=8)] = 256,
    overlap: Annotated[int, typer.Option("--overlap", min=0)] = 32,
    progress: Annotated[
        bool | None,
        typer.Option("--progress/--no-progress", help="Progress bar (default: on a terminal)."),
    ] = None,
) -> None:
    """Ingest documents: chunk them by tokens with overlap, keep offsets and access data."""
    from ctxasm.errors import CtxasmError
    from ctxasm.store import index_paths, open_store

    if overlap > chunk_tokens // 2:
        _fail(f"--overlap must be at most half of --chunk-tokens ({chunk_tokens // 2})", 2)
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        _fail(f"no such file or folder: {missing[0]}", EXIT_BAD_INPUT)
    try:
        opened = open_store(store)
        show = sys.stderr.isatty() if progress is None else progress
        if show:
            from rich.progress import Progress

            with Progress(transient=True) as bar:
                task = bar.add_task("indexing", total=None)
                report = index_paths(
                    opened,
                    paths,
                    tenant=tenant,
                    readers=_names(readers),
                    chunk_tokens=chunk_tokens,
                    overlap=overlap,
                    progress=lambda done, total: bar.update(task, completed=done, total=total),
                )
        else:
            report = index_paths(
                opened,
                paths,
                tenant=tenant,
                readers=_names(readers),
                chunk_tokens=chunk_tokens,
                overlap=overlap,
            )
    except CtxasmError as error:
        _fail_with(error)
    for path, reason in report.failed:
        typer.echo(f"ctxasm: skipped {path}: {reason}", err=True)
    if report.public:
        typer.echo(
            f"ctxasm: {report.public} document(s) have neither tenant nor readers: they are "
            "public, and `ctxasm ask` shows them only with --allow-public",
            err=True,
        )
    typer.echo(
        f"ctxasm: {report.added} added, {report.updated} updated, {report.unchanged} unchanged "
        f"({report.chunks} chunks written), {len(report.failed)} failed",
        err=True,
    )
    if report.failed:
        raise typer.Exit(EXIT_FAILED)


def delete_command(
    doc_id: Annotated[str, typer.Argument(help="The document to remove.")],
    store: StoreOption,
) -> None:
    """Remove a document with its chunks, readers and index rows."""
    from ctxasm.errors import CtxasmError
    from ctxasm.store import open_store

    try:
        removed = open_store(store, create=False).delete(doc_id)
    except CtxasmError as error:
        _fail_with(error)
    if not removed:
        _fail(f"no document {doc_id!r} in the store", EXIT_BAD_INPUT)
    typer.echo(f"ctxasm: deleted {doc_id}", err=True)


def ask_command(
    question: Annotated[str, typer.Argument(help="The question.")],
    store: StoreOption,
    principal: Annotated[
        str | None, typer.Option("--principal", help="Who asks (access is checked for them).")
    ] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Their tenant.")] = None,
    groups: Annotated[
        str | None, typer.Option("--groups", help="Their groups, comma-separated.")
    ] = None,
    model: Annotated[str, typer.Option("--model", help="Target model.")] = "gpt-4o",
    budget: Annotated[
        int | None, typer.Option("--budget", min=1, help="Most tokens for the sources.")
    ] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="Chunks to retrieve.")] = 50,
    allow_public: Annotated[
        bool,
        typer.Option("--allow-public", help="Also use documents with neither tenant nor readers."),
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print one JSON object: the result (and answer, citations)."),
    ] = False,
) -> None:
    """Retrieve what the principal may read, assemble the prompt, and (with a model endpoint
    configured) ask the model and check its citations."""
    from ctxasm.assembler import Assembler
    from ctxasm.errors import CtxasmError
    from ctxasm.model import Principal
    from ctxasm.store import open_store

    if principal is None and (tenant or groups):
        _fail("--tenant and --groups need --principal", EXIT_BAD_INPUT)
    try:
        # Principal checks the names (blank, control characters such as NUL) before any SQL.
        who = (
            None if principal is None else Principal(principal, tenant, tuple(_names(groups) or ()))
        )
        passages = open_store(store, create=False).retrieve(
            question, who, k, allow_public=allow_public
        )
        request: dict[str, Any] = {
            "query": question,
            "passages": passages,
            "model": model,
            "allow_public": allow_public,
        }
        if who is not None:
            request["principal"] = {"id": who.id, "tenant": who.tenant, "groups": list(who.groups)}
        if budget is not None:
            request["max_context_tokens"] = budget
        result = Assembler(os.environ.get("CTXASM_CONFIG") or None).assemble(request)
    except CtxasmError as error:
        _fail_with(error)
    if not as_json:
        for message in result.messages:
            typer.echo(f"--- {message['role']} ---\n{message['content']}\n")
        if result.text is not None:
            typer.echo(result.text)
        from ctxasm.cli.report_view import print_report

        print_report(result.report)
    answered = _answer(result, model, quiet=as_json)
    if as_json:
        output = result.to_dict()
        if answered is not None:
            output["answer"], output["citations"] = answered
        typer.echo(json.dumps(output, ensure_ascii=False, indent=2))
    if answered is not None and answered[1]["invalid"]:
        raise typer.Exit(EXIT_FAILED)


def _answer(result: Any, model: str, *, quiet: bool) -> tuple[str, dict[str, Any]] | None:
    """The model's answer and its citation check, when an endpoint is configured."""
    base = os.environ.get("CTXASM_LLM_BASE_URL")
    if not base:
        typer.echo(
            "ctxasm: no model endpoint configured; set CTXASM_LLM_BASE_URL (an OpenAI-compatible "
            "API) and CTXASM_LLM_API_KEY to send this prompt and check the answer's citations",
            err=True,
        )
        return None
    import urllib.error
    import urllib.request

    from ctxasm.citations import check_citations

    key = os.environ.get("CTXASM_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY") or ""
    body = {
        "model": os.environ.get("CTXASM_LLM_MODEL", model),
        "messages": [dict(m) for m in result.messages],
    }
    request = urllib.request.Request(
        f"{base.rstrip('/')}/chat/completions",
        data=json.dumps(body).encode("utf-8"),
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.load(response)["choices"][0]["message"]["content"]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        _fail(f"the model endpoint failed: {exc}", EXIT_FAILED)
    report = check_citations(answer, result).to_dict()
    if not quiet:
        typer.echo(f"--- answer ---\n{answer}\n")
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
    return answer, report
