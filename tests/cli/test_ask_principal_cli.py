"""``ctxasm ask`` checks the principal before it opens the store (issue 10, items 6 and 8): a NUL
or other control character, an empty tenant or a blank id is a clear error with exit code 2,
never a driver error or a wider view of the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctxasm.cli.main import app
from ctxasm.store import Document, chunk_text, open_store

CONTROL = "names may not contain control characters (NUL, tab, newline and the like)"


@pytest.fixture()
def store_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(url)
    for doc_id, readers in (("s-only", ("s",)), ("staff", ("staff",))):
        document = Document(
            doc_id, f"The Danube plan for {doc_id}.", tenant="acme", readers=readers
        )
        store.upsert(document, chunk_text(document.text, 64, 0))
    store.close()
    return url


def _ask(store_url: str, *who: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["ask", "danube plan", "--store", store_url, "--json", *who])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("who", "message"),
    [
        (
            ("--principal", "ann\x00"),
            f"principal.id contains the control character U+0000 at character 3; {CONTROL} "
            "[principal.id]",
        ),
        (
            ("--principal", "ann", "--tenant", "ac\x00me"),
            f"principal.tenant contains the control character U+0000 at character 2; {CONTROL} "
            "[principal.tenant]",
        ),
        (
            ("--principal", "ann", "--tenant", "acme", "--groups", "staff,s\x00"),
            f"principal.groups[1] contains the control character U+0000 at character 1; "
            f"{CONTROL} [principal.groups[1]]",
        ),
        (
            ("--principal", "ann", "--tenant", ""),
            "principal.tenant must not be empty; leave it out (null) for none; got '' "
            "[principal.tenant]",
        ),
        (("--principal", " "), "principal.id must not be empty; got ' ' [principal.id]"),
    ],
)
def test_a_bad_principal_is_a_clear_error_before_the_store(
    store_url: str, who: tuple[str, ...], message: str
) -> None:
    code, out, err = _ask(store_url, *who)
    assert (code, out, err) == (2, "", f"ctxasm: error: {message}\n")


def test_groups_are_whole_names_on_the_command_line(store_url: str) -> None:
    code, out, _ = _ask(store_url, "--principal", "ann", "--tenant", "acme", "--groups", "staff")
    assert code == 0
    report = json.loads(out)["report"]
    assert [item["id"] for item in report["included"]] == ["staff#0"]
