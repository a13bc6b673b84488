"""The verify loop and the report: exact fields, complete accounting, cost, determinism."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from typing import Any

import pytest
import tiktoken

import ctxasm
from ctxasm.data import Candidate, Passage, Reason
from ctxasm.pipeline import fit as _fit
from ctxasm.report import cost_usd

O200K = tiktoken.get_encoding("o200k_base")
DOCUMENT = (
    "The Danube is Europe's second-longest river. It rises in the Black Forest of Germany and "
    "flows through ten countries, including Austria, Hungary, Serbia and Romania, before it "
    "reaches the Black Sea through a wide delta that is home to many birds."
)
REASONS = {
    "access_denied",
    "below_threshold",
    "top_k",
    "duplicate",
    "merged",
    "over_budget",
    "priority_cutoff",
    "injection",
    "empty",
    "history_trimmed",
}


def _count(text: str) -> int:
    return len(O200K.encode(text, disallowed_special=()))


def _mixed_request() -> dict[str, Any]:
    """A request whose passages meet every stage: one of each fate."""
    return {
        "query": "Which countries does the Danube flow through?",
        "model": "gpt-4o",
        "principal": {"id": "ana", "tenant": "eu", "groups": ["geo"]},
        "top_k": 8,
        "min_score": 0.1,
        "max_context_tokens": 260,
        "passages": [
            {
                "id": "w1",
                "text": DOCUMENT[:120],
                "score": 0.9,
                "doc_id": "danube",
                "start": 0,
                "end": 120,
                "tenant": "eu",
                "title": "Danube",
                "url": "https://example.org/danube",
                "source": "encyclopedia",
            },
            {
                "id": "w2",
                "text": DOCUMENT[100:],
                "score": 0.85,
                "doc_id": "danube",
                "start": 100,
                "end": len(DOCUMENT),
                "tenant": "eu",
            },
            {
                "id": "secret",
                "text": "The Danube flows through secret places.",
                "score": 0.99,
                "tenant": "us",
            },
            {"id": "copy", "text": DOCUMENT[:120].upper(), "score": 0.8, "tenant": "eu"},
            {"id": "blank", "text": "   ", "score": 0.95, "tenant": "eu"},
            {"id": "offtopic", "text": "Pasta needs salted water.", "score": 0.05, "tenant": "eu"},
            {
                "id": "long",
                "text": "The Danube countries " + "and more rivers " * 150,
                "score": 0.7,
                "readers": ["geo"],
            },
            {
                "id": "short1",
                "text": "Serbia lies on the Danube.",
                "score": 0.6,
                "readers": ["ana"],
            },
            {"id": "short2", "text": "Vienna sits on the Danube.", "score": 0.5, "tenant": "eu"},
            {
                "id": "short3",
                "text": "Budapest straddles the Danube.",
                "score": 0.4,
                "tenant": "eu",
            },
            {"id": "short4", "text": "Bratislava is on the Danube.", "score": 0.3, "tenant": "eu"},
            {"id": "short5", "text": "Danube, Danube!", "score": 0.2, "tenant": "eu"},
        ],
    }


def test_result_fields_are_exactly_those_of_the_contract() -> None:
    data = ctxasm.assemble(**_mixed_request()).to_dict()
    assert list(data) == ["messages", "system", "text", "report"]
    report = data["report"]
    # the contract's fields (docs/report.md) plus the query class the selection used
    assert report.pop("query_class") in ("factoid", "multihop", "comparison", "summary")
    assert set(report.pop("relevance") or {}) == {"method", "note"}
    assert set(report.pop("history") or {}) <= {
        "turns",
        "kept",
        "tokens",
        "dropped",
        "summary_tokens",
        "relevance_turn",
    }
    assert set(report) == {
        "model",
        "tokenizer",
        "exact_count",
        "budget",
        "total_tokens",
        "context_tokens",
        "considered",
        "selected",
        "no_relevant_context",
        "included",
        "excluded",
        "cost_usd",
        "timings_ms",
    }
    assert set(report["budget"]) == {
        "context_window",
        "reserve_output",
        "system",
        "query",
        "history",
        "overhead",
        "margin",
        "context",
    }
    assert report["included"]
    for item in report["included"]:
        # plus the documented extensions: what compression kept (null when uncompressed) and
        # why selection chose it
        assert set(item["chosen"]) == {"by", "terms", "linked_from", "via", "given_score"}
        assert set(item) == {
            "id",
            "label",
            "tokens",
            "score",
            "position",
            "source",
            "url",
            "compression",
            "flags",
            "chosen",
        }
    assert report["excluded"]
    for item in report["excluded"]:
        assert set(item) == {"id", "stage", "reason", "detail"}
    assert set(report["timings_ms"]) == {
        "access",
        "budget",
        "relevance",
        "dedup",
        "selection",
        "compression",
        "ordering",
        "verify",
        "total",
    }
    assert json.loads(json.dumps(data)) == data  # plain JSON all the way down


def test_every_passage_is_accounted_for_once() -> None:
    request = _mixed_request()
    report = ctxasm.assemble(**request).report
    ids = [i.id for i in report.included] + [e.candidate_id for e in report.excluded]
    assert sorted(ids) == sorted(p["id"] for p in request["passages"])
    assert len(ids) == len(set(ids))
    assert report.considered == len(request["passages"])
    assert report.selected == len(report.included)
    fates = {e.candidate_id: (e.stage, e.reason.value) for e in report.excluded}
    assert fates == {
        "w2": ("dedup", "merged"),
        "secret": ("access", "access_denied"),
        "copy": ("dedup", "duplicate"),
        "blank": ("relevance", "empty"),
        "offtopic": ("relevance", "below_threshold"),
        "long": ("selection", "over_budget"),
        "short5": ("relevance", "top_k"),
    }
    assert sorted(i.id for i in report.included) == ["short1", "short2", "short3", "short4", "w1"]
    assert {e.reason.value for e in report.excluded} <= REASONS
    # Excluded entries are listed in request order.
    order = [p["id"] for p in request["passages"]]
    assert [e.candidate_id for e in report.excluded] == sorted(
        (e.candidate_id for e in report.excluded), key=order.index
    )


def test_included_entries() -> None:
    request = _mixed_request()
    result = ctxasm.assemble(**request)
    included = result.report.included
    assert [i.position for i in included] == list(range(1, len(included) + 1))
    assert [i.label for i in included] == [f"Source {n}" for n in range(1, len(included) + 1)]
    by_id = {i.id: i for i in included}
    w1 = by_id["w1"]
    assert (w1.source, w1.url) == ("encyclopedia", "https://example.org/danube")
    content = result.messages[-1]["content"]
    # w1's share is its stitched text with its header line and fences; all shares plus the
    # final closing fence are exactly the sources block
    assert w1.tokens > _count(DOCUMENT)
    block = content[: content.rindex("\n\nQuestion: ")]
    assert _count(block) == result.report.context_tokens
    assert sum(i.tokens for i in included) + _count("```") == result.report.context_tokens
    for item in included:
        header = f"[{item.label}] "
        assert content.count("\n" + header) + content.startswith(header) == 1
    # the id appears in a header only when the passage has neither title nor url
    assert "(id: w1)" not in content
    assert "[Source 5] (id: short1)" in content or "(id: short1)" in content


def test_cost_is_total_tokens_times_price() -> None:
    for model, price in (("gpt-4o", 2.5), ("gpt-4o-mini", 0.15), ("gpt-4", 30.0)):
        report = ctxasm.assemble(**{**_mixed_request(), "model": model}).report
        assert report.cost_usd == pytest.approx(report.total_tokens * price / 1e6, rel=1e-6)
    claude = ctxasm.assemble(**{**_mixed_request(), "model": "claude-sonnet-4-5"}).report
    price = ctxasm.default_registry().get("claude-sonnet-4-5").input_price
    assert price is not None
    assert claude.cost_usd == pytest.approx(claude.total_tokens * price / 1e6, rel=1e-6)


def test_cost_without_a_price() -> None:
    assert cost_usd(ctxasm.default_registry().get("llama-3.1-8b-instruct"), 1000) is None


def test_determinism() -> None:
    request = _mixed_request()
    first = ctxasm.assemble(**copy.deepcopy(request)).to_dict()
    second = ctxasm.Assembler().assemble(copy.deepcopy(request)).to_dict()
    for data in (first, second):
        data["report"].pop("timings_ms")
    assert first == second


def test_request_is_not_mutated() -> None:
    request = _mixed_request()
    snapshot = copy.deepcopy(request)
    ctxasm.assemble(**request)
    assert request == snapshot


def test_no_relevant_context_note_in_the_user_message() -> None:
    result = ctxasm.assemble(
        "Which countries does the Danube cross?",
        [{"id": "x", "text": "Pasta needs salted water."}],
    )
    report = result.report
    assert report.no_relevant_context is True
    assert (report.selected, report.included) == (0, ())
    assert [(e.candidate_id, e.reason.value) for e in report.excluded] == [("x", "below_threshold")]
    assert result.messages[-1] == {
        "role": "user",
        "content": (
            "No relevant sources were found for this question. Say that you could not find the "
            "information; do not guess.\n\nQuestion: Which countries does the Danube cross?"
        ),
    }
    assert report.context_tokens == _count(
        "No relevant sources were found for this question. Say that you could not find the "
        "information; do not guess."
    )


def test_no_passages_at_all() -> None:
    result = ctxasm.assemble("q", [], format="text")
    assert result.report.no_relevant_context is True
    assert result.report.considered == 0
    assert result.text is not None
    assert "No relevant sources were found for this question." in result.text
    assert result.messages == ()


def test_total_tokens_equals_an_independent_recount() -> None:
    result = ctxasm.assemble(**_mixed_request())
    recount = sum(3 + _count(m["role"]) + _count(m["content"]) for m in result.messages) + 3
    assert result.report.total_tokens == recount
    text = ctxasm.assemble(**{**_mixed_request(), "format": "text"})
    assert text.report.total_tokens == _count(text.text or "")


# --- the verify loop directly ------------------------------------------------------------------


def _candidate(pid: str, index: int, score: float) -> Candidate:
    return Candidate.of(Passage(pid, f"text of {pid}"), index, score)


def test_fit_drops_the_lowest_scoring_passage_until_it_fits() -> None:
    ordered = [_candidate("a", 0, 0.9), _candidate("b", 1, 0.1), _candidate("c", 2, 0.5)]
    renders: list[list[str]] = []

    def render(kept: list[Candidate]) -> list[str]:
        ids = [c.id for c in kept]
        renders.append(ids)
        return ids

    # Each passage costs 10 tokens of request and 8 of block; the request limit is 24.
    kept, rendered, total, block, dropped = _fit(
        ordered,
        render,
        lambda ids: 5 + 10 * len(ids),
        lambda kept: 8 * len(kept),
        prompt_limit=24,
        context_limit=100,
    )
    assert [c.id for c in kept] == ["a"]
    assert (rendered, total, block) == (["a"], 15, 8)
    assert renders == [["a", "b", "c"], ["a", "c"], ["a"]]
    assert [(e.candidate_id, e.stage, e.reason) for e in dropped] == [
        ("b", "verify", Reason.OVER_BUDGET),
        ("c", "verify", Reason.OVER_BUDGET),
    ]
    assert dropped[0].detail == (
        "the rendered request took 35 tokens (limit 24) and the sources 24 (limit 100); "
        "dropped the lowest-scoring passage"
    )


def test_fit_also_enforces_the_context_limit() -> None:
    ordered = [_candidate("a", 0, 0.5), _candidate("b", 1, 0.5)]
    kept, _, _, block, dropped = _fit(
        ordered,
        lambda kept: kept,
        lambda kept: 0,
        lambda kept: 8 * len(kept),
        prompt_limit=1000,
        context_limit=10,
    )
    # Equal scores: the later passage goes first.
    assert [c.id for c in kept] == ["a"]
    assert block == 8
    assert [e.candidate_id for e in dropped] == ["b"]


def test_fit_that_fits_changes_nothing() -> None:
    ordered = [_candidate("a", 0, 0.5)]
    kept, rendered, total, block, dropped = _fit(
        ordered, lambda k: "R", lambda r: 7, lambda k: 3, prompt_limit=7, context_limit=3
    )
    assert (kept, rendered, total, block, dropped) == (ordered, "R", 7, 3, [])


def test_fit_with_nothing_left_returns_the_empty_render() -> None:
    ordered = [_candidate("a", 0, 0.5)]
    kept, rendered, total, _, dropped = _fit(
        ordered, len, lambda r: 100, lambda k: 0, prompt_limit=1, context_limit=1
    )
    assert (kept, rendered, total) == ([], 0, 100)
    assert [e.candidate_id for e in dropped] == ["a"]


_CHILD = """
import json, sys
import ctxasm
data = ctxasm.assemble(**json.load(sys.stdin)).to_dict()
data["report"].pop("timings_ms")
print(json.dumps(data, sort_keys=True))
"""


def test_determinism_across_processes_with_different_hash_seeds() -> None:
    request = _mixed_request()
    request["strategy"] = {
        "dedup": ["stitch", "exact", {"name": "near", "lsh_after": 2}],
        "selection": {"name": "mmr", "lam": 0.5},
        "ordering": "source",
    }
    payload = json.dumps(request)
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=payload,
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=120,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    here = ctxasm.assemble(**request).to_dict()
    here["report"].pop("timings_ms")
    assert json.loads(outputs[0]) == here


@pytest.mark.parametrize(
    "selection", ["greedy_by_score", "knapsack", "mmr", "utility_per_token", "priority"]
)
def test_every_strategy_says_which_query_words_a_passage_covers(selection: str) -> None:
    passages = [
        {"id": "a", "text": "The Danube ends in the Black Sea."},
        {"id": "b", "text": "The Danube is long.", "score": 0.5},
    ]
    result = ctxasm.assemble(
        "Where does the Danube end?", passages, strategy={"selection": selection}
    )
    chosen = {item.id: item.chosen for item in result.report.included}
    assert chosen["a"] is not None and chosen["b"] is not None
    assert (chosen["a"].by, chosen["a"].terms) == ("query", ("danube", "end"))
    assert (chosen["b"].by, chosen["b"].terms, chosen["b"].given_score) == (
        "score",
        ("danube",),
        0.5,
    )
