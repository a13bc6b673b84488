"""The dedup slot: exact, near-duplicate (pairwise and LSH), stitching of overlapping windows."""

from __future__ import annotations

import random
from typing import Any

import pytest

import ctxasm
from ctxasm.data import Candidate, Passage
from ctxasm.stages import dedup_near, dedup_stitch
from ctxasm.stages.compression import ELISION
from ctxasm.stages.dedup import Duplicate, ExactDedup, Merge
from ctxasm.stages.dedup_near import NearDuplicateDedup, shingles
from ctxasm.stages.dedup_stitch import StitchWindowsDedup

DOCUMENT = (
    "The Amazon river flows through Brazil, Peru and Colombia. It carries more water than any "
    "other river on Earth. Its basin covers about seven million square kilometres. The forest "
    "around it is home to a tenth of all known species. Many tributaries join it on its way to "
    "the Atlantic Ocean, where it ends in a wide estuary near the city of Belem."
)


def _run(passages: list[dict[str, Any]], **strategy: Any) -> ctxasm.Assembly:
    strategy = {"selection": "greedy_by_score", "ordering": "score", **strategy}
    return ctxasm.assemble("Amazon river", passages, strategy=strategy)


def _excluded(result: ctxasm.Assembly) -> list[tuple[str, str, str, str]]:
    return [(e.candidate_id, e.stage, e.reason.value, e.detail) for e in result.report.excluded]


def _source_texts(result: ctxasm.Assembly) -> list[str]:
    """The text inside each fenced source of the rendered user message."""
    lines = result.messages[-1]["content"].split("\n")
    texts, i = [], 0
    while i < len(lines):
        if lines[i].startswith("[Source "):
            fence = lines[i + 1]
            end = lines.index(fence, i + 2)
            texts.append("\n".join(lines[i + 2 : end]))
            i = end
        i += 1
    return texts


def _words(count: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(count))


# --- exact -------------------------------------------------------------------------------------


def test_exact_duplicate_after_normalising_case_punctuation_and_whitespace() -> None:
    passages = [
        {"id": "a", "text": "Paris is the capital of France.", "score": 0.9},
        {"id": "b", "text": "Berlin is the capital of Germany.", "score": 0.8},
        {"id": "c", "text": "  PARIS   is the capital -- of france!!\n", "score": 0.7},
        {"id": "d", "text": "paris, is; the CAPITAL of (France)", "score": 0.95},
    ]
    result = _run(passages, dedup="exact")
    assert [i.id for i in result.report.included] == ["d", "b"]
    assert _excluded(result) == [
        ("a", "dedup", "duplicate", "same text as d after normalisation (similarity 1.0)"),
        ("c", "dedup", "duplicate", "same text as d after normalisation (similarity 1.0)"),
    ]


def test_exact_does_not_catch_different_words() -> None:
    passages = [
        {"id": "a", "text": "Paris is the capital of France.", "score": 0.9},
        {"id": "b", "text": "Paris was the capital of France.", "score": 0.8},
    ]
    result = _run(passages, dedup="exact")
    assert [i.id for i in result.report.included] == ["a", "b"]


def test_no_dedup_keeps_exact_copies() -> None:
    passages = [
        {"id": "a", "text": "Paris is the capital of France.", "score": 0.9},
        {"id": "b", "text": "Paris is the capital of France.", "score": 0.8},
    ]
    result = _run(passages, dedup="none")
    assert [i.id for i in result.report.included] == ["a", "b"]


# --- near ------------------------------------------------------------------------------------


def test_near_duplicate_by_jaccard() -> None:
    original = _words(30, seed=1)
    changed = original.rsplit(" ", 1)[0] + " different"
    passages = [
        {"id": "orig", "text": original, "score": 0.9},
        {"id": "copy", "text": changed, "score": 0.8},
        {"id": "other", "text": _words(30, seed=2), "score": 0.7},
    ]
    result = _run(passages, dedup="near")
    assert [i.id for i in result.report.included] == ["orig", "other"]
    # 28 shingles each, 27 shared: jaccard 27 / 29.
    assert _excluded(result) == [
        (
            "copy",
            "dedup",
            "duplicate",
            "near-duplicate of orig (jaccard 0.93, 96% of its shingles already there)",
        )
    ]


def test_near_threshold_is_configurable() -> None:
    original = _words(30, seed=1)
    changed = original.rsplit(" ", 1)[0] + " different"
    passages = [
        {"id": "orig", "text": original, "score": 0.9},
        {"id": "copy", "text": changed, "score": 0.8},
    ]
    strict = _run(passages, dedup=[{"name": "near", "threshold": 0.95, "containment": 1.0}])
    assert [i.id for i in strict.report.included] == ["orig", "copy"]
    loose = _run(passages, dedup=[{"name": "near", "threshold": 0.9}])
    assert [i.id for i in loose.report.included] == ["orig"]


def test_near_duplicate_by_containment() -> None:
    whole = _words(30, seed=3)
    chunk = " ".join(whole.split()[:20])  # 18 of whole's 28 shingles: jaccard 0.64
    passages = [
        {"id": "whole", "text": whole, "score": 0.9},
        {"id": "chunk", "text": chunk, "score": 0.8},
    ]
    result = _run(passages, dedup="near")
    assert [i.id for i in result.report.included] == ["whole"]
    assert _excluded(result) == [
        (
            "chunk",
            "dedup",
            "duplicate",
            "near-duplicate of whole (jaccard 0.64, 100% of its shingles already there)",
        )
    ]


def test_containment_is_one_sided() -> None:
    # The longer passage is not contained in the shorter kept one.
    whole = _words(30, seed=3)
    chunk = " ".join(whole.split()[:20])
    passages = [
        {"id": "chunk", "text": chunk, "score": 0.9},
        {"id": "whole", "text": whole, "score": 0.8},
    ]
    result = _run(passages, dedup="near")
    assert [i.id for i in result.report.included] == ["chunk", "whole"]


def test_near_lsh_path(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    original_build = dedup_near._NearSession._build_index

    def spy(self: Any) -> None:
        built.append(len(self.kept))
        original_build(self)

    monkeypatch.setattr(dedup_near._NearSession, "_build_index", spy)
    originals = [_words(40, seed=100 + i) for i in range(12)]
    passages = [
        {"id": f"orig{i}", "text": text, "score": 1.0 - i * 0.01}
        for i, text in enumerate(originals)
    ]
    for i, text in enumerate(originals[:6]):
        passages.append(
            {"id": f"near{i}", "text": text.rsplit(" ", 1)[0] + " changed", "score": 0.5 - i / 100}
        )
    result = _run(passages, dedup=["exact", {"name": "near", "lsh_after": 2}])
    assert built == [3]  # the index replaced pairwise comparison after the third kept passage
    assert sorted(i.id for i in result.report.included) == sorted(f"orig{i}" for i in range(12))
    assert _excluded(result) == [
        (
            f"near{i}",
            "dedup",
            "duplicate",
            f"near-duplicate of orig{i} (jaccard 0.95, 97% of its shingles already there)",
        )
        for i in range(6)
    ]


def test_lsh_and_pairwise_agree() -> None:
    originals = [_words(40, seed=200 + i) for i in range(10)]
    passages = [{"id": f"o{i}", "text": t, "score": 1.0 - i / 100} for i, t in enumerate(originals)]
    for i, text in enumerate(originals):
        words = text.split()
        words[20] = "swapped"
        passages.append({"id": f"n{i}", "text": " ".join(words), "score": 0.5 - i / 100})
    pairwise = _run(passages, dedup=[{"name": "near", "lsh_after": 1000}])
    indexed = _run(passages, dedup=[{"name": "near", "lsh_after": 2}])
    assert [i.id for i in indexed.report.included] == [i.id for i in pairwise.report.included]
    assert _excluded(indexed) == _excluded(pairwise)
    assert [e[0] for e in _excluded(indexed)] == [f"n{i}" for i in range(10)]


# --- stitching ---------------------------------------------------------------------------------


def test_stitch_by_offsets_keeps_the_union() -> None:
    first, second = DOCUMENT[0:120], DOCUMENT[90:220]
    passages = [
        {"id": "w1", "text": first, "score": 0.9, "doc_id": "amazon", "start": 0, "end": 120},
        {"id": "w2", "text": second, "score": 0.8, "doc_id": "amazon", "start": 90, "end": 220},
    ]
    result = _run(passages)
    assert [i.id for i in result.report.included] == ["w1"]
    assert _source_texts(result) == [DOCUMENT[0:220]]
    assert _excluded(result) == [
        ("w2", "dedup", "merged", "stitched into w1: windows overlap by 30 characters")
    ]
    assert result.report.included[0].score == 0.9


def test_stitch_by_offsets_when_the_later_window_ranks_first() -> None:
    passages = [
        {"id": "w1", "text": DOCUMENT[0:120], "score": 0.5, "doc_id": "d", "start": 0, "end": 120},
        {
            "id": "w2",
            "text": DOCUMENT[90:220],
            "score": 0.8,
            "doc_id": "d",
            "start": 90,
            "end": 220,
        },
    ]
    result = _run(passages)
    assert [(i.id, i.score) for i in result.report.included] == [("w2", 0.8)]
    assert _source_texts(result) == [DOCUMENT[0:220]]
    assert _excluded(result) == [
        ("w1", "dedup", "merged", "stitched into w2: windows overlap by 30 characters")
    ]


def test_stitch_three_windows_into_one() -> None:
    windows = [(0, 120), (100, 220), (200, len(DOCUMENT))]
    passages = [
        {
            "id": f"w{i}",
            "text": DOCUMENT[s:e],
            "score": 0.9 - i / 10,
            "doc_id": "d",
            "start": s,
            "end": e,
        }
        for i, (s, e) in enumerate(windows)
    ]
    result = _run(passages)
    assert [i.id for i in result.report.included] == ["w0"]
    assert _source_texts(result) == [DOCUMENT]
    assert [(e[0], e[2]) for e in _excluded(result)] == [("w1", "merged"), ("w2", "merged")]
    assert all("stitched into w0" in e[3] for e in _excluded(result))


def test_window_inside_another_is_a_duplicate() -> None:
    passages = [
        {"id": "big", "text": DOCUMENT[0:200], "score": 0.9, "doc_id": "d", "start": 0, "end": 200},
        {
            "id": "small",
            "text": DOCUMENT[50:120],
            "score": 0.8,
            "doc_id": "d",
            "start": 50,
            "end": 120,
        },
    ]
    result = _run(passages)
    assert [i.id for i in result.report.included] == ["big"]
    assert _source_texts(result) == [DOCUMENT[0:200]]
    assert _excluded(result) == [("small", "dedup", "duplicate", "window 50-120 lies inside big")]


def test_windows_of_different_documents_are_not_stitched() -> None:
    passages = [
        {"id": "w1", "text": DOCUMENT[0:120], "score": 0.9, "doc_id": "a", "start": 0, "end": 120},
        {
            "id": "w2",
            "text": DOCUMENT[90:220],
            "score": 0.8,
            "doc_id": "b",
            "start": 90,
            "end": 220,
        },
    ]
    result = _run(passages, dedup="stitch")
    assert [i.id for i in result.report.included] == ["w1", "w2"]
    assert _source_texts(result) == [DOCUMENT[0:120], DOCUMENT[90:220]]


def test_adjacent_windows_are_not_stitched() -> None:
    passages = [
        {"id": "w1", "text": DOCUMENT[0:120], "score": 0.9, "doc_id": "d", "start": 0, "end": 120},
        {
            "id": "w2",
            "text": DOCUMENT[120:220],
            "score": 0.8,
            "doc_id": "d",
            "start": 120,
            "end": 220,
        },
    ]
    result = _run(passages, dedup="stitch")
    assert [i.id for i in result.report.included] == ["w1", "w2"]


@pytest.mark.parametrize("offsets", [True, False])
def test_a_stitched_window_without_a_header_takes_the_one_it_grows_by(offsets: bool) -> None:
    # a window returned without title and url, grown by one that has them, was headed by its
    # id alone: the document's title, url and source are shown and reported instead
    head = {"title": "Amazon River", "url": "https://example.org/amazon", "source": "wiki"}
    first: dict[str, Any] = {"id": "w1", "text": DOCUMENT[0:150], "score": 0.5, "doc_id": "d"}
    second: dict[str, Any] = {"id": "w2", "text": DOCUMENT[100:260], "score": 0.9, "doc_id": "d"}
    if offsets:
        first.update(start=0, end=150)
        second.update(start=100, end=260)
    result = _run([{**first, **head}, second])
    included = result.report.included
    assert [(i.id, i.url, i.source) for i in included] == [
        ("w2", "https://example.org/amazon", "wiki")
    ]
    assert _source_texts(result) == [DOCUMENT[0:260]]
    assert "Amazon River <https://example.org/amazon>" in str(result.messages)
    # a window with a header of its own keeps it
    own = _run(
        [{**first, "title": "Other"}, {**second, "title": "Own", "url": "https://o.example"}]
    )
    assert [(i.id, i.url) for i in own.report.included] == [("w2", "https://o.example")]
    assert "[Source 1] Own <https://o.example>" in str(own.messages)
    # an empty title is none: it no longer masks the url a later window brings (review rv22)
    for blank in ("", " \n "):
        empty = _run([{**first, **head}, {**second, "title": blank}])
        assert [i.url for i in empty.report.included] == ["https://example.org/amazon"]
    # a url no header shows names nothing either: the window is headed by the one it grows by
    for unshown in ("javascript:alert(1)", "data:text/plain,x", "http://[::1", "  "):
        hidden = _run([{**first, **head}, {**second, "url": unshown}])
        assert [i.url for i in hidden.report.included] == ["https://example.org/amazon"]
        assert "Amazon River <https://example.org/amazon>" in str(hidden.messages)


def test_stitch_by_detected_text_overlap() -> None:
    first, second = DOCUMENT[0:150], DOCUMENT[100:260]  # 50 shared characters, no offsets
    passages = [
        {"id": "w1", "text": first, "score": 0.9, "doc_id": "amazon"},
        {"id": "w2", "text": second, "score": 0.8, "doc_id": "amazon"},
    ]
    result = _run(passages)
    assert [i.id for i in result.report.included] == ["w1"]
    assert _source_texts(result) == [DOCUMENT[0:260]]
    assert _excluded(result) == [
        ("w2", "dedup", "merged", "stitched into w1: continues it with 50 shared characters")
    ]


def test_stitch_by_detected_text_overlap_in_reverse() -> None:
    passages = [
        {"id": "w1", "text": DOCUMENT[0:150], "score": 0.5, "url": "https://x/amazon"},
        {"id": "w2", "text": DOCUMENT[100:260], "score": 0.8, "url": "https://x/amazon"},
    ]
    result = _run(passages)
    assert [i.id for i in result.report.included] == ["w2"]
    assert _source_texts(result) == [DOCUMENT[0:260]]
    assert _excluded(result) == [
        ("w1", "dedup", "merged", "stitched into w2: precedes it with 50 shared characters")
    ]


def test_text_overlap_below_the_minimum_is_not_stitched() -> None:
    passages = [
        {"id": "w1", "text": DOCUMENT[0:150], "score": 0.9, "doc_id": "d"},
        {"id": "w2", "text": DOCUMENT[130:260], "score": 0.8, "doc_id": "d"},  # 20 shared
    ]
    result = _run(passages, dedup="stitch")
    assert [i.id for i in result.report.included] == ["w1", "w2"]
    lowered = _run(passages, dedup=[{"name": "stitch", "min_overlap_chars": 10}])
    assert [i.id for i in lowered.report.included] == ["w1"]
    assert _source_texts(lowered) == [DOCUMENT[0:260]]


def test_text_inside_a_kept_window_is_a_duplicate() -> None:
    passages = [
        {"id": "w1", "text": DOCUMENT[0:200], "score": 0.9, "doc_id": "d"},
        {"id": "w2", "text": DOCUMENT[40:90], "score": 0.8, "doc_id": "d"},
    ]
    result = _run(passages, dedup="stitch")
    assert _excluded(result) == [("w2", "dedup", "duplicate", "text lies inside w1")]


def test_offsets_that_disagree_with_the_text_are_not_trusted() -> None:
    # Same offsets but different text: a different version of the document.
    passages = [
        {"id": "v1", "text": "a" * 50, "score": 0.9, "doc_id": "d", "start": 0, "end": 50},
        {"id": "v2", "text": "b" * 50, "score": 0.8, "doc_id": "d", "start": 25, "end": 75},
    ]
    result = _run(passages, dedup="stitch")
    assert [i.id for i in result.report.included] == ["v1", "v2"]


# A document that repeats one sentence in every section: windows far apart share it, so their
# texts can overlap where their offsets say the windows do not touch.
REPEATED = (
    "This section explains the details that customers ask about most often, with examples "
    "and the usual caveats that apply to every plan."
)
FAQ = "# Product FAQ\n" + "".join(
    f"\n## {section}\n" + (REPEATED + "\n") * 3 + fact
    for section, fact in [
        ("Billing", ""),
        ("Exports", "CSV exports are limited to 50,000 rows.\n"),
        ("Integrations", ""),
        ("Limits", "The API allows 600 requests per minute per workspace.\n"),
        ("Support", ""),
    ]
)


def _repeated_in(section: str, n: int) -> int:
    """Where the ``n``-th repeated sentence (from 1) of ``section`` starts in ``FAQ``."""
    at = FAQ.index(f"## {section}\n")
    for _ in range(n):
        at = FAQ.index(REPEATED, at + 1)
    return at


def test_compressed_windows_apart_by_offsets_are_not_stitched_by_a_repeated_sentence() -> None:
    # Compression drops a window's offsets (they no longer measure its text); stitching then
    # matched the repeated sentence that ends one compressed text and begins the other, and
    # sent the CSV fact under "## Support" (review rv35). The offsets the caller gave still
    # say where each window lies, and these two windows do not touch.
    spans = {
        "limits": (_repeated_in("Limits", 2), len(FAQ)),
        "exports": (_repeated_in("Exports", 2), _repeated_in("Integrations", 2) + len(REPEATED)),
    }
    passages = [
        {"id": pid, "doc_id": "faq", "text": FAQ[s:e], "score": score, "start": s, "end": e}
        for (pid, (s, e)), score in zip(spans.items(), (0.9, 0.8), strict=True)
    ]
    compression = {"name": "sentences", "mode": "all"}
    result = ctxasm.assemble(
        "What is the API rate limit?",
        passages,
        max_context_tokens=300,
        strategy={"compression": compression, "dedup": "stitch", "ordering": "score"},
    )
    assert _excluded(result) == []
    assert [item.id for item in result.report.included] == ["limits", "exports"]
    sent = _source_texts(result)
    assert [ELISION in text for text in sent] == [True, True]  # both compressed
    for (start, end), text in zip(spans.values(), sent, strict=True):
        assert dedup_stitch._cut_of(text, FAQ[start:end]), text


def test_offsets_that_do_not_measure_the_text_still_keep_windows_apart() -> None:
    # Offsets of each text before white space was stripped from it: not trusted to find the
    # overlap (they do not measure the text), but still in the document's order. Windows with
    # a gap between them are not stitched by the sentence one ends and the other begins with.
    exports = (FAQ.index("## Exports"), _repeated_in("Integrations", 1) + len(REPEATED) + 1)
    limits = (_repeated_in("Limits", 3), FAQ.index("## Support"))
    passages = [
        {"id": pid, "doc_id": "faq", "text": FAQ[s:e].strip(), "score": score, "start": s, "end": e}
        for pid, (s, e), score in [("limits", limits, 0.9), ("exports", exports, 0.8)]
    ]
    apart = _run(passages, dedup="stitch")
    assert _excluded(apart) == []
    assert _source_texts(apart) == [FAQ[slice(*limits)].strip(), FAQ[slice(*exports)].strip()]
    # without offsets only the text can tell, and it stitches them (text detection's limit)
    unplaced = [{k: v for k, v in p.items() if k not in ("start", "end")} for p in passages]
    assert _excluded(_run(unplaced, dedup="stitch")) == [
        (
            "exports",
            "dedup",
            "merged",
            "stitched into limits: precedes it with 132 shared characters",
        )
    ]
    # windows whose offsets overlap are stitched by their texts, joined the way round the
    # offsets give, although each text ends with the sentence the other begins with
    earlier = (_repeated_in("Integrations", 1), _repeated_in("Integrations", 3) + len(REPEATED) + 1)
    later = (_repeated_in("Integrations", 3), _repeated_in("Limits", 1) + len(REPEATED) + 1)
    overlapping = [
        {"id": pid, "doc_id": "faq", "text": FAQ[s:e].strip(), "score": score, "start": s, "end": e}
        for pid, (s, e), score in [("later", later, 0.9), ("earlier", earlier, 0.8)]
    ]
    stitched = _run(overlapping, dedup="stitch")
    assert _source_texts(stitched) == [FAQ[earlier[0] : later[1]].strip()]
    assert _excluded(stitched) == [
        (
            "earlier",
            "dedup",
            "merged",
            "stitched into later: precedes it with 132 shared characters",
        )
    ]


# --- sessions directly -------------------------------------------------------------------------


def _candidate(pid: str, text: str, index: int, **fields: Any) -> Candidate:
    return Candidate.of(Passage(pid, text, **fields), index, 1.0 - index / 10)


def test_exact_session_verdicts() -> None:
    session = ExactDedup().session()
    first = _candidate("a", "Hello, World!", 0)
    assert session.placement(first) is None
    assert session.verdict(first) is None
    session.accept(first, None)
    assert session.verdict(_candidate("b", "hello world", 1)) == Duplicate(
        "a", "same text as a after normalisation (similarity 1.0)"
    )
    assert session.verdict(_candidate("c", "hello there world", 2)) is None


def test_stitch_session_merge_placement() -> None:
    session = StitchWindowsDedup().session()
    kept = _candidate("a", DOCUMENT[0:100], 0, doc_id="d", start=0, end=100)
    assert session.placement(kept) is None
    session.accept(kept, None)
    new = _candidate("b", DOCUMENT[60:140], 1, doc_id="d", start=60, end=140)
    verdict = session.placement(new)
    assert isinstance(verdict, Merge)
    assert verdict.into is kept
    assert (verdict.merged.id, verdict.merged.text) == ("a", DOCUMENT[0:140])
    assert (verdict.merged.start, verdict.merged.end) == (0, 140)
    inside = _candidate("c", DOCUMENT[10:50], 2, doc_id="d", start=10, end=50)
    assert session.placement(inside) == Duplicate("a", "window 10-50 lies inside a")
    other = _candidate("e", DOCUMENT[60:140], 3, doc_id="other", start=60, end=140)
    assert session.placement(other) is None


def _compressed(pid: str, document: str, span: tuple[int, int], text: str, index: int) -> Candidate:
    """The window ``span`` of ``document`` as compression leaves it: ``text`` in place of its
    own, offsets dropped (its passage keeps them)."""
    start, end = span
    window = _candidate(pid, document[start:end], index, doc_id="d", start=start, end=end)
    return window._replace(text=text, start=None, end=None)


def test_compressed_windows_are_joined_only_in_their_document_order() -> None:
    repeated = "This sentence comes back in every part of it."
    document = (
        f"{repeated} Ynot is first. Zed is second. {repeated} Wend is last. Others come between. "
        f"{repeated} Wend is last."
    )
    second = document.index(repeated, 1)
    third = document.rindex(repeated)
    session = StitchWindowsDedup().session()
    kept = _compressed(
        "a", document, (0, second + len(repeated)), f"{ELISION} Zed is second. {repeated}", 0
    )
    session.accept(kept, None)
    # by their texts "b" continues "a" at the repeated sentence, which would put Ynot after Zed
    before = _compressed("b", document, (0, second), f"{repeated} Ynot is first. {ELISION}", 1)
    assert session.placement(before) is None
    # "c" continues "a" where they overlap: joined, the offsets dropped from the grown passage
    wend = document.index("Wend is last.") + len("Wend is last.")
    after = _candidate("c", document[second:wend], 2, doc_id="d", start=second, end=wend)
    verdict = session.placement(after)
    assert isinstance(verdict, Merge)
    assert verdict.detail == "stitched into a: continues it with 45 shared characters"
    assert verdict.merged.text == f"{ELISION} Zed is second. {repeated} Wend is last."
    assert (verdict.merged.start, verdict.merged.end) == (None, None)
    session.accept(verdict.merged, verdict.into)
    # the grown passage lies at 0 to the end of "c": a window apart from it whose text lies
    # inside its text is not a duplicate of it
    far = _candidate("d", document[third:], 3, doc_id="d", start=third, end=len(document))
    assert far.text in verdict.merged.text
    assert session.placement(far) is None


def test_compressed_windows_join_the_way_round_their_offsets_give() -> None:
    # Each text ends with the sentence the other begins with: the offsets say "b" comes first.
    repeated = "This sentence comes back in every part of it."
    document = f"{repeated} Xan is here. {repeated} Yon is here. {repeated} Zed is here. {repeated}"
    second = document.index(repeated, 1)
    shown = f"{repeated} {ELISION} Zed is here. {repeated}"
    session = StitchWindowsDedup().session()
    session.accept(_compressed("a", document, (second, len(document)), shown, 0), None)
    end = second + len(repeated)
    verdict = session.placement(_candidate("b", document[:end], 1, doc_id="d", start=0, end=end))
    assert isinstance(verdict, Merge)
    assert verdict.detail == "stitched into a: precedes it with 45 shared characters"
    assert verdict.merged.text == f"{repeated} Xan is here. {shown}"


def test_shingles() -> None:
    assert shingles("a b c d", 3) == shingles("A, b. C d!", 3)
    assert len(shingles("a b c d", 3)) == 2
    assert len(shingles("a b", 3)) == 2  # shorter than a shingle: its words
    assert shingles("", 3) == frozenset()


def test_strategy_config_round_trip() -> None:
    near = NearDuplicateDedup(threshold=0.8, lsh_after=5)
    assert near.to_config() == {
        "name": "near",
        "threshold": 0.8,
        "containment": 0.9,
        "shingle_size": 3,
        "lsh_after": 5,
    }
    assert StitchWindowsDedup().to_config() == {"name": "stitch", "min_overlap_chars": 32}
    assert ExactDedup().to_config() == {"name": "exact"}


def _distinct(n: int) -> list[str]:
    words = [f"w{i}x{j}" for i in range(n) for j in range(12)]
    return [" ".join(words[i * 12 : (i + 1) * 12]) for i in range(n)]


@pytest.mark.parametrize("kept_count", [5, 40, 300])
def test_near_dedup_finds_copies_past_the_direct_comparison_limit(kept_count: int) -> None:
    # Up to 32 kept passages are compared directly; beyond, through the shingle index, which is
    # built on first need and kept current through merges (replace) afterwards.
    texts = _distinct(kept_count + 1)
    session = NearDuplicateDedup().session()
    kept = [Candidate.of(Passage(id=f"k{i}", text=t), i, 1.0) for i, t in enumerate(texts[:-1])]
    for number, candidate in enumerate(kept):
        assert session.verdict(candidate) is None
        session.accept(candidate, None)
        if number == kept_count // 2:  # a verdict in the middle builds the index early
            assert (
                session.verdict(Candidate.of(Passage(id="probe", text=texts[-1]), 0, 1.0)) is None
            )
    copy = Candidate.of(Passage(id="copy", text=texts[-2] + " tail"), 0, 1.0)
    found = session.verdict(copy)
    assert isinstance(found, Duplicate) and found.of == f"k{kept_count - 1}"
    # replacing a kept passage (as stitching does) forgets its old shingles
    grown = kept[-1]._replace(text=texts[-1])
    session.accept(grown, kept[-1])
    assert session.verdict(Candidate.of(Passage(id="old", text=texts[-2]), 0, 1.0)) is None
    again = session.verdict(Candidate.of(Passage(id="new", text=texts[-1]), 0, 1.0))
    assert isinstance(again, Duplicate) and again.of == f"k{kept_count - 1}"


def _overlap_by_definition(first: str, second: str, minimum: int) -> int:
    for n in range(min(len(first), len(second)), max(minimum, 1) - 1, -1):
        if first[-n:] == second[:n]:
            return n
    return 0


def test_the_overlap_of_two_windows_is_the_longest_by_definition() -> None:
    # Texts of two letters repeat each other's start everywhere: past a few recurrences the
    # overlap is not looked for (0: the windows stay apart), otherwise it is the longest.
    rng = random.Random(7)
    exact = gave_up = 0
    for _ in range(5_000):
        first = "".join(rng.choice("ab") for _ in range(rng.randrange(0, 80)))
        second = "".join(rng.choice("ab") for _ in range(rng.randrange(0, 80)))
        minimum = rng.randrange(1, 6)
        expected = _overlap_by_definition(first, second, minimum)
        found = dedup_stitch._suffix_prefix_overlap(first, second, minimum)
        if found == expected:
            exact += 1
        else:
            assert found == 0
            tail = first[max(0, len(first) - len(second)) :]
            recurrences = sum(tail.startswith(second[:minimum], i) for i in range(len(tail)))
            assert recurrences > dedup_stitch._DIRECT_TRIES
            gave_up += 1
    assert exact > 4_000 and gave_up > 0


def test_windows_repeating_one_phrase_are_compared_in_linear_work() -> None:
    # "ab ab ab ... X" against "ab ab ab ... Y": the start of each recurs at every third
    # character of the other. Each direct comparison reads up to the whole text, and there
    # are a bounded number of them (quadratic work before: 20,000).
    compared: list[int] = []
    first, second = "ab " * 20_000 + "Xend.", "ab " * 20_000 + "Yend."

    class Counting(str):
        def startswith(self, prefix: Any, *args: Any) -> bool:  # type: ignore[override]
            compared.append(len(prefix))
            return super().startswith(prefix, *args)

    assert dedup_stitch._suffix_prefix_overlap(first, Counting(second), 32) == 0
    assert len(compared) == dedup_stitch._DIRECT_TRIES


@pytest.mark.parametrize("offsets", [True, False])
def test_a_stitch_grows_a_passage_to_a_bounded_length(offsets: bool) -> None:
    # Chained windows of one document: each stitch rescans and recounts the grown text, so a
    # passage grows to at most MAX_STITCHED_CHARS; the window past it starts a passage of its
    # own (and the next windows are stitched into that one).
    rng = random.Random(11)
    doc = " ".join(f"w{rng.randrange(10**6)}" for _ in range(20_000))
    step, width = 900, 1_000
    passages = []
    for i in range(60):
        text = doc[i * step : i * step + width]
        passage: dict[str, Any] = {"id": f"w{i}", "text": text, "doc_id": "D", "score": 0.9}
        if offsets:
            passage.update(start=i * step, end=i * step + len(text))
        passages.append(passage)
    strategy = {"dedup": ["stitch"], "guard": None, "compression": None}
    result = ctxasm.assemble("w1", passages, max_context_tokens=100_000, strategy=strategy)
    lengths = [len(candidate.text) for candidate in result.passages]
    assert len(lengths) == 2
    assert max(lengths) <= dedup_stitch.MAX_STITCHED_CHARS
    assert sum(lengths) > 59 * step  # the whole document, in two passages


def test_the_strategies_that_moved_are_still_found_in_the_dedup_module() -> None:
    # rv43-5: the split broke `from ctxasm.stages.dedup import StitchWindowsDedup`, and every
    # assembly where an installed entry point still named this module
    from importlib.metadata import EntryPoint

    from ctxasm.stages import dedup

    assert dedup.NearDuplicateDedup is dedup_near.NearDuplicateDedup
    assert dedup.StitchWindowsDedup is dedup_stitch.StitchWindowsDedup
    assert dedup.clear_caches is dedup_near.clear_caches
    entry = EntryPoint("stitch", "ctxasm.stages.dedup:StitchWindowsDedup", "ctxasm.dedup")
    assert entry.load() is dedup_stitch.StitchWindowsDedup
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        dedup.Nothing  # noqa: B018
    found: dict[str, object] = {}
    exec("from ctxasm.stages.dedup import *", found)  # rv44-14: as before the split
    assert found["NearDuplicateDedup"] is dedup_near.NearDuplicateDedup
    assert found["StitchWindowsDedup"] is dedup_stitch.StitchWindowsDedup
    assert found["clear_caches"] is dedup_near.clear_caches
