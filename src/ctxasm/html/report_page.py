"""The HTML report of one assembly, and the playground page that draws the same view.

Both render from the result JSON (what ``ctxasm assemble`` prints and ``POST /v1/assemble``
returns): the page embeds it and ``view.js`` builds the view in the browser, so a result file,
``assemble --html``, ``ask --html`` and the playground show one and the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ctxasm.data import Assembly
from ctxasm.errors import RequestError
from ctxasm.html.page import asset, page

__all__ = ["render_playground_html", "render_report_html", "result_of"]

_JSON_KINDS = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return _JSON_KINDS.get(type(value), type(value).__name__)


def result_of(value: Any) -> dict[str, Any]:
    """The result to draw: a result JSON (with a ``report`` object) or a bare report (with
    ``budget`` and ``included``), which is wrapped as one. Anything else is a
    :class:`~ctxasm.errors.RequestError` naming the field that is wrong."""
    if not isinstance(value, dict):
        raise RequestError(
            f"a result must be a JSON object, got {_kind(value)}; give the JSON that ctxasm "
            "assemble, ctxasm ask --json or POST /v1/assemble returns",
            field="result",
        )
    if "report" not in value and "budget" in value and "included" in value:
        value = {"report": value}
    report = value.get("report")
    if not isinstance(report, dict):
        got = f"got {_kind(report)}" if "report" in value else "it has none"
        if "report" not in value and "query" in value and "passages" in value:
            got += " (this is a request: assemble it first)"
        raise RequestError(
            f"the result's report must be an object, {got}; give the JSON that ctxasm "
            "assemble, ctxasm ask --json or POST /v1/assemble returns",
            field="report",
        )
    if not isinstance(report.get("budget"), dict):
        raise RequestError(
            f"report.budget must be an object, got {_kind(report.get('budget'))}",
            field="report.budget",
        )
    for name in ("included", "excluded"):
        if not isinstance(report.get(name, []), list):
            raise RequestError(
                f"report.{name} must be an array, got {_kind(report[name])}",
                field=f"report.{name}",
            )
    checked: dict[str, Any] = value
    return checked


def render_report_html(result: Assembly | Mapping[str, Any]) -> str:
    """One self-contained page for ``result`` (an :class:`~ctxasm.data.Assembly`, or its JSON):
    the budget bar, the included passages in prompt order with why each was chosen, the
    excluded ones grouped by reason, the rendered prompt with its source labels linked to their
    rows, and the model, cost and timings. It loads nothing from anywhere (its policy forbids
    it), so it opens from disk and offline."""
    if isinstance(result, Assembly):
        result = result.to_dict()
    return page(
        title="ctxasm report",
        body=asset("report_body.html"),
        data=result_of(dict(result)),
        scripts=("view.js", "report.js"),
    )


def render_playground_html(
    examples: Mapping[str, Mapping[str, Any]], *, key_required: bool, endpoint: str
) -> str:
    """The playground: ``examples`` (name to request) to pick from, an editor, and a Run button
    that posts to ``endpoint`` (relative to the page) and draws the answer with the report's
    view. ``key_required`` shows the API key field; the key is never in the page."""
    data = {"examples": dict(examples), "key_required": key_required, "endpoint": endpoint}
    return page(
        title="ctxasm playground",
        body=asset("playground_body.html"),
        data=data,
        scripts=("view.js", "playground.js"),
        connect=True,
    )
