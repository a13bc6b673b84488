"""Run the code blocks of a markdown page in order, like a notebook, and check what they show.

What runs, per page, in one working folder:

- a ```python block runs in one Python process per page, so the blocks of a page share names.
  A statement that calls ``print`` and is followed directly by comment lines (``# ...`` at the
  start of the line), or has a comment at the end of its last line, must print exactly those
  comments. A block of ``>>>`` examples is a doctest: each example's output is checked.
- a ```bash or ```sh block runs as one bash script (``set -euo pipefail``).
- a ```console block runs each ``$ command`` line (``\\`` continues it); the lines after it,
  up to the next ``$``, are its output (standard output and error) and are checked.
- a ```text or ```output block right after a python, bash or sh block is that block's whole
  output, and is checked.
- in expected output, ``...`` stands for any text: within a line (with the spaces before it,
  so a column of varying numbers can stay aligned), or alone on a line for any number of
  lines. Trailing white space is ignored.
- ``<!-- docs: skip (why) -->`` right before a block: not run; the reason is required.
- ``<!-- docs: exit N -->`` right before a shell block: its last command must exit with N.

Other blocks (json, toml, untagged synopses) are not run. An untagged block that holds ``$ ``
or ``>>> `` lines is refused, so a command cannot hide from the runner by losing its tag.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import select
import subprocess
import sys
import tokenize
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from markdown_it import MarkdownIt

PYTHON = frozenset({"python", "py", "pycon"})
SHELL = frozenset({"bash", "sh", "console"})
OUTPUT = frozenset({"text", "output"})
KERNEL = Path(__file__).with_name("python_kernel.py")
BLOCK_TIMEOUT_S = 120.0

_DIRECTIVE = re.compile(r"<!--\s*docs:\s*(?P<verb>[a-z]+)\s*(?P<arg>.*?)\s*-->", re.DOTALL)
_SKIP_REASON = re.compile(r"\((?P<reason>[^()]*\S[^()]*)\)")


class Statement(TypedDict):
    """What the page's Python process reports for one statement (or doctest example) it ran."""

    line: int
    output: str
    expected: str | None
    error: str | None


class DocError(Exception):
    """A block failed, showed other output than its page says, or the page is malformed."""


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page, with what the page says about it."""

    path: Path
    line: int
    lang: str
    source: str
    skip: str | None = None
    exit_code: int = 0
    expected: str | None = None

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


def parse_page(path: Path, text: str | None = None) -> list[Block]:
    """The code blocks of a markdown page, in order, with their directives and output blocks."""
    tokens = MarkdownIt("commonmark").parse(path.read_text() if text is None else text)
    blocks: list[Block] = []
    skip: str | None = None
    exit_code = 0
    pending: int | None = None  # line of a directive still waiting for its block
    previous_runnable: Block | None = None
    for token in tokens:
        line = token.map[0] + 1 if token.map else 0
        if token.type == "html_block" and "docs:" in token.content:
            match = _DIRECTIVE.search(token.content)
            if match is None:
                raise DocError(
                    f"{path.name}:{line}: unreadable directive {token.content.strip()!r}"
                )
            skip, exit_code = _directive(path, line, match, skip, exit_code)
            pending = line
            previous_runnable = None
            continue
        if token.type != "fence":
            if pending is not None and token.type not in {"paragraph_close", "html_block"}:
                raise DocError(f"{path.name}:{pending}: a directive must come right before a block")
            if token.type != "paragraph_close":
                previous_runnable = None
            continue
        lang = token.info.split()[0].lower() if token.info.strip() else ""
        if lang in OUTPUT and previous_runnable is not None and pending is None:
            blocks[-1] = _with_expected(previous_runnable, token.content)
            previous_runnable = None
            continue
        if not lang and re.search(r"^(\$|>>>) ", token.content, re.MULTILINE):
            raise DocError(f"{path.name}:{line}: tag this block (```console or ```python)")
        block = Block(path, line, lang, token.content, skip, exit_code)
        if pending is not None and lang not in PYTHON | SHELL:
            raise DocError(f"{path.name}:{pending}: a directive before a block that never runs")
        blocks.append(block)
        previous_runnable = block if lang in PYTHON | SHELL - {"console"} else None
        skip, exit_code, pending = None, 0, None
    if pending is not None:
        raise DocError(f"{path.name}:{pending}: a directive with no block after it")
    return blocks


def _directive(
    path: Path, line: int, match: re.Match[str], skip: str | None, exit_code: int
) -> tuple[str | None, int]:
    verb, arg = match["verb"], match["arg"]
    if verb == "skip":
        reason = _SKIP_REASON.fullmatch(arg)
        if reason is None:
            raise DocError(f"{path.name}:{line}: write the reason: <!-- docs: skip (why) -->")
        return reason["reason"].strip(), exit_code
    if verb == "exit" and arg.isdigit():
        return skip, int(arg)
    raise DocError(f"{path.name}:{line}: unknown directive {match[0]!r} (skip (why), exit N)")


def _with_expected(block: Block, expected: str) -> Block:
    return Block(
        block.path, block.line, block.lang, block.source, block.skip, block.exit_code, expected
    )


def output_matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is ``expected``, with ``...`` for any text and trailing spaces ignored."""
    pattern = []
    for line in _normalise(expected).split("\n"):
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            parts = re.split(r" *\.\.\.", line)
            pattern.append("[^\n]*?".join(re.escape(part) for part in parts) + r"\n")
    return re.fullmatch("".join(pattern), _normalise(actual) + "\n") is not None


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))


def mismatch(where: str, what: str, expected: str, actual: str) -> DocError:
    return DocError(
        f"{where}: {what} shows other output than the page.\n"
        f"--- the page says:\n{_normalise(expected)}\n--- it printed:\n{_normalise(actual)}"
    )


class PageRun:
    """Runs one page's blocks in order in ``workdir``; Python blocks share one process."""

    def __init__(self, workdir: Path, env: Mapping[str, str]) -> None:
        self.workdir = workdir
        self.env = dict(env)
        self._kernel: subprocess.Popen[str] | None = None

    def __enter__(self) -> PageRun:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._kernel is not None:
            self._kernel.kill()
            self._kernel.wait()
            assert self._kernel.stdout is not None and self._kernel.stdin is not None
            self._kernel.stdout.close()
            self._kernel.stdin.close()

    def run(self, blocks: list[Block]) -> list[Block]:
        """Runs every block not marked skip; returns the skipped ones. Raises DocError."""
        skipped = []
        for block in blocks:
            if block.skip is not None:
                skipped.append(block)
            elif block.lang in PYTHON:
                self._python(block)
            elif block.lang == "console":
                self._console(block)
            elif block.lang in SHELL:
                output, code = self._shell(block.source, block)
                self._check_exit(block, block.source, code, output)
                if block.expected is not None and not output_matches(block.expected, output):
                    raise mismatch(block.where, "the block", block.expected, output)
        return skipped

    def _shell(self, script: str, block: Block) -> tuple[str, int]:
        try:
            done = subprocess.run(
                ["bash", "-c", "set -euo pipefail\n" + script],
                cwd=self.workdir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=BLOCK_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as exc:
            raise DocError(f"{block.where}: still running after {BLOCK_TIMEOUT_S:.0f} s") from exc
        return done.stdout, done.returncode

    @staticmethod
    def _check_exit(block: Block, command: str, code: int, output: str) -> None:
        if code != block.exit_code:
            raise DocError(
                f"{block.where}: exit code {code}, the page expects {block.exit_code}, from\n"
                f"{command.strip()}\n--- output:\n{output.strip()}"
            )

    def _console(self, block: Block) -> None:
        commands = list(console_commands(block.source))
        if not commands:
            raise DocError(f"{block.where}: a console block with no `$ ` command")
        for index, (command, expected) in enumerate(commands):
            output, code = self._shell(command, block)
            wanted = block.exit_code if index == len(commands) - 1 else 0
            if code != wanted:
                self._check_exit(_exit_of(block, wanted), command, code, output)
            if expected.strip() and not output_matches(expected, output):
                raise mismatch(block.where, f"`{command.strip()}`", expected, output)

    def _python(self, block: Block) -> None:
        statements = self._ask_kernel(block)
        outputs: list[str] = []
        for statement in statements:
            outputs.append(statement["output"])
            if statement["error"]:
                raise DocError(
                    f"{block.path.name}:{statement['line']}: the snippet failed\n"
                    f"{statement['error']}"
                    + (f"\n--- it printed:\n{statement['output']}" if statement["output"] else "")
                )
            expected = statement["expected"]
            if expected is not None and not output_matches(expected, statement["output"]):
                where = f"{block.path.name}:{statement['line']}"
                raise mismatch(where, "the statement", expected, statement["output"])
        if block.expected is not None and not output_matches(block.expected, "".join(outputs)):
            raise mismatch(block.where, "the block", block.expected, "".join(outputs))

    def _ask_kernel(self, block: Block) -> list[Statement]:
        if self._kernel is None:
            self._kernel = subprocess.Popen(
                [sys.executable, str(KERNEL)],
                cwd=self.workdir,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        assert self._kernel.stdin is not None and self._kernel.stdout is not None
        # The fence's content starts on the line after the fence.
        request = {"source": block.source, "filename": block.path.name, "line": block.line + 1}
        self._kernel.stdin.write(json.dumps(request) + "\n")
        self._kernel.stdin.flush()
        ready, _, _ = select.select([self._kernel.stdout], [], [], BLOCK_TIMEOUT_S)
        if not ready:
            raise DocError(f"{block.where}: still running after {BLOCK_TIMEOUT_S:.0f} s")
        answer = self._kernel.stdout.readline()
        if not answer:
            raise DocError(f"{block.where}: the Python process died (exit {self._kernel.wait()})")
        statements: list[Statement] = json.loads(answer)["statements"]
        return statements


def _exit_of(block: Block, code: int) -> Block:
    return Block(block.path, block.line, block.lang, block.source, block.skip, code)


def console_commands(source: str) -> Iterator[tuple[str, str]]:
    """The ``$ `` commands of a console block, each with the output lines shown after it."""
    command: list[str] = []
    output: list[str] = []
    continued = False
    for line in source.splitlines():
        if continued:
            command.append(line)
            continued = line.endswith("\\")
        elif line.startswith("$ "):
            if command:
                yield "\n".join(command), "\n".join(output)
            command, output = [line[2:]], []
            continued = line.endswith("\\")
        elif command:
            output.append(line)
    if command:
        yield "\n".join(command), "\n".join(output)


def expected_comments(source: str, start: int, end: int) -> str | None:
    """The output a statement on lines ``start..end`` (1-based) of ``source`` shows: a comment
    at the end of its last line, else the ``# `` lines right after it; None when there is none.
    """
    lines = source.splitlines()
    trailing = [
        token.string
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT and token.start[0] == end and token.start[1] > 0
    ]
    if trailing:
        return trailing[-1][1:].strip()
    shown = []
    for line in lines[end:]:
        if not line.startswith("#"):
            break
        shown.append(line[2:] if line.startswith("# ") else line[1:])
    return "\n".join(shown) if shown else None


def prints(statement: ast.stmt) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
        for node in ast.walk(statement)
    )


def clean_env(base: Mapping[str, str], bin_dir: Path) -> dict[str, str]:
    """The environment the blocks run in: the tests' own (tokenizer cache included), with the
    project's scripts first on PATH, no ``CTXASM_`` settings of the caller, plain output."""
    env = {key: value for key, value in base.items() if not key.startswith("CTXASM_")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{base.get('PATH', '')}"
    env.update(PYTHONUNBUFFERED="1", COLUMNS="120", NO_COLOR="1", TERM="dumb")
    env.pop("FORCE_COLOR", None)
    return env
