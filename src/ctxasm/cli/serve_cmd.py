"""``ctxasm serve``: the HTTP service (FastAPI + uvicorn)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ctxasm.cli.exits import EXIT_BAD_INPUT, error_line, fail
from ctxasm.errors import install_hint

__all__ = ["BLAS_THREADS_ENV", "serve_command"]

BLAS_THREADS_ENV = "OPENBLAS_NUM_THREADS"


HostOption = Annotated[str, typer.Option("--host", metavar="ADDRESS", help="Address to listen on.")]
PortOption = Annotated[
    int, typer.Option("--port", min=1, max=65535, metavar="N", help="Port to listen on.")
]
WorkersOption = Annotated[
    int, typer.Option("--workers", min=1, metavar="N", help="Worker processes.")
]
ServeConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="Config file (default: $CTXASM_CONFIG).",
        show_default=False,
    ),
]
AllowTemplatesOption = Annotated[
    bool,
    typer.Option(
        "--allow-request-templates",
        help="Accept a Jinja2 template in requests (default: [service] "
        "allow_request_templates, else refused with 422).",
    ),
]


def serve_command(
    host: HostOption = "127.0.0.1",
    port: PortOption = 8000,
    workers: WorkersOption = 1,
    config: ServeConfigOption = None,
    allow_request_templates: AllowTemplatesOption = False,
) -> None:
    """Serve the JSON contract over HTTP: /v1/assemble, /v1/check-citations, /v1/models,
    /healthz, /metrics, /docs. Set CTXASM_API_KEY to require an API key. Slow clients are
    closed, and long work is stopped: see [service] in the config (header_timeout_s,
    body_timeout_s, request_timeout_s, keep_alive_s, max_connections)."""
    if not host.strip():  # --host "$HOST" with HOST unset: asyncio binds "" to every interface
        fail(
            f"--host must be an address or a host name, got {host!r}, which would listen on "
            "every interface; give 127.0.0.1 for this machine only, or write 0.0.0.0 to "
            "listen on every interface [host]",
            EXIT_BAD_INPUT,
        )
    try:
        import uvicorn
    except ImportError:
        fail(f"the service needs: {install_hint('service')}", EXIT_BAD_INPUT)
    # Requests run side by side in threads, and numpy's OpenBLAS would start threads of its own
    # for each product: on a busy machine they wait on one another (semantic dedup of 2,000
    # passages took 8.5 s instead of 0.9). One BLAS thread per process, unless the environment
    # says otherwise; set before numpy loads, which reads it then.
    os.environ.setdefault(BLAS_THREADS_ENV, "1")
    from ctxasm.errors import CtxasmError
    from ctxasm.service.app import ALLOW_TEMPLATES_ENV
    from ctxasm.service.protocol import HEADER_TIMEOUT_ENV, SEND_TIMEOUT_ENV

    if config is not None:
        os.environ["CTXASM_CONFIG"] = str(config)
    if allow_request_templates:
        os.environ[ALLOW_TEMPLATES_ENV] = "1"
    try:  # fail here, with a clear message, rather than in every worker
        from ctxasm.service.app import create_app_from_env

        settings = create_app_from_env().state.service_settings
    except CtxasmError as error:  # named by its field, as every command names it
        fail(error_line(error.to_dict()), EXIT_BAD_INPUT)
    os.environ[HEADER_TIMEOUT_ENV] = str(settings["header_timeout_s"])
    os.environ[SEND_TIMEOUT_ENV] = str(settings["body_timeout_s"])
    uvicorn.run(
        "ctxasm.service.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        http="ctxasm.service.protocol:HeaderTimeoutProtocol",
        timeout_keep_alive=settings["keep_alive_s"],
        limit_concurrency=settings["max_connections"],
        timeout_graceful_shutdown=30,
        log_level="info",
    )
