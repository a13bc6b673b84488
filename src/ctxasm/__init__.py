"""ctxasm: the context assembler for retrieval-augmented generation.

``ctxasm.assemble(query, passages, model="gpt-4o")`` returns an :class:`Assembly` whose prompt
provably fits the model, with a report of every passage kept or dropped.
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxasm import testing
    from ctxasm.assembler import Assembler, assemble
    from ctxasm.builder import BuiltContext, ContextBuilder, context_for_chat
    from ctxasm.caches import clear_caches
    from ctxasm.citations import Citation, CitationReport, check_citations, link_citations
    from ctxasm.config import AssemblerConfig
    from ctxasm.data import (
        Assembly,
        Budget,
        Candidate,
        Exclusion,
        Included,
        Message,
        Passage,
        Principal,
        Reason,
        Report,
        Request,
    )
    from ctxasm.errors import (
        AccessPolicyError,
        BudgetError,
        ConfigError,
        CtxasmError,
        RequestError,
        TokenizerError,
        UnknownModelError,
        UnknownStrategyError,
    )
    from ctxasm.html import render_report_html
    from ctxasm.models import ModelRegistry, ModelSpec, default_registry
    from ctxasm.registry import register
    from ctxasm.retrieval import Retriever
    from ctxasm.schema import parse_request
    from ctxasm.strategy import ParamError, Strategy

__version__ = "0.1.0"

__all__ = [
    "AccessPolicyError",
    "Assembler",
    "AssemblerConfig",
    "Assembly",
    "Budget",
    "BudgetError",
    "BuiltContext",
    "Candidate",
    "Citation",
    "CitationReport",
    "ConfigError",
    "ContextBuilder",
    "CtxasmError",
    "Exclusion",
    "Included",
    "Message",
    "ModelRegistry",
    "ModelSpec",
    "ParamError",
    "Passage",
    "Principal",
    "Reason",
    "Report",
    "Request",
    "RequestError",
    "Retriever",
    "Strategy",
    "TokenizerError",
    "UnknownModelError",
    "UnknownStrategyError",
    "__version__",
    "assemble",
    "check_citations",
    "clear_caches",
    "context_for_chat",
    "default_registry",
    "link_citations",
    "parse_request",
    "register",
    "render_report_html",
    "testing",
]


# Where each public name is defined. A name is imported when it is first used, so that
# `import ctxasm`, and every `ctxasm` command (they import ctxasm.cli), loads only what it uses.
_EXPORTS: dict[str, str] = {
    "Assembler": "ctxasm.assembler",
    "assemble": "ctxasm.assembler",
    "BuiltContext": "ctxasm.builder",
    "ContextBuilder": "ctxasm.builder",
    "context_for_chat": "ctxasm.builder",
    "clear_caches": "ctxasm.caches",
    "Citation": "ctxasm.citations",
    "CitationReport": "ctxasm.citations",
    "check_citations": "ctxasm.citations",
    "link_citations": "ctxasm.citations",
    "AssemblerConfig": "ctxasm.config",
    "Assembly": "ctxasm.data",
    "Budget": "ctxasm.data",
    "Candidate": "ctxasm.data",
    "Exclusion": "ctxasm.data",
    "Included": "ctxasm.data",
    "Message": "ctxasm.data",
    "Passage": "ctxasm.data",
    "Principal": "ctxasm.data",
    "Reason": "ctxasm.data",
    "Report": "ctxasm.data",
    "Request": "ctxasm.data",
    "AccessPolicyError": "ctxasm.errors",
    "BudgetError": "ctxasm.errors",
    "ConfigError": "ctxasm.errors",
    "CtxasmError": "ctxasm.errors",
    "RequestError": "ctxasm.errors",
    "TokenizerError": "ctxasm.errors",
    "UnknownModelError": "ctxasm.errors",
    "UnknownStrategyError": "ctxasm.errors",
    "ModelRegistry": "ctxasm.models",
    "ModelSpec": "ctxasm.models",
    "default_registry": "ctxasm.models",
    "register": "ctxasm.registry",
    "render_report_html": "ctxasm.html",
    "Retriever": "ctxasm.retrieval",
    "parse_request": "ctxasm.schema",
    "ParamError": "ctxasm.strategy",
    "Strategy": "ctxasm.strategy",
    "testing": "ctxasm.testing",
}


def __getattr__(name: str) -> object:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'ctxasm' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if module_name == f"ctxasm.{name}" else getattr(module, name)
    globals()[name] = value  # the next use is a plain attribute lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
