"""A user's Jinja2 template, rendered in a sandbox.

The template sees plain data only: ``system`` (your system prompt with ctxasm's rules),
``rules``, ``history`` (a list of ``{role, content}``), ``query``, ``sources`` (a list of
``{number, label, id, title, url, text, fenced, flags, warning}``; ``fenced`` is the text in a
backtick fence it cannot close, ``text`` is raw, ``id``, ``title`` and ``url`` are on one line
with no fence, bracket or label look-alike, ``warning`` is the guard's note or empty),
``sources_block`` (the standard fenced block, or the note saying there are no sources) and
``has_sources``. It runs in Jinja's immutable sandbox with strict
undefined variables: a template that names an unknown variable or reaches for attributes outside
the sandbox is refused with an error naming the ``template`` field. Render ``fenced`` (or
``sources_block``) to keep passages as data; raw ``text`` is your responsibility.

The work of a template is bounded per request (every render the verify stage does included): a
budget of steps, seconds and string sizes (:mod:`ctxasm.formatting.template_sandbox`); going over
it is a RequestError naming ``template`` and the limit.

Selection prices passages as in the standard fenced block; the verify stage then recounts the
rendered template exactly, so the request still never exceeds the budget.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ctxasm.data import Candidate
from ctxasm.errors import RequestError, UntokenizableError
from ctxasm.formatting.base import PromptParts, Rendered
from ctxasm.formatting.blocks import (
    RULES,
    FencedBlock,
    SourcesBlock,
    fence_for,
    flag_note,
    label,
)
from ctxasm.formatting.labels import neutral_id, neutral_text, neutral_title, neutral_url
from ctxasm.models import ModelSpec
from ctxasm.tokens import TokenCounter

__all__ = ["TemplateFormat", "compile_template"]

FIELD = "template"
_MAX_TEMPLATE_CHARS = 100_000
# A failed render that built more bytes than this is collected before the next one.
_COLLECTED_PAST = 16_000_000


@lru_cache(maxsize=64)
def compile_template(source: str) -> Any:
    """The compiled template, or a RequestError naming ``template``."""
    from jinja2 import StrictUndefined, TemplateSyntaxError

    from ctxasm.formatting.template_sandbox import BoundedEnvironment, RenderBudget, active_budget

    if len(source) > _MAX_TEMPLATE_CHARS:
        raise RequestError(
            f"template is longer than {_MAX_TEMPLATE_CHARS:,} characters", field=FIELD
        )
    environment = BoundedEnvironment(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True
    )
    # Jinja folds constant expressions while it compiles, through the sandbox's filters: a
    # budget of their own, not whatever a render before left in this context (spent, or past
    # its time, it made folding fail or not from one compile to the next).
    token = active_budget().set(RenderBudget())
    try:
        return environment.from_string(source)
    except TemplateSyntaxError as exc:
        raise RequestError(
            f"template has a syntax error on line {exc.lineno}: {exc.message}", field=FIELD
        ) from None
    except (RecursionError, SyntaxError):
        # jinja parses and compiles nested blocks by recursion, into Python source whose own
        # compiler limits nesting ("too many statically nested blocks", indentation levels)
        raise RequestError(
            "template nests its blocks or expressions too deeply to compile", field=FIELD
        ) from None
    finally:
        active_budget().reset(token)


def _source(candidate: Candidate, number: int) -> dict[str, Any]:
    passage = candidate.passage
    fence = fence_for(candidate.text)
    return {
        "number": number,
        "label": label(number),
        # metadata on one line, as the standard headers show it
        "id": neutral_id(passage.id),
        "title": None if passage.title is None else neutral_title(passage.title),
        "url": None if passage.url is None else neutral_url(passage.url),
        "text": candidate.text,
        "fenced": f"{fence}\n{neutral_text(candidate.text)}\n{fence}",
        "flags": list(candidate.flags),
        "warning": flag_note(candidate.flags).strip(),
    }


class TemplateFormat:
    """Text from a user template (see the module docstring)."""

    name = "template"
    block: SourcesBlock = FencedBlock()
    shows_every_id = True  # ``{{ s.id }}`` writes any source's id, titled or not

    def __init__(self, source: str) -> None:
        from ctxasm.formatting.template_sandbox import RenderBudget

        self.template = compile_template(source)
        # one budget for every render of one request (a format is built per request)
        self.budget = RenderBudget()

    def render(
        self, parts: PromptParts, context: str, sources: Sequence[Candidate] = ()
    ) -> Rendered:
        variables = {
            "system": parts.system,
            "rules": RULES,
            "history": [{"role": t.role, "content": t.content} for t in parts.history],
            "query": parts.query,
            "sources": [
                _source(c, n if parts.labels is None else parts.labels[c.id])
                for n, c in enumerate(sources, start=1)
            ],
            "sources_block": context,
            "has_sources": bool(sources),
        }
        try:
            text = self._text(variables)
        except RequestError as error:
            # Every template is also rendered without sources: to measure the prompt around
            # them for the budget, and for a request where no passage is relevant. One that
            # fails only then ("sources[0]") is told so. The failed render's frames, and all
            # it built (held in reference cycles), go before another render builds as much.
            error.__traceback__ = None
            if self.budget.built - self.budget.built_left > _COLLECTED_PAST:
                gc.collect()
            if sources or error.field != FIELD or not self._renders_with_a_source(variables):
                raise
            raise RequestError(f"{error.message}{_WITHOUT_SOURCES}", field=FIELD) from None
        if not text.isascii():
            try:
                text.encode()
            except UnicodeEncodeError as exc:
                raise RequestError(
                    f"template writes a lone surrogate (U+{ord(text[exc.start]):04X}), which is "
                    "not text a model can be sent",
                    field=FIELD,
                ) from None
        return Rendered((), None, text)

    def _renders_with_a_source(self, variables: dict[str, Any]) -> bool:
        """Whether the template renders with ``variables`` given one placeholder source."""
        try:
            self._text({**variables, "sources": [_PLACEHOLDER], "has_sources": True})
        except RequestError:
            return False
        return True

    def _text(self, variables: dict[str, Any]) -> str:
        """The template rendered with ``variables``, in the request's render budget; a
        RequestError naming ``template`` for whatever goes wrong in it."""
        from jinja2 import TemplateError
        from jinja2.exceptions import SecurityError, UndefinedError

        from ctxasm.formatting.template_sandbox import active_budget

        token = active_budget().set(self.budget)
        self.budget.start()
        try:
            text: str = self.template.render(variables)
        except RequestError:
            raise
        except UndefinedError as exc:
            raise RequestError(f"template: {_shortened(exc.message)}", field=FIELD) from None
        except SecurityError as exc:
            raise RequestError(
                f"template is not allowed to do that: {_shortened(str(exc))}", field=FIELD
            ) from None
        except TemplateError as exc:
            raise RequestError(f"template failed: {_shortened(str(exc))}", field=FIELD) from None
        except MemoryError:
            raise RequestError(
                "template needs more memory than a render may take; simplify it", field=FIELD
            ) from None
        except Exception as exc:
            # the template's own mistake (1/0, a bad index, a filter given the wrong kind of
            # value, runaway recursion): bad input, never an internal error
            raise RequestError(f"template failed: {_failure(exc)}", field=FIELD) from None
        finally:
            self.budget.stop()
            active_budget().reset(token)
        return text

    def count(self, rendered: Rendered, counter: TokenCounter, model: ModelSpec) -> int:
        try:
            # a server prepends its BOS to a prompt sent as one text (Llama 3, Mistral)
            return counter.count(rendered.text or "") + model.chat_template.text_start
        except UntokenizableError as error:
            # The passages were checked before the template wrote them: this is its own text.
            if error.field is not None:
                raise
            raise UntokenizableError(
                f"template writes text that cannot be counted: {error.message}", field=FIELD
            ) from None


_WITHOUT_SOURCES = (
    " when rendered with no sources, as ctxasm renders every template to measure the prompt "
    "around them and for a request where no passage is relevant: read sources only "
    "{% if has_sources %}"
)
# A source as a template sees one, to tell a template that fails only without sources.
_PLACEHOLDER: dict[str, Any] = {
    "number": 1,
    "label": label(1),
    "id": "passage",
    "title": None,
    "url": None,
    "text": "",
    "fenced": "```\n\n```",
    "flags": [],
    "warning": "",
}


def _failure(exc: Exception) -> str:
    """``exc`` named by its type, its message shortened (a KeyError repeats its key whole)."""
    try:
        message = _shortened(str(exc))
    except Exception:  # a message that cannot be made is no reason for an internal error
        message = ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _shortened(message: str | None) -> str:
    """An error's message, cut to 300 characters (it may quote what the template built)."""
    message = message or ""
    return message if len(message) <= 300 else message[:297] + "..."
