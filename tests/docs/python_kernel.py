"""The Python process of one markdown page: runs its blocks in one namespace, like a notebook.

Reads one JSON request per line on standard input, ``{"source", "filename", "line"}`` (``line``:
the page line of the block's first line), runs the block statement by statement (or example by
example for a ``>>>`` doctest block) and answers one JSON line, ``{"statements": [{"line",
"output", "expected", "error"}]}``, stopping at the first statement that raises. What the
snippets print is captured; the answers go to a private copy of standard output, so a snippet
that writes to file descriptor 1 cannot garble them.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import io
import json
import linecache
import os
import sys
import traceback
from types import CodeType
from typing import Any

from markdown_runner import Statement, expected_comments, prints


def _compile(tree: ast.Module | ast.Interactive, filename: str, first_line: int) -> CodeType:
    ast.increment_lineno(tree, first_line - 1)
    return compile(tree, filename, "single" if isinstance(tree, ast.Interactive) else "exec")


def _execute(code: CodeType, namespace: dict[str, Any]) -> tuple[str, BaseException | None]:
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        try:
            exec(code, namespace)
        except BaseException as exc:  # a snippet's SystemExit or KeyboardInterrupt is a failure too
            return captured.getvalue(), exc
    return captured.getvalue(), None


def _traceback(exc: BaseException) -> str:
    # Drop this module's frame: the first frame shown is the snippet's.
    frame = exc.__traceback__
    return "".join(traceback.format_exception(type(exc), exc, frame and frame.tb_next))


def run_block(
    source: str, filename: str, first_line: int, namespace: dict[str, Any]
) -> list[Statement]:
    """Runs one block in ``namespace``; one entry per statement (or doctest example) run."""
    linecache.cache[filename] = (0, None, [""] * (first_line - 1) + source.splitlines(True), "")
    if source.lstrip().startswith(">>>"):
        return _run_doctest(source, filename, first_line, namespace)
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as exc:
        line = first_line + (exc.lineno or 1) - 1
        return [{"line": line, "output": "", "expected": None, "error": f"SyntaxError: {exc.msg}"}]
    results: list[Statement] = []
    for statement in tree.body:
        start, end = statement.lineno, statement.end_lineno or statement.lineno
        code = _compile(ast.Module([statement], []), filename, first_line)
        output, error = _execute(code, namespace)
        expected = expected_comments(source, start, end) if prints(statement) else None
        results.append(
            {
                "line": first_line + start - 1,
                "output": output,
                "expected": expected,
                "error": None if error is None else _traceback(error),
            }
        )
        if error is not None:
            break
    return results


def _run_doctest(
    source: str, filename: str, first_line: int, namespace: dict[str, Any]
) -> list[Statement]:
    results: list[Statement] = []
    for example in doctest.DocTestParser().get_examples(source):
        line = first_line + example.lineno
        tree = ast.parse(example.source, filename, mode="single")
        output, error = _execute(_compile(tree, filename, line), namespace)
        failure = None
        if error is not None and example.exc_msg is None:
            failure = _traceback(error)
        elif error is not None:
            shown = traceback.format_exception_only(type(error), error)[-1]
            output += "Traceback (most recent call last):\n...\n" + shown
        elif example.exc_msg is not None:
            failure = "the example should raise, and did not"
        results.append({"line": line, "output": output, "expected": example.want, "error": failure})
        if failure is not None:
            break
    return results


def main() -> None:
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.path.insert(0, os.getcwd())
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for request in sys.stdin:
        block = json.loads(request)
        statements = run_block(block["source"], block["filename"], block["line"], namespace)
        channel.write(json.dumps({"statements": statements}) + "\n")
        channel.flush()


if __name__ == "__main__":
    main()
