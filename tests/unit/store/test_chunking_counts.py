"""Counts the chunker reads from tokenizing each text once (``_SpanCounter``): every span's
count equals tiktoken's on that span alone, and chunking with them gives exactly the chunks of
tokenizing every span alone (the chunker before it), on generated texts and on the shared
corpora."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxasm.lexical import sentence_spans
from ctxasm.store import chunking
from ctxasm.store.chunking import _SpanCounter, chunk_and_count, count_tokens
from ctxasm.tokens import get_counter

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
EVAL = Path(__file__).resolve().parents[4] / "shared" / "eval"

_FRAGMENTS = st.sampled_from(
    [
        *"the river flows through an old city under a stone bridge".split(),
        "The",
        "Mr.",
        "3.14",
        "1,234",
        "don't",
        "'s",
        "!",
        ".",
        "...",
        "—",
        '"',
        "café",
        "naïve",
        "Straße",
        "日本語",
        "🙂",
        "🦜",
        "𓀀",
        "<|endoftext|>",
        "\n",
        "\n\n",
        "\r\n",
        "\t",
        " ",
        "  ",
        "\u00a0",
        "\u3000",
        "x" * 40,
    ]
)
_PARTS = st.lists(_FRAGMENTS | st.text(min_size=1, max_size=6), max_size=80)
_TEXTS = _PARTS.map(" ".join) | _PARTS.map("".join)


@cache
def _encoding(name: str) -> tiktoken.Encoding:
    return tiktoken.get_encoding(name)


def _parts(text: str, data: st.DataObject) -> list[tuple[int, int]]:
    """The text's sentences, or a random cut of it into consecutive parts."""
    if data.draw(st.booleans()):
        return list(sentence_spans(text))
    bounds = sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=20))))
    edges = [0, *bounds, len(text)]
    return [(a, b) for a, b in itertools.pairwise(edges) if a < b]


@SETTINGS
@given(text=_TEXTS, data=st.data(), name=st.sampled_from(["o200k_base", "cl100k_base"]))
def test_every_span_counts_as_tokenized_alone(text: str, data: st.DataObject, name: str) -> None:
    encoding = _encoding(name)
    counter = _SpanCounter(text, encoding, _parts(text, data))
    assert counter.total == len(encoding.encode_ordinary(text))
    for _ in range(12):
        begin = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(begin, len(text)))
        assert counter.count(begin, end) == len(encoding.encode_ordinary(text[begin:end]))


@SETTINGS
@given(text=_TEXTS, data=st.data(), name=st.sampled_from(["o200k_base", "cl100k_base"]))
def test_a_span_that_ends_at_a_cut_counts_as_tokenized_alone(
    text: str, data: st.DataObject, name: str
) -> None:
    # a chunk ends where its last sentence's text does, often the cut of the space after it:
    # the span then has no tail of its own
    encoding = _encoding(name)
    counter = _SpanCounter(text, encoding, _parts(text, data))
    for end in counter._anchors[:12]:
        begin = data.draw(st.integers(0, end))
        assert counter.count(begin, end) == len(encoding.encode_ordinary(text[begin:end]))


def test_a_lone_surrogate_makes_every_span_count_alone() -> None:
    text = "The river \ud800 flows. Under the bridge."
    counter = _SpanCounter(text, _encoding("o200k_base"), sentence_spans(text))
    assert counter.total is None
    spans = [(0, len(text)), (4, 20), (11, 30)]
    expected = [len(_encoding("o200k_base").encode_ordinary(text[b:e])) for b, e in spans]
    assert [counter.count(b, e) for b, e in spans] == expected


def _chunked_alone(
    text: str, chunk_tokens: int, overlap: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[chunking.Chunk], int | None]:
    """The chunks when every span is tokenized alone (no anchors), as the chunker did before
    it tokenized each text once."""
    with monkeypatch.context() as patched:
        patched.setattr(chunking, "_anchors", lambda *_: [])
        return chunk_and_count(text, chunk_tokens, overlap)


@SETTINGS
@given(text=_TEXTS, chunk_tokens=st.integers(8, 64), share=st.floats(0, 1))
def test_chunks_are_those_of_tokenizing_every_span_alone(
    text: str, chunk_tokens: int, share: float
) -> None:
    overlap = int(share * (chunk_tokens // 2))
    chunks, tokens = chunk_and_count(text, chunk_tokens, overlap)
    with pytest.MonkeyPatch.context() as patched:
        alone = _chunked_alone(text, chunk_tokens, overlap, patched)
    assert chunks == alone[0]
    if text.strip():
        assert tokens == count_tokens(text, get_counter("tiktoken:o200k_base"))


def _corpus() -> Iterator[str]:
    with open(EVAL / "wikipedia_10_articles.jsonl", encoding="utf-8") as lines:
        yield from (json.loads(line)["text"] for line in lines)
    with open(EVAL / "hotpotqa_distractor.unified.jsonl", encoding="utf-8") as lines:
        for line in lines:
            passages = json.loads(line)["passages"]
            yield from (p["text"] for p in passages)
            yield "\n\n".join(f"{p['title']}\n{p['text']}" for p in passages)


@pytest.mark.skipif(
    not (EVAL / "wikipedia_10_articles.jsonl").is_file(),
    reason="needs the shared evaluation data (../shared/eval, see its README.md)",
)
@pytest.mark.parametrize(("chunk_tokens", "overlap"), [(256, 32), (64, 16)])
def test_shared_corpora_chunk_as_when_every_span_is_tokenized_alone(
    chunk_tokens: int, overlap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    different = []
    for text in _corpus():
        chunks, tokens = chunk_and_count(text, chunk_tokens, overlap)
        alone, alone_tokens = _chunked_alone(text, chunk_tokens, overlap, monkeypatch)
        if chunks != alone or (alone_tokens is not None and tokens != alone_tokens):
            different.append(text[:60])
    assert different == []
