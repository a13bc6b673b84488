"""The SQLite store with an embedder: vectors stored per chunk, brute-force similarity over the
visible chunks only, fused with BM25 by reciprocal rank fusion."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxasm import ConfigError
from ctxasm.data import Principal
from ctxasm.store import Document, chunk_text, open_store


def _store(tmp_path: Path, embedder: bool = True):  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'store.db'}" + ("?embedder=hashing" if embedder else "")
    store = open_store(url)
    for doc_id, text, tenant in [
        ("a", "The river delta is home to many birds.", "t"),
        ("b", "Stock prices rose sharply on Monday.", "t"),
        ("secret", "The river delta birds are counted in a secret survey.", "other"),
    ]:
        document = Document(doc_id, text, tenant=tenant, readers=("g",))
        store.upsert(document, chunk_text(text, 64, 0))
    return store


def test_vectors_are_stored_and_fused_with_bm25(tmp_path: Path) -> None:
    store = _store(tmp_path)
    rows = store._db.execute("SELECT count(*) FROM chunks WHERE embedding IS NOT NULL").fetchone()
    assert rows == (3,)
    found = store.retrieve("birds of the river delta", Principal("u", "t", ("g",)))
    assert [p.doc_id for p in found][:1] == ["a"]
    # an RRF score: 1/(60 + rank) from each ranking that has the chunk
    assert found[0].score == pytest.approx(2 / 61, abs=1e-6)
    assert "secret" not in {p.doc_id for p in found}  # other tenant: never, by either ranking


def test_without_an_embedder_scores_are_bm25(tmp_path: Path) -> None:
    store = _store(tmp_path, embedder=False)
    found = store.retrieve("birds of the river delta", Principal("u", "t", ("g",)))
    assert [p.doc_id for p in found] == ["a"]
    assert found[0].score is not None and found[0].score > 0.05


def test_a_vector_only_match_is_found_when_words_differ(tmp_path: Path) -> None:
    store = _store(tmp_path)
    # "delta" and "birds" match lexically only document a; vectors rank it too
    found = store.retrieve("delta birds", Principal("u", "t", ("g",)))
    assert found and found[0].doc_id == "a"


def test_bad_store_options_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        open_store(f"sqlite:///{tmp_path / 'x.db'}?vectors=yes")
    with pytest.raises(ConfigError):
        open_store(f"sqlite:///{tmp_path / 'x.db'}?embedder=magic")
