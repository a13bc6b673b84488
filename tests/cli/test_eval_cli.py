"""`ctxasm eval`, run as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROW_KEYS = [
    "strategy",
    "budget",
    "answer_recall",
    "gold_recall",
    "all_gold",
    "sentence_recall",
    "tokens",
    "dup_tokens",
    "density",
    "ms_per_question",
    "ms_median",
    "n",
    "n_gold",
    "by_type",
]


def _command() -> list[str]:
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "ctxasm"]


def ctxasm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_command(), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=os.environ.copy(),
        timeout=120,
    )


def _passage(pid: str, title: str, text: str, gold: bool, answer: bool | None) -> dict[str, Any]:
    return {
        "pid": pid,
        "title": title,
        "text": text,
        "sentences": [text],
        "is_gold": gold,
        "has_answer": answer,
    }


RECORDS = [
    {
        "id": "q1",
        "question": "When was the director of Starfall Voyage born?",
        "answers": ["1961"],
        "passages": [
            _passage(
                "q1#0",
                "Starfall Voyage",
                "Starfall Voyage is a 1998 film. Its director is Marten Kollwitz.",
                True,
                False,
            ),
            _passage(
                "q1#1",
                "Marten Kollwitz",
                "Marten Kollwitz is a Dutch filmmaker. His birth year is 1961.",
                True,
                True,
            ),
            _passage("q1#2", "Born Free", "Born Free is a 1966 film about lions.", False, False),
        ],
        "gold_pids": ["q1#0", "q1#1"],
        "meta": {"type": "bridge", "all_gold_in_candidates": True},
    },
    {
        "id": "q2",
        "question": "Are the Velora bridge and the Orlen tower both built of granite?",
        "answers": ["yes"],
        "passages": [
            _passage("q2#0", "Velora bridge", "The Velora bridge is granite.", True, None),
            _passage("q2#1", "Orlen tower", "The Orlen tower is granite too.", True, None),
            _passage("q2#2", "Tamsin river", "The Tamsin river has otters.", False, None),
        ],
        "gold_pids": ["q2#0", "q2#1"],
        "meta": {"type": "comparison", "all_gold_in_candidates": True},
    },
    {
        "id": "q3",
        "question": "Which river flows past the Orlen hills?",
        "answers": ["Tamsin"],
        "passages": [
            _passage(
                "q3#0", "Tamsin river", "The Tamsin river rises in the Orlen hills.", True, True
            )
        ],
        "gold_pids": ["q3#0", "q3#9"],
        "meta": {"type": "bridge", "all_gold_in_candidates": False},
    },
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    return path


def _one_line_error(done: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ctxasm: error: ")
    for text in expected:
        assert text in lines[0]


def test_eval_json(dataset: Path) -> None:
    done = ctxasm(
        "eval",
        str(dataset),
        "--budget",
        "256,512",
        "--strategy",
        "default",
        "--strategy",
        "oracle",
        "--json",
        "--no-progress",
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert list(data) == ["results"]
    rows = data["results"]
    assert [(row["strategy"], row["budget"]) for row in rows] == [
        ("default", 256),
        ("default", 512),
        ("oracle", 256),
        ("oracle", 512),
    ]
    assert [list(row) for row in rows] == [ROW_KEYS] * 4
    assert [(row["n"], row["n_gold"]) for row in rows] == [(3, 2)] * 4
    # mean tokens per question: every source fits in 256, so the larger budget changes nothing
    assert [(row["tokens"], row["dup_tokens"]) for row in rows] == [
        (51.7, 0.0),
        (51.7, 0.0),
        (59.3, 0.0),
        (59.3, 0.0),
    ]
    assert all(row["ms_per_question"] > 0 and row["ms_median"] > 0 for row in rows)
    oracle = rows[-1]
    assert (oracle["all_gold"], oracle["gold_recall"], oracle["answer_recall"]) == (1.0, 1.0, 1.0)
    assert oracle["sentence_recall"] is None  # the records name no supporting facts


def test_eval_table_names_every_strategy(dataset: Path) -> None:
    done = ctxasm(
        "eval",
        str(dataset),
        "--budget",
        "512",
        "--strategy",
        "bm25_greedy",
        "--strategy",
        "coverage",
        "--strategy",
        "oracle",
        "--limit",
        "2",
    )
    assert done.returncode == 0, done.stderr
    table = done.stdout
    for text in ("bm25_greedy", "coverage", "oracle", "tiny.jsonl", "2 questions", "all-gold"):
        assert text in table
    assert "Traceback" not in done.stderr


def test_eval_plot_writes_a_png(dataset: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "out.png"
    done = ctxasm(
        "eval", str(dataset), "--budget", "128,512", "--strategy", "oracle", "--plot", str(target)
    )
    assert done.returncode == 0, done.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "budget", ["0", "x", "256,-1", ",", "512,abc", "256,99999999999999999999999", "9" * 5000]
)
def test_eval_bad_budget(dataset: Path, budget: str) -> None:
    _one_line_error(ctxasm("eval", str(dataset), "--budget", budget), "--budget", repr(budget))


def test_eval_unknown_strategy_lists_the_allowed_ones(dataset: Path) -> None:
    done = ctxasm("eval", str(dataset), "--strategy", "nope")
    _one_line_error(done, "'nope'", "default", "bm25_greedy", "oracle", "coverage", "[strategy]")


def test_eval_missing_dataset(tmp_path: Path) -> None:
    _one_line_error(ctxasm("eval", str(tmp_path / "absent.jsonl")), "cannot read", "[dataset]")


def test_eval_bad_dataset_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n" + '{"id": "x"}\n', encoding="utf-8")
    _one_line_error(ctxasm("eval", str(path)), "[line 2.question]")


def test_eval_html_and_plot_take_a_dataset_name_that_is_not_utf8(tmp_path: Path) -> None:
    # The page title carried the name's undecodable byte: --html crashed leaving an empty
    # page, --plot crashed in matplotlib
    folder = os.fsencode(tmp_path)
    path = Path(os.fsdecode(folder + b"/ds\xff.jsonl"))
    path.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n", encoding="utf-8")
    page = tmp_path / "eval.html"
    done = ctxasm("eval", str(path), "--budget", "256", "--html", str(page))
    assert done.returncode == 0, done.stderr
    assert "ds\ufffd.jsonl" in page.read_text(encoding="utf-8")


def test_eval_presets_run_on_a_configs_models_and_defaults(dataset: Path, tmp_path: Path) -> None:
    config = tmp_path / "mine.toml"
    config.write_text(
        '[defaults]\nmodel = "small"\n[models.small]\ncontext_window = 4096\n'
        'max_output = 1024\ntokenizer = "tiktoken:cl100k_base"\n',
        encoding="utf-8",
    )
    done = ctxasm(
        "eval", str(dataset), "--strategy", "oracle", "--config", str(config), "--budget", "256"
    )
    assert done.returncode == 0, done.stderr
    assert "oracle" in done.stdout and "small" in done.stdout  # the config's model is used
    env_done = subprocess.run(
        [*_command(), "eval", str(dataset), "--budget", "256", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "CTXASM_CONFIG": str(config)},
    )
    assert env_done.returncode == 0, env_done.stderr
    assert [r["strategy"] for r in json.loads(env_done.stdout)["results"]] == ["mine"]


def test_eval_plot_suffix_is_checked_before_the_run(dataset: Path, tmp_path: Path) -> None:
    done = ctxasm("eval", str(dataset), "--plot", str(tmp_path / "curves.txt"))
    _one_line_error(done, "--plot", ".png")


def test_eval_with_a_config_names_the_row_after_the_file(dataset: Path, tmp_path: Path) -> None:
    config = tmp_path / "mine.toml"
    config.write_text('[defaults.strategy]\nselection = "knapsack"\n', encoding="utf-8")
    done = ctxasm("eval", str(dataset), "--budget", "512", "--config", str(config), "--json")
    assert done.returncode == 0, done.stderr
    assert [row["strategy"] for row in json.loads(done.stdout)["results"]] == ["mine"]


def _fullwiki_like(tmp_path: Path) -> Path:
    """RECORDS plus a question whose distractors pad the bridge question q1."""
    padding = {
        "id": "q4",
        "question": "Which film about a voyage won a prize?",
        "answers": ["Drift"],
        "passages": [
            _passage("q4#0", "Drift (film)", "Drift is a film about a voyage.", True, True),
            _passage("q4#1", "Born at Sea", "A director was born at sea in 1961.", False, False),
            _passage("q4#2", "Starfall", "Starfall is a director's word for voyage.", False, False),
        ],
        "gold_pids": ["q4#0"],
        "meta": {"type": "bridge", "all_gold_in_candidates": True},
    }
    path = tmp_path / "fullwiki.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*RECORDS, padding]), encoding="utf-8")
    return path


def test_eval_hard_subset_is_built_saved_and_rerun(tmp_path: Path) -> None:
    data = _fullwiki_like(tmp_path)
    saved = tmp_path / "hard.jsonl"
    args = ["--budget", "512", "--strategy", "oracle", "--json", "--no-progress"]
    done = ctxasm("eval", str(data), "--subset", "hard", "--save-subset", str(saved), *args)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["results"]
    # q1 (Marten Kollwitz unnamed) and q4 (Drift unnamed) qualify; q2 compares, q3 lacks gold
    assert [(r["n"], r["n_gold"], r["all_gold"]) for r in rows] == [(2, 2, 1.0)]
    records = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == ["q1", "q4"]
    assert sorted(p["pid"] for p in records[0]["passages"]) == [
        "q1#0",
        "q1#1",
        "q1#2",
        "q4#1",
        "q4#2",
    ]
    again = ctxasm("eval", str(saved), *args)
    assert again.returncode == 0, again.stderr
    untimed = {"ms_per_question": 0, "ms_median": 0}
    assert [{**r, **untimed} for r in json.loads(again.stdout)["results"]] == [
        {**r, **untimed} for r in rows
    ]


def test_eval_hard_subset_table_names_the_subset(tmp_path: Path) -> None:
    done = ctxasm(
        "eval", str(_fullwiki_like(tmp_path)), "--subset", "hard", "--budget", "512", "--limit", "1"
    )
    assert done.returncode == 0, done.stderr
    assert "fullwiki.jsonl (hard subset): 1 questions" in done.stdout


def test_eval_hard_subset_needs_full_wiki_style_data(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS[1:]), encoding="utf-8")
    _one_line_error(ctxasm("eval", str(path), "--subset", "hard"), "full-wiki style", "[subset]")


@pytest.mark.parametrize(
    ("option", "value"), [("--subset", "easy"), ("--scores", "bm26"), ("--scores", "")]
)
def test_eval_bad_subset_or_scores(dataset: Path, option: str, value: str) -> None:
    done = ctxasm("eval", str(dataset), option, value)
    _one_line_error(done, option, repr(value), f"[{option[2:]}]")


def test_eval_save_subset_needs_a_subset(dataset: Path, tmp_path: Path) -> None:
    done = ctxasm("eval", str(dataset), "--save-subset", str(tmp_path / "x.jsonl"))
    _one_line_error(done, "--save-subset needs --subset", "[save_subset]")
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("kind", ["bm25", "dense", "noisy-oracle", "random"])
def test_eval_scores(dataset: Path, kind: str) -> None:
    args = ["eval", str(dataset), "--budget", "512", "--scores", kind, "--json"]
    done = ctxasm(*args, "--strategy", "default", "--strategy", "oracle")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["results"]
    assert [r["strategy"] for r in rows] == ["default", "oracle"]
    assert rows[1]["all_gold"] == 1.0  # the oracle keeps its own scores
    again = ctxasm(*args, "--strategy", "default")
    untimed = {"ms_per_question": 0, "ms_median": 0}
    assert {**json.loads(again.stdout)["results"][0], **untimed} == {**rows[0], **untimed}


def test_eval_bad_embedder(dataset: Path) -> None:
    done = ctxasm("eval", str(dataset), "--scores", "dense", "--embedder", "word2vec")
    _one_line_error(done, "unknown embedder 'word2vec'", "[embedder]")


def test_eval_html_writes_one_self_contained_page(dataset: Path, tmp_path: Path) -> None:
    page = tmp_path / "eval.html"
    done = ctxasm("eval", str(dataset), "--budget", "256,512", "--html", str(page), "--json")
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") or html.lower().startswith("<!doctype html>")
    assert "<svg" in html  # the recall-versus-budget curves, drawn inline
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html


def test_eval_html_to_an_unwritable_path(dataset: Path, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "eval.html"
    _one_line_error(
        ctxasm("eval", str(dataset), "--budget", "512", "--html", str(target)), "[html]"
    )


@pytest.mark.parametrize(
    ("option", "name"), [("--html", "e.html"), ("--plot", "e.png"), ("--save-subset", "s.jsonl")]
)
def test_an_output_that_cannot_be_written_is_refused_before_the_run(
    dataset: Path, tmp_path: Path, option: str, name: str
) -> None:
    # the unknown strategy would fail the run: the output's error comes first, as it did not
    field = option.removeprefix("--").replace("-", "_")
    folder = tmp_path / f"folder{Path(name).suffix}"
    folder.mkdir()
    subset = ["--subset", "hard"] if option == "--save-subset" else []
    for target, why in ((tmp_path / "missing" / name, "no such folder"), (folder, "a folder")):
        done = ctxasm("eval", str(dataset), "--strategy", "nosuch", *subset, option, str(target))
        _one_line_error(done, f"cannot write {target}", why, f"[{field}]")


def test_eval_html_to_standard_output_is_refused(dataset: Path, tmp_path: Path) -> None:
    # --html - wrote a file named "-"; standard output carries the tables
    here = tmp_path / "here"
    here.mkdir()
    done = ctxasm("eval", str(dataset), "--strategy", "nosuch", "--html", "-", cwd=here)
    _one_line_error(done, "--html - would write the page to standard output", "[html]")
    assert list(here.iterdir()) == []


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--save-subset", "--save-subset - would write the subset to standard output"),
        ("--plot", "--plot must end in one of"),
    ],
)
def test_eval_file_outputs_refuse_a_dash(
    dataset: Path, tmp_path: Path, option: str, message: str
) -> None:
    # --save-subset - wrote a file named "-"; standard output carries the tables
    here = tmp_path / "here"
    here.mkdir()
    subset = ["--subset", "hard"] if option == "--save-subset" else []
    done = ctxasm("eval", str(dataset), *subset, option, "-", cwd=here)
    field = option.removeprefix("--").replace("-", "_")
    _one_line_error(done, message, f"[{field}]")
    assert list(here.iterdir()) == []


def test_eval_save_subset_refuses_an_empty_name(dataset: Path, tmp_path: Path) -> None:
    done = ctxasm("eval", str(dataset), "--subset", "hard", "--save-subset=", cwd=tmp_path)
    _one_line_error(done, "--save-subset '' would write the subset nowhere", "[save_subset]")


@pytest.mark.parametrize(("first", "name"), [("--html", "out.x"), ("--plot", "out.png")])
def test_two_outputs_naming_one_file_are_refused_before_the_run(
    dataset: Path, tmp_path: Path, first: str, name: str
) -> None:
    # --save-subset out.x --html out.x wrote the subset, then the page over it, exit 0
    target = tmp_path / name
    done = ctxasm(
        "eval",
        str(dataset),
        "--subset",
        "hard",
        first,
        str(target),
        "--save-subset",
        str(tmp_path / "." / name),
    )
    _one_line_error(done, "both name", "[save_subset]")
    assert not target.exists()


def test_eval_save_subset_dot_slash_dash_writes_a_file_named_dash(
    dataset: Path, tmp_path: Path
) -> None:
    done = ctxasm(
        "eval",
        str(dataset),
        "--budget",
        "256",
        "--subset",
        "hard",
        "--save-subset",
        "./-",
        "--json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    saved = (tmp_path / "-").read_text(encoding="utf-8").splitlines()
    assert saved and all(json.loads(line)["id"] for line in saved)


def test_eval_html_dot_slash_dash_writes_a_file_named_dash(dataset: Path, tmp_path: Path) -> None:
    # ./- was taken as standard output (Path("./-") is Path("-")), and refused
    done = ctxasm("eval", str(dataset), "--budget", "256", "--html", "./-", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [row["budget"] for row in json.loads(done.stdout)["results"]] == [256]
    assert (tmp_path / "-").read_text(encoding="utf-8").lower().startswith("<!doctype html>")


@pytest.mark.parametrize("option", ["--html", "--plot", "--save-subset"])
def test_an_output_that_is_the_dataset_is_refused_before_the_run(
    dataset: Path, tmp_path: Path, option: str
) -> None:
    # eval tiny.jsonl --save-subset tiny.jsonl replaced the dataset with its subset, exit 0
    field = option.removeprefix("--").replace("-", "_")
    original = dataset.read_bytes()
    link = tmp_path / "latest.png"  # --plot takes only an image's name: a link to the dataset
    link.symlink_to(dataset)
    target = link if option == "--plot" else dataset
    subset = ["--subset", "composed"] if option == "--save-subset" else []
    done = ctxasm("eval", str(dataset), "--budget", "256", *subset, option, str(target))
    _one_line_error(done, f"the output {target} is the input {dataset}", f"[{field}]")
    assert dataset.read_bytes() == original


@pytest.mark.parametrize("option", ["--html", "--plot", "--save-subset"])
def test_an_output_that_is_the_config_is_refused_before_the_run(
    dataset: Path, tmp_path: Path, option: str
) -> None:
    # eval data.jsonl --config c.toml --html c.toml replaced the config with the page
    field = option.removeprefix("--").replace("-", "_")
    config = tmp_path / "c.toml"
    config.write_text('[defaults]\nmodel = "gpt-4o"\n', encoding="utf-8")
    link = tmp_path / "latest.png"  # --plot takes only an image's name: a link to the config
    link.symlink_to(config)
    target = link if option == "--plot" else config
    subset = ["--subset", "composed"] if option == "--save-subset" else []
    done = ctxasm(
        "eval",
        str(dataset),
        "--budget",
        "256",
        "--config",
        str(config),
        *subset,
        option,
        str(target),
    )
    _one_line_error(
        done, f"the output {target} is the input {config}", "replace the config", f"[{field}]"
    )
    assert config.read_text(encoding="utf-8") == '[defaults]\nmodel = "gpt-4o"\n'


def test_eval_composed_subset_is_built_saved_and_split_by_hops(tmp_path: Path) -> None:
    def passage(pid: str, title: str, *sentences: str) -> dict[str, Any]:
        text = " ".join(sentences)
        return {"pid": pid, "title": title, "text": text, "sentences": list(sentences)}

    chain = [
        passage("a#0", "Green Album", "Green Album is a record by the guitarist Steve Hillage."),
        passage(
            "a#1",
            "Steve Hillage",
            "Steve Hillage is a musician.",
            "His partner is the keyboardist Miquette Giraudy.",
        ),
        passage(
            "a#2", "Tom Bowler", "Tom Bowler was a guitarist of note and a keyboardist of skill."
        ),
    ]
    record = {"id": "a", "question": "Q?", "answers": ["x"], "passages": chain}
    data = tmp_path / "pool.jsonl"
    data.write_text(json.dumps(record) + "\n", encoding="utf-8")
    saved = tmp_path / "composed.jsonl"
    args = ["--budget", "512", "--strategy", "oracle", "--json", "--no-progress", "--by-type"]
    done = ctxasm("eval", str(data), "--subset", "composed", "--save-subset", str(saved), *args)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["results"]
    assert (row["n"], row["n_gold"], row["all_gold"], row["answer_recall"]) == (1, 1, 1.0, 1.0)
    (asked,) = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines()]
    assert asked["question"] == "What is the keyboardist of the guitarist of Green Album?"
    assert asked["meta"]["type"] == "composed-2"
    assert sorted(asked["gold_pids"]) == ["a#0", "a#1"]
    table = ctxasm("eval", str(data), "--subset", "composed", "--budget", "512")
    assert table.returncode == 0, table.stderr
    assert "pool.jsonl (composed subset): 1 questions" in table.stdout


def test_eval_composed_subset_needs_chains(dataset: Path) -> None:
    _one_line_error(ctxasm("eval", str(dataset), "--subset", "composed"), "chains", "[subset]")


def test_eval_comention_subset_is_built_saved_and_split_by_hops(tmp_path: Path) -> None:
    def passage(pid: str, title: str, *sentences: str) -> dict[str, Any]:
        text = " ".join(sentences)
        return {"pid": pid, "title": title, "text": text, "sentences": list(sentences)}

    # Green Album and Planet Gong both name Steve Hillage, Planet Gong and Mother Gong Gilli Smyth
    pool = [
        passage("a#0", "Green Album", "Green Album is a record by the guitarist Steve Hillage."),
        passage(
            "a#1",
            "Planet Gong",
            "Planet Gong was a band with the guitarist Steve Hillage.",
            "It was led by the singer Gilli Smyth.",
        ),
        passage(
            "a#2",
            "Mother Gong",
            "Mother Gong is a group of the singer Gilli Smyth with the drummer Didier Malherbe.",
        ),
        passage(
            "a#3",
            "Tom Bowler",
            "Tom Bowler was a guitarist of note, a singer of songs and a drummer of skill.",
        ),
    ]
    record = {"id": "a", "question": "Q?", "answers": ["x"], "passages": pool}
    data = tmp_path / "pool.jsonl"
    data.write_text(json.dumps(record) + "\n", encoding="utf-8")
    saved = tmp_path / "comention.jsonl"
    args = ["--budget", "512", "--strategy", "oracle", "--json", "--no-progress", "--by-type"]
    done = ctxasm("eval", str(data), "--subset", "comention", "--save-subset", str(saved), *args)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["results"]
    assert (row["n"], row["n_gold"], row["all_gold"], row["answer_recall"]) == (2, 2, 1.0, 1.0)
    assert sorted(row["by_type"]) == ["comention-2", "comention-3"]
    asked = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines()]
    assert [(q["question"], q["meta"]["type"], q["gold_pids"]) for q in asked] == [
        ("What is the drummer of the singer of Planet Gong?", "comention-2", ["a#1", "a#2"]),
        (
            "What is the drummer of the singer of the guitarist of Green Album?",
            "comention-3",
            ["a#0", "a#1", "a#2"],
        ),
    ]
    table = ctxasm("eval", str(data), "--subset", "comention", "--budget", "512", "--limit", "1")
    assert table.returncode == 0, table.stderr
    assert "pool.jsonl (comention subset): 1 questions" in table.stdout


def test_eval_comention_subset_needs_chains(dataset: Path) -> None:
    done = ctxasm("eval", str(dataset), "--subset", "comention")
    _one_line_error(done, "comention subset needs", "[subset]")


def test_eval_reads_hotpotqa_files_and_keeps_the_listed_ids(tmp_path: Path) -> None:
    """HotpotQA's own dev file (a JSON array) and a list of ids: how the published tables are
    rebuilt (docs/evaluation.md)."""
    records = [
        {
            "_id": f"q{i}",
            "question": f"Where was the painter {i} born?",
            "answer": f"Town{i}",
            "type": "bridge",
            "supporting_facts": [[f"Painter {i}", 0]],
            "context": [
                [f"Painter {i}", [f"Painter {i} was born in Town{i}."]],
                ["Other", ["Nothing here."]],
            ],
        }
        for i in range(4)
    ]
    data = tmp_path / "hotpot_dev_distractor_v1.json"
    data.write_text(json.dumps(records))
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"\xef\xbb\xbfq2\r\nq0\n")  # as a Windows editor may save it
    done = ctxasm(
        "eval", str(data), "--ids", str(ids), "--budget", "512", "--strategy", "oracle", "--json"
    )
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["results"]
    assert (row["n"], row["all_gold"], row["answer_recall"]) == (2, 1.0, 1.0)
    ids.write_text("q2\nq7\n")
    done = ctxasm("eval", str(data), "--ids", str(ids), "--budget", "512")
    _one_line_error(done, "1 of the 2 ids of ids.txt are not in the dataset", "'q7'", "[ids]")
    done = ctxasm("eval", str(data), "--ids", str(ids), "--html", str(ids))
    _one_line_error(done, "would replace the ids")


def test_two_outputs_named_dot_slash_dash_are_named_as_given(dataset: Path, tmp_path: Path) -> None:
    # the error said "both name -", the name eval keeps for standard output
    done = ctxasm(
        "eval",
        str(dataset),
        "--subset",
        "hard",
        "--html",
        "./-",
        "--save-subset",
        "./-",
        cwd=tmp_path,
    )
    _one_line_error(done, "--html and --save-subset both name ./-", "[save_subset]")
