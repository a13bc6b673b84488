"""Embeddings (hashing, sentence-transformers, passage vectors) and the semantic dedup strategy."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import xxhash

import ctxasm.stages.dedup_semantic
from ctxasm import Assembler, testing
from ctxasm.data import Candidate, Passage
from ctxasm.embeddings import (
    HashingEmbedder,
    SentenceTransformerEmbedder,
    get_embedder,
    passage_vectors,
)
from ctxasm.errors import ConfigError, RequestError
from ctxasm.stages.dedup import Duplicate
from ctxasm.stages.dedup_semantic import SemanticDedup

TEXTS = [
    "The Amazon river carries more water than any other river on Earth.",
    "The Amazon river carries more water than any other river on the Earth.",
    "Bananas are rich in potassium and grow in warm climates.",
    "",
]


def _digest(vectors: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(vectors).tobytes()).hexdigest()


# --- hashing -----------------------------------------------------------------------------------


def test_hashing_gives_float32_unit_rows_of_the_dimension() -> None:
    vectors = HashingEmbedder(dimension=64).embed(TEXTS)
    assert vectors.dtype == np.float32
    assert vectors.shape == (4, 64)
    assert np.allclose(np.linalg.norm(vectors, axis=1), [1.0, 1.0, 1.0, 0.0], atol=1e-6)
    assert HashingEmbedder().embed([]).shape == (0, 256)


def test_hashing_puts_one_ngram_in_its_signed_bucket() -> None:
    digest = xxhash.xxh3_64_intdigest(b"amazon")
    expected = np.zeros(32, dtype=np.float32)
    expected[digest % 32] = -1.0 if digest >> 63 else 1.0
    embedder = HashingEmbedder(dimension=32, ngram=(1, 1))
    assert embedder.embed(["Amazon"]).tolist() == [expected.tolist()]
    # Case and punctuation are not words; repeating a word does not change a unit vector.
    assert embedder.embed(["AMAZON!! amazon"]).tolist() == [expected.tolist()]


def test_hashing_weighs_repeats_sublinearly() -> None:
    embedder = HashingEmbedder(dimension=4096, ngram=(1, 1))
    vector = embedder.embed(["river river river river sea"])[0]
    weights = sorted(abs(v) for v in vector.tolist() if v)
    river, sea = 1.0 + np.log(4.0), 1.0
    norm = np.hypot(river, sea)
    assert weights == pytest.approx([sea / norm, river / norm], rel=1e-6)


def test_hashing_is_deterministic_within_a_process() -> None:
    first = HashingEmbedder().embed(TEXTS)
    assert _digest(first) == _digest(HashingEmbedder().embed(TEXTS))
    assert _digest(first[1:2]) == _digest(HashingEmbedder().embed(TEXTS[1:2]))


def test_hashing_of_counted_words_is_the_same_to_the_last_bit() -> None:
    from collections import Counter

    from ctxasm.lexical import words

    split = [words(text) for text in [*TEXTS, "the the cat the dog the"]]
    embedder = HashingEmbedder()
    counted = embedder.embed_words(split, [Counter(found) for found in split])
    assert _digest(counted) == _digest(embedder.embed_words(split))
    with pytest.raises(ValueError, match="2 word counts for 5 texts"):
        embedder.embed_words(split[:5], [Counter(), Counter()])


def test_hashing_is_the_same_in_every_process_whatever_the_hash_seed() -> None:
    script = (
        "import hashlib, sys; from ctxasm.embeddings import HashingEmbedder; "
        f"v = HashingEmbedder().embed({TEXTS!r}); "
        "sys.stdout.write(hashlib.sha256(v.tobytes()).hexdigest())"
    )
    expected = _digest(HashingEmbedder().embed(TEXTS))
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert done.stdout == expected, f"PYTHONHASHSEED={seed}"


def test_hashing_puts_similar_texts_closer_than_unrelated_ones() -> None:
    vectors = HashingEmbedder().embed(TEXTS[:3])
    cosines = vectors @ vectors.T
    assert cosines[0, 1] > 0.9
    assert abs(cosines[0, 2]) < 0.2
    assert abs(cosines[1, 2]) < 0.2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"dimension": 0}, "between 1 and 4096, got 0"),
        ({"dimension": 4097}, "between 1 and 4096"),
        ({"dimension": 2.5}, "must be an integer, got 2.5"),
        ({"dimension": True}, "must be an integer, got True"),
        ({"ngram": (2, 1)}, "1 <= low <= high, got (2, 1)"),
        ({"ngram": (0, 2)}, "1 <= low <= high, got (0, 2)"),
    ],
)
def test_hashing_rejects_bad_settings(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        HashingEmbedder(**arguments)


# --- specs -------------------------------------------------------------------------------------


def test_specs_build_hashing_embedders_once() -> None:
    default = get_embedder("hashing")
    assert isinstance(default, HashingEmbedder)
    assert (default.name, default.dimension, default.ngram) == ("hashing:256", 256, (1, 2))
    wide = get_embedder("hashing:512")
    assert (wide.name, wide.dimension) == ("hashing:512", 512)
    assert get_embedder("hashing") is default
    assert get_embedder("hashing:512") is wide


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bert", "unknown embedder 'bert'; use one of: hashing, hashing:DIMENSION, "),
        ("", "unknown embedder ''; use one of"),
        ("Hashing", "unknown embedder 'Hashing'"),
        ("sentence-transformers", "unknown embedder 'sentence-transformers'; use one of"),
        ("sentence-transformers:", "unknown embedder 'sentence-transformers:'; use one of"),
        ("hashing:", "'hashing:': the hashing dimension must be a positive integer"),
        ("hashing:abc", "'hashing:abc': the hashing dimension must be a positive integer"),
        ("hashing:-3", "'hashing:-3': the hashing dimension must be a positive integer"),
        ("hashing:0", "between 1 and 4096, got 0"),
        ("hashing:99999", "between 1 and 4096, got 99999"),
        # past Python's limit on digits in int(): a ValueError, not a ConfigError
        ("hashing:" + "9" * 5000, "between 1 and 4096, got a number of 5,000 digits"),
    ],
)
def test_bad_specs_say_what_is_allowed(spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        get_embedder(spec)
    assert message in caught.value.message


# --- sentence-transformers ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a" * 300, "a" * 100_000, "a\x00b"])
def test_sentence_transformers_path_the_system_cannot_take_is_a_missing_directory(
    tmp_path: Path, name: str
) -> None:
    # a name over 255 bytes raised OSError (ENAMETOOLONG): an internal error, HTTP 500
    with pytest.raises(ConfigError, match="does not exist") as caught:
        get_embedder(f"sentence-transformers:{tmp_path / name}")
    assert len(caught.value.message) < 500


def test_sentence_transformers_names_a_missing_directory(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match="does not exist") as caught:
        get_embedder(f"sentence-transformers:{missing}")
    assert repr(str(missing)) in caught.value.message
    assert "never downloads" in caught.value.message


def test_sentence_transformers_says_what_to_install(tmp_path: Path) -> None:
    assert "sentence_transformers" not in sys.modules
    with pytest.raises(ConfigError) as caught:
        get_embedder(f"sentence-transformers:{tmp_path}")
    assert caught.value.message == (
        "the sentence-transformers embedder needs the sentence-transformers package; "
        "install it with: pip install -c constraints.txt '.[embeddings]' in the ctxasm folder"
    )


class _FakeModel:
    """Stands in for sentence_transformers.SentenceTransformer: records how it was loaded."""

    loads: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def __init__(self, path: str, **options: Any) -> None:
        if not Path(path, "modules.json").exists():
            raise OSError("modules.json not found")
        self.loads.append((path, options))

    def get_sentence_embedding_dimension(self) -> int:
        return 3

    def encode(self, texts: list[str], **options: Any) -> Any:
        assert options == {
            "convert_to_numpy": True,
            "normalize_embeddings": True,
            "show_progress_bar": False,
        }
        return np.array([[float(len(t)), 0.0, 0.0] for t in texts], dtype=np.float64)


@pytest.fixture
def fake_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> type[_FakeModel]:
    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = _FakeModel  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    monkeypatch.setattr(_FakeModel, "loads", [])
    return _FakeModel


def test_sentence_transformers_loads_lazily_once_from_local_files_only(
    tmp_path: Path, fake_sentence_transformers: type[_FakeModel]
) -> None:
    (tmp_path / "modules.json").write_text("[]")
    embedder = SentenceTransformerEmbedder(str(tmp_path), device="cuda:1")
    assert fake_sentence_transformers.loads == []
    vectors = embedder.embed(["ab", "abc"])
    assert vectors.dtype == np.float32
    assert vectors.tolist() == [[2.0, 0.0, 0.0], [3.0, 0.0, 0.0]]
    assert embedder.dimension == 3
    assert embedder.embed([]).shape == (0, 3)
    assert embedder.name == f"sentence-transformers:{tmp_path}"
    assert fake_sentence_transformers.loads == [
        (str(tmp_path), {"device": "cuda:1", "local_files_only": True})
    ]


def test_sentence_transformers_load_failures_name_the_directory(
    tmp_path: Path, fake_sentence_transformers: type[_FakeModel]
) -> None:
    embedder = SentenceTransformerEmbedder(str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        embedder.embed(["text"])
    assert caught.value.message == (
        f"cannot load the sentence-transformers model in {str(tmp_path)!r}: modules.json not found"
    )
    assert isinstance(caught.value.__cause__, OSError)


# --- passage vectors ---------------------------------------------------------------------------


def test_passage_vectors_prefer_the_passages_own_embeddings() -> None:
    passages = [
        Passage("a", "one", embedding=(3.0, 4.0)),
        Passage("b", "two", embedding=(0.0, 2.0)),
        Passage("c", "three", embedding=(0.0, 0.0)),
    ]
    vectors = passage_vectors(passages, get_embedder("hashing"))
    assert vectors is not None
    assert vectors.dtype == np.float32
    assert np.allclose(vectors, [[0.6, 0.8], [0.0, 1.0], [0.0, 0.0]], atol=1e-7)


@pytest.mark.parametrize(
    "embeddings",
    [
        [(1.0, 0.0), None],  # one passage has none
        [(1.0, 0.0), (1.0, 0.0, 0.0)],  # dimensions differ
        [None, None],
    ],
)
def test_passage_vectors_fall_back_to_the_embedder(
    embeddings: list[tuple[float, ...] | None],
) -> None:
    passages = [
        Passage(str(i), text, embedding=e)
        for i, (text, e) in enumerate(zip(TEXTS[:2], embeddings, strict=True))
    ]
    embedder = get_embedder("hashing")
    vectors = passage_vectors(passages, embedder)
    assert vectors is not None
    assert vectors.tolist() == embedder.embed(TEXTS[:2]).tolist()
    assert passage_vectors(passages, None) is None


def test_passage_vectors_of_no_passages() -> None:
    assert passage_vectors([], None) is None
    empty = passage_vectors([], get_embedder("hashing:8"))
    assert empty is not None
    assert empty.shape == (0, 8)


# --- the semantic dedup strategy ---------------------------------------------------------------


def _excluded(strategy: dict[str, Any], passages: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    result = Assembler().assemble(
        query="Amazon river", passages=passages, strategy={"ordering": "score", **strategy}
    )
    return [(e.candidate_id, e.stage, e.reason.value, e.detail) for e in result.report.excluded]


def test_a_near_identical_embedding_is_a_duplicate() -> None:
    passages = [
        {"id": "a", "text": "The Amazon is long.", "score": 0.9, "embedding": [1.0, 0.0, 0.0]},
        {"id": "b", "text": "Amazon: very long.", "score": 0.8, "embedding": [0.99, 0.1, 0.0]},
        {"id": "c", "text": "It rains a lot there.", "score": 0.7, "embedding": [0.0, 1.0, 0.0]},
    ]
    strategy = {"dedup": ["exact", {"name": "semantic", "threshold": 0.9}]}
    assert _excluded(strategy, passages) == [
        ("b", "dedup", "duplicate", "semantic duplicate of a (cosine 0.99)")
    ]
    strict = {"dedup": ["exact", {"name": "semantic", "threshold": 0.999}]}
    assert _excluded(strict, passages) == []


def test_the_hashing_embedder_catches_a_reworded_copy() -> None:
    passages = [
        {"id": f"p{i}", "text": text, "score": 0.9 - i / 10} for i, text in enumerate(TEXTS[:3])
    ]
    with_embedder = {"dedup": ["exact", {"name": "semantic", "embedder": "hashing"}]}
    assert _excluded(with_embedder, passages) == [
        ("p1", "dedup", "duplicate", "semantic duplicate of p0 (cosine 0.93)")
    ]
    # No embeddings and no embedder: nothing to compare, never a duplicate.
    assert _excluded({"dedup": ["exact", "semantic"]}, passages) == []


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"embedder": "bert"}, "embedder", "unknown embedder 'bert'; use one of: hashing"),
        ({"embedder": 3}, "embedder", "must be an embedder spec string or null, got 3"),
        ({"embedder": "hashing:0"}, "embedder", "between 1 and 4096, got 0"),
        ({"threshold": 1.5}, "threshold", "must be between 0.0 and 1.0, got 1.5"),
        ({"threshold": "high"}, "threshold", "must be a finite number, got 'high'"),
    ],
)
def test_bad_parameters_name_their_field(params: dict[str, Any], field: str, message: str) -> None:
    strategy = {"dedup": ["exact", {"name": "semantic", **params}]}
    with pytest.raises(RequestError) as caught:
        Assembler().assemble(query="q", passages=[{"text": "x"}], strategy=strategy)
    assert caught.value.field == f"strategy.dedup[1].{field}"
    assert message in caught.value.message


@pytest.mark.parametrize(
    "strategy",
    [SemanticDedup(embedder="hashing"), SemanticDedup(threshold=1.0, embedder="hashing:64")],
    ids=repr,
)
def test_semantic_dedup_passes_the_contract(strategy: SemanticDedup) -> None:
    testing.check_dedup_strategy(strategy)


def test_without_vectors_the_default_cannot_flag_a_copy() -> None:
    # The contract's sample passages carry no embeddings, so the default (no embedder) never
    # flags anything, not even a passage offered twice.
    with pytest.raises(AssertionError, match="offered twice was not flagged"):
        testing.check_dedup_strategy(SemanticDedup())


def _candidate(pid: str, index: int, embedding: tuple[float, ...] | None, text: str = "t") -> Any:
    passage = Passage(pid, text, embedding=embedding)
    return Candidate.of(passage, index, 0.5)


def test_a_merged_passage_replaces_the_kept_vector() -> None:
    session = SemanticDedup().session()
    kept = _candidate("a", 0, (1.0, 0.0))
    session.accept(kept, None)
    assert session.verdict(_candidate("b", 1, (1.0, 0.01))) == Duplicate(
        "a", "semantic duplicate of a (cosine 1.00)"
    )
    merged = _candidate("a2", 0, (0.0, 1.0))
    session.accept(merged, kept)
    assert session.verdict(_candidate("c", 2, (1.0, 0.0))) is None
    assert session.verdict(_candidate("d", 3, (0.1, 1.0))) == Duplicate(
        "a2", "semantic duplicate of a2 (cosine 1.00)"
    )


def test_vectors_of_different_kinds_are_never_compared() -> None:
    session = SemanticDedup(embedder="hashing:2").session()
    session.accept(_candidate("a", 0, (1.0, 0.0), text="alpha"), None)
    session.accept(_candidate("b", 1, (0.0, 3.0, 4.0), text="beta"), None)
    # Same dimension as "a" but from the embedder: compared only with embedder vectors.
    assert session.verdict(_candidate("c", 2, None, text="alpha")) is None
    session.accept(_candidate("c", 2, None, text="alpha"), None)
    assert session.verdict(_candidate("d", 3, None, text="Alpha!")) == Duplicate(
        "c", "semantic duplicate of c (cosine 1.00)"
    )
    assert session.verdict(_candidate("e", 4, (0.0, 0.6, 0.8))) == Duplicate(
        "b", "semantic duplicate of b (cosine 1.00)"
    )
    assert session.verdict(_candidate("f", 5, (0.0, 0.0))) is None  # a zero vector


def test_a_merged_passage_without_a_vector_forgets_the_kept_one() -> None:
    session = SemanticDedup().session()
    kept = _candidate("a", 0, (1.0, 0.0))
    session.accept(kept, None)
    session.accept(_candidate("b", 1, (0.0, 1.0)), None)
    session.accept(_candidate("a", 0, (0.0, 0.0)), kept)
    assert session.verdict(_candidate("c", 2, (1.0, 0.0))) is None
    assert session.verdict(_candidate("d", 3, (0.0, 1.0))) == Duplicate(
        "b", "semantic duplicate of b (cosine 1.00)"
    )


@pytest.mark.parametrize("scale", [1.0, 1e-200, 1e100, 1e160, 1e300])
def test_unit_rows_keep_a_direction_at_any_scale(scale: float) -> None:
    # at 1e160 the squared length overflowed: the vector came out as nothing, so identical
    # embeddings were no longer duplicates (and numpy warned on stderr)
    import numpy as np

    from ctxasm.embeddings import unit_rows

    unit = unit_rows(np.array([[3.0 * scale, 4.0 * scale], [0.0, 0.0]]))
    assert unit[0] == pytest.approx([0.6, 0.8])
    assert list(unit[1]) == [0.0, 0.0]
    passages = [
        {"id": f"p{i}", "text": f"Danube fact {i}", "score": 0.5, "embedding": [scale, scale, 0.0]}
        for i in range(2)
    ]
    result = ctxasm.assemble("Danube", passages, strategy={"dedup": {"name": "semantic"}})
    assert [e.candidate_id for e in result.report.excluded] == ["p1"]
