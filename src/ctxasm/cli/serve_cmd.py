"""``ctxasm serve``: the HTTP service (FastAPI + uvicorn)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["serve_command"]


def serve_command(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8000,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Worker processes.")] = 1,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="Config file (default: $CTXASM_CONFIG).", show_default=False),
    ] = None,
) -> None:
    """Serve the JSON contract over HTTP: /v1/assemble, /v1/check-citations, /v1/models,
    /healthz, /metrics, /docs. Set CTXASM_API_KEY to require an API key."""
    try:
        import uvicorn
    except ImportError:
        typer.echo("ctxasm: error: the service needs: pip install 'ctxasm[service]'", err=True)
        raise typer.Exit(2) from None
    from ctxasm.errors import CtxasmError

    if config is not None:
        os.environ["CTXASM_CONFIG"] = str(config)
    try:  # fail here, with a clear message, rather than in every worker
        from ctxasm.service.app import create_app_from_env

        create_app_from_env()
    except CtxasmError as error:
        typer.echo(f"ctxasm: error: {error.message}", err=True)
        raise typer.Exit(2) from None
    uvicorn.run(
        "ctxasm.service.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        timeout_graceful_shutdown=30,
        log_level="info",
    )
