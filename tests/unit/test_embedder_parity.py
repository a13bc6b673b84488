"""The hashing embedder, summed in numpy over many texts at once, gives the same vectors to the
last bit as the reference below: ctxasm 0.2's one-text-at-a-time loop, kept here verbatim as
the definition (stored vectors and HNSW indexes built with it must stay valid)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxasm.embeddings import HashingEmbedder
from ctxasm.lexical import words

EVAL = Path(__file__).resolve().parents[3] / "shared" / "eval" / "hotpotqa_distractor.unified.jsonl"


def _reference(texts: list[str], dimension: int, ngram: tuple[int, int]) -> Any:
    result = np.zeros((len(texts), dimension), dtype=np.float32)
    for row, text in enumerate(texts):
        tokens = words(text)
        grams: Counter[str] = Counter()
        for n in range(ngram[0], ngram[1] + 1):
            grams.update(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
        vector = np.zeros(dimension, dtype=np.float64)
        for gram, count in grams.items():
            digest = xxhash.xxh3_64_intdigest(gram.encode("utf-8", "surrogatepass"))
            sign = -1.0 if digest >> 63 else 1.0
            vector[digest % dimension] += sign * (1.0 + math.log(count))
        norm = float(np.linalg.norm(vector))
        if norm > 0.0:
            vector /= norm
        result[row] = vector
    return result


def _same_bits(texts: list[str], dimension: int = 256, ngram: tuple[int, int] = (1, 2)) -> None:
    found = HashingEmbedder(dimension, ngram).embed(texts)
    expected = _reference(texts, dimension, ngram)
    assert found.dtype == expected.dtype and found.shape == expected.shape
    assert found.tobytes() == expected.tobytes()


WORDS = ["river", "bridge", "River", "Öl", "naïve", "東京", "x", "42", "the", "a_b", "\ud800"]


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(WORDS) | st.text(max_size=12), max_size=60).map(" ".join),
        max_size=12,
    ),
    dimension=st.sampled_from([1, 2, 7, 64, 256, 1000]),
    ngram=st.sampled_from([(1, 1), (1, 2), (2, 2), (1, 3), (2, 4)]),
)
def test_random_texts_give_the_reference_vectors(
    texts: list[str], dimension: int, ngram: tuple[int, int]
) -> None:
    _same_bits(texts, dimension, ngram)


def test_repeated_words_and_empty_texts_give_the_reference_vectors() -> None:
    texts = ["", "river " * 500, "river bridge " * 300 + "end", "!!!", "a " * 70_000]
    _same_bits(texts)
    _same_bits(texts, 7, (1, 3))


def test_more_texts_than_one_slice_give_the_reference_vectors() -> None:
    texts = [f"chunk {n} about the river {n % 7} and bridge {n % 13}" for n in range(2_500)]
    _same_bits(texts)


@pytest.mark.skipif(not EVAL.is_file(), reason="needs the shared HotpotQA passages")
def test_hotpotqa_passages_give_the_reference_vectors() -> None:
    texts = []
    with open(EVAL, encoding="utf-8") as lines:
        for line, _ in zip(lines, range(300), strict=False):
            for passage in json.loads(line)["passages"]:
                texts.append(" ".join(passage.get("sentences") or []))
    assert len(texts) > 2_000
    _same_bits(texts)
