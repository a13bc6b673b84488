"""ctxasm: the context assembler for retrieval-augmented generation.

``ctxasm.assemble(query, passages, model="gpt-4o")`` returns an :class:`Assembly` whose prompt
provably fits the model, with a report of every passage kept or dropped.
"""

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
    "testing",
]
