"""The model registry: bundled families, aliases, overrides and the unknown-model error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ctxasm
from ctxasm import ConfigError, ModelRegistry, ModelSpec, UnknownModelError, default_registry
from ctxasm.models import Prices

PASSAGES = [{"id": "a", "text": "A fact about rivers.", "score": 1.0}]

# The families the issue names, with one or more names that must be in the registry.
FAMILIES = {
    "gpt-4o": ["gpt-4o", "gpt-4o-mini"],
    "gpt-4.1": ["gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"],
    "o-series": ["o1", "o3", "o3-mini", "o4-mini"],
    "gpt-5": ["gpt-5", "gpt-5-mini", "gpt-5-nano"],
    "claude": [
        "claude-3-5-sonnet",
        "claude-3-5-haiku",
        "claude-3-7-sonnet",
        "claude-sonnet-4",
        "claude-opus-4",
        "claude-opus-4-1",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
    ],
    "llama": ["llama-3.1-8b-instruct", "llama-3.1-70b-instruct", "llama-3.3-70b-instruct"],
    "mistral": [
        "mistral-large",
        "mistral-small",
        "mistral-nemo",
        "mistral-7b-instruct",
        "mixtral-8x7b-instruct",
    ],
    "qwen": ["qwen2.5-7b-instruct", "qwen2.5-72b-instruct", "qwen3-8b", "qwen3-32b"],
    "gemini": ["gemini-2.0-flash", "gemini-2.5-pro", "gemini-2.5-flash"],
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_registry_has_the_families(family: str) -> None:
    registry = default_registry()
    for name in FAMILIES[family]:
        assert name in registry, name
        spec = registry.get(name)
        assert spec.name == name
        assert spec.context_window > spec.max_output > 0


def test_openai_models_are_exact_and_priced() -> None:
    registry = default_registry()
    for name in FAMILIES["gpt-4o"] + FAMILIES["gpt-4.1"] + FAMILIES["o-series"] + FAMILIES["gpt-5"]:
        spec = registry.get(name)
        assert spec.provider == "openai"
        assert spec.tokenizer == "tiktoken:o200k_base"
        assert (spec.tokens_per_message, spec.reply_priming) == (3, 3)
        assert spec.input_price is not None and spec.input_price > 0
        assert spec.output_price is not None and spec.output_price > 0


def test_models_without_public_tokenizer_are_estimates() -> None:
    registry = default_registry()
    for name in FAMILIES["claude"] + FAMILIES["gemini"]:
        assert registry.get(name).tokenizer.startswith("estimate:"), name
    estimated = sorted(s.provider for s in registry if s.tokenizer.startswith("estimate:"))
    assert set(estimated) == {"anthropic", "google"}


def test_open_weight_models_count_with_their_pinned_tokenizer() -> None:
    registry = default_registry()
    pinned = {
        spec.name: (spec.tokenizer, spec.tokens_per_message, spec.reply_priming)
        for spec in registry
        if spec.provider in ("meta", "mistral", "qwen")
    }
    llama, qwen25, qwen3 = (
        ("pinned:llama-3", 4, 25),
        ("pinned:qwen2.5", 4, 3),
        ("pinned:qwen3", 4, 3),
    )
    assert pinned == {
        "llama-3.1-8b-instruct": llama,
        "llama-3.1-70b-instruct": llama,
        "llama-3.1-405b-instruct": llama,
        "llama-3.2-1b-instruct": llama,
        "llama-3.2-3b-instruct": llama,
        "llama-3.3-70b-instruct": llama,
        "mistral-large": ("pinned:mistral-v7", 1, 1),
        "mistral-small": ("pinned:mistral-v3", 1, 4),
        "mistral-nemo": ("pinned:mistral-tekken", 1, 3),
        "mistral-7b-instruct": ("pinned:mistral-v3", 1, 4),
        "mixtral-8x7b-instruct": ("pinned:mistral-v1", 6, 5),
        "qwen2.5-7b-instruct": qwen25,
        "qwen2.5-72b-instruct": qwen25,
        "qwen3-8b": qwen3,
        "qwen3-32b": qwen3,
        "qwen3-235b-a22b": qwen3,
    }
    result = ctxasm.assemble("q", PASSAGES, model="llama-3.3-70b-instruct")
    assert (result.report.tokenizer, result.report.exact_count) == ("pinned:llama-3", True)
    assert result.report.budget.margin == 0


def test_every_model_has_a_working_tokenizer_spec() -> None:
    for spec in default_registry():
        assert isinstance(spec, ModelSpec)
        result = ctxasm.assemble("q", PASSAGES, model=spec.name)
        assert result.report.model == spec.name
        assert result.report.tokenizer == spec.tokenizer


def test_gpt_4o_entry() -> None:
    assert default_registry().get("gpt-4o").to_dict() == {
        "name": "gpt-4o",
        "provider": "openai",
        "context_window": 128000,
        "max_output": 16384,
        "tokenizer": "tiktoken:o200k_base",
        "tokens_per_message": 3,
        "reply_priming": 3,
        "chat": "openai",
        "input_price": 2.5,
        "output_price": 10.0,
        "aliases": ["gpt-4o-2024-11-20", "gpt-4o-2024-08-06"],
        "cache": "automatic",
        "cached_input_price": 1.25,
        "cache_write_price": None,
        "cache_min_tokens": 1024,
        "cache_increment": 128,
        "reasoning": False,
        "price_tiers": [],
    }


def test_chatgpt_4o_latest_is_priced_apart_from_gpt_4o() -> None:
    # The model ChatGPT runs: counted as gpt-4o, billed at 5 / 15 USD, with no cached price.
    latest, gpt_4o = default_registry().get("chatgpt-4o-latest"), default_registry().get("gpt-4o")
    assert latest.name == "chatgpt-4o-latest"
    assert (latest.tokenizer, latest.context_window, latest.max_output) == (
        gpt_4o.tokenizer,
        gpt_4o.context_window,
        gpt_4o.max_output,
    )
    assert (latest.input_price, latest.output_price) == (5.0, 15.0)
    assert latest.cached_input_price is None
    report = ctxasm.assemble("q", PASSAGES, model="chatgpt-4o-latest").report
    assert report.model == "chatgpt-4o-latest"
    assert report.exact_count
    assert report.cost_usd == round(report.total_tokens * 5.0 / 1e6, 8)


def test_mistral_small_is_priced_as_the_model_its_tokenizer_counts() -> None:
    # mistral-small is Mistral Small 24.09 (the v3 SentencePiece file: its weights have a
    # vocabulary of 32,768, Tekken's is 131,072; v3 template): its price, not Mistral Small 3's
    # (0.10 / 0.30), which counts with another tokenizer.
    spec = default_registry().get("mistral-small-2409")
    assert (spec.tokenizer, spec.chat) == ("pinned:mistral-v3", "mistral-v3")
    assert (spec.input_price, spec.output_price) == (0.2, 0.6)


def test_the_reasoning_models_are_marked() -> None:
    # OpenAI's reasoning models: their hidden reasoning counts against max_completion_tokens.
    marked = {spec.name for spec in default_registry() if spec.reasoning}
    assert marked == set(FAMILIES["o-series"] + FAMILIES["gpt-5"])


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_reasoning_in_a_config_must_be_true_or_false(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"models\.o3\.reasoning must be true or false") as caught:
        default_registry().with_overrides({"o3": {"reasoning": value}})
    assert caught.value.field == "models.o3.reasoning"


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("GPT-4O", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("mistral-large-2411", "mistral-large"),
        ("mistral-small-2409", "mistral-small"),
    ],
)
def test_aliases(alias: str, name: str) -> None:
    assert default_registry().get(alias).name == name
    result = ctxasm.assemble("q", PASSAGES, model=alias)
    assert result.report.model == name


@pytest.mark.parametrize(
    ("name", "models"),
    [
        ("mistral-small-latest", "mistral-small, mistral-small-2409"),
        ("Mistral-Large-Latest", "mistral-large, mistral-large-2411"),
    ],
)
def test_a_moving_latest_name_is_refused_naming_the_pinned_models(name: str, models: str) -> None:
    # mistral-small-latest resolved to mistral-small (v3 SentencePiece and template, exact)
    # while Mistral serves Mistral Small 3.x (its own tekken.json, the v7 template) under it
    with pytest.raises(UnknownModelError) as caught:
        ctxasm.assemble("q", PASSAGES, model=name)
    base = models.split(",", maxsplit=1)[0]
    assert caught.value.to_dict() == {
        "code": "unknown_model",
        "message": (
            f"unknown model {name!r}: the provider moves a -latest name to each new release, "
            f"which may count with another tokenizer or chat format than {base}; name the "
            f"model: {models}, or add the newer one with its tokenizer in a config file"
        ),
        "field": "model",
    }


@pytest.mark.parametrize("name", ["mistral-small-latest", "Mistral-Small-Latest"])
def test_a_config_overriding_a_moving_latest_name_is_told_it_is_no_alias(name: str) -> None:
    # it was told "is a new model and needs context_window, max_output, tokenizer", with no
    # word that the name was an alias of mistral-small until it was removed
    with pytest.raises(ConfigError) as caught:
        default_registry().with_overrides({name: {"input_price": 0.2, "max_output": 4096}})
    assert caught.value.to_dict() == {
        "code": "invalid_config",
        "message": (
            f"models.{name} overrides no model: {name} is no longer an alias of mistral-small, "
            "as the provider moves a -latest name to each new release, which may count with "
            "another tokenizer or chat format; override one of mistral-small, "
            f"mistral-small-2409 instead, or define {name} as a model of its own, with "
            "context_window, max_output and tokenizer"
        ),
        "field": f"models.{name}",
    }


def test_a_config_may_define_a_latest_name_as_a_model_of_its_own() -> None:
    # as any new name: with the fields of a new model it is one, and mistral-small is unchanged
    entry = {"context_window": 131_072, "max_output": 4096, "tokenizer": "tiktoken:o200k_base"}
    registry = default_registry().with_overrides({"mistral-small-latest": entry})
    spec = registry.get("MISTRAL-SMALL-LATEST")
    assert (spec.name, spec.provider, spec.context_window, spec.tokenizer) == (
        "mistral-small-latest",
        "custom",
        131_072,
        "tiktoken:o200k_base",
    )
    assert registry.get("mistral-small") == default_registry().get("mistral-small")


def test_unknown_model_error_text() -> None:
    with pytest.raises(UnknownModelError) as caught:
        default_registry().get("gpt-4o-mnii")
    error = caught.value
    assert error.field == "model"
    assert error.message.startswith("unknown model 'gpt-4o-mnii'; did you mean gpt-4o-mini")
    assert "ctxasm models" in error.message
    assert "context_window, max_output and tokenizer" in error.message


def test_unknown_model_without_close_matches() -> None:
    with pytest.raises(UnknownModelError) as caught:
        default_registry().get("zzzzzzzzzzzz")
    assert "did you mean" not in caught.value.message


def test_override_fields_of_an_existing_model() -> None:
    assembler = ctxasm.Assembler(
        {"models": {"gpt-4o": {"context_window": 3000, "input_price": 1.0}}}
    )
    result = assembler.assemble(query="q", passages=PASSAGES)
    report = result.report
    assert report.budget.context_window == 3000
    assert report.cost_usd == pytest.approx(report.total_tokens * 1.0 / 1_000_000)
    assert default_registry().get("gpt-4o").context_window == 128000  # the bundle is untouched


def test_override_through_an_alias() -> None:
    registry = default_registry().with_overrides({"GPT-4o-2024-08-06": {"max_output": 100}})
    assert registry.get("gpt-4o").max_output == 100


def test_add_a_model_in_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "ctxasm.toml"
    config.write_text(
        '[defaults]\nmodel = "house-model"\n\n'
        '[models."house-model"]\ncontext_window = 4096\nmax_output = 512\n'
        'tokenizer = "tiktoken:cl100k_base"\naliases = ["house"]\n'
    )
    assembler = ctxasm.Assembler(config)
    result = assembler.assemble(query="q", passages=PASSAGES)
    assert (result.report.model, result.report.tokenizer) == ("house-model", "tiktoken:cl100k_base")
    assert result.report.budget.context_window == 4096
    assert result.report.budget.reserve_output == 512
    assert assembler.assemble(query="q", passages=PASSAGES, model="house").report.model == (
        "house-model"
    )


def test_config_file_in_json(tmp_path: Path) -> None:
    config = tmp_path / "ctxasm.json"
    config.write_text(json.dumps({"models": {"gpt-4o-mini": {"context_window": 9000}}}))
    result = ctxasm.Assembler(config).assemble(query="q", passages=PASSAGES, model="gpt-4o-mini")
    assert result.report.budget.context_window == 9000


@pytest.mark.parametrize(
    ("models", "fragment", "field"),
    [
        ({"new-model": {"context_window": 100}}, "needs max_output, tokenizer", "max_output"),
        (
            {"gpt-4o": {"context_window": 0}},
            "models.gpt-4o.context_window must be an integer from 1 to 1,000,000,000, got 0",
            "context_window",
        ),
        (  # too big for a float: every budget overflowed (an internal error, exit 1)
            {"gpt-4o": {"context_window": 10**309}},
            "context_window must be an integer from 1 to 1,000,000,000, got (an integer of "
            "1,027 bits)",
            "context_window",
        ),
        (
            {"gpt-4o": {"input_price": -1}},
            "models.gpt-4o.input_price must be a price from 0 to 1,000,000.0",
            "input_price",
        ),
        (  # a finite price whose cost is not: "cost_usd": Infinity is no JSON
            {"gpt-4o": {"output_price": 1e308}},
            "models.gpt-4o.output_price must be a price from 0 to 1,000,000.0",
            "output_price",
        ),
        ({"gpt-4o": {"colour": "red"}}, "unknown field(s) colour", "colour"),
        ({"gpt-4o": {"aliases": "x"}}, "aliases must be a list of strings", "aliases"),
        ({"gpt-4o": {"aliases": ["gpt-4o-mini"]}}, "is used by both", None),  # either model
        ({"gpt-4o": {"chat": "llama9"}}, "did you mean 'llama3'", "chat"),
    ],
)
def test_bad_model_overrides(models: dict[str, object], fragment: str, field: str | None) -> None:
    # every error names its field, as the CLI's "[...]" and the service's JSON show it
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"models": models})
    assert fragment in caught.value.message
    assert caught.value.field is not None and caught.value.field.startswith("models.")
    if field is not None:
        assert caught.value.field == f"models.{next(iter(models))}.{field}"


def test_a_model_name_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"models": {1: {"context_window": 100}}})
    assert caught.value.field == "models" and "must be a string, got int 1" in caught.value.message


def test_registry_iterates_sorted_by_provider_then_name() -> None:
    specs = list(default_registry())
    assert specs == sorted(specs, key=lambda s: (s.provider, s.name))
    assert len(specs) == len(default_registry())


def test_registry_from_mapping() -> None:
    registry = ModelRegistry.from_mapping(
        {"m": {"context_window": 10, "max_output": 5, "tokenizer": "tiktoken:o200k_base"}},
        {"tokens_per_message": 7},
    )
    assert registry.get("M") == ModelSpec(
        name="m",
        provider="custom",
        context_window=10,
        max_output=5,
        tokenizer="tiktoken:o200k_base",
        tokens_per_message=7,
    )


# --- price tiers (Google bills long Gemini prompts at higher prices) ---------------------------


def test_gemini_long_prompts_are_priced_at_googles_long_context_rates() -> None:
    from ctxasm.report import cost_usd

    models = default_registry()
    pro = models.get("gemini-2.5-pro")
    # every token of a prompt over 200,000 tokens is billed at the higher rate
    assert cost_usd(pro, 200_000) == 0.25
    assert cost_usd(pro, 200_001) == 0.5000025
    assert pro.prices(200_000) == Prices(1.25, 10.0, 0.125, None)
    assert pro.prices(200_001) == Prices(2.5, 15.0, 0.25, None)
    assert models.get("gemini-1.5-pro").prices(128_001) == Prices(2.5, 10.0, 0.625, None)
    assert models.get("gemini-1.5-flash").prices(128_001) == Prices(0.15, 0.6, 0.0375, None)
    tiered = sorted(spec.name for spec in models if spec.price_tiers)
    assert tiered == ["gemini-1.5-flash", "gemini-1.5-pro", "gemini-2.5-pro"]


def test_a_config_gives_price_tiers_and_the_report_and_cache_costs_use_them() -> None:
    tiers = [{"above": 200, "input_price": 4.0, "cached_input_price": 0.4}]
    assembler = ctxasm.Assembler({"models": {"gpt-4o": {"price_tiers": tiers}}})
    short = assembler.assemble(query="q", passages=PASSAGES, previous=None)
    assert short.report.total_tokens <= 200
    assert short.report.cost_usd == round(short.report.total_tokens * 2.5 / 1e6, 8)
    passages = [{"id": f"p{i}", "text": f"River fact {i}. " * 60} for i in range(6)]
    long = assembler.assemble(query="river?", passages=passages, previous=None)
    total = long.report.total_tokens
    assert total > 1024
    assert long.report.cost_usd == round(total * 4.0 / 1e6, 8)
    assert long.report.cache is not None
    assert long.report.cache.cost_usd_uncached == round(total * 4.0 / 1e6, 8)
    # a turn that reads from the cache pays the tier's cached price for what it reads
    again = assembler.assemble(query="river?", passages=passages, previous=long)
    assert again.report.cache is not None
    read, total = again.report.cache.cached_tokens, again.report.total_tokens
    assert read >= 1024
    assert again.report.cache.cost_usd == round((read * 0.4 + (total - read) * 4.0) / 1e6, 8)


def test_cached_reads_at_a_tier_are_priced_at_its_cached_price() -> None:
    from ctxasm.prompt_cache import _cost

    pro = default_registry().get("gemini-2.5-pro")
    assert _cost(pro, 300_000, 100_000, 0) == round((100_000 * 0.25 + 200_000 * 2.5) / 1e6, 8)
    assert _cost(pro, 150_000, 100_000, 0) == round((100_000 * 0.125 + 50_000 * 1.25) / 1e6, 8)


def test_overriding_the_price_tiers_replaces_them() -> None:
    registry = default_registry()
    dropped = registry.with_overrides({"gemini-2.5-pro": {"price_tiers": []}})
    assert dropped.get("gemini-2.5-pro").prices(500_000).input == 1.25
    two = [{"above": 1000, "input_price": 2.0}, {"above": 2000, "output_price": 30}]
    spec = registry.with_overrides({"gemini-2.5-pro": {"price_tiers": two}}).get("gemini-2.5-pro")
    assert spec.prices(1000) == Prices(1.25, 10.0, 0.125, None)
    assert spec.prices(1500) == Prices(2.0, 10.0, 0.125, None)
    assert spec.prices(2500) == Prices(2.0, 30, 0.125, None)  # a price left out: the one below
    assert spec.to_dict()["price_tiers"] == [
        {"above": 1000, "input_price": 2.0},
        {"above": 2000, "output_price": 30},
    ]
    # the registry's own tiers survive an override of other fields, and the base price with it
    kept = registry.with_overrides({"gemini-2.5-pro": {"input_price": 1.0}}).get("gemini-2.5-pro")
    assert (kept.prices(100).input, kept.prices(300_000).input) == (1.0, 2.5)


@pytest.mark.parametrize(
    ("tiers", "fragment", "field"),
    [
        (
            {"above": 5, "input_price": 1},
            "price_tiers must be a list of tables such as { above = 200000, input_price = 2.5 }",
            "price_tiers",
        ),
        ([5], "price_tiers[0] must be a table of above and prices, got 5", "price_tiers[0]"),
        (
            [{"input_price": 1}],
            "price_tiers[0].above must be an integer from 1 to 1,000,000,000 (the prompt tokens "
            "past which the tier's prices apply), got None",
            "price_tiers[0].above",
        ),
        (
            [{"above": True, "input_price": 1}],
            "price_tiers[0].above must be an integer",
            "price_tiers[0].above",
        ),
        (
            [{"above": 10, "input_price": 1}, {"above": 10, "input_price": 2}],
            "price_tiers[1].above must be greater than the tier before it (10), got 10",
            "price_tiers[1].above",
        ),
        (
            [{"above": 10, "input_price": -1}],
            "price_tiers[0].input_price must be a price from 0 to 1,000,000.0",
            "price_tiers[0].input_price",
        ),
        (
            [{"above": 10, "input": 2}],
            "price_tiers[0] has unknown field(s) input; allowed: above, input_price",
            "price_tiers[0].input",
        ),
        (
            [{"above": 10}],
            "price_tiers[0] sets no price; give at least one of input_price, output_price",
            "price_tiers[0]",
        ),
    ],
)
def test_bad_price_tiers_name_the_field(tiers: Any, fragment: str, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"models": {"gemini-2.5-pro": {"price_tiers": tiers}}})
    assert fragment in caught.value.message
    assert caught.value.field == f"models.gemini-2.5-pro.{field}"


def test_the_models_table_marks_tiered_prices_and_lists_the_tiers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ctxasm.cli.report_view import print_models

    models = default_registry()
    print_models([models.get("gemini-2.5-pro"), models.get("gemini-2.0-flash")])
    lines = capsys.readouterr().out.splitlines()
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if "│" in line]
    assert {row[0]: row[-3:] for row in rows} == {
        "gemini-2.5-pro": ["1.25*", "0.125*", "10*"],
        "gemini-2.0-flash": ["0.1", "0.025", "0.4"],
    }
    notes = [line for line in lines if line.startswith("*")]
    assert notes == [
        "* gemini-2.5-pro, prompts over 200,000 tokens: input 2.5, cached input 0.25, output 15"
    ]
