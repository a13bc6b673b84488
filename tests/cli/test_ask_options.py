"""``ctxasm ask --min-score/--top-k/--strategy/--system-prompt`` (first-hour review L1): each one
sets its request field against a real SQLite store, replaces the config's default, and a bad
value exits 2 naming the option, with the request parser's message, before the store is read.
A --budget that no chunk fits is warned of."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ctxasm.cli.main import app
from ctxasm.store import Document, chunk_text, open_store

QUESTION = "Which river flows through Vienna to the Black Sea?"
DOCUMENTS = {
    "danube": "The Danube flows east through Vienna and Budapest to the Black Sea.",
    "rhine": "The Rhine flows north from the Alps through Basel to the North Sea.",
    "seine": "The Seine flows west through Paris to the English Channel.",
    "vienna": "Vienna is the capital of Austria; the river runs through the city.",
}
ASKER = ("--principal", "ann", "--tenant", "acme", "--groups", "staff")


@pytest.fixture(scope="module")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('ask') / 'store.db'}"
    store = open_store(url)
    for doc_id, text in DOCUMENTS.items():
        document = Document(doc_id, text, tenant="acme", readers=("staff",))
        store.upsert(document, chunk_text(document.text, 64, 0))
    store.close()
    return url


def _ask(store_url: str, *args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(app, ["ask", QUESTION, "--store", store_url, *ASKER, *args])
    return done.exit_code, done.stdout, done.stderr


def _result(store_url: str, *args: str) -> dict[str, Any]:
    code, out, err = _ask(store_url, "--json", *args)
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def _kept(result: dict[str, Any]) -> list[tuple[str, float]]:
    """The included chunks and their scores, best first."""
    report = result["report"]
    return sorted(((i["id"], i["score"]) for i in report["included"]), key=lambda i: -i[1])


def _left_out(result: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {e["id"]: (e["stage"], e["reason"]) for e in result["report"]["excluded"]}


def test_without_options_every_matching_chunk_is_kept(store_url: str) -> None:
    # the baseline the tests below change: four chunks, the store's scores, none left out
    result = _result(store_url)
    assert sorted(i for i, _ in _kept(result)) == sorted(f"{d}#0" for d in DOCUMENTS)
    assert (result["report"]["excluded"], result["report"]["relevance"]["method"]) == ([], "given")


def test_min_score_leaves_out_the_chunks_scored_below_it(store_url: str) -> None:
    kept = _kept(_result(store_url))
    threshold = (kept[1][1] + kept[2][1]) / 2  # between the second and the third score
    result = _result(store_url, "--min-score", str(threshold))
    assert _kept(result) == kept[:2]
    assert _left_out(result) == {i: ("relevance", "below_threshold") for i, _ in kept[2:]}


def test_top_k_keeps_the_best_n(store_url: str) -> None:
    kept = _kept(_result(store_url))
    result = _result(store_url, "--top-k", "1")
    assert _kept(result) == kept[:1]
    assert _left_out(result) == {i: ("relevance", "top_k") for i, _ in kept[1:]}


def test_strategy_sets_the_slots_of_its_preset(store_url: str) -> None:
    assert _result(store_url, "--strategy", "default")["report"]["relevance"]["method"] == "given"
    result = _result(store_url, "--strategy", "bm25_greedy")
    assert result["report"]["relevance"] == {"method": "bm25", "note": None}
    assert [i["chosen"]["by"] for i in result["report"]["included"]] == ["score"] * 4


@pytest.mark.parametrize(
    ("fmt", "where"), [("openai", ("messages", 0, "content")), ("anthropic", ("system",))]
)
def test_system_prompt_opens_the_system_message(
    store_url: str, fmt: str, where: tuple[Any, ...]
) -> None:
    result = _result(store_url, "--system-prompt", "Answer in French.", "--format", fmt)
    found: Any = result
    for step in where:
        found = found[step]
    assert found.startswith("Answer in French.\n\nAnswer using only the sources below")


def test_a_budget_no_chunk_fits_is_warned_of_even_when_quiet(store_url: str) -> None:
    code, out, err = _ask(store_url, "--budget", "5", "--quiet")
    assert (code, "No sources could be included" in out) == (0, True)
    assert err == (
        "ctxasm: warning: none of the 4 relevant passages fits the context budget of 5 tokens "
        "(over_budget in the report), so the prompt says no sources could be included; raise "
        "--budget (max_context_tokens in a request; the window leaves 126889)\n"
    )


def test_the_options_replace_the_configs_defaults(store_url: str, tmp_path: Path) -> None:
    config = tmp_path / "ctxasm.toml"
    config.write_text(
        '[defaults]\ntop_k = 1\nsystem_prompt = "From the config."\n'
        '[defaults.strategy]\nrelevance = "bm25"\n',
        encoding="utf-8",
    )
    by_config = _result(store_url, "--config", str(config))
    assert (
        len(by_config["report"]["included"]),
        by_config["report"]["relevance"]["method"],
        by_config["messages"][0]["content"].split("\n")[0],
    ) == (1, "bm25", "From the config.")
    given = ("--top-k", "3", "--strategy", "utility_greedy", "--system-prompt", "From me.")
    by_options = _result(store_url, "--config", str(config), *given)
    assert (
        len(by_options["report"]["included"]),
        by_options["report"]["relevance"]["method"],
        by_options["messages"][0]["content"].split("\n")[0],
    ) == (3, "utility", "From me.")


NAMES = (
    "default, bm25_greedy, utility_greedy, utility_per_token, knapsack, mmr, coverage, bridge, "
    "compress_all, auto, greedy_by_score, priority"
)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (("--top-k", "0"), "--top-k must be an integer >= 1 or null; got int 0 [top_k]"),
        (
            ("--top-k", str(2**60)),
            f"--top-k must be an integer <= 2**53; got int {2**60} [top_k]",
        ),
        (("--min-score", "nan"), "--min-score must be a finite number; got nan [min_score]"),
        (("--min-score", "1e999"), "--min-score must be a finite number; got inf [min_score]"),
        (
            ("--strategy", "bm25"),
            f"--strategy: unknown strategy 'bm25'; choose one of {NAMES} [strategy]",
        ),
        # the eval oracle needs gold passages: no strategy for ask
        (
            ("--strategy", "oracle"),
            f"--strategy: unknown strategy 'oracle'; choose one of {NAMES} [strategy]",
        ),
        (
            ("--system-prompt", "caf\udce9"),  # a byte of Latin-1 in a UTF-8 command line
            "--system-prompt contains an unpaired surrogate at character 3; text must be "
            "valid Unicode [system_prompt]",
        ),
    ],
    ids=["top-k-0", "top-k-huge", "min-score-nan", "min-score-inf", "strategy", "oracle", "prompt"],
)
def test_a_bad_value_exits_2_naming_the_option_before_the_store(
    tmp_path: Path, option: tuple[str, str], message: str
) -> None:
    # the store does not exist: the value is refused before the store is opened
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    assert _ask(missing, "--json", *option) == (2, "", f"ctxasm: error: {message}\n")
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize(
    "option", [("--top-k", "two"), ("--min-score", "high")], ids=["top-k", "min-score"]
)
def test_a_value_that_is_no_number_is_a_usage_error_naming_the_option(
    store_url: str, option: tuple[str, str]
) -> None:
    code, out, err = _ask(store_url, *option)
    assert (code, out) == (2, "")
    assert f"Invalid value for '{option[0]}'" in err
