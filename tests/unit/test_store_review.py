"""Fixes from the review of the stores: every match ranked, public documents reachable on
request, stable document ids, embedder changes re-indexed, no sentinel reader names."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ctxasm.data import Principal
from ctxasm.store import Document, chunk_text, index_paths, open_store


def _ctxasm(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "ctxasm"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=os.environ.copy(),
        timeout=120,
    )


def test_the_best_chunk_wins_however_many_chunks_match(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    for number in range(300):
        text = f"Filler text number {number} mentions the river once among many other words."
        store.upsert(Document(f"f{number}", text, tenant="t"), chunk_text(text, 64, 0))
    best = "River river river. The river."
    store.upsert(Document("best", best, tenant="t"), chunk_text(best, 64, 0))
    found = store.retrieve("river", Principal("a", "t"), 3)
    assert found[0].doc_id == "best"


def test_no_principal_never_matches_a_reader_name(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    text = "The river secret."
    store.upsert(Document("secret", text, readers=("__nobody__",)), chunk_text(text, 64, 0))
    assert store.retrieve("river", None, 5, allow_public=True) == []


def test_the_same_file_typed_differently_is_the_same_document(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("The Danube ends in the Black Sea.", encoding="utf-8")
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    first = index_paths(store, [tmp_path / "b.txt"], tenant="t")
    again = index_paths(store, [Path(os.path.relpath(tmp_path / "b.txt"))], tenant="t")
    assert (first.added, again.unchanged, again.added) == (1, 1, 0)


def test_adding_an_embedder_reindexes_with_vectors(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("The Danube ends in the Black Sea.", encoding="utf-8")
    plain = open_store(f"sqlite:///{tmp_path / 's.db'}")
    index_paths(plain, [tmp_path / "b.txt"], tenant="t")
    plain.close()
    vectors = open_store(f"sqlite:///{tmp_path / 's.db'}?embedder=hashing")
    report = index_paths(vectors, [tmp_path / "b.txt"], tenant="t")
    assert report.updated == 1
    count = vectors._db.execute("SELECT count(embedding) FROM chunks").fetchone()  # type: ignore[attr-defined]
    assert count == (1,)


def test_public_documents_need_allow_public_and_index_says_so(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("The Danube ends in the Black Sea.", encoding="utf-8")
    indexed = _ctxasm("index", "b.txt", "--store", "sqlite:///s.db", cwd=tmp_path)
    assert indexed.returncode == 0
    assert "public" in indexed.stderr and "--allow-public" in indexed.stderr
    hidden = _ctxasm("ask", "Danube", "--store", "sqlite:///s.db", "--json", cwd=tmp_path)
    assert json.loads(hidden.stdout)["report"]["no_relevant_context"] is True
    shown = _ctxasm(
        "ask", "Danube", "--store", "sqlite:///s.db", "--json", "--allow-public", cwd=tmp_path
    )
    assert [i["id"] for i in json.loads(shown.stdout)["report"]["included"]] == ["b.txt#0"]


def test_asking_a_store_that_does_not_exist_is_bad_input(tmp_path: Path) -> None:
    done = _ctxasm("ask", "Danube", "--store", "sqlite:///nosuch/typo.db", cwd=tmp_path)
    assert done.returncode == 2
    assert "no store at nosuch/typo.db" in done.stderr
    assert not (tmp_path / "nosuch").exists()
