"""ctxasm: the context assembler for retrieval-augmented generation.

``ctxasm.assemble(query, passages, model="gpt-4o")`` returns an :class:`Assembly` whose prompt
provably fits the model, with a report of every passage kept or dropped.
"""

from typing import TYPE_CHECKING

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
from ctxasm.models import ModelRegistry, ModelSpec, default_registry
from ctxasm.registry import register
from ctxasm.retrieval import Retriever
from ctxasm.schema import parse_request
from ctxasm.strategy import ParamError, Strategy

if TYPE_CHECKING:
    from ctxasm import testing

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
    "testing",
]


def __getattr__(name: str) -> object:
    # ctxasm.testing (the strategy contract checks) is imported on first use: plain
    # `import ctxasm` stays cheap, and `ctxasm.testing` still works after it.
    if name == "testing":
        import importlib

        return importlib.import_module("ctxasm.testing")
    raise AttributeError(f"module 'ctxasm' has no attribute {name!r}")
