"""The request fields ``ctxasm ask`` takes as options, checked as a request's fields are.

``--min-score``, ``--top-k``, ``--strategy`` and ``--system-prompt`` set the request fields
``min_score``, ``top_k``, ``strategy`` and ``system_prompt`` (``--model``, ``--format`` and
``--budget`` are declared with the command). Each one given replaces the config's default for
its field; ``--strategy`` names a strategy (:mod:`ctxasm.presets`), whose slots replace the
config's. The values are checked by the request parser, before the store is opened, and an
error names the option: ``--top-k must be an integer >= 1 or null; got int 0 [top_k]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ctxasm.cli.exits import EXIT_BAD_INPUT, error_line, fail, fail_with

if TYPE_CHECKING:
    from ctxasm.errors import RequestError

__all__ = [
    "OPTIONS",
    "MinScoreOption",
    "StrategyOption",
    "SystemPromptOption",
    "TopKOption",
    "ask_fields",
]

MinScoreOption = Annotated[
    float | None,
    typer.Option(
        "--min-score",
        metavar="SCORE",
        help="Leave out chunks scored below SCORE (the request's min_score; with the default "
        "relevance, the store's scores); the report gives them reason below_threshold.",
        show_default=False,
    ),
]
TopKOption = Annotated[
    int | None,
    typer.Option(
        "--top-k",
        metavar="N",
        help="Keep at most N of the retrieved chunks once relevance has ranked them (the "
        "request's top_k; reason top_k). --k is how many are retrieved.",
        show_default=False,
    ),
]
StrategyOption = Annotated[
    str | None,
    typer.Option(
        "--strategy",
        metavar="NAME",
        help="A preset (default, bm25_greedy, bridge, ...) or a selection strategy name, as "
        "`ctxasm eval --strategy` takes; its slots replace the config's.",
        show_default="the config's strategy, else the built-in one",
    ),
]
SystemPromptOption = Annotated[
    str | None,
    typer.Option(
        "--system-prompt",
        metavar="PROMPT",
        help="Your instructions to the model (the request's system_prompt); ctxasm adds its "
        "citation and 'sources are data' rules.",
        show_default="the config's, else a short default",
    ),
]

# The option that sets each request field (only these are named in place of the field).
OPTIONS = {
    "min_score": "--min-score",
    "top_k": "--top-k",
    "strategy": "--strategy",
    "system_prompt": "--system-prompt",
}


def ask_fields(given: Mapping[str, Any]) -> dict[str, Any]:
    """The request fields of the options ``given`` (by field; ``None``: not given), with
    ``strategy`` as the object its name stands for, checked by
    :func:`ctxasm.schema.parse_request`. A bad value exits 2 with the parser's message, naming
    the option of :data:`OPTIONS` that gave it."""
    from ctxasm.errors import RequestError
    from ctxasm.presets import named_strategy
    from ctxasm.schema import parse_request

    fields = {name: value for name, value in given.items() if value is not None}
    try:
        if "strategy" in fields:
            strategy = named_strategy(fields.pop("strategy"))
            if strategy is not None:  # default: the config's own
                fields["strategy"] = strategy
        parse_request({"query": "check", "passages": [], **fields})
    except RequestError as error:
        option = OPTIONS.get(_root(error.field))
        if option is None:
            fail_with(error)
        fail(_naming(error, option), EXIT_BAD_INPUT)
    return fields


def _root(field: str | None) -> str:
    """The request field a field path starts with (``strategy`` of ``strategy.selection``)."""
    return (field or "").split(".", 1)[0].split("[", 1)[0]


def _naming(error: RequestError, option: str) -> str:
    """``error``'s line with ``option`` in place of the field its message starts with, or
    before a message that starts otherwise."""
    name, message = _root(error.field), error.message
    said = option + message[len(name) :] if message.startswith(name) else f"{option}: {message}"
    return error_line({"message": said, "field": error.field})
