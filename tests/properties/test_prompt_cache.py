"""Over random multi-turn sessions planned for the prompt cache: the stable part of each turn
is byte for byte the start of the previous turn's prompt, the budget holds under the exact
recount, every passage is accounted for once, labels never change within a session, and the
previous turn's passages are never dropped as irrelevant."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxasm
from ctxasm.formatting import FORMATS

EXAMPLES = int(os.environ.get("CTXASM_PROPERTY_EXAMPLES", "40"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
WORDS = ["river", "bank", "city", "king", "queen", "war", "sea", "old", "```", "[Source 3]"]
FORMAT_NAMES = ["openai", "anthropic", "markdown", "text"]


def _corpus(seed: int, size: int) -> list[dict[str, Any]]:
    import random

    pick = random.Random(seed)
    return [
        {
            "id": f"d{i}",
            "text": " ".join(pick.choice(WORDS) for _ in range(pick.randrange(5, 80))),
            "score": round(pick.random(), 3),
            "title": f"Doc {i}" if pick.random() < 0.8 else None,
        }
        for i in range(size)
    ]


def _sources_text(result: ctxasm.Assembly, fmt: str) -> str:
    """Everything of the prompt up to and including the sources block, as one string."""
    if fmt == "openai":
        return result.messages[0]["content"] + "\x00" + result.messages[1]["content"]
    if fmt == "anthropic":
        content = result.messages[0]["content"]
        body = content if isinstance(content, str) else "".join(b["text"] for b in content)
        return (result.system or "") + "\x00" + body
    return result.text or ""


def _stable_part(result: ctxasm.Assembly, fmt: str, count: int) -> str:
    """The prompt from its start to the end of its first ``count`` sources."""
    labels = {i.id: int(i.label.split()[1]) for i in result.report.included}
    parts = FORMATS[fmt].block.parts(result.passages[:count], labels)
    shares = "".join(opening + body for opening, body in parts)
    whole = _sources_text(result, fmt)
    heading = FORMATS[fmt].block.heading
    start = whole.index(heading)
    assert whole[start : start + len(shares)] == shares
    return whole[: start + len(shares)]


@SETTINGS
@given(
    seed=st.integers(0, 10_000),
    fmt=st.sampled_from(FORMAT_NAMES),
    turns=st.lists(st.tuples(st.integers(0, 14), st.integers(3, 10)), min_size=2, max_size=4),
    budget=st.integers(200, 2500),
    attention=st.sampled_from([0.0, 0.0, 0.5]),
    stickiness=st.sampled_from([0.0, 0.5, 10.0]),
)
def test_the_stable_part_is_a_byte_prefix_of_the_previous_turn(
    seed: int,
    fmt: str,
    turns: list[tuple[int, int]],
    budget: int,
    attention: float,
    stickiness: float,
) -> None:
    corpus = _corpus(seed, 25)
    previous: ctxasm.Assembly | None = None
    labels: dict[str, str] = {}
    ordering = {"name": "cache_stable", "attention": attention, "stickiness": stickiness}
    strategy = {"ordering": ordering}
    model = "claude-sonnet-4-5" if fmt == "anthropic" else "gpt-4o"
    for turn, (start, size) in enumerate(turns):
        passages = corpus[start : start + size]
        result = ctxasm.assemble(
            f"river king {turn}",
            passages,
            model=model,
            format=fmt,
            max_context_tokens=budget,
            previous=previous.to_dict() if previous is not None else None,
            strategy=strategy,
        )
        report, cache = result.report, result.report.cache
        assert cache is not None
        assert report.total_tokens <= report.budget.prompt_limit
        if report.included:
            assert report.context_tokens <= report.budget.context
        accounted = [i.id for i in report.included] + [e.id for e in report.excluded]
        assert sorted(accounted) == sorted(p["id"] for p in passages)
        for item in report.included:  # a source keeps its label for the whole session
            assert labels.setdefault(item.id, item.label) == item.label
        if previous is not None and cache.prefix_sources:
            count = cache.prefix_sources
            now, then = _stable_part(result, fmt, count), _stable_part(previous, fmt, count)
            assert now == then
        if previous is not None:
            kept_before = [i.id for i in previous.report.included]
            kept_now = [i.id for i in report.included]
            if attention == 0.0 and set(kept_before) <= set(kept_now):
                # every passage of the previous turn still selected: all of them stay in front
                assert kept_now[: len(kept_before)] == kept_before
            irrelevant = {
                e.id for e in report.excluded if e.reason is ctxasm.Reason.BELOW_THRESHOLD
            }
            assert irrelevant.isdisjoint(kept_before)
        previous = result


def _sentence_corpus(seed: int, size: int) -> list[dict[str, Any]]:
    """Passages of two to six sentences, so that compression cuts some of them."""
    import random

    pick = random.Random(seed)
    words = ["river", "bank", "city", "king", "queen", "war", "sea", "old", "art", "data"]

    def sentence() -> str:
        said = " ".join(
            f"{pick.choice(words)} {pick.randrange(1000)}" for _ in range(pick.randrange(4, 12))
        )
        return said.capitalize() + "."

    return [
        {
            "id": f"d{i}",
            "text": " ".join(sentence() for _ in range(pick.randrange(2, 7))),
            "title": f"Doc {i}",
        }
        for i in range(size)
    ]


@SETTINGS
@given(
    seed=st.integers(0, 10_000),
    fmt=st.sampled_from(FORMAT_NAMES),
    turns=st.lists(st.tuples(st.integers(0, 3), st.integers(4, 10)), min_size=2, max_size=4),
    budget=st.integers(400, 1000),
)
def test_compressed_sources_keep_the_prefix_byte_identical(
    seed: int, fmt: str, turns: list[tuple[int, int]], budget: int
) -> None:
    """Sessions where compression cuts passages: a source shown compressed is offered in that
    form again; the stable part is still a byte prefix of the previous turn, the budget holds
    and every passage is accounted for once."""
    from ctxasm.cache_state import parse_previous

    corpus = _sentence_corpus(seed, 16)
    previous: ctxasm.Assembly | None = None
    model = "claude-sonnet-4-5" if fmt == "anthropic" else "gpt-4.1"
    for turn, (start, size) in enumerate(turns):
        passages = corpus[start : start + size]
        result = ctxasm.assemble(
            ["river king", "sea war", "bank city queen"][turn % 3],
            passages,
            model=model,
            format=fmt,
            max_context_tokens=budget,
            previous=previous.to_dict() if previous is not None else None,
        )
        report, cache = result.report, result.report.cache
        assert cache is not None
        assert report.total_tokens <= report.budget.prompt_limit
        accounted = [i.id for i in report.included] + [e.id for e in report.excluded]
        assert sorted(accounted) == sorted(p["id"] for p in passages)
        assert parse_previous(cache.state.to_dict()) == cache.state
        # the state records the sentences of every source shown compressed
        assert set(cache.state.compressed) == {
            i.id for i in report.included if i.compression is not None
        }
        if previous is not None and cache.prefix_sources:
            count = cache.prefix_sources
            now, then = _stable_part(result, fmt, count), _stable_part(previous, fmt, count)
            assert now == then
        previous = result
