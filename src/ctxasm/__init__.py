"""ctxasm: the context assembler for retrieval-augmented generation.

``ctxasm.assemble(query, passages, model="gpt-4o")`` returns an :class:`Assembly` whose prompt
provably fits the model, with a report of every passage kept or dropped.
"""

from ctxasm import testing
from ctxasm.assembler import Assembler, assemble
from ctxasm.builder import BuiltContext, ContextBuilder, Retriever, context_for_chat
from ctxasm.citations import Citation, CitationReport, check_citations, link_citations
from ctxasm.config import AssemblerConfig
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
from ctxasm.model import (
    Assembly,
    Budget,
    Exclusion,
    Included,
    Message,
    Passage,
    Principal,
    Reason,
    Report,
    Request,
)
from ctxasm.models import ModelRegistry, ModelSpec, default_registry
from ctxasm.schema import parse_request

__version__ = "0.1.0"

__all__ = [
    "AccessPolicyError",
    "Assembler",
    "AssemblerConfig",
    "Assembly",
    "Budget",
    "BudgetError",
    "BuiltContext",
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
    "Passage",
    "Principal",
    "Reason",
    "Report",
    "Request",
    "RequestError",
    "Retriever",
    "TokenizerError",
    "UnknownModelError",
    "UnknownStrategyError",
    "__version__",
    "assemble",
    "check_citations",
    "context_for_chat",
    "default_registry",
    "link_citations",
    "parse_request",
    "testing",
]
