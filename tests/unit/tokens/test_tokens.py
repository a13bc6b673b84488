"""Tokenizers: exact tiktoken counts, the count cache, estimates, HF files, offline rank files."""

from __future__ import annotations

import math
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.registry
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxasm
from ctxasm import TokenizerError
from ctxasm.tokens import TokenCounter, get_counter, make_tokenizer, tiktoken_source
from ctxasm.tokens.base import _shared_prefix
from ctxasm.tokens.estimate import EstimateTokenizer
from ctxasm.tokens.hf import HuggingFaceTokenizer

SAMPLE = (
    "Tokenizers split text into pieces: 'Hello, world!' — naïve café, 東京, emoji 🎉🎉, "
    "code `x = f(y) ** 2`, <|endoftext|> as plain text, and\n\nnewlines\ttabs."
)
O200K_CACHE_NAME = "fb374d419588a4632f3f557e76b4b70aebbca790"  # sha1 of its official address
O200K_FILE = tiktoken_source.BUNDLED_RANKS / "o200k_base.tiktoken"  # shipped with ctxasm
# Counted with tiktoken as loaded normally, before any test swaps the rank files.
_O200K_SAMPLE_COUNT = len(tiktoken.get_encoding("o200k_base").encode_ordinary(SAMPLE))


# --- tiktoken -----------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("text", [SAMPLE, "a", "   ", "word " * 300, "x" * 1000])
def test_tiktoken_counts_equal_tiktoken(encoding: str, text: str) -> None:
    expected = len(tiktoken.get_encoding(encoding).encode(text, disallowed_special=()))
    assert get_counter(f"tiktoken:{encoding}").count(text) == expected


def test_special_token_text_is_counted_as_plain_text() -> None:
    text = "<|endoftext|>"
    expected = len(tiktoken.get_encoding("o200k_base").encode_ordinary(text))
    assert expected > 1
    assert get_counter("tiktoken:o200k_base").count(text) == expected


def test_empty_text_is_zero_tokens() -> None:
    assert get_counter("tiktoken:o200k_base").count("") == 0


def test_tokenizer_metadata() -> None:
    counter = get_counter("tiktoken:cl100k_base")
    assert (counter.name, counter.exact) == ("tiktoken:cl100k_base", True)
    assert get_counter("tiktoken:cl100k_base") is counter


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize(
    "text",
    [SAMPLE, " " * 1000, "=" * 5000, "a" * 3000, "\n" * 700, "a b c d e f", "x  y   z    w"],
)
def test_lower_bound_never_exceeds_the_count(encoding: str, text: str) -> None:
    # The tokenizer itself: the counter refuses runs over 1,000 characters (test_unbroken_text)
    counter = get_counter(f"tiktoken:{encoding}")
    assert 0 <= counter.lower_bound(text) <= counter.tokenizer.count(text)


# Whitespace that tiktoken merges with a following space into one piece: a bound that counts
# every space after a non-space would exceed the real count here.
_SPACEY = ["\n \n" * 20, " \t" * 30, "\u3000 " * 20, "\xa0 " * 20]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_lower_bound_with_unusual_whitespace(encoding: str) -> None:
    counter = get_counter(f"tiktoken:{encoding}")
    assert [counter.lower_bound(t) <= counter.count(t) for t in _SPACEY] == [True] * len(_SPACEY)


def test_passage_of_unusual_whitespace_that_fits_is_selected() -> None:
    # A bound above the real count would turn away a passage that fits.
    text = "Note:" + "\xa0 " * 200 + "end"  # 200 spaces, far fewer tokens
    tokens = get_counter("tiktoken:o200k_base").count(text)
    assert text.count(" ") > tokens + 40  # counting every space would refuse it
    result = ctxasm.assemble(
        "q", [{"id": "a", "text": text, "score": 1.0}], max_context_tokens=tokens + 40
    )
    assert [item.id for item in result.report.included] == ["a"]


_PIECES = [" ", "  ", "a", "Word", "12345", ".", ",", "'s", "`", "é", "東京", "/", "\u200b"]
_WHITESPACE = ["\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u1680", "\u2003"]
_WHITESPACE += ["\u2028", "\u202f", "\u3000"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES + _WHITESPACE), max_size=60).map("".join),
    st.sampled_from(["o200k_base", "cl100k_base"]),
)
def test_lower_bound_property(text: str, encoding: str) -> None:
    counter = get_counter(f"tiktoken:{encoding}")
    assert counter.lower_bound(text) <= counter.count(text)


# --- the count cache ---------------------------------------------------------------------------


class _CountingTokenizer:
    name = "fake:words"
    exact = True
    max_token_chars = None

    def __init__(self) -> None:
        self.calls: list[str] = []

    def count(self, text: str) -> int:
        self.calls.append(text)
        return len(text.split())


def test_cache_hit_returns_the_same_count_without_tokenizing() -> None:
    fake = _CountingTokenizer()
    counter = TokenCounter(fake)
    assert counter.count("one two three") == 3
    assert counter.count("one two three") == 3
    assert counter.count("four five") == 2
    assert fake.calls == ["one two three", "four five"]
    assert len(counter) == 2
    counter.clear()
    assert counter.count("one two three") == 3
    assert fake.calls == ["one two three", "four five", "one two three"]


def test_cache_is_keyed_by_content_not_by_object() -> None:
    fake = _CountingTokenizer()
    counter = TokenCounter(fake)
    first = "".join(["shared ", "text"])
    second = "".join(["shared", " text"])
    assert first is not second
    assert counter.count(first) == counter.count(second) == 2
    assert fake.calls == ["shared text"]


def test_cache_evicts_the_oldest_half_when_full() -> None:
    fake = _CountingTokenizer()
    counter = TokenCounter(fake, max_entries=4)
    for word in ("a", "b", "c", "d", "e"):
        counter.count(word)
    assert len(counter) == 3
    counter.count("d")
    counter.count("a")
    assert fake.calls == ["a", "b", "c", "d", "e", "a"]


class _BoundingTokenizer(_CountingTokenizer):
    """Counts words; its lower bound is the number of spaces, and it records each request."""

    def __init__(self) -> None:
        super().__init__()
        self.bounded: list[str] = []

    def lower_bound(self, text: str) -> int:
        self.bounded.append(text)
        return text.count(" ")


def test_lower_bounds_are_cached_by_content_and_bounded() -> None:
    fake = _BoundingTokenizer()
    counter = TokenCounter(fake, max_entries=2)
    assert counter.lower_bound("one two three") == 2
    assert counter.lower_bound("".join(["one two", " three"])) == 2  # same content: cached
    assert counter.lower_bound("") == 0
    assert fake.bounded == ["one two three"]
    counter.lower_bound("a b")
    counter.lower_bound("c d")  # a third text: the full cache starts over
    counter.lower_bound("one two three")
    assert fake.bounded == ["one two three", "a b", "c d", "one two three"]
    counter.clear()
    counter.lower_bound("a b")
    assert fake.bounded[-1] == "a b" and len(fake.bounded) == 5


def test_real_counter_caches() -> None:
    counter = get_counter("tiktoken:o200k_base")
    text = SAMPLE + " cache probe"
    before = len(counter)
    first = counter.count(text)
    assert len(counter) == before + 1
    assert counter.count(text) == first
    assert len(counter) == before + 1


# --- estimates ---------------------------------------------------------------------------------


def test_estimate_tokenizer_scales_and_rounds_up() -> None:
    tokenizer = make_tokenizer("estimate:o200k_base*1.2")
    assert isinstance(tokenizer, EstimateTokenizer)
    assert (tokenizer.name, tokenizer.exact) == ("estimate:o200k_base*1.2", False)
    proxy = len(tiktoken.get_encoding("o200k_base").encode_ordinary(SAMPLE))
    assert tokenizer.count(SAMPLE) == math.ceil(proxy * 1.2)


def test_estimate_for_a_claude_model_reports_exact_count_false() -> None:
    result = ctxasm.assemble(
        "q", [{"id": "a", "text": "A fact.", "score": 1.0}], model="claude-sonnet-4-5"
    )
    assert result.report.exact_count is False
    assert result.report.tokenizer == "estimate:o200k_base*1.2"
    assert result.report.model == "claude-sonnet-4-5"


def test_exact_model_reports_exact_count_true() -> None:
    result = ctxasm.assemble("q", [{"id": "a", "text": "A fact.", "score": 1.0}], model="gpt-4")
    assert (result.report.exact_count, result.report.tokenizer) == (True, "tiktoken:cl100k_base")


@pytest.mark.parametrize(
    "spec",
    [
        "foo",
        "tiktoken:",
        "tiktoken:p50k_base",
        "hf:",
        "pinned:",
        "pinned:gemma",
        "sentencepiece:",
        "tekken:",
        "estimate:o200k_base*x",
        "estimate:o200k_base*0",
        "estimate:o200k_base*-1",
        "estimate:o200k_base*inf",
        "estimate:gpt2*1.1",
    ],
)
def test_invalid_tokenizer_specs(spec: str) -> None:
    with pytest.raises(TokenizerError):
        make_tokenizer(spec)


# --- Hugging Face tokenizer.json ---------------------------------------------------------------


@pytest.fixture
def tiny_tokenizer(tmp_path: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[UNK]", "the", "amazon", "river", "is", "long", "question", "q", "system", "user"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    return path


def _hf_count(path: Path, text: str) -> int:
    from tokenizers import Tokenizer

    return len(Tokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids)


def test_hf_tokenizer_counts(tiny_tokenizer: Path) -> None:
    tokenizer = HuggingFaceTokenizer(tiny_tokenizer)
    assert tokenizer.count("the amazon river is long") == 5
    assert tokenizer.count("the Amazon, river!!") == 5  # Amazon -> [UNK], "," and "!!"
    assert (tokenizer.name, tokenizer.exact) == (f"hf:{tiny_tokenizer}", True)


def test_model_with_hf_tokenizer_from_config(tiny_tokenizer: Path) -> None:
    spec = f"hf:{tiny_tokenizer}"
    assembler = ctxasm.Assembler(
        {"models": {"tiny": {"context_window": 512, "max_output": 64, "tokenizer": spec}}}
    )
    result = assembler.assemble(
        query="the amazon river",
        passages=[{"id": "a", "text": "the amazon river is long", "score": 1.0}],
        model="tiny",
    )
    report = result.report
    assert (report.model, report.tokenizer, report.exact_count) == ("tiny", spec, True)
    assert report.budget.context_window == 512
    assert report.budget.reserve_output == 64
    # the passage's share: the heading and its header line, then its fence and its text
    opening, body = "Sources:\n\n[Source 1] (id: a)\n", "```\nthe amazon river is long\n"
    share = _hf_count(tiny_tokenizer, opening) + _hf_count(tiny_tokenizer, body)
    assert [(i.id, i.tokens) for i in report.included] == [("a", share)]
    recount = (
        sum(
            3 + _hf_count(tiny_tokenizer, m["role"]) + _hf_count(tiny_tokenizer, m["content"])
            for m in result.messages
        )
        + 3
    )
    assert report.total_tokens == recount
    assert report.total_tokens <= 512 - 64
    assert report.cost_usd is None


def test_hf_tokenizer_missing_file(tmp_path: Path) -> None:
    tokenizer = HuggingFaceTokenizer(tmp_path / "absent.json")
    with pytest.raises(TokenizerError) as caught:
        tokenizer.count("x")
    assert "does not exist" in caught.value.message


def test_hf_tokenizer_under_the_home_folder_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The config check expanded "~" and the tokenizer did not: every count said "does not
    # exist" (review M).
    from tokenizers import Tokenizer, models, pre_tokenizers

    monkeypatch.setenv("HOME", str(tmp_path))
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tokenizer = Tokenizer(models.BPE({c: i for i, c in enumerate(alphabet)}, []))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    assert make_tokenizer("hf:~/tokenizer.json").count("hello") == 5


def test_an_empty_sentencepiece_file_is_refused_when_it_loads(tmp_path: Path) -> None:
    # It loaded, and every count then failed as if the text were at fault (review M).
    pytest.importorskip("sentencepiece")
    path = tmp_path / "tokenizer.model"
    path.write_bytes(b"")
    with pytest.raises(TokenizerError) as caught:
        make_tokenizer(f"sentencepiece:{path}").count("hello")
    assert caught.value.message.startswith(f"{path} is not a valid SentencePiece model")


def test_hf_tokenizer_invalid_file(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text("{not json")
    with pytest.raises(TokenizerError) as caught:
        HuggingFaceTokenizer(path).count("x")
    assert "is not a valid tokenizer.json" in caught.value.message


NO_UNKNOWN = (
    "its BPE model has no unknown token, no byte fallback and no byte-level pre-tokenizer or "
    "normalizer, so it counts every character outside its vocabulary as no token at all"
)


BYTE_GAP = "its byte-level vocabulary has no token for 1 of the 256 bytes ('{}' first)"


def test_hf_byte_level_normalizer_is_enough(tmp_path: Path) -> None:
    # A byte-level BPE whose ByteLevel step is the normalizer was refused (review O).
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tokenizer = Tokenizer(models.BPE({c: i for i, c in enumerate(alphabet)}, []))
    tokenizer.normalizer = normalizers.ByteLevel()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    assert HuggingFaceTokenizer(tmp_path / "tokenizer.json").count("ไทย") == 9


def _byte_alphabet(missing: str) -> list[str]:
    from tokenizers import pre_tokenizers

    return sorted(set(pre_tokenizers.ByteLevel.alphabet()) - set(missing))


@pytest.mark.parametrize(
    ("kind", "words", "message"),
    [
        ("bpe", [], NO_UNKNOWN),
        ("bpe", ["a", "Z", "7", ".", "é", "ж", "中"], NO_UNKNOWN),
        # its vocabulary has "hello" but not "b": 'bbbb cccc' counted 0 (review M)
        ("bpe", ["h", "e", "l", "o", "a", "Z", "7", ".", "é", "ж", "中", "🙂"], NO_UNKNOWN),
        ("word", ["a"], "it fails on '!': WordLevel error: Missing [UNK] token"),
        # byte-level, but its vocabulary lacks a byte: "q", or one in no probe (review P)
        ("bytes", _byte_alphabet("q"), BYTE_GAP.format("q")),
        ("bytes", _byte_alphabet("·"), BYTE_GAP.format("·")),
    ],
    ids=[
        "empty",
        "no-unknown-token",
        "vocabulary-of-probes",
        "unknown-token-not-in-vocabulary",
        "a-byte-missing",
        "a-byte-no-probe-holds",
    ],
)
def test_hf_tokenizer_that_counts_text_as_nothing_is_refused(
    tmp_path: Path, kind: str, words: list[str], message: str
) -> None:
    # An empty BPE vocabulary counted every text as 0 tokens, and the report still said
    # exact_count: the budget was unlimited. Without an unknown token, what the vocabulary
    # lacks was dropped from the count, or the count failed with a bare Exception.
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(words)}
    word = kind == "word"
    model = models.WordLevel(vocab, unk_token="[UNK]") if word else models.BPE(vocab, [])
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = (
        pre_tokenizers.ByteLevel(add_prefix_space=False)
        if kind == "bytes"
        else pre_tokenizers.Whitespace()
    )
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    with pytest.raises(TokenizerError) as caught:
        HuggingFaceTokenizer(path).count("hello")
    assert caught.value.message.startswith(f"{path} cannot be used: {message}")


@pytest.mark.parametrize("size", [0, 4, 255])
def test_tekken_file_without_a_token_for_every_byte_is_refused(tmp_path: Path, size: int) -> None:
    # tiktoken's encoder panicked on a byte with no token (a Rust backtrace on stderr), and an
    # empty vocabulary failed in max()
    import base64
    import json

    vocab = [
        {"rank": rank, "token_bytes": base64.b64encode(bytes((255 - rank,))).decode()}
        for rank in range(size)
    ]
    config = {"default_vocab_size": size, "default_num_special_tokens": 0, "pattern": r"\s+|\S+"}
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps({"config": config, "vocab": vocab}), encoding="utf-8")
    with pytest.raises(TokenizerError) as caught:
        make_tokenizer(f"tekken:{path}").count("abc")
    assert caught.value.message == (
        f"{path} cannot be used: {256 - size} of the 256 bytes have no token of their own (the "
        "first: 0x00); a byte-level vocabulary needs all of them to count every text"
    )


def _tekken(path: Path, pattern: str) -> Path:
    import base64
    import json

    vocab = [{"rank": r, "token_bytes": base64.b64encode(bytes((r,))).decode()} for r in range(256)]
    config = {"default_vocab_size": 256, "default_num_special_tokens": 0, "pattern": pattern}
    path.write_text(json.dumps({"config": config, "vocab": vocab}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "body",
    [
        '{"config": {"default_vocab_size": Infinity, "default_num_special_tokens": 0}}',
        '{"config": ' + "[" * 50_000 + "]" * 50_000 + "}",
    ],
)
def test_a_tekken_file_with_infinity_or_deep_nesting_is_named_as_no_tekken_file(
    tmp_path: Path, body: str
) -> None:
    # OverflowError and RecursionError escaped the reader, and the load was reported as a
    # failure on "a text of 3 characters".
    path = tmp_path / "tekken.json"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(TokenizerError) as caught:
        make_tokenizer(f"tekken:{path}").count("abc")
    assert caught.value.message.startswith(f"{path} is not a tekken.json file")


@pytest.mark.parametrize(
    ("pattern", "skipped"),
    [
        (r"[a-z]+", "'!'"),
        (r"[^\d]+", "'0'"),
        (r"\w+|\s+", "'!'"),
        (r"[^\p{Thai}]", "'ไ'"),  # every other character its own piece (review M)
        (r"[^\U0001F600-\U0001F64F]+", "'🙂'"),
    ],
)
def test_tekken_pattern_that_skips_characters_is_refused(
    tmp_path: Path, pattern: str, skipped: str
) -> None:
    # tiktoken drops what the pattern leaves unmatched: "12345 67890" counted as 0 tokens
    path = _tekken(tmp_path / "tekken.json", pattern)
    with pytest.raises(TokenizerError) as caught:
        make_tokenizer(f"tekken:{path}").count("abc")
    assert caught.value.message == (
        f"{path} cannot be used: its pre-tokenizer pattern skips {skipped}, which is then "
        "counted as no token at all, so its counts would be too low for any budget"
    )


def test_tekken_pattern_that_covers_every_character_counts_every_byte(tmp_path: Path) -> None:
    path = _tekken(tmp_path / "tekken.json", r"\s+|\S+")
    assert make_tokenizer(f"tekken:{path}").count("12345 中文") == len("12345 中文".encode())


@pytest.mark.parametrize("setting", ["truncation", "padding"])
def test_hf_tokenizer_ignores_a_pipelines_truncation_and_padding(
    tmp_path: Path, setting: str
) -> None:
    # A tokenizer.json saved from a pipeline with truncation (max_length 16) counted every text
    # as at most 16 tokens while the report said exact_count: the request overflowed.
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "river": 1}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    if setting == "truncation":
        tokenizer.enable_truncation(max_length=16)
    else:
        tokenizer.enable_padding(length=256)
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    assert HuggingFaceTokenizer(path).count("river " * 100) == 100
    assert HuggingFaceTokenizer(path).count("river") == 1


# --- offline rank files (fixtures fresh_encodings and no_network: tests/conftest.py) ---------


@pytest.mark.usefixtures("fresh_encodings")
def test_offline_rank_file_from_ctxasm_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[Any]
) -> None:
    shutil.copyfile(O200K_FILE, tmp_path / "o200k_base.tiktoken")
    monkeypatch.setenv("CTXASM_TIKTOKEN_DIR", str(tmp_path))
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    assert tiktoken_source.find_rank_file("o200k_base") == tmp_path / "o200k_base.tiktoken"
    encoding = tiktoken_source.load_encoding("o200k_base")
    assert encoding.name == "o200k_base"
    assert "TIKTOKEN_CACHE_DIR" not in os.environ  # the temporary setting was undone
    assert tiktoken_source.load_encoding("o200k_base") is encoding  # memoized
    assert no_network == []
    assert len(encoding.encode_ordinary(SAMPLE)) == _O200K_SAMPLE_COUNT
    assert tiktoken_source.TiktokenTokenizer("o200k_base").count(SAMPLE) == _O200K_SAMPLE_COUNT


@pytest.mark.usefixtures("fresh_encodings")
def test_offline_rank_file_from_tiktoken_cache_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[Any]
) -> None:
    shutil.copyfile(O200K_FILE, tmp_path / O200K_CACHE_NAME)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CTXASM_TIKTOKEN_DIR", raising=False)
    encoding = tiktoken_source.load_encoding("o200k_base")
    assert len(encoding.encode_ordinary(SAMPLE)) == _O200K_SAMPLE_COUNT
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path)
    assert no_network == []


@pytest.mark.usefixtures("fresh_encodings", "no_network")
@pytest.mark.parametrize("where", ["ctxasm_dir", "tiktoken_cache"])
def test_corrupted_rank_file_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    data = bytearray(O200K_FILE.read_bytes())
    data[100] ^= 1
    if where == "ctxasm_dir":
        (tmp_path / "o200k_base.tiktoken").write_bytes(bytes(data))
        monkeypatch.setenv("CTXASM_TIKTOKEN_DIR", str(tmp_path))
        monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    else:
        (tmp_path / O200K_CACHE_NAME).write_bytes(bytes(data))
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with pytest.raises(TokenizerError) as caught:
        tiktoken_source.load_encoding("o200k_base")
    message = caught.value.message
    assert "SHA-256" in message
    assert "is not the official o200k_base rank file" in message
    assert tiktoken_source.OFFICIAL_RANKS["o200k_base"].sha256 in message
    assert "o200k_base" not in tiktoken_source._LOADED


@pytest.mark.usefixtures("fresh_encodings")
def test_no_rank_file_and_no_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[Any]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
    monkeypatch.delenv("CTXASM_TIKTOKEN_DIR", raising=False)
    monkeypatch.setattr(tiktoken_source, "BUNDLED_RANKS", empty)  # an install that lost them
    with pytest.raises(TokenizerError) as caught:
        tiktoken_source.load_encoding("cl100k_base")
    assert "no local rank file and the download failed" in caught.value.message
    assert "CTXASM_TIKTOKEN_DIR" in caught.value.message


def test_unknown_encoding() -> None:
    with pytest.raises(TokenizerError) as caught:
        tiktoken_source.load_encoding("p50k_base")
    assert "cl100k_base, o200k_base" in caught.value.message


def test_the_shared_prefix_of_two_texts_is_the_longest_by_definition() -> None:
    rng = random.Random(2)
    for _ in range(3_000):
        first = "".join(rng.choice("ab") for _ in range(rng.randrange(0, 400)))
        cut = rng.randrange(0, len(first) + 1)
        second = first[:cut] + "".join(rng.choice("ab") for _ in range(rng.randrange(0, 300)))
        expected = next(
            (i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b),
            min(len(first), len(second)),
        )
        assert _shared_prefix(first, second) == expected
        assert _shared_prefix(second, first) == _shared_prefix(first, second)
