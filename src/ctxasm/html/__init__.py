"""Pages to look at an assembly: the self-contained HTML report, the service's playground, and
the evaluation tables with recall-versus-budget curves.

Every page is one file with its style and script inlined and a Content-Security-Policy that
forbids loading anything else, so it opens from disk and offline; data goes in as escaped JSON
and is drawn as text, never parsed as markup (see :mod:`ctxasm.html.page`).
"""

from __future__ import annotations

from ctxasm.html.eval_page import render_eval_html
from ctxasm.html.report_page import render_playground_html, render_report_html, result_of

__all__ = ["render_eval_html", "render_playground_html", "render_report_html", "result_of"]
