"""Open-weight families count exactly: no mismatch with independent implementations.

Every ``pinned:`` tokenizer counts the generated corpus (10,000+ hard texts, see
``open_weight_corpus``) and is compared text by text with references that share none of
ctxasm's code: a Hugging Face ``tokenizers`` BPE built from the same official file (another BPE
and regex engine), the families' own libraries (Meta's llama-models, mistral-common), and, for
SentencePiece, the algorithm written out in Python.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from open_weight_corpus import SPECIAL_LOOKING, SentencePieceBpe, corpus, hf_counts, hf_reference

from ctxasm.tokens import get_counter, pinned
from ctxasm.tokens.bpe import BpeTokenizer, _tekken_ranks, _tiktoken_ranks

BPE = {
    # ignore_merges as in each family's tokenizer.json (Llama 3's sets it, Qwen's does not)
    "llama-3": {"pattern": pinned.LLAMA3_PATTERN, "ignore_merges": True},
    "qwen2.5": {
        "pattern": pinned.QWEN_PATTERN,
        "nfc": True,
        "text_tokens": pinned.QWEN25_TEXT_TOKENS,
    },
    "qwen3": {"pattern": pinned.QWEN_PATTERN, "nfc": True, "text_tokens": pinned.QWEN3_TEXT_TOKENS},
    "mistral-tekken": {"pattern": pinned.TEKKEN_PATTERN},
}
SENTENCEPIECE = ("mistral-v1", "mistral-v3", "mistral-v7")


@pytest.fixture(scope="module")
def texts() -> list[str]:
    generated = corpus()
    assert len(generated) >= 10_000
    return generated


def _counts(name: str, texts: list[str]) -> list[int]:
    counter = get_counter(f"pinned:{name}")
    return [counter.count(text) for text in texts]


def _mismatches(texts: list[str], ours: list[int], reference: list[int]) -> list[Any]:
    return [(t, o, r) for t, o, r in zip(texts, ours, reference, strict=True) if o != r][:5]


def _path(name: str) -> Path:
    return pinned.PINNED[name].file.locate()


@pytest.mark.parametrize("name", sorted(BPE))
def test_bpe_family_matches_hugging_face_tokenizers_built_from_the_same_file(
    name: str, texts: list[str]
) -> None:
    entry = pinned.PINNED[name]
    data = entry.file.read()
    if name == "mistral-tekken":
        ranks = _tekken_ranks(entry.file, data, pinned.TEKKEN_PATTERN)[0]
    else:
        ranks = _tiktoken_ranks(entry.file, data)
    reference = hf_reference(ranks, control_tokens=SPECIAL_LOOKING, **BPE[name])
    assert _mismatches(texts, _counts(name, texts), hf_counts(reference, texts)) == []


def test_llama3_matches_metas_own_tokenizer(texts: list[str]) -> None:
    from llama_models.llama3.tokenizer import Tokenizer

    meta = Tokenizer(_path("llama-3"))  # control tokens in a text are text by default
    reference = [len(meta.encode(text, bos=False, eos=False)) for text in texts]
    assert _mismatches(texts, _counts("llama-3", texts), reference) == []


def test_tekken_matches_mistral_common(texts: list[str]) -> None:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    tekken = Tekkenizer.from_file(_path("mistral-tekken"))
    reference = [len(tekken.encode(text, bos=False, eos=False)) for text in texts]
    assert _mismatches(texts, _counts("mistral-tekken", texts), reference) == []


@pytest.mark.parametrize("name", SENTENCEPIECE)
def test_sentencepiece_family_matches_mistral_common(name: str, texts: list[str]) -> None:
    from mistral_common.tokens.tokenizers.sentencepiece import SentencePieceTokenizer

    official = SentencePieceTokenizer(str(_path(name)))
    reference = [len(official.encode(t, bos=False, eos=False)) if t else 0 for t in texts]
    assert _mismatches(texts, _counts(name, texts), reference) == []


@pytest.mark.parametrize("name", SENTENCEPIECE)
def test_sentencepiece_family_matches_the_algorithm_written_out(
    name: str, texts: list[str]
) -> None:
    reference = SentencePieceBpe(_path(name).read_bytes())
    assert _mismatches(texts, _counts(name, texts), [reference.count(t) for t in texts]) == []


def test_published_examples() -> None:
    """Token ids Mistral and Meta publish, as counts (ids are rank + 1000 in Tekken)."""
    tekken = get_counter("pinned:mistral-tekken")
    # mistral-common's documentation: Mistral Small 3.1 and Devstral encode these so
    assert tekken.count("Hello, how are you?") == len([22177, 1044, 2606, 1584, 1636, 1063])
    assert tekken.count("Plz tekkenize me") == len([4444, 1122, 16058, 3569, 2033, 1639])
    llama = get_counter("pinned:llama-3")
    assert [llama.count(r) for r in ("system", "user", "assistant", "\n\n")] == [1, 1, 1, 1]


@pytest.mark.parametrize("name", sorted(BPE))
def test_counts_add_up_across_the_seams_the_counter_splits_at(name: str, texts: list[str]) -> None:
    tokenizer = pinned.pinned_tokenizer(f"pinned:{name}", name)
    assert isinstance(tokenizer, BpeTokenizer)
    assert (tokenizer.splits_before_fence, tokenizer.splits_at_spaces) == (True, True)
    broken = []
    for first, second in zip(texts[:1500], texts[1500:3000], strict=True):
        head = first.rstrip() or "x"
        fence = (f"{head}\n", f"`{second}")
        space = (head, f" {second}")
        start = second.lstrip()[:1]
        line = (f"{head}\n", second.lstrip() if start and start != "/" else f"{{{second}")
        for left, right in (fence, space, line):
            if tokenizer.count(left + right) != tokenizer.count(left) + tokenizer.count(right):
                broken.append((left, right))
    assert broken == []


@pytest.mark.parametrize("name", [*sorted(BPE), *SENTENCEPIECE])
def test_lower_bound_and_partial_counts_never_overshoot(name: str, texts: list[str]) -> None:
    tokenizer = pinned.pinned_tokenizer(f"pinned:{name}", name)
    long_texts = [" ".join(texts[i : i + 40]) for i in range(0, 4000, 40)]
    for text in texts[:3000] + long_texts:
        exact = tokenizer.count(text)
        assert tokenizer.lower_bound(text) <= exact, text
    if not isinstance(tokenizer, BpeTokenizer):
        return  # SentencePiece pieces may span spaces: no partial counts
    for text in long_texts:
        exact = tokenizer.count(text)
        for limit in (1, exact // 3, exact - 1, exact):
            partial = tokenizer.count_upto(text, limit)
            assert partial == exact if exact <= limit else limit < partial <= exact
