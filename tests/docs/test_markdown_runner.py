"""The markdown runner fails a page when a snippet breaks or what it shows changes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from markdown_runner import (
    DocError,
    PageRun,
    clean_env,
    console_commands,
    output_matches,
    parse_page,
)

FENCE = "```"


def _run(tmp_path: Path, page: str) -> list[str]:
    """Runs ``page`` and returns the reasons of its skipped blocks; raises DocError."""
    path = tmp_path / "page.md"
    path.write_text(page.replace("~~~", FENCE))
    env = clean_env(os.environ, Path(sys.executable).parent)
    with PageRun(tmp_path, env) as run:
        return [block.skip or "" for block in run.run(parse_page(path))]


def _failure(tmp_path: Path, page: str) -> str:
    with pytest.raises(DocError) as caught:
        _run(tmp_path, page)
    return str(caught.value)


def test_python_blocks_share_names_and_their_shown_output_passes(tmp_path: Path) -> None:
    page = """
~~~python
words = ["b", "a"]
print(sorted(words))  # ['a', 'b']
~~~

Text between blocks.

~~~python
for word in words:
    print(word.upper())
# B
# A
print(list(range(30)))
# [0, 1, ..., 29]
~~~
"""
    assert _run(tmp_path, page) == []


def test_a_changed_print_output_fails_naming_the_line(tmp_path: Path) -> None:
    page = "# T\n\n~~~python\nx = 2\nprint(x * 2)\n# 5\n~~~\n"
    assert _failure(tmp_path, page) == (
        "page.md:5: the statement shows other output than the page.\n"
        "--- the page says:\n5\n--- it printed:\n4"
    )


def test_a_broken_snippet_fails_with_its_traceback(tmp_path: Path) -> None:
    failure = _failure(tmp_path, "~~~python\nx = 1\nundefined_name + x\n~~~\n")
    assert failure.splitlines()[0] == "page.md:3: the snippet failed"
    assert failure.splitlines()[-1] == "NameError: name 'undefined_name' is not defined"
    assert '  File "page.md", line 3, in <module>' in failure.splitlines()


def test_doctest_blocks_check_values_and_exceptions(tmp_path: Path) -> None:
    page = """
~~~python
>>> 1 + 1
2
>>> int("x")
Traceback (most recent call last):
...
ValueError: invalid literal for int() with base 10: 'x'
>>> "changed"
'original'
~~~
"""
    assert _failure(tmp_path, page) == (
        "page.md:9: the statement shows other output than the page.\n"
        "--- the page says:\n'original'\n--- it printed:\n'changed'"
    )


def test_console_output_is_checked_per_command(tmp_path: Path) -> None:
    page = "~~~console\n$ echo one\none\n$ echo two \\\n    three\ntwo four\n~~~\n"
    assert _failure(tmp_path, page) == (
        "page.md:1: `echo two \\\n    three` shows other output than the page.\n"
        "--- the page says:\ntwo four\n--- it printed:\ntwo three"
    )


def test_a_text_block_after_a_shell_block_is_its_output(tmp_path: Path) -> None:
    page = "~~~bash\nprintf 'a\\nb\\n'\n~~~\n\n~~~text\na\nc\n~~~\n"
    assert _failure(tmp_path, page) == (
        "page.md:1: the block shows other output than the page.\n"
        "--- the page says:\na\nc\n--- it printed:\na\nb"
    )


def test_exit_codes_are_checked(tmp_path: Path) -> None:
    assert _run(tmp_path, "<!-- docs: exit 3 -->\n~~~bash\ntrue\nexit 3\n~~~\n") == []
    assert _failure(tmp_path, "~~~sh\nfalse\necho never\n~~~\n") == (
        "page.md:1: exit code 1, the page expects 0, from\nfalse\necho never\n--- output:\n"
    )


def test_skipped_blocks_need_a_reason_and_are_not_run(tmp_path: Path) -> None:
    page = "<!-- docs: skip (needs a server) -->\n~~~bash\nexit 1\n~~~\n"
    assert _run(tmp_path, page) == ["needs a server"]
    assert _failure(tmp_path, "<!-- docs: skip -->\n~~~bash\nexit 1\n~~~\n") == (
        "page.md:1: write the reason: <!-- docs: skip (why) -->"
    )


def test_commands_cannot_hide_in_untagged_blocks(tmp_path: Path) -> None:
    assert _failure(tmp_path, "# T\n\n~~~\n$ rm -rf build\n~~~\n") == (
        "page.md:3: tag this block (```console or ```python)"
    )


def test_blocks_run_in_the_page_folder(tmp_path: Path) -> None:
    page = (
        "~~~bash\necho hi > made.txt\n~~~\n\n~~~python\nprint(open('made.txt').read())  # hi\n~~~\n"
    )
    assert _run(tmp_path, page) == []


def test_output_matching() -> None:
    assert output_matches("a ... z", "a bcd z")
    assert output_matches("| 1.00 |         ... |", "| 1.00 |       40.98 |")
    assert output_matches("first\n...\nlast", "first\nlast")
    assert output_matches("first\n...\nlast", "first\n1\n2\nlast  \n\n")
    assert not output_matches("first\nlast", "first\nmiddle\nlast")
    assert not output_matches("a ... z", "a b\nc z")


def test_console_commands() -> None:
    source = "$ a \\\n  b\nout 1\nout 2\n$ c\n"
    assert list(console_commands(source)) == [("a \\\n  b", "out 1\nout 2"), ("c", "")]
