"""Output formats by name."""

from __future__ import annotations

from ctxasm.errors import RequestError
from ctxasm.formatting.anthropic import AnthropicFormat
from ctxasm.formatting.base import Format, PromptParts, Rendered
from ctxasm.formatting.markdown import MarkdownFormat
from ctxasm.formatting.openai import OpenAIChatFormat
from ctxasm.formatting.text import TextFormat
from ctxasm.validation import shown

__all__ = ["FORMATS", "Format", "PromptParts", "Rendered", "get_format"]

FORMATS: dict[str, Format] = {
    "openai": OpenAIChatFormat(),
    "anthropic": AnthropicFormat(),
    "markdown": MarkdownFormat(),
    "text": TextFormat(),
}
_NAMES = (*sorted(FORMATS), "template")


def get_format(name: str, template: str | None = None) -> Format:
    """The format called ``name``; ``template`` is the Jinja2 source for ``"template"``."""
    if name == "template":
        if template is None:
            raise RequestError(
                "format 'template' needs a template: give the Jinja2 source in the request's "
                "template field",
                field="template",
            )
        from ctxasm.formatting.template import TemplateFormat

        return TemplateFormat(template)
    if template is not None:
        raise RequestError(
            f"template is only used with format 'template', not {name!r}", field="template"
        )
    found = FORMATS.get(name)
    if found is None:
        raise RequestError(
            f"unknown format {shown(name)}; choose one of {', '.join(_NAMES)}", field="format"
        )
    return found
