"""The SQLite store with an embedder: vectors stored per chunk, brute-force similarity over the
visible chunks only, fused with BM25 by reciprocal rank fusion."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxasm import ConfigError, RequestError
from ctxasm.data import Principal
from ctxasm.store import Document, SQLiteStore, chunk_text, index_paths, open_store


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


def test_bad_store_options_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        open_store(f"sqlite:///{tmp_path / 'x.db'}?vectors=yes")
    with pytest.raises(ConfigError):
        open_store(f"sqlite:///{tmp_path / 'x.db'}?embedder=magic")


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


def test_vectors_of_another_size_are_refused_and_never_compared(tmp_path: Path) -> None:
    # Each run may name its own embedder: a store with 256- and 512-dimension vectors failed
    # every ask with an internal error (reshape), and 128 + 384 reshaped silently into 2 x 256.
    path = tmp_path / "s.db"
    first = SQLiteStore(path, embedder="hashing:256")
    document = Document("a", "The Danube river ends in the Black Sea.", tenant="t")
    first.upsert(document, chunk_text(document.text, 64, 0))
    first.close()
    other = SQLiteStore(path, embedder="hashing:512")
    second = Document("b", "The Danube river flows through Vienna.", tenant="t")
    with pytest.raises(RequestError, match="holds vectors of 256 dimensions, and the embedder"):
        other.upsert(second, chunk_text(second.text, 64, 0))
    # asked with another embedder, its vectors are left out and the words still rank
    found = other.retrieve("Where does the Danube end?", Principal("u", "t"))
    assert [p.doc_id for p in found] == ["a"]
    other.close()
