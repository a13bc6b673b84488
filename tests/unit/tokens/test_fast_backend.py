"""The fastokens backend counts exactly what tiktoken counts, and is chosen as documented.

fastokens counts o200k_base, cl100k_base and the pinned Qwen and Tekken files when it is the
BPE backend. Its counts are compared with tiktoken's (the reference) on 10,000+ generated hard
texts per encoding, on a probe of code points in letter, digit, space and contraction
contexts (every code point of planes 0 and 1 and of U+E0000 to U+E0FFF, every 16th of planes
2, 3, 15 and 16: the newest blocks included), on texts long enough for fastokens to split
them across threads, and on a sequence of texts sharing long prefixes (where fastokens may
reuse work between calls). A text fastokens refuses (a lone surrogate) or fails on is counted
by tiktoken.
"""

from __future__ import annotations

import base64
import random
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from open_weight_corpus import corpus

from ctxasm.errors import TokenizerError, UntokenizableError
from ctxasm.tokens import (
    BpeTokenizer,
    TiktokenTokenizer,
    TokenCounter,
    bpe_backend,
    fastokens_source,
    get_counter,
    make_tokenizer,
    pinned,
    set_bpe_backend,
    tiktoken_source,
)
from ctxasm.tokens.fastokens_source import (
    BPE_BACKEND_VARIABLE,
    FastBpe,
    FastBpeSource,
    fast_bpe,
)
from ctxasm.tokens.runs import MAX_RUN_CHARS

needs_fastokens = pytest.mark.skipif(
    find_spec("fastokens") is None,
    reason="fastokens is not installed (the fast extra): its counts are not checked",
)
ENGINES = ["tiktoken:o200k_base", "tiktoken:cl100k_base", "pinned:qwen2.5", "pinned:mistral-tekken"]

Count = Callable[[str], int | None]


@pytest.fixture(autouse=True)
def _backend_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with the variable unset and no forced backend, and leaves it so."""
    monkeypatch.delenv(BPE_BACKEND_VARIABLE, raising=False)
    set_bpe_backend(None)
    yield
    set_bpe_backend(None)


@pytest.fixture
def fresh_fast_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget every fastokens encoding (and failure) for one test; they come back after."""
    monkeypatch.setattr(fastokens_source, "_LOADED", {})
    monkeypatch.setattr(fastokens_source, "_FAILED", {})


def _engines(spec: str) -> tuple[Count, Callable[[str], int]]:
    """fastokens' count (``None`` where it refuses a text) and tiktoken's, for one encoding."""
    set_bpe_backend("fastokens")
    tokenizer = make_tokenizer(spec)
    if isinstance(tokenizer, TiktokenTokenizer):
        fast = fast_bpe(tokenizer.name, tokenizer._fast_source)
        reference = tiktoken_source.load_encoding(tokenizer.encoding)
    else:
        assert isinstance(tokenizer, BpeTokenizer)
        try:
            reference = tokenizer._load().encoding
        except TokenizerError as exc:
            pytest.skip(f"{spec} is not installed here: {exc.message}")
        fast = tokenizer._fast()
    assert fast is not None
    return fast.count, lambda text: len(reference.encode_ordinary(text))


# --- texts ---------------------------------------------------------------------------------

_OPENAI_SPECIALS = (
    "<|endoftext|>",
    "<|endofprompt|>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|im_start|>",
    "<|im_end|>",
)
# Letters, marks, digits and symbols from Unicode 13 to 16 blocks (Yezidi, Khitan, Vithkuqi,
# Toto, Kawi, Nag Mundari, CJK extension H, Garay, Todhri, Sunuwar, emoji 15/16...), next to
# older scripts whose case and mark classes the o200k and Tekken patterns split on.
_ALPHABET = [
    *"abcXYZ019 '\t\n\r.,;:!?/-_()[]{}<>\"`~@#$%^&*+=|\\",
    *"ÀéîõüßÆøłŁǅǈǋΣσςЖжӁ",
    *"中文日本語한국어カタカナ",
    *[chr(c) for c in range(0x10E80, 0x10EAA)],  # Yezidi
    *[chr(c) for c in range(0x18B00, 0x18B20)],  # Khitan small script
    *[chr(c) for c in range(0x10570, 0x10590)],  # Vithkuqi (cased)
    *[chr(c) for c in range(0x1E290, 0x1E2AF)],  # Toto
    *[chr(c) for c in range(0x11F00, 0x11F5A)],  # Kawi (letters, marks, digits)
    *[chr(c) for c in range(0x1E4D0, 0x1E4FA)],  # Nag Mundari
    *[chr(c) for c in range(0x31350, 0x31360)],  # CJK extension H
    *[chr(c) for c in range(0x10D40, 0x10D8F)],  # Garay (cased, digits)
    *[chr(c) for c in range(0x105C0, 0x105F4)],  # Todhri
    *[chr(c) for c in range(0x11BC0, 0x11BE2)],  # Sunuwar
    *[chr(c) for c in range(0x1FA70, 0x1FA8A)],  # emoji 13-16
    *"\u0301\u0308\u200d\ufe0f\u00a0\u3000\u2009\u0663\u096b",
]


def _extra_texts(seed: int = 7) -> list[str]:
    """Hard cases the shared corpus leaves out: runs up to the MAX_RUN_CHARS characters that
    ``TokenCounter.check`` allows, special tokens glued to text, contractions after every
    case, the newest Unicode blocks, and random soup over all of them."""
    rng = random.Random(seed)
    texts: list[str] = []
    longest = MAX_RUN_CHARS
    for length in (1, 2, 3, 4, 7, 31, 127, 500, 999, 1000, 4000, longest - 1, longest):
        for unit in (" ", "\n", "\t", "\r\n", " \n", "\u3000", "\u00a0", "7", "x", "中", ".", "é"):
            run = (unit * length)[:longest]
            texts += [run, f"a{run}b", f"{run}x ", f"1 {run}\n."]
    for special in _OPENAI_SPECIALS:
        texts += [special, f"a{special}b", f" {special} ", special * 3, f"{special}\n{special}"]
    for word in ("it", "IT", "It", "iT", "中", "é", "1"):
        texts += [f"{word}{c}" for c in ("'s", "'S", "'ll", "'LL", "'re", "'ve", "'m", "'d", "'t")]
    for _ in range(1500):
        texts.append("".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 60))))
    for _ in range(200):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
        texts.append(f"{digits}{rng.choice(['', ' ', ',', '.', 'x'])}{digits[::-1]}")
    return texts


def _surrogate_texts(count: int = 200, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        lone = chr(rng.randrange(0xD800, 0xE000))
        head = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 20)))
        texts.append(f"{head}{lone}{head[::-1]}")
    return texts


def _probe() -> list[str]:
    """Every code point of planes 0 and 1 and of U+E0000 to U+E0FFF, every 16th of planes 2,
    3, 15 and 16 (no surrogates), 64 to a text, in letter, digit, space and contraction
    contexts."""
    points = [c for c in range(0x20000) if not 0xD800 <= c < 0xE000]
    points += [c for c in range(0x20000, 0x40000, 16)]
    points += list(range(0xE0000, 0xE1000))
    points += list(range(0xF0000, 0x110000, 16))
    return [
        "".join(f"a{c}b {c}{c} 1{c}2 '{c}s {c}'S A{c}\n" for c in map(chr, points[i : i + 64]))
        for i in range(0, len(points), 64)
    ]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    generated = corpus() + _extra_texts()
    assert len(generated) >= 10_000
    return generated


def _long_texts(texts: list[str]) -> list[str]:
    """Texts over fastokens' 64 KiB threshold for splitting one text across threads, with
    long pieces (runs of 700 spaces, 900 letters) at many offsets."""
    joined = "\n".join(texts)
    runs = ("prose " * 40 + " " * 700 + "x" * 900 + "!?" * 200 + "\n") * 60
    return [joined[:70_000], joined[5_000:155_000], runs, runs[333:] + joined[:20_000]]


def _mismatches(texts: list[str], ours: Count, reference: Count) -> list[Any]:
    found = []
    for text in texts:
        mine, theirs = ours(text), reference(text)
        if mine != theirs:
            found.append((text[:80], mine, theirs))
    return found[:5]


# --- parity --------------------------------------------------------------------------------


@needs_fastokens
@pytest.mark.parametrize("spec", ENGINES)
def test_fastokens_counts_the_generated_texts_as_tiktoken_does(spec: str, texts: list[str]) -> None:
    fast, reference = _engines(spec)
    assert _mismatches(texts + _long_texts(texts), fast, reference) == []


@needs_fastokens
@pytest.mark.parametrize("spec", ENGINES)
def test_fastokens_counts_every_code_point_as_tiktoken_does(spec: str) -> None:
    fast, reference = _engines(spec)
    probe = _probe()
    assert len(probe) > 2_000
    bad = [text for text in probe if fast(text) != reference(text)]
    points = sorted({hex(ord(c)) for text in bad for c in set(text) - set("ab12'sSA \n")})
    assert bad == [], f"{len(bad)} texts differ; code points among {points[:20]}"


@needs_fastokens
@pytest.mark.parametrize("spec", ENGINES)
def test_counts_do_not_depend_on_the_text_counted_before(spec: str) -> None:
    """Some fastokens paths reuse work from the previous text on the same thread when the two
    share a long prefix (a version before 0.3.5 got ids wrong that way); texts that part
    inside a long whitespace run or right after a piece must still count as tiktoken counts
    them, whatever came before."""
    fast, reference = _engines(spec)
    rng = random.Random(3)
    prose = " ".join(rng.choice(("alpha", "Beta", "gamma,", "déjà", "42")) for _ in range(3000))
    base = prose[:6000] + " " * 700 + "x" * 900 + prose[6000:20000]
    sequence = [base]
    for i, cut in enumerate((4096, 6000, 6350, 6699, 6700, 6701, 7000, 7599, 7600, 15000)):
        sequence += [base[:cut] + ("Z", " tail", "\n\nmore", "  ", "\t")[i % 5], base, base + "!"]
    before = prose[:5000] + " " * 700 + "x" + prose[:2000]
    for ending in (" ", "\n", "\tx", "y", "  \n", "'s"):
        sequence += ["reset", prose[:5000] + " " * 700 + ending, before]
        sequence += [prose[:5000] + " " * 700 + ending]
    expected = [reference(text) for text in sequence]
    assert [fast(text) for text in sequence] == expected


@needs_fastokens
@pytest.mark.parametrize("spec", ENGINES)
def test_a_text_fastokens_refuses_is_counted_by_tiktoken(spec: str) -> None:
    fast, reference = _engines(spec)
    texts = _surrogate_texts()
    assert {fast(text) for text in texts} == {None}  # fastokens refuses lone surrogates
    tokenizer = make_tokenizer(spec)
    # tiktoken counts a lone surrogate as U+FFFD would be counted
    assert [tokenizer.count(text) for text in texts] == [reference(text) for text in texts]


@needs_fastokens
@pytest.mark.parametrize(
    "spec",
    [*ENGINES, "pinned:qwen3", "pinned:llama-3", "estimate:o200k_base*1.2"],
)
def test_every_backend_gives_the_same_counts_and_name(spec: str, texts: list[str]) -> None:
    """Through the whole tokenizer (Qwen's NFC and added tokens, an estimate's factor)."""
    sample = texts[::5] + _surrogate_texts(20)
    results = {}
    for backend in ("tiktoken", "fastokens"):
        set_bpe_backend(backend)
        tokenizer = make_tokenizer(spec)
        try:
            results[backend] = (tokenizer.name, [tokenizer.count(text) for text in sample])
        except TokenizerError as exc:
            pytest.skip(f"{spec} is not installed here: {exc.message}")
    assert results["fastokens"] == results["tiktoken"]
    assert results["fastokens"][0] == spec


@needs_fastokens
def test_qwen_families_share_one_fastokens_load_and_llama_3_stays_on_tiktoken() -> None:
    set_bpe_backend("fastokens")
    try:
        qwen3, qwen25 = make_tokenizer("pinned:qwen3"), make_tokenizer("pinned:qwen2.5")
        llama = make_tokenizer("pinned:llama-3")
        assert isinstance(qwen3, BpeTokenizer) and isinstance(qwen25, BpeTokenizer)
        assert isinstance(llama, BpeTokenizer)
        assert qwen3._fast() is qwen25._fast() is not None
    except TokenizerError as exc:
        pytest.skip(f"a pinned file is not installed here: {exc.message}")
    assert llama.encoding.fastokens_parity is False
    assert llama._fast() is None


@needs_fastokens
@pytest.mark.usefixtures("fresh_fast_state")
def test_fastokens_refuses_llama_3_ranks_which_is_why_they_stay_on_tiktoken() -> None:
    file = pinned.PINNED["llama-3"].file
    try:
        data = file.read()
    except TokenizerError as exc:
        pytest.skip(f"llama-3 is not installed here: {exc.message}")
    source = FastBpeSource(file.label, data, pattern=pinned.LLAMA3_PATTERN)
    assert fast_bpe("test:llama-3", lambda: source) is None  # auto: tiktoken counts
    assert "did not decompose into 2 pieces" in fastokens_source._FAILED["test:llama-3"]


@needs_fastokens
def test_concurrent_counts_from_several_threads_are_exact(texts: list[str]) -> None:
    set_bpe_backend("fastokens")
    tokenizer = TiktokenTokenizer("o200k_base")
    # long texts release the GIL inside fastokens, so threads really run at once
    work = texts[:3000] + _long_texts(texts)[:2] * 3
    expected = [len(tiktoken_source.load_encoding("o200k_base").encode_ordinary(t)) for t in work]
    for _ in range(3):
        with ThreadPoolExecutor(max_workers=4) as pool:
            slices = list(pool.map(lambda k: [tokenizer.count(t) for t in work[k::4]], range(4)))
        got = [0] * len(work)
        for k, counted in enumerate(slices):
            got[k::4] = counted
        assert got == expected


# --- loading -------------------------------------------------------------------------------

# A tiny tiktoken-format encoding fastokens loads in milliseconds: the 256 bytes, then "ab".
_TINY = FastBpeSource(
    "tiny.tiktoken",
    b"".join(b"%s %d\n" % (base64.b64encode(bytes([b])), b) for b in range(256)) + b"YWI= 256\n",
    pattern=r"\w+|\s+|[^\w\s]+",
)


@needs_fastokens
@pytest.mark.usefixtures("fresh_fast_state")
def test_an_encoding_loads_once_when_many_threads_ask_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    set_bpe_backend("fastokens")
    loads: list[str] = []
    real_load = fastokens_source._load

    def counted_load(key: str, source: Callable[[], FastBpeSource | None]) -> None:
        loads.append(key)
        real_load(key, source)

    monkeypatch.setattr(fastokens_source, "_load", counted_load)
    start = threading.Barrier(8)

    def ask(_: int) -> int | None:
        start.wait()
        found = fast_bpe("test:tiny", lambda: _TINY)
        return None if found is None else found.count("ab ab a")

    with ThreadPoolExecutor(max_workers=8) as pool:
        counts = list(pool.map(ask, range(8)))
    assert (loads, counts) == (["test:tiny"], [5] * 8)  # "ab", " ", "ab", " ", "a"


@needs_fastokens
@pytest.mark.usefixtures("fresh_fast_state")
def test_nothing_loads_until_the_first_count_and_tiktoken_loads_nothing_of_fastokens() -> None:
    set_bpe_backend("tiktoken")
    tokenizer = TiktokenTokenizer("cl100k_base")
    assert tokenizer.count("Hello world") == 2
    assert fastokens_source._LOADED == {}
    set_bpe_backend("fastokens")
    make_tokenizer("tiktoken:cl100k_base")
    assert fastokens_source._LOADED == {}
    assert tokenizer.count("Hello world") == 2
    assert isinstance(fastokens_source._LOADED["tiktoken:cl100k_base"], FastBpe)


@needs_fastokens
@pytest.mark.usefixtures("fresh_fast_state", "fresh_encodings")
def test_a_corrupted_rank_file_is_refused_by_the_fastokens_backend_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = bytearray((tiktoken_source.BUNDLED_RANKS / "cl100k_base.tiktoken").read_bytes())
    data[100] ^= 1
    (tmp_path / "cl100k_base.tiktoken").write_bytes(bytes(data))
    monkeypatch.setenv("CTXASM_TIKTOKEN_DIR", str(tmp_path))
    set_bpe_backend("fastokens")
    with pytest.raises(TokenizerError) as caught:
        TiktokenTokenizer("cl100k_base").count("Hello world")
    assert "is not the official cl100k_base rank file" in caught.value.message
    assert fastokens_source._LOADED == {}


_BROKEN = FastBpeSource("broken.tiktoken", b"not base64! 0\n", pattern=r"\w+")


@needs_fastokens
@pytest.mark.usefixtures("fresh_fast_state")
def test_ranks_fastokens_cannot_load_fall_back_to_tiktoken_under_auto_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert bpe_backend() == "fastokens"  # auto, with fastokens installed
    assert fast_bpe("test:broken", lambda: _BROKEN) is None
    monkeypatch.setenv(BPE_BACKEND_VARIABLE, "fastokens")
    set_bpe_backend(None)  # read the variable again
    with pytest.raises(TokenizerError) as caught:
        fast_bpe("test:broken", lambda: _BROKEN)
    message = caught.value.message
    assert message.startswith("fastokens cannot load broken.tiktoken (ValueError: ")
    assert message.endswith(
        "choose the auto or tiktoken backend (CTXASM_BPE_BACKEND or set_bpe_backend) to count "
        "it with tiktoken"
    )


# Stands in for an installed fastokens where a test never reaches its code.
_STAND_IN = ModuleType("fastokens")


class _Panic(BaseException):
    """What a Rust panic looks like from Python (pyo3's PanicException)."""


class _Failing:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def encode_ordinary(self, input: str) -> list[int]:
        raise self.error


def test_a_failure_inside_fastokens_leaves_the_count_to_tiktoken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fastokens_source, "_MODULE", [_STAND_IN])
    monkeypatch.setattr(
        fastokens_source, "_LOADED", {"tiktoken:o200k_base": FastBpe(_Failing(_Panic()))}
    )
    assert FastBpe(_Failing(_Panic())).count("x") is None
    assert FastBpe(_Failing(ValueError())).count("x") is None
    expected = len(tiktoken_source.load_encoding("o200k_base").encode_ordinary("Hello world"))
    assert TokenCounter(TiktokenTokenizer("o200k_base")).count("Hello world") == expected
    with pytest.raises(KeyboardInterrupt):
        FastBpe(_Failing(KeyboardInterrupt())).count("x")


def test_a_text_both_engines_fail_on_is_untokenizable(monkeypatch: pytest.MonkeyPatch) -> None:
    class Panicking:
        def encode_ordinary(self, text: str) -> list[int]:
            raise _Panic()

    monkeypatch.setattr(fastokens_source, "_MODULE", [_STAND_IN])
    monkeypatch.setattr(
        fastokens_source, "_LOADED", {"tiktoken:o200k_base": FastBpe(_Failing(_Panic()))}
    )
    monkeypatch.setattr(tiktoken_source, "load_encoding", lambda name: Panicking())
    with pytest.raises(UntokenizableError) as caught:
        TiktokenTokenizer("o200k_base").count("x" * 10)
    assert caught.value.message == (
        "a text of 10 characters could not be tokenized with o200k_base (_Panic)"
    )


# --- choosing the backend ------------------------------------------------------------------


def _installed(monkeypatch: pytest.MonkeyPatch, installed: bool) -> None:
    monkeypatch.setattr(fastokens_source, "_MODULE", [_STAND_IN if installed else None])


@pytest.mark.parametrize(
    ("value", "installed", "expected"),
    [
        (None, True, "fastokens"),
        (None, False, "tiktoken"),
        ("", True, "fastokens"),
        ("auto", True, "fastokens"),
        ("auto", False, "tiktoken"),
        ("tiktoken", True, "tiktoken"),
        ("fastokens", True, "fastokens"),
    ],
)
def test_the_variable_chooses_the_backend(
    monkeypatch: pytest.MonkeyPatch, value: str | None, installed: bool, expected: str
) -> None:
    _installed(monkeypatch, installed)
    if value is not None:
        monkeypatch.setenv(BPE_BACKEND_VARIABLE, value)
    assert bpe_backend() == expected


def test_a_bad_value_names_the_variable_and_the_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(BPE_BACKEND_VARIABLE, "fast")
    with pytest.raises(TokenizerError) as caught:
        bpe_backend()
    assert caught.value.message == (
        "CTXASM_BPE_BACKEND='fast' is not a BPE backend; choose one of auto, tiktoken, "
        "fastokens (set CTXASM_BPE_BACKEND or call set_bpe_backend)"
    )
    # a count reports it as a configuration error, not as an untokenizable text
    with pytest.raises(TokenizerError) as counted:
        TokenCounter(TiktokenTokenizer("o200k_base")).count("a text never counted before 7364")
    assert type(counted.value) is TokenizerError
    assert counted.value.message == caught.value.message


def test_fastokens_asked_for_but_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(monkeypatch, False)
    monkeypatch.setenv(BPE_BACKEND_VARIABLE, "fastokens")
    with pytest.raises(TokenizerError) as caught:
        bpe_backend()
    assert caught.value.message == (
        "CTXASM_BPE_BACKEND='fastokens' asks for fastokens, which is not installed: "
        "pip install -c constraints.txt '.[fast]' in the ctxasm folder, or choose 'auto' or "
        "'tiktoken'"
    )
    with pytest.raises(TokenizerError) as forced:
        set_bpe_backend("fastokens")
    assert forced.value.message.startswith("set_bpe_backend('fastokens') asks for fastokens,")


def test_set_bpe_backend_wins_over_the_variable_until_reset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _installed(monkeypatch, True)
    monkeypatch.setenv(BPE_BACKEND_VARIABLE, "fastokens")
    set_bpe_backend("tiktoken")
    assert bpe_backend() == "tiktoken"
    assert fast_bpe("tiktoken:o200k_base", lambda: None) is None  # nothing is loaded
    set_bpe_backend(None)
    assert bpe_backend() == "fastokens"
    with pytest.raises(TokenizerError) as caught:
        set_bpe_backend("tiktoken ")
    assert caught.value.message.startswith("set_bpe_backend('tiktoken ') is not a BPE backend")
    assert bpe_backend() == "fastokens"  # a refused choice changes nothing


def test_the_variable_is_read_once_until_set_bpe_backend_hands_the_choice_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _installed(monkeypatch, True)
    monkeypatch.setenv(BPE_BACKEND_VARIABLE, "tiktoken")
    assert bpe_backend() == "tiktoken"
    monkeypatch.setenv(BPE_BACKEND_VARIABLE, "fastokens")
    assert bpe_backend() == "tiktoken"
    set_bpe_backend(None)
    assert bpe_backend() == "fastokens"


def test_the_backend_never_changes_a_name_or_a_shared_counter() -> None:
    counter = get_counter("tiktoken:o200k_base")
    for backend in ("tiktoken", "auto"):
        set_bpe_backend(backend)
        assert make_tokenizer("tiktoken:o200k_base").name == "tiktoken:o200k_base"
        assert get_counter("tiktoken:o200k_base") is counter
