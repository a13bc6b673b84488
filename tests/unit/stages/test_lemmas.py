"""The lemma table: simplemma's English dictionary, written once to the cache folder and read
back by later processes, with simplemma's own lemmas."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import simplemma
from simplemma.strategies.dictionaries.dictionary_factory import DefaultDictionaryFactory

from ctxasm.stages import lemmas
from ctxasm.stages.lemmas import LemmaTable, cache_folder

_read = lemmas._table.__wrapped__  # each call reads the cache folder again

TRICKY = [
    "taught",
    "Teaches",
    "rivers",
    "children",
    "went",
    "better",
    "don't",
    "U.S.",
    "mother-in-law",
    "Ünïcode",
    "straße",
    "İstanbul",
    "x",
    "—",
    "42nd",
    "naïve",
    "cooperation's",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(lemmas.CACHE_FOLDER_VARIABLE, str(folder))
    return folder


def test_the_table_holds_exactly_the_dictionarys_pairs() -> None:
    dictionary = DefaultDictionaryFactory().get_dictionary("en")
    table = LemmaTable(LemmaTable.build(dictionary.items()))
    assert len(table) == len(dictionary)
    assert all(table.get(key) == value for key, value in dictionary.items())
    assert set(table) == set(dictionary)
    assert table.get("qzxv-no-such-word") is None
    with pytest.raises(KeyError):
        table["qzxv-no-such-word"]


def test_lemmas_are_simplemmas() -> None:
    # Words of the docs and a few that exercise simplemma's fallbacks (case, apostrophes,
    # hyphens, accents) all get the lemma simplemma.lemmatize gives them.
    words = set(TRICKY)
    for page in sorted((Path(__file__).parents[3] / "docs").glob("*.md")):
        words.update(page.read_text(encoding="utf-8").split())
    words = {word.strip(".,;:()[]`*\"'") for word in words} - {""}
    lemmatizer = lemmas.lemmatizer()
    assert len(words) > 3000
    assert [lemmatizer.lemmatize(w, "en") for w in sorted(words)] == [
        simplemma.lemmatize(w, lang="en") for w in sorted(words)
    ]


def test_the_first_read_writes_the_table_and_later_ones_read_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _read("en")
    (written,) = cache.iterdir()
    assert written.name == f"lemmas-simplemma-{simplemma.__version__}-en.bin"
    assert table.get("taught") == "teach"

    # Read back from the file: simplemma's own dictionary is not decoded again.
    def refuse(self: object, lang: str) -> object:
        raise AssertionError("decoded the dictionary again")

    monkeypatch.setattr(DefaultDictionaryFactory, "_get_dictionary_uncached", refuse)
    assert _read("en").get("taught") == "teach"


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated (a write cut short by a crash)
        lambda data: data[:-7] + b"\x01" + data[-6:],  # one byte changed
        lambda data: b"something else entirely",
        lambda data: b"",
    ],
)
def test_a_damaged_table_is_built_again(cache: Path, damage: object) -> None:
    _read("en")
    (path,) = cache.iterdir()
    good = path.read_bytes()
    path.write_bytes(damage(good))  # type: ignore[operator]
    assert _read("en").get("children") == "child"
    assert path.read_bytes() == good


def test_a_table_that_cannot_be_written_is_used_from_memory(cache: Path) -> None:
    cache.write_text("a file where the folder should be")
    assert _read("en").get("went") == "go"
    assert cache.read_text() == "a file where the folder should be"


def test_a_hostile_table_with_a_valid_checksum_cannot_loop_or_crash() -> None:
    # Every slot full and pointing past the pairs: a lookup reads each slot once, then misses.
    import xxhash

    body = (b"\xff\xff\xff\x7f" * 8) + b"a\0b\0"
    header = lemmas._HEADER.pack(xxhash.xxh3_64_intdigest(body), 8, 1, 4)
    table = LemmaTable(lemmas._MAGIC + header + body)
    assert table.get("a") is None
    assert table.get("zzz") is None
    with pytest.raises(ValueError, match="wrong size"):
        LemmaTable(lemmas._MAGIC + lemmas._HEADER.pack(0, 0, 0, 0))


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lemmas.CACHE_FOLDER_VARIABLE, "/somewhere/ctx")
    assert cache_folder() == Path("/somewhere/ctx")
    monkeypatch.delenv(lemmas.CACHE_FOLDER_VARIABLE)
    monkeypatch.setenv("XDG_CACHE_HOME", "/xdg")
    assert cache_folder() == Path("/xdg/ctxasm")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_folder() == Path.home() / ".cache" / "ctxasm"


def test_a_process_that_compresses_writes_the_table_for_the_next(tmp_path: Path) -> None:
    script = (
        "import ctxasm\n"
        "text = 'The river rises in the hills. It was taught to children. ' * 40\n"
        "result = ctxasm.assemble('what was taught', [{'id': 'a', 'text': text}],"
        " model='gpt-4o', max_context_tokens=60)\n"
        "print(result.report.included[0].compression is not None)\n"
    )
    env = {**os.environ, lemmas.CACHE_FOLDER_VARIABLE: str(tmp_path)}
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == "True"
        assert [p.name for p in tmp_path.iterdir()] == [
            f"lemmas-simplemma-{simplemma.__version__}-en.bin"
        ]


def test_a_dictionary_the_table_cannot_hold_is_used_as_simplemma_gives_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = {"taught": "teach", "nul\0word": "x"}
    monkeypatch.setattr(DefaultDictionaryFactory, "get_dictionary", lambda self, lang: odd)
    assert _read("en") is odd
    assert not cache.exists()


def test_a_fifo_or_a_device_at_the_tables_path_is_built_over(cache: Path) -> None:
    # A FIFO blocked the reader; a link to /dev/zero filled its memory.
    name = f"lemmas-simplemma-{simplemma.__version__}-en.bin"
    cache.mkdir()
    os.mkfifo(cache / name)
    assert _read("en").get("children") == "child"
    assert (cache / name).is_file()
    (cache / name).unlink()
    (cache / name).symlink_to("/dev/zero")
    assert _read("en").get("went") == "go"
    assert (cache / name).is_file() and not (cache / name).is_symlink()


def test_a_table_left_half_written_by_a_killed_process_is_removed(cache: Path) -> None:
    cache.mkdir()
    old, fresh = cache / ".lemmas-killed", cache / ".lemmas-writing"
    old.write_bytes(b"half a table")
    fresh.write_bytes(b"being written")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    _read("en")
    assert not old.exists() and fresh.exists()
