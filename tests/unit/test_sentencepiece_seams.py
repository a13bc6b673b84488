"""What the seams of the pinned Mistral SentencePiece models rest on, checked in each file (see
``ctxasm.tokens.sentencepiece_source``): no piece joins a space to a character before it other
than a space, the normalizer writes nothing but spaces differently, and a text that follows such
a space counts as it does inside the longer text."""

from __future__ import annotations

import random
from functools import cache
from typing import Any

import pytest

from ctxasm.builder import ContextBuilder
from ctxasm.tokens import get_counter, make_tokenizer
from ctxasm.tokens.base import TokenCounter
from ctxasm.tokens.sentencepiece_source import SentencePieceTokenizer

SEAMED = ["mistral-v1", "mistral-v3", "mistral-v7"]
SPACE = "\u2581"


@cache
def _tokenizer(name: str) -> SentencePieceTokenizer:
    tokenizer = make_tokenizer(f"pinned:{name}")
    assert isinstance(tokenizer, SentencePieceTokenizer)
    return tokenizer


def _processor(name: str) -> Any:
    tokenizer = _tokenizer(name)
    tokenizer.count("x")
    return tokenizer._processor


@pytest.mark.parametrize("name", SEAMED)
def test_no_piece_joins_a_space_to_a_character_before_it(name: str) -> None:
    assert _tokenizer(name).seams
    processor = _processor(name)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    assert len(pieces) >= 32_000
    # a piece is a run of spaces, then characters that are no space
    assert not [piece for piece in pieces if SPACE in piece.lstrip(SPACE)]
    assert f"{SPACE}{SPACE}" in pieces  # runs of spaces are pieces: hence no seam after one


@pytest.mark.parametrize("name", SEAMED)
def test_the_normalizer_writes_only_spaces_differently(name: str) -> None:
    # NFKC would change these (full-width letters, ligatures, numerals, ideographic space);
    # removing extra white space would shorten the runs
    text = "a  b\u3000\uff71 \ufb01 \u2163 \t x\u00a0y\n z\u0301 \u2581"
    assert _processor(name).normalize(text) == SPACE + text.replace(" ", SPACE)


@pytest.mark.parametrize("name", SEAMED)
def test_the_model_spec_has_no_rule_that_reads_across_a_space(name: str) -> None:
    model_pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")
    model = model_pb2.ModelProto()
    model.ParseFromString(_tokenizer(name).file.read())
    assert model.trainer_spec.model_type == model_pb2.TrainerSpec.BPE
    assert not model.trainer_spec.treat_whitespace_as_suffix
    spec = model.normalizer_spec
    assert (spec.name, spec.precompiled_charsmap, spec.normalization_rule_tsv) == (
        "identity",
        b"",
        "",
    )
    assert spec.add_dummy_prefix and spec.escape_whitespaces
    assert not spec.remove_extra_whitespaces
    defined = model_pb2.ModelProto.SentencePiece.USER_DEFINED
    symbols = [piece.piece for piece in model.pieces if piece.type == defined]
    assert not [symbol for symbol in symbols if " " in symbol or SPACE in symbol]


@pytest.mark.parametrize("name", SEAMED)
def test_a_text_after_a_seam_counts_as_it_does_in_the_longer_text(name: str) -> None:
    tokenizer = _tokenizer(name)
    rng = random.Random(7)
    atoms = ["a", "The", "river", " ", "  ", "\n", "\t", "12", "東京", "😀", "[REF]", "x" * 9, "é"]
    for _ in range(300):
        head = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 10))).rstrip() or "a"
        tail = " " + "".join(rng.choice(atoms) for _ in range(rng.randint(0, 10)))
        if head[-1].isspace() or head[-1] == SPACE:
            continue
        assert tokenizer.count(head + tail) == tokenizer.count(head) + tokenizer.count_continued(
            tail
        )
    # after "\u2581" a space may join it in a run of spaces: that is no seam
    assert tokenizer.count(f"x{SPACE}  ") != tokenizer.count(f"x{SPACE}") + (
        tokenizer.count_continued("  ")
    )


def test_a_model_read_from_a_path_has_no_seams_and_counts_whole() -> None:
    # a tokenizer.model you name is not known to have seams: counted whole, as before
    path = _tokenizer("mistral-v3").file.locate()
    tokenizer = make_tokenizer(f"sentencepiece:{path}")
    assert isinstance(tokenizer, SentencePieceTokenizer) and not tokenizer.seams
    growing = TokenCounter(tokenizer).growing()
    growing.append("alpha beta")
    assert growing.with_piece(" gamma") == tokenizer.count("alpha beta gamma")
    with pytest.raises(Exception, match="no seams"):
        tokenizer.count_continued(" gamma")


def test_a_builder_of_thousands_of_items_is_exact_and_counts_each_item_once() -> None:
    # 1,000 items of 80 words took 66 s (the whole context recounted for each); each is
    # tokenized from the context's last seam now. The count is a fresh count of the context.
    rng = random.Random(3)
    words = "river city album founded capital spouse performer the of and in".split()
    builder = ContextBuilder(model="mistral-7b-instruct", max_tokens=60_000)
    for i in range(1_500):
        builder.add(" ".join(rng.choice(words) for _ in range(40)), priority=1.0, label=f"i{i}")
    calls = 0
    tokenizer = get_counter("pinned:mistral-v3").tokenizer
    counted = tokenizer.count
    continued = tokenizer.count_continued

    def count(text: str) -> int:
        nonlocal calls
        calls += len(text)
        return int(counted(text))

    def count_continued(text: str) -> int:
        nonlocal calls
        calls += len(text)
        return int(continued(text))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokenizer, "count", count)
        patch.setattr(tokenizer, "count_continued", count_continued)
        built = builder.build()
    assert 0 < len(built.included) < 1_500 and built.total_tokens <= 60_000
    assert built.total_tokens == counted(built.context)
    # characters tokenized: a few times the context's, not its square
    assert calls < 10 * len(built.context)


@pytest.mark.parametrize("name", SEAMED)
def test_the_lower_bound_is_never_above_the_count(name: str) -> None:
    # One token per seam at least, and per 25 bytes (the widest piece): a candidate that
    # cannot fit is refused without tokenizing it (N=200 passages, 4k: 130,000 of 147,000
    # characters were tokenized, now 59,000).
    tokenizer = _tokenizer(name)
    rng = random.Random(11)
    atoms = [
        "a", "word", " ", "  ", "   ", "\n", "\t", "\u3000", "\xa0", SPACE, f"{SPACE} ", "x" * 30,
        SPACE * 16, f"{SPACE * 5} {SPACE * 7}",
        "東京都", "😀", "[REFERENCE_DOC_12]", "é", "\u0301", "1234567", ".", "\x1c ",
    ]  # fmt: skip
    tight = 0
    for _ in range(3000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 40)))
        bound, count = tokenizer.lower_bound(text), tokenizer.count(text)
        assert 1 <= bound <= count, (text, bound, count)
        tight += bound * 2 >= count
    assert tight > 50  # a bound, not just 1
    assert tokenizer.lower_bound("") == 0
    # "\u2581" is a space to the model: its 16-space pieces cover 48 bytes of it (rev F)
    for text in (SPACE * 9, "a" + SPACE * 25, SPACE * 1000, f"{SPACE} " * 300):
        assert tokenizer.lower_bound(text) <= tokenizer.count(text), text
    prose = "The Danube flows through ten countries before it reaches the Black Sea. " * 20
    assert tokenizer.lower_bound(prose) >= 0.7 * tokenizer.count(prose)
