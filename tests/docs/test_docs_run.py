"""Every Python snippet and shell command of README.md and docs/*.md runs, and shows what the
page says it shows (see ``markdown_runner`` for the conventions).

Each page runs in order in its own temporary folder holding a copy of ``examples/``, with the
project's ``.venv/bin`` first on PATH and the tests' tokenizer cache (``TIKTOKEN_CACHE_DIR``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from markdown_runner import DocError, PageRun, clean_env, parse_page

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Every block the runner does not run, by page and reason. A new skip is a decision: add it
# here, and prefer making the block runnable.
SKIPPED = {
    ("README.md", "`make` sets up the project and runs this test suite itself"),
    ("evaluation.md", "needs the full HotpotQA files and takes minutes"),
    ("scaling.md", "needs the ray extra and starts a Ray cluster"),
    ("scaling.md", "needs the ray extra and writes to S3"),
    ("service.md", "installs packages and starts a long-running server"),
    ("service.md", "needs the server above"),
}


def _page_id(page: Path) -> str:
    return page.name


@pytest.fixture()
def workdir(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    return tmp_path


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page_runs_as_shown(page: Path, workdir: Path) -> None:
    env = clean_env(os.environ, Path(sys.executable).parent)
    failure = None
    with PageRun(workdir, env) as run:
        try:
            skipped = run.run(parse_page(page))
        except DocError as exc:
            failure = str(exc)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    unexpected = {(page.name, block.skip) for block in skipped} - SKIPPED
    assert unexpected == set(), "a new skipped block: make it run, or list it in SKIPPED"


def test_every_listed_skip_is_still_in_the_docs() -> None:
    found = {(page.name, block.skip) for page in PAGES for block in parse_page(page) if block.skip}
    assert found == SKIPPED
