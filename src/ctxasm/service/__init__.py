"""The HTTP service (``ctxasm serve``); needs the ``service`` extra (FastAPI, uvicorn)."""
