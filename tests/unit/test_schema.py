"""Bad input is refused with an error that names the field and says what is allowed."""

from __future__ import annotations

import json
from typing import Any

import pytest

import ctxasm
from ctxasm import (
    Assembler,
    ConfigError,
    Passage,
    Request,
    RequestError,
    UnknownModelError,
    UnknownStrategyError,
    parse_request,
)
from ctxasm.data import Strategies, StrategySpec
from ctxasm.errors import ArgumentTypeError

PASSAGES = [{"id": "a", "text": "Paris is the capital of France.", "score": 0.9}]


def _error(**fields: Any) -> RequestError:
    with pytest.raises(RequestError) as caught:
        ctxasm.assemble(**fields)
    return caught.value


# --- query ------------------------------------------------------------------------------------


def test_missing_query() -> None:
    error = _error(passages=PASSAGES)
    assert type(error) is RequestError
    assert error.field == "query"
    assert "required" in error.message


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query(query: str) -> None:
    error = _error(query=query, passages=PASSAGES)
    assert (error.field, error.message) == ("query", "query must not be empty")


@pytest.mark.parametrize("query", [5, None, ["q"], {"q": 1}])
def test_query_of_wrong_type(query: object) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request({"query": query, "passages": []})
    assert caught.value.field == "query"
    assert "must be a string" in caught.value.message


def test_query_with_unpaired_surrogate() -> None:
    error = _error(query="capital\ud800", passages=PASSAGES)
    assert error.field == "query"
    assert "unpaired surrogate at character 7" in error.message


# --- passages ---------------------------------------------------------------------------------


def test_missing_passages() -> None:
    error = _error(query="q")
    assert error.field == "passages"


@pytest.mark.parametrize("passages", ["abc", 5, {"id": "a", "text": "x"}])
def test_passages_of_wrong_type(passages: object) -> None:
    error = _error(query="q", passages=passages)
    assert error.field == "passages"
    assert "a list of passages" in error.message


HITS = [
    {"page_content": "Paris is the capital of France.", "similarity": 0.9, "metadata": {"p": 2}},
    {"content": "Lyon is in France.", "id": 3},
]


def test_hits_are_read_in_place_of_passages() -> None:
    from ctxasm.hits import passages_from_hits

    passages = parse_request({"query": "q", "hits": HITS}).passages
    assert passages == parse_request({"query": "q", "passages": passages_from_hits(HITS)}).passages
    assert [(p.id, p.score, dict(p.metadata)) for p in passages] == [
        ("hit-557be7eca2", 0.9, {"p": 2}),
        ("3", None, {}),
    ]
    # null is no candidates: the other field is read
    assert parse_request({"query": "q", "hits": HITS, "passages": None}).passages == passages
    assert parse_request({"query": "q", "hits": None, "passages": []}).passages == ()


@pytest.mark.parametrize(
    ("fields", "message", "field"),
    [
        (
            {"passages": [], "hits": []},
            "the request has both passages and hits; give the candidates once, as passages or "
            "as a retriever's hits",
            "hits",
        ),
        (
            {"hits": None},
            "passages is required (an empty list is allowed), or hits: a retriever's hits",
            "passages",
        ),
        (
            {"hits": "Paris"},
            "hits must be a list of a retriever's hits (objects with their text in text, "
            "content or page_content); got str 'Paris'",
            "hits",
        ),
        (
            {"hits": [HITS[0], {"content": "x", "timestamp": "soon"}]},
            "hits[1].timestamp must be an ISO-8601 date or time; got str 'soon'",
            "hits[1].timestamp",
        ),
    ],
    ids=["both", "neither", "not-a-list", "bad-hit"],
)
def test_bad_hits_are_named(fields: dict[str, Any], message: str, field: str) -> None:
    error = _error(query="q", **fields)
    assert (error.message, error.field) == (message, field)


def test_the_unknown_field_message_lists_hits() -> None:
    assert ", previous, hits, id, metadata" in _error(query="q", passages=[], hit=[]).message


@pytest.mark.parametrize(
    ("given", "meant"),
    [("reserve_output", "reserve_output_tokens"), ("passage", "passages"), ("hit", "hits")],
)
def test_an_unknown_field_close_to_a_known_one_is_named(given: str, meant: str) -> None:
    # the report calls the reserve "reserve_output"; the request field is reserve_output_tokens
    message = _error(query="q", passages=[], **{given: 1}).message
    assert message.startswith(f"unknown request field {given!r} (did you mean {meant!r}?); ")


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        ("budget", "'max_context_tokens'"),  # the command line's --budget
        ("question", "'query'"),
        ("Prompt", "'query'"),
        ("documents", "'passages' or 'hits'"),
        ("contexts", "'passages' or 'hits'"),  # spelt like context_window
        ("messages", "'history'"),  # spelt like passages
        ("chat_history", "'history'"),
        ("system", "'system_prompt'"),
    ],
)
def test_a_field_other_tools_name_so_is_named_by_its_ctxasm_name(given: str, hint: str) -> None:
    message = _error(query="q", passages=[], **{given: 1}).message
    assert message.startswith(f"unknown request field {given!r} (did you mean {hint}?); ")


def test_a_strategy_given_by_name_says_where_the_name_goes() -> None:
    error = _error(query="q", passages=[], strategy="knapsack")
    assert error.field == "strategy"
    assert error.message.endswith(
        'got str \'knapsack\': a strategy is named under its slot, {"selection": "knapsack"} '
        "(docs/strategies.md)"
    )


def test_a_config_default_close_to_a_field_is_named() -> None:
    with pytest.raises(ctxasm.errors.ConfigError) as caught:
        ctxasm.Assembler({"defaults": {"max_context_token": 400}})
    assert "(did you mean 'max_context_tokens'?); allowed: " in caught.value.message


def test_a_config_default_other_tools_name_so_is_named_where_it_is_one() -> None:
    with pytest.raises(ctxasm.errors.ConfigError) as caught:
        ctxasm.Assembler({"defaults": {"budget": 400}})
    assert "'budget' (did you mean 'max_context_tokens'?); allowed: " in caught.value.message
    with pytest.raises(ctxasm.errors.ConfigError) as caught:  # passages are no default
        ctxasm.Assembler({"defaults": {"documents": []}})
    assert "'documents'; allowed: " in caught.value.message


@pytest.mark.parametrize("item", ["text", 5, None, ["text"]])
def test_passage_that_is_not_an_object(item: object) -> None:
    error = _error(query="q", passages=[item])
    assert error.field == "passages[0]"


@pytest.mark.parametrize("text", [5, None, 1.5, ["a"], {"a": 1}, b"bytes"])
def test_non_string_text(text: object) -> None:
    error = _error(query="q", passages=[{"id": "a", "text": "fine"}, {"id": "b", "text": text}])
    assert error.field == "passages[1].text"
    assert "must be a string" in error.message


def test_missing_text() -> None:
    error = _error(query="q", passages=[{"id": "a"}])
    assert (error.field, error.message) == ("passages[0].text", "passages[0].text is required")


def test_text_with_unpaired_surrogate() -> None:
    error = _error(query="q", passages=[{"id": "a", "text": "ok \udc80 not ok"}])
    assert error.field == "passages[0].text"
    assert "unpaired surrogate at character 3" in error.message


@pytest.mark.parametrize("name", ["title", "url", "id", "source", "doc_id", "tenant"])
def test_metadata_with_unpaired_surrogate(name: str) -> None:
    # Metadata reaches the prompt (title, url, id) or the report (source): it must encode as UTF-8.
    passage = {"id": "a", "text": "Paris is the capital.", "score": 1.0, name: "bad\ud800"}
    error = _error(query="capital", passages=[passage])
    assert error.field == f"passages[0].{name}"
    assert "unpaired surrogate" in error.message


def test_reader_with_unpaired_surrogate() -> None:
    passage = {"id": "a", "text": "x", "readers": ["ok", "bad\udfff"]}
    error = _error(query="q", passages=[passage], principal={"id": "u"})
    assert error.field == "passages[0].readers[1]"


def test_duplicate_ids() -> None:
    passages = [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}, {"id": "a", "text": "z"}]
    error = _error(query="q", passages=passages)
    assert error.field == "passages[2].id"
    assert error.message == (
        "passages[2].id 'a' repeats passages[0].id; passage ids must be unique"
    )


def test_missing_ids_are_generated_from_positions() -> None:
    request = parse_request({"query": "q", "passages": [{"text": "x"}, {"text": "y"}]})
    assert [p.id for p in request.passages] == ["passage-0", "passage-1"]


def test_a_passage_object_built_without_an_id_is_named_after_its_text() -> None:
    from ctxasm import Passage

    first, again = Passage(text="Hello there"), Passage(text="Hello there")
    assert first.id == again.id == "passage-4e47826698"  # the text's SHA-256, in any process
    assert Passage(text="Other").id != first.id
    assert Passage("own", "Hello there").id == "own"  # positional, as before
    # two of one text are told apart as mappings without ids are: the first keeps its name
    request = parse_request(
        {"query": "q", "passages": [first, {"text": "y"}, again, {"id": "passage-3", "text": "z"}]}
    )
    assert [p.id for p in request.passages] == [
        "passage-4e47826698",
        "passage-1",
        "passage-2",  # its position's name, free
        "passage-3",
    ]
    same = [Passage(text="same"), Passage(text="same"), {"text": "x"}]
    named = parse_request({"query": "q", "passages": same}).passages
    assert [p.id for p in named][1:] == ["passage-1", "passage-2"]


@pytest.mark.parametrize(
    ("args", "fields", "field"),
    [
        ((), {}, "passage.text"),
        (("only-an-id",), {}, "passage.text"),
        ((), {"id": "x", "text": None}, "passage.text"),
        ((), {"id": "", "text": "x"}, "passage.id"),
        ((), {"id": None, "text": "x"}, "passage.id"),
    ],
)
def test_a_passage_object_needs_its_text_and_a_real_id_where_one_is_given(
    args: tuple[str, ...], fields: dict[str, Any], field: str
) -> None:
    from ctxasm import Passage
    from ctxasm.errors import RequestError

    with pytest.raises(RequestError) as caught:
        Passage(*args, **fields)
    assert caught.value.field == field


def test_empty_id() -> None:
    error = _error(query="q", passages=[{"id": "", "text": "x"}])
    assert error.field == "passages[0].id"


@pytest.mark.parametrize("score", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_score(score: float) -> None:
    error = _error(query="q", passages=[{"id": "a", "text": "x", "score": score}])
    assert error.field == "passages[0].score"
    assert "finite number" in error.message


def test_non_finite_score_from_json() -> None:
    # Python's json module turns NaN and Infinity literals into floats.
    request = json.loads('{"query": "q", "passages": [{"id": "a", "text": "x", "score": NaN}]}')
    error = _error(**request)
    assert error.field == "passages[0].score"


HUGE = 10**400  # a valid JSON integer that no float can hold


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"passages": [{"id": "a", "text": "x", "score": HUGE}]}, "passages[0].score"),
        ({"passages": [{"id": "a", "text": "x", "priority": HUGE}]}, "passages[0].priority"),
        ({"passages": [{"id": "a", "text": "x", "authority": HUGE}]}, "passages[0].authority"),
        ({"passages": [{"id": "a", "text": "x", "embedding": [HUGE]}]}, "passages[0].embedding[0]"),
        ({"passages": PASSAGES, "min_score": HUGE}, "min_score"),
        ({"passages": PASSAGES, "safety_margin": HUGE}, "safety_margin"),
        ({"passages": PASSAGES, "context_window": HUGE}, "context_window"),
        (
            {"passages": PASSAGES, "strategy": {"selection": {"name": "mmr", "lam": HUGE}}},
            "strategy.selection.lam",
        ),
    ],
)
def test_integers_too_large_for_a_float(fields: dict[str, Any], field: str) -> None:
    error = _error(query="q", **fields)
    assert error.field == field


@pytest.mark.parametrize("score", ["0.5", True, [0.5]])
def test_score_of_wrong_type(score: object) -> None:
    error = _error(query="q", passages=[{"id": "a", "text": "x", "score": score}])
    assert error.field == "passages[0].score"
    assert "must be a number" in error.message


def test_unknown_passage_field() -> None:
    error = _error(query="q", passages=[{"id": "a", "text": "x", "colour": "red"}])
    assert error.field == "passages[0].colour"
    assert "put anything else in metadata" in error.message


@pytest.mark.parametrize(
    "request_fields",
    [
        {"passages": [{"id": "a", "text": "x", "k" * 100_000: 1}]},
        {"k" * 100_000: 1, "passages": []},
        {"passages": [], "principal": {"id": "a", "k" * 100_000: 1}},
        {"passages": [], "strategy": {"k" * 100_000: "greedy"}},
    ],
)
def test_an_unknown_long_field_name_is_shortened(request_fields: dict[str, Any]) -> None:
    error = _error(query="q", **request_fields)
    assert len(error.message) < 400 and error.field is not None and len(error.field) < 100
    assert error.field.endswith("kkk...")


@pytest.mark.parametrize(
    "request_fields",
    [
        {"format": "k" * 100_000},
        {"model": "k" * 100_000},
        {"strategy": {"selection": "k" * 100_000}},
        {"strategy": {"ordering": "k" * 100_000}},
    ],
)
def test_an_unknown_long_name_is_shortened(request_fields: dict[str, Any]) -> None:
    with pytest.raises(RequestError) as caught:
        ctxasm.assemble("q", [{"id": "a", "text": "x"}], **request_fields)
    assert len(caught.value.message) < 400


def test_a_passage_without_an_id_takes_a_default_no_given_id_uses() -> None:
    # "passages[1].id 'passage-1' repeats passages[0].id" blamed an id never given.
    request = ctxasm.parse_request(
        {
            "query": "q",
            "passages": [
                {"text": "a"},
                {"text": "b"},
                {"id": "passage-1", "text": "c"},
                {"id": "passage-2", "text": "d"},
            ],
        }
    )
    assert [p.id for p in request.passages] == ["passage-0", "passage-3", "passage-1", "passage-2"]
    # a default that stands is not renamed for another's sake (review O)
    request = ctxasm.parse_request(
        {"query": "q", "passages": [{"text": "a"}, {"text": "b"}, {"id": "passage-0", "text": "c"}]}
    )
    assert [p.id for p in request.passages] == ["passage-2", "passage-1", "passage-0"]

    class Unchecked(Passage):  # a subclass whose constructor skips the checks
        __slots__ = ()

        def __post_init__(self) -> None:
            pass

    unnamed = Unchecked(id=None, text="a")  # type: ignore[arg-type]
    request = ctxasm.parse_request(
        {"query": "q", "passages": [unnamed, {"id": "passage-0", "text": "b"}]}
    )
    assert [p.id for p in request.passages] == ["passage-1", "passage-0"]
    error = _error(query="q", passages=[{"id": "x", "text": "a"}, {"id": "x", "text": "b"}])
    assert error.field == "passages[1].id"  # ids given twice are still the caller's to fix


@pytest.mark.parametrize("missing", ["role", "content"])
def test_a_missing_field_of_a_history_turn_is_required(missing: str) -> None:
    turn = {key: value for key, value in (("role", "user"), ("content", "x")) if key != missing}
    error = _error(query="q", passages=[], history=[turn])
    assert (error.message, error.field) == (
        f"history[0].{missing} is required",
        f"history[0].{missing}",
    )


def test_an_unknown_field_of_a_history_turn_is_refused() -> None:
    # "contents" was ignored: the turn went in without its text, and nobody was told.
    error = _error(
        query="q", passages=[], history=[{"role": "user", "content": "hi", "contents": "typo"}]
    )
    assert (error.field, error.message) == (
        "history[0].contents",
        "history[0] has unknown field 'contents'; allowed: role, content",
    )


@pytest.mark.parametrize(
    ("strategy", "field"),
    [
        ({"dedup": [{"name": "near", "k" * 100_000: 1}]}, "strategy.dedup[0].kkk"),
        (
            {"compression": {"name": "sentences", "mode": "x" * 100_000}},
            "strategy.compression.mode",
        ),
        (
            {"dedup": [{"name": "semantic", "embedder": ["x"] * 50_000}]},
            "strategy.dedup[0].embedder",
        ),
        ({"dedup": [{"name": "near", "threshold": "y" * 100_000}]}, "strategy.dedup[0].threshold"),
        (
            {"selection": {"name": "auto", "multihop": ["x"] * 50_000}},
            "strategy.selection.multihop",
        ),
        ({"selection": {"name": "mmr", "k" * 100_000: 1}}, "strategy.selection.kkk"),
    ],
)
def test_a_long_strategy_parameter_or_value_is_shortened(
    strategy: dict[str, Any], field: str
) -> None:
    # Each came back whole, in the message and in the field: 4 MB of error for 2 MB sent.
    with pytest.raises(RequestError) as caught:
        ctxasm.assemble("q", [{"id": "a", "text": "x"}], strategy=strategy)
    assert len(caught.value.message) < 400
    assert caught.value.field is not None and caught.value.field.startswith(field)
    assert len(caught.value.field) < 100


def _cyclic() -> list[Any]:
    cycle: list[Any] = []
    cycle.append(cycle)
    return cycle


def _deep(levels: int) -> list[Any]:
    top: list[Any] = []
    inner = top
    for _ in range(levels):
        inner.append([])
        inner = inner[0]
    return top


@pytest.mark.parametrize(
    "value", [10**5000, _cyclic(), _deep(100_000)], ids=["huge-int", "cyclic", "deep"]
)
def test_a_strategy_parameter_no_json_can_hold_is_refused_by_name(value: object) -> None:
    # The strategy cache's key (JSON) raised ValueError or RecursionError from the Python API.
    with pytest.raises(RequestError) as caught:
        ctxasm.assemble(
            "q",
            [{"id": "a", "text": "x"}],
            strategy={"dedup": [{"name": "near", "threshold": value}]},
        )
    assert caught.value.field == "strategy.dedup[0].threshold"
    assert len(caught.value.message) < 400


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"start": 3}, "passages[0].start"),
        ({"start": 5, "end": 2}, "passages[0].end"),
        ({"start": -1, "end": 2}, "passages[0].start"),
        ({"timestamp": "yesterday"}, "passages[0].timestamp"),
        ({"authority": 1.5}, "passages[0].authority"),
        ({"graph_distance": -1}, "passages[0].graph_distance"),
        ({"embedding": []}, "passages[0].embedding"),
        ({"embedding": [0.1, "x"]}, "passages[0].embedding[1]"),
        ({"readers": "alice"}, "passages[0].readers"),
        ({"metadata": ["a"]}, "passages[0].metadata"),
        ({"priority": float("nan")}, "passages[0].priority"),
    ],
)
def test_bad_passage_fields(extra: dict[str, Any], field: str) -> None:
    error = _error(query="q", passages=[{"id": "a", "text": "x", **extra}])
    assert error.field == field


def test_passage_objects_are_accepted() -> None:
    result = ctxasm.assemble(
        "capital of France", [Passage(id="a", text="Paris is the capital of France.", score=1.0)]
    )
    assert [item.id for item in result.report.included] == ["a"]


# --- budgets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["context_window", "max_context_tokens", "reserve_output_tokens"])
@pytest.mark.parametrize("value", [0, -1, -4096])
def test_zero_or_negative_budgets(name: str, value: int) -> None:
    error = _error(query="q", passages=PASSAGES, **{name: value})
    assert error.field == name
    assert error.message.startswith(f"{name} must be an integer")
    assert f"got int {value}" in error.message


@pytest.mark.parametrize("name", ["context_window", "max_context_tokens", "reserve_output_tokens"])
@pytest.mark.parametrize("value", [True, 100.5, "100", [100]])
def test_budgets_of_wrong_type(name: str, value: object) -> None:
    error = _error(query="q", passages=PASSAGES, **{name: value})
    assert error.field == name


def test_reserve_larger_than_window() -> None:
    error = _error(query="q", passages=PASSAGES, context_window=1000, reserve_output_tokens=2000)
    assert type(error) is RequestError
    assert error.field == "reserve_output_tokens"
    assert "must be smaller than the context window (1000)" in error.message


def test_reserve_equal_to_window() -> None:
    error = _error(query="q", passages=PASSAGES, context_window=1000, reserve_output_tokens=1000)
    assert error.field == "reserve_output_tokens"


def test_reserve_above_model_maximum_output() -> None:
    error = _error(query="q", passages=PASSAGES, reserve_output_tokens=16385)
    assert error.field == "reserve_output_tokens"
    assert "maximum output of 16384" in error.message


@pytest.mark.parametrize("margin", [-0.1, 0.51, float("nan"), "0.1"])
def test_bad_safety_margin(margin: object) -> None:
    error = _error(query="q", passages=PASSAGES, safety_margin=margin)
    assert error.field == "safety_margin"


@pytest.mark.parametrize(("name", "value"), [("top_k", 0), ("top_k", "3"), ("min_score", "x")])
def test_bad_cuts(name: str, value: object) -> None:
    error = _error(query="q", passages=PASSAGES, **{name: value})
    assert error.field == name


# --- model, format, strategy --------------------------------------------------------------------


def test_unknown_model_lists_close_matches() -> None:
    with pytest.raises(UnknownModelError) as caught:
        ctxasm.assemble("q", PASSAGES, model="gpt-4o-mnii")
    error = caught.value
    assert error.field == "model"
    assert error.code == "unknown_model"
    assert "unknown model 'gpt-4o-mnii'; did you mean gpt-4o-mini," in error.message


@pytest.mark.parametrize("model", ["", 4, None])
def test_model_of_wrong_type(model: object) -> None:
    error = _error(query="q", passages=PASSAGES, model=model)
    assert error.field == "model"


def test_unknown_format() -> None:
    error = _error(query="q", passages=PASSAGES, format="xml")
    assert error.field == "format"
    assert "choose one of anthropic, markdown, openai, text, template" in error.message


def test_unknown_strategy_name_lists_names() -> None:
    with pytest.raises(UnknownStrategyError) as caught:
        ctxasm.assemble("q", PASSAGES, strategy={"selection": "gredy"})
    assert caught.value.field == "strategy.selection"
    assert caught.value.message == (
        "unknown selection strategy 'gredy'; choose one of "
        "auto, bridge, coverage, greedy_by_score, knapsack, mmr, priority, utility_per_token"
    )


@pytest.mark.parametrize(
    ("strategy", "field"),
    [
        ({"ordering": "random"}, "strategy.ordering"),
        ({"relevance": {"name": "cosine"}}, "strategy.relevance"),
        ({"dedup": ["exact", "fuzzy"]}, "strategy.dedup[1]"),
    ],
)
def test_unknown_strategy_in_other_slots(strategy: dict[str, Any], field: str) -> None:
    with pytest.raises(UnknownStrategyError) as caught:
        ctxasm.assemble("q", PASSAGES, strategy=strategy)
    assert caught.value.field == field


def test_unknown_strategy_in_config_fails_when_the_assembler_is_built() -> None:
    with pytest.raises(ConfigError) as caught:
        Assembler({"defaults": {"strategy": {"selection": "gredy"}}})
    assert caught.value.field == "defaults.strategy.selection"


def test_unknown_strategy_parameter() -> None:
    error = _error(
        query="q", passages=PASSAGES, strategy={"selection": {"name": "mmr", "lambda": 0.3}}
    )
    assert type(error) is RequestError
    assert error.field == "strategy.selection.lambda"
    assert "parameters: lam, max_candidates" in error.message


@pytest.mark.parametrize(
    ("strategy", "field"),
    [
        ({"selection": {"name": "mmr", "lam": 3}}, "strategy.selection.lam"),
        ({"selection": {"name": "priority", "cutoff": "soft"}}, "strategy.selection.cutoff"),
        ({"dedup": [{"name": "near", "threshold": "high"}]}, "strategy.dedup[0].threshold"),
        ({"dedup": {"name": "near", "lsh_after": 0}}, "strategy.dedup[0].lsh_after"),
        ({"selection": {"name": "knapsack", "max_cells": 5}}, "strategy.selection.max_cells"),
        ({"selection": {"lam": 0.5}}, "strategy.selection.name"),
        ({"selection": 5}, "strategy.selection"),
        ({"selektion": "mmr"}, "strategy.selektion"),
        ({"ordering": None}, "strategy.ordering"),
    ],
)
def test_bad_strategy_parameters(strategy: dict[str, Any], field: str) -> None:
    error = _error(query="q", passages=PASSAGES, strategy=strategy)
    assert error.field == field


class _OwnConfig(StrategySpec):
    __slots__ = ()

    def to_config(self) -> dict[str, Any]:
        return {"name": "zzz"}


@pytest.mark.parametrize(
    ("strategy", "field", "message"),
    [
        (
            Strategies(ordering=None),  # type: ignore[arg-type]
            "strategy.ordering",
            "strategy.ordering cannot be turned off; give a strategy name",
        ),
        (
            Strategies(relevance=StrategySpec("auto", None)),  # type: ignore[arg-type]
            "strategy.relevance.params",
            "strategy.relevance.params must be a mapping of parameter names to values; got null",
        ),
        (
            Strategies(selection=StrategySpec(3)),  # type: ignore[arg-type]
            "strategy.selection.name",
            "strategy.selection.name must be a strategy name; got int 3",
        ),
        (
            Strategies(selection=5),  # type: ignore[arg-type]
            "strategy.selection",
            'strategy.selection must be a strategy name or {"name": ..., <parameters>}; got int 5',
        ),
        (
            Strategies(dedup=[StrategySpec("near"), None]),  # type: ignore[arg-type]
            "strategy.dedup[1]",
            'strategy.dedup[1] must be a strategy name or {"name": ..., <parameters>}; got null',
        ),
    ],
)
def test_a_strategies_object_is_checked_slot_by_slot(
    strategy: Strategies, field: str, message: str
) -> None:
    # Nothing checked a Strategies object: a raw AttributeError or TypeError came from the
    # assembler instead.
    error = _error(query="q", passages=PASSAGES, strategy=strategy)
    assert (error.field, error.message) == (field, message)


def test_a_strategies_object_is_read_as_its_json_would_be() -> None:
    request = parse_request(
        {
            "query": "q",
            "passages": [],
            "strategy": Strategies(
                relevance="bm25",  # type: ignore[arg-type]
                dedup=StrategySpec("near"),  # type: ignore[arg-type]
                compression={"name": "sentences"},  # type: ignore[arg-type]
                ordering=_OwnConfig("primacy_recency"),
            ),
        }
    )
    strategy = request.strategy
    assert (strategy.relevance, strategy.dedup, strategy.compression, strategy.ordering) == (
        StrategySpec("bm25"),
        (StrategySpec("near"),),
        StrategySpec("sentences"),
        StrategySpec("primacy_recency"),
    )
    assert type(strategy.ordering) is StrategySpec  # its own to_config named another strategy
    result = Assembler().assemble(query="Paris?", passages=PASSAGES, strategy=request.strategy)
    assert [item.id for item in result.report.included] == ["a"]


@pytest.mark.parametrize(
    ("strategy", "field", "most"),
    [
        (
            {"dedup": [{"name": "near", "shingle_size": 80_000}]},
            "strategy.dedup[0].shingle_size",
            "32",
        ),
        (
            {"selection": {"name": "mmr", "max_candidates": 10**9}},
            "strategy.selection.max_candidates",
            "1,000",
        ),
        (
            {"selection": {"name": "knapsack", "max_candidates": 4_000}},
            "strategy.selection.max_candidates",
            "1,000",
        ),
        (
            {"selection": {"name": "knapsack", "max_cells": 10**9}},
            "strategy.selection.max_cells",
            "50,000",
        ),
        (
            {"selection": {"name": "coverage", "max_candidates": 501}},
            "strategy.selection.max_candidates",
            "500",
        ),
        (
            {"selection": {"name": "bridge", "max_candidates": 10**9}},
            "strategy.selection.max_candidates",
            "500",
        ),
        (
            {"compression": {"name": "sentences", "max_candidates": 10**6}},
            "strategy.compression.max_candidates",
            "1,000",
        ),
    ],
)
def test_parameters_whose_work_grows_faster_than_the_input_are_bounded(
    strategy: dict[str, Any], field: str, most: str
) -> None:
    # each of these made one request of a hundred kilobytes take 4 to 15 s (or 736 MB)
    error = _error(query="q", passages=PASSAGES, strategy=strategy)
    assert error.field == field
    assert f" to {most}, got " in error.message


# --- other fields -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"colour": "red"}, "colour"),
        ({"history": "hello"}, "history"),
        ({"history": [{"role": "system", "content": "x"}]}, "history[0].role"),
        ({"history": [{"role": "user", "content": 5}]}, "history[0].content"),
        ({"history": [{"role": "user", "content": "a\ud800"}]}, "history[0].content"),
        ({"system_prompt": 5}, "system_prompt"),
        ({"system_prompt": "\udfff"}, "system_prompt"),
        ({"principal": "alice"}, "principal"),
        ({"principal": {"id": ""}}, "principal.id"),
        ({"principal": {"id": "a", "groups": "g"}}, "principal.groups"),
        ({"principal": {"id": "a", "role": "admin"}}, "principal.role"),
        ({"allow_public": "yes"}, "allow_public"),
        ({"strategy": "knapsack"}, "strategy"),
    ],
)
def test_wrong_types(fields: dict[str, Any], field: str) -> None:
    error = _error(query="q", passages=PASSAGES, **fields)
    assert error.field == field


def test_request_that_is_not_an_object() -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(["q"])  # type: ignore[arg-type]
    assert caught.value.field == "request"


def test_error_as_data() -> None:
    error = _error(query="q", passages=PASSAGES, top_k=0)
    assert error.to_dict() == {
        "code": "invalid_request",
        "field": "top_k",
        "message": error.message,
    }
    assert error.message.startswith("top_k must be an integer")
    assert error.message.endswith("; got int 0")


# --- size limit -------------------------------------------------------------------------------


def test_oversized_request() -> None:
    assembler = Assembler({"limits": {"max_request_chars": 1000}})
    passages = [{"id": f"p{i}", "text": "x" * 300} for i in range(4)]
    with pytest.raises(RequestError) as caught:
        assembler.assemble(query="q", passages=passages)
    assert caught.value.field == "passages"
    assert "1,201 characters" in caught.value.message  # passages and query
    assert "limit of 1,000" in caught.value.message


def test_oversized_hits_are_refused_before_any_hit_is_mapped() -> None:
    assembler = Assembler({"limits": {"max_request_chars": 1000}})
    hits = [{"content": "x" * 300} for _ in range(3)] + [{"page_content": "y" * 300, "id": []}]
    with pytest.raises(RequestError) as caught:
        assembler.assemble(query="q", hits=hits)
    assert (caught.value.message, caught.value.field) == (
        "the request holds 1,201 characters of text (hits: 1,200), more than the limit of "
        "1,000, far beyond any context window; send less text or raise max_request_chars in "
        "the config",
        "hits",
    )


def test_oversized_request_is_refused_before_any_passage_is_checked() -> None:
    # The size check comes first: a huge request is never walked field by field.
    assembler = Assembler({"limits": {"max_request_chars": 10}})
    passages = [{"id": "a", "text": "x" * 20}, {"id": "a", "text": 5}]
    with pytest.raises(RequestError) as caught:
        assembler.assemble(query="q", passages=passages)
    assert caught.value.field == "passages"


def test_request_at_the_size_limit_is_accepted() -> None:
    # 4 passages of 300 characters and a one-character query.
    assembler = Assembler({"limits": {"max_request_chars": 1201}})
    passages = [{"id": f"p{i}", "text": f"word{i} " * 50, "score": 1.0} for i in range(4)]
    result = assembler.assemble(query="q", passages=passages)
    assert sorted(item.id for item in result.report.included) == ["p0", "p1", "p2", "p3"]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"query": "word " * 400}, "query"),
        ({"query": "q", "system_prompt": "rule " * 400}, "system_prompt"),
        ({"query": "q", "history": [{"role": "user", "content": "turn " * 400}]}, "history"),
    ],
)
def test_oversized_texts_outside_passages_are_refused(fields: dict[str, Any], field: str) -> None:
    # The limit covers every text of the request, not only the passages.
    assembler = Assembler({"limits": {"max_request_chars": 1000}})
    with pytest.raises(RequestError) as caught:
        assembler.assemble(passages=[{"id": "a", "text": "x"}], **fields)
    assert caught.value.field == field


def test_template_field_goes_with_the_template_format() -> None:
    missing = _error(query="q", passages=PASSAGES, format="template")
    assert missing.field == "template"
    stray = _error(query="q", passages=PASSAGES, template="{{ query }}")
    assert stray.field == "template"
    assert "only used with format 'template'" in stray.message
    wrong_type = _error(query="q", passages=PASSAGES, format="template", template=3)
    assert wrong_type.field == "template"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ nope }}", "'nope' is undefined"),
        ("{{ query.__class__.__mro__ }}", "not allowed"),
        ("{% for x in %}", "syntax error on line 1"),
        ("{{ sources[0].text }}", "template"),
    ],
)
def test_bad_templates_are_refused_naming_the_field(template: str, message: str) -> None:
    error = _error(query="q", passages=[], format="template", template=template)
    assert error.field == "template"
    assert message in error.message


def test_a_hand_built_request_is_validated() -> None:
    assembler = ctxasm.Assembler()
    twice = Request(
        query="alpha?", passages=(Passage("x", "alpha one", 0.9), Passage("x", "alpha two", 0.5))
    )
    with pytest.raises(RequestError) as error:
        assembler.assemble(twice)
    assert error.value.field == "passages[1].id"
    with pytest.raises(RequestError) as error:
        assembler.assemble(Request(query="", passages=()))
    assert error.value.field == "query"


def test_a_positional_request_that_is_no_request_is_refused() -> None:
    # {**request} raised a raw "TypeError: 'str' object is not a mapping"
    with pytest.raises(ArgumentTypeError) as error:
        ctxasm.Assembler().assemble([{"text": "Ann wrote it."}])  # type: ignore[arg-type]
    assert (error.value.field, error.value.message) == (
        "request",
        "request must be a Request, request JSON (a mapping) or the question (a string), or "
        "give the request fields as keyword arguments; got list [{'text': 'Ann wrote it.'}]",
    )


def test_an_assembler_takes_the_question_and_passages_as_ctxasm_assemble_does() -> None:
    # Assembler(cfg).assemble(query, passages) raised a bare TypeError (second first-hour review)
    passages = [{"id": "a", "text": "Ann wrote it."}]
    expected = ctxasm.assemble("Who wrote it?", passages).messages
    assert ctxasm.Assembler().assemble("Who wrote it?", passages).messages == expected
    assert ctxasm.Assembler().assemble("Who wrote it?", passages=passages).messages == expected
    request = {"query": "Who wrote it?", "passages": passages}
    assert ctxasm.assemble(request).messages == expected  # a whole request first
    assert ctxasm.assemble(ctxasm.parse_request(request)).messages == expected
    with pytest.raises(ArgumentTypeError) as error:
        ctxasm.Assembler().assemble(request, passages)
    assert error.value.field == "passages"


@pytest.mark.parametrize("twice", ["query", "passages"])
def test_a_field_given_positionally_and_by_keyword_is_refused(twice: str) -> None:
    # the keyword was silently dropped
    passages = [{"id": "a", "text": "Ann wrote it."}]
    again: dict[str, Any] = {"query": "Where?", "passages": []}
    for assemble in (ctxasm.assemble, ctxasm.Assembler().assemble):
        with pytest.raises(RequestError) as error:
            assemble("Who wrote it?", passages, **{twice: again[twice]})
        assert (error.value.field, error.value.message) == (
            twice,
            f"{twice} given twice: as an argument and as {twice}=; give it once",
        )


def test_a_request_and_fields_together_are_refused() -> None:
    request = ctxasm.parse_request({"query": "alpha?", "passages": []})
    with pytest.raises(RequestError) as error:
        ctxasm.Assembler().assemble(request, model="gpt-4")
    assert error.value.field == "model"


def test_a_parsed_request_is_used_as_is() -> None:
    request = ctxasm.parse_request({"query": "alpha?", "passages": [{"text": "alpha"}]})
    assert ctxasm.parse_request(request) is request
