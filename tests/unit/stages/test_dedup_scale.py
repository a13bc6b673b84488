"""Near-identical candidates at scale (issue 10, item 3): dedup compares with a bounded number."""

from __future__ import annotations

import random
from typing import Any

import ctxasm
from ctxasm.data import Candidate, Passage
from ctxasm.stages import dedup, dedup_near, dedup_stitch
from ctxasm.stages.dedup_near import NearDuplicateDedup
from ctxasm.stages.dedup_stitch import StitchWindowsDedup

SENTENCE = (
    "Aristotle was an Ancient Greek philosopher and polymath whose writings cover "
    "the natural sciences philosophy linguistics economics and politics"
).split()


def _copies(n: int, **extra: Any) -> list[dict[str, Any]]:
    """``n`` copies of one sentence, two words replaced in each: too different to be
    near-duplicates (jaccard about 0.5), so each is kept, yet they share most shingles."""
    rnd = random.Random(7)
    out = []
    for i in range(n):
        words = list(SENTENCE)
        for _ in range(2):
            words[rnd.randrange(len(words))] = f"w{rnd.randrange(10**6)}"
        out.append({"id": f"p{i}", "text": " ".join(words), **extra})
    return out


def _candidate(i: int, text: str, title: str | None = None) -> Candidate:
    return Candidate.of(Passage(id=f"p{i}", text=text, title=title), i, 1.0)


def test_a_shingle_remembers_a_bounded_number_of_kept_passages() -> None:
    session = NearDuplicateDedup(lsh_after=10_000).session()
    for i, passage in enumerate(_copies(500)):
        candidate = _candidate(i, passage["text"])
        if session.verdict(candidate) is None:
            session.accept(candidate, None)
    postings = session.postings  # type: ignore[attr-defined]
    assert max(len(owners) for owners in postings.values()) == dedup_near._MAX_OWNERS


def test_an_lsh_bucket_holds_a_bounded_number_of_kept_passages() -> None:
    session = NearDuplicateDedup().session()
    signature = session._minhash(frozenset(range(50)))  # type: ignore[attr-defined]
    lsh = dedup_near._BoundedLSH(*dedup_near._lsh_bands(0.56))
    for i in range(500):
        lsh.insert(f"p{i:03d}", signature)
    assert {len(members) for members in lsh.buckets.values()} == {dedup_near._MAX_OWNERS}
    # a query proposes at most _MAX_PROPOSALS of them: those in the most buckets, then the
    # first met (here all are in every bucket)
    assert lsh.query(signature) == [f"p{i:03d}" for i in range(dedup_near._MAX_PROPOSALS)]
    lsh.remove("p000")
    assert lsh.query(signature) == [f"p{i:03d}" for i in range(1, dedup_near._MAX_PROPOSALS + 1)]


def test_an_lsh_query_proposes_the_passages_sharing_the_most_bands() -> None:
    session = NearDuplicateDedup().session()
    signature = session._minhash(frozenset(range(50)))  # type: ignore[attr-defined]
    lsh = dedup_near._BoundedLSH(*dedup_near._lsh_bands(0.56))
    keys = lsh._keys(signature)
    for i in range(100):  # each shares one band with the query
        lsh.buckets.setdefault(keys[i % len(keys)], []).append(f"a{i:03d}")
    lsh.insert("near", signature)  # shares them all
    assert "near" in lsh.query(signature)
    assert len(lsh.query(signature)) == dedup_near._MAX_PROPOSALS


def test_an_exact_copy_is_still_found_among_thousands_of_near_copies() -> None:
    passages = _copies(1500, score=1.0)
    passages.append({"id": "copy", "text": passages[0]["text"], "score": 1.0})
    result = ctxasm.assemble("What did Aristotle write?", passages, model="gemini-1.5-pro")
    excluded = {e.candidate_id: (e.reason.value, e.detail) for e in result.report.excluded}
    assert excluded.pop("copy") == (
        "duplicate",
        "same text as p0 after normalisation (similarity 1.0)",
    )
    assert {reason for reason, detail in excluded.values()} == {"duplicate"}
    assert all(detail.startswith("near-duplicate of p") for _, detail in excluded.values())
    assert result.report.selected == 1500 - len(excluded)


def test_windows_sharing_a_title_are_compared_with_the_latest_ones_only() -> None:
    session = StitchWindowsDedup().session()
    for i, passage in enumerate(_copies(200)):
        candidate = _candidate(i, passage["text"], title="Aristotle")
        assert session.placement(candidate) is None
        session.accept(candidate, None)
    # a window continuing the latest kept one is still stitched into it
    latest = _copies(200)[-1]["text"]
    merged = session.placement(_candidate(999, latest[-40:] + " and more besides", "Aristotle"))
    assert isinstance(merged, dedup.Merge)
    assert merged.into.id == "p199"
    assert merged.merged.text == latest + " and more besides"


def test_compressed_windows_stop_joining_past_a_bounded_span() -> None:
    # Each join of compressed windows is checked against the whole span the two cover, so a
    # chain of them across a long document cost time in the square of its windows (review
    # rv36-1); past dedup_stitch._MAX_CUT_SPAN characters a window starts a passage of its own.
    heads = [f"Sentence {i:03d} on the river {'Danube' if i % 2 else 'Rhine'}." for i in range(31)]
    filler = "Filler words here. " * 420
    document, starts = "", []
    for head in heads:
        starts.append(len(document))
        document += head + " " + filler
    passages = [
        {
            "id": f"w{i}",
            "text": document[starts[i] : starts[i + 1] + len(heads[i + 1])],
            "doc_id": "d",
            "start": starts[i],
            "end": starts[i + 1] + len(heads[i + 1]),
            "score": 1.0 - i / 1000,
        }
        for i in range(30)
    ]
    strategy = {
        "compression": {"name": "sentences", "mode": "all", "max_candidates": 1000},
        "dedup": "stitch",
        "selection": "greedy_by_score",
        "ordering": "score",
    }
    result = ctxasm.assemble("Danube Rhine", passages, max_context_tokens=60_000, strategy=strategy)
    merged = [e for e in result.report.excluded if e.reason.value == "merged"]
    assert merged  # compressed windows are still stitched ...
    span = starts[30] + len(heads[30]) - starts[0]
    groups = -(-span // dedup_stitch._MAX_CUT_SPAN)
    assert groups >= 2 and len(result.report.included) >= groups  # ... within the bound
