"""``ctxasm check-citations``: check a model's answer against the result it was assembled from.

Exit codes: 0 every citation names an included source (also when the answer cites none); 1 some
citation does not; 2 bad input (an unreadable file, a result that is not JSON or lacks
``report.included``), with a one-line message naming the field.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from ctxasm.cli.exits import EXIT_BAD_INPUT, EXIT_FAILED, echo, fail, fail_with

if TYPE_CHECKING:
    from ctxasm.citations import CitationReport

__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_RESULT_BYTES",
    "check_citations_command",
    "print_citation_text",
]

# The most RESULT and ANSWER may hold. A result holds at most a context window of text, with
# its report (a few MB); an answer is one model output (kB). Files far larger are no result or
# answer, and read whole they could fill the memory.
MAX_RESULT_BYTES = 256 * 1024 * 1024
MAX_ANSWER_BYTES = 64 * 1024 * 1024


def check_citations_command(
    result: Annotated[
        str,
        typer.Argument(
            metavar="RESULT",
            help="Result JSON of 'ctxasm assemble' (a file, or - for standard input).",
            show_default=False,
        ),
    ],
    answer: Annotated[
        str,
        typer.Argument(
            metavar="ANSWER",
            help="The model's answer: a text file (or a chat completion saved as JSON, "
            "OpenAI's or Anthropic's), or - for standard input.",
        ),
    ] = "-",
    as_json: Annotated[
        bool,
        typer.Option("--json/--text", help="Print the report as JSON, or as readable text."),
    ] = True,
    links: Annotated[
        bool,
        typer.Option(
            "--links", help="Print the answer with its valid citations as markdown links instead."
        ),
    ] = False,
) -> None:
    """Check the [Source N] citations of an answer against the sources of its result JSON."""
    from ctxasm.citations import check_citations, link_citations
    from ctxasm.errors import RequestError

    if result == "-" and answer == "-":
        _fail("RESULT and ANSWER cannot both be standard input; give a file for one")
    data = _result_json(_read(result, "result"), answer)
    text = _answer_text(_decode(_read(answer, "answer"), "answer"))
    try:
        report = check_citations(text, data)
        linked = link_citations(text, data) if links else None
    except RequestError as error:
        fail_with(error)
    if linked is not None:
        echo(linked, nl=False)
    elif as_json:
        try:
            data = report.to_dict()  # refused when out of proportion to the answer
        except RequestError as error:
            fail_with(error)
        echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        print_citation_text(report)
    print_citation_problems(report)
    if not report.all_valid:
        raise typer.Exit(EXIT_FAILED)


def print_citation_problems(report: CitationReport) -> None:
    """The citations that fail the check, on standard error (``ask`` prints them too)."""
    if report.invalid:
        echo(f"ctxasm: invalid citations: {', '.join(report.invalid)}", err=True)
    if report.mislinked:
        echo(
            f"ctxasm: citations linked elsewhere than their source: {', '.join(report.mislinked)}",
            err=True,
        )


def _fail(message: str) -> NoReturn:
    fail(message, EXIT_BAD_INPUT)


def _read(source: str, what: str) -> bytes:
    """The bytes of ``source`` (``-``: standard input), of at most the limit for ``what``."""
    from ctxasm.files import TooLargeError, read_bounded

    most = MAX_RESULT_BYTES if what == "result" else MAX_ANSWER_BYTES
    try:
        return read_bounded(sys.stdin.buffer if source == "-" else source, most)
    except OSError as exc:
        _fail(f"cannot read {source}: {exc.strerror} [{what}]")
    except TooLargeError as exc:  # /dev/zero, or a file given by mistake, filled the memory
        name = "on standard input" if source == "-" else source
        _fail(f"the {what} {name} is too large: {exc} [{what}]")


def _decode(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(f"the {what} is not valid UTF-8 (byte {exc.start}: {exc.reason}) [{what}]")


def _answer_text(text: str) -> str:
    """The answer in ``text``: the message of a chat completion saved as JSON (OpenAI's chat
    ``choices[0].message.content``, a string or text parts, or a Responses API ``output``;
    Anthropic's text blocks of ``content``), else ``text`` as it is, with a warning when it is
    JSON of another shape (its own text, quotes and escapes included, is then checked)."""
    if not text.lstrip().startswith("{"):
        return text
    from ctxasm.errors import CtxasmError
    from ctxasm.jsonio import decode_object

    try:
        data = decode_object(text.encode("utf-8", "surrogatepass"), what="answer")
    except CtxasmError:
        return text  # an answer that only opens with a brace
    from ctxasm.citations import reply_text

    try:
        found = reply_text(data)  # a refusal's JSON checked as text would pass every check
    except CtxasmError as error:
        _fail(error.message)
    if found is None:
        echo(
            "ctxasm: the answer is JSON but no chat completion ctxasm knows; its text is "
            "checked as it is",
            err=True,
        )
        return text
    return found


def _result_json(raw: bytes, answer: str) -> Any:
    """The result object, read by the parser every command and the service share; where it is
    not JSON but the file ``answer`` holds a result, the message says the order."""
    from ctxasm.errors import CtxasmError
    from ctxasm.jsonio import decode_object

    try:
        return decode_object(raw, what="result")
    except CtxasmError as error:
        swapped = ""
        if _holds_result(answer):
            swapped = (
                f", but {answer} is a result: the first argument is the result JSON of ctxasm "
                "assemble; the answer comes second"
            )
        _fail(f"{error.message}{swapped} [{error.field}]")


def _holds_result(source: str) -> bool:
    """Whether the file ``source`` (never standard input, which the answer still has to come
    from) holds a JSON object with a ``report``, as a result does."""
    from ctxasm.errors import CtxasmError
    from ctxasm.files import TooLargeError, read_bounded
    from ctxasm.jsonio import decode_object

    if source == "-":
        return False
    try:
        data = decode_object(read_bounded(source, MAX_RESULT_BYTES), what="answer")
    except (OSError, TooLargeError, CtxasmError):
        return False
    return "report" in data


def print_citation_text(report: CitationReport) -> None:
    """The citation check as readable lines on stdout (``--text``, and ``ctxasm ask``)."""
    valid = sum(citation.valid for citation in report.citations)
    echo(f"citations: {len(report.citations)} ({valid} valid)")
    forms = ", ".join(f"{form} {count}" for form, count in report.forms.items())
    echo(f"forms: {forms or '-'}")
    spellings = dict.fromkeys((c.raw, c.form) for c in report.citations if c.form != "bracket")
    for raw, form in spellings:
        echo(f"recognised: {raw!r} as {form}")
    echo(f"invalid: {', '.join(report.invalid) or '-'}")
    for citation in report.citations:
        if citation.mislinked:
            echo(f"mislinked: {citation.label} links to {citation.link!r}, not its source")
    echo(f"cited: {', '.join(report.cited_ids) or '-'}")
    echo(f"uncited sources: {', '.join(report.uncited_ids) or '-'}")
    echo(f"coverage: {report.coverage:.0%} of sentences cite a valid source")
    for sentence in report.uncited_sentences:
        echo(f"uncited: {sentence}")
