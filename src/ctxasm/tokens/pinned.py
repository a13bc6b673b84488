"""Official open-weight tokenizers, each read from a file a Python package ships, hash pinned.

``pinned:<name>`` (see :data:`PINNED`) counts exactly with a model family's own tokenizer file,
found in the installed package that ships it (never imported, never downloaded) or in
``$CTXASM_TOKENIZER_DIR``, and read only when its SHA-256 is the one pinned here.
``pinned:<name>@<path>`` reads a copy of the same file from ``path`` instead (checked the same
way). The rules a file does not hold (a pre-tokenizer pattern, a normalization, which added
tokens match inside ordinary text) come from each family's published tokenizer definition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Literal

from ctxasm.errors import TokenizerError
from ctxasm.tokens.base import Tokenizer
from ctxasm.tokens.bpe import BpeEncoding, BpeTokenizer
from ctxasm.tokens.files import TokenizerFile
from ctxasm.tokens.sentencepiece_source import SentencePieceTokenizer

__all__ = ["PINNED", "PinnedTokenizer", "pinned_tokenizer"]


@dataclass(frozen=True, slots=True)
class PinnedTokenizer:
    """One official tokenizer file, what it serves, and how it is counted."""

    file: TokenizerFile
    serves: str
    build: Callable[[str, TokenizerFile], Tokenizer]


# Meta's pattern (llama_models/llama3/tokenizer.py), the same as cl100k_base's.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Qwen 2, 2.5 and 3 (the Split pre-tokenizer of their tokenizer.json): one digit a piece.
QWEN_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Tekken (config.pattern of mistral-common's tekken files).
TEKKEN_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Added tokens that Qwen's tokenizer.json marks "special": false: they are matched inside any
# text, so "<think>" in a passage is one token there (and here).
QWEN25_TEXT_TOKENS = (
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
)
QWEN3_TEXT_TOKENS = (
    *QWEN25_TEXT_TOKENS,
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)

_LLAMA3_FILE = TokenizerFile(
    "llama_models/llama3/tokenizer.model",
    "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55",
    distribution="llama-models",
    extra="llama",
)
_QWEN_FILE = TokenizerFile(
    "dashscope/resources/qwen.tiktoken",
    "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
    distribution="dashscope",
    extra="qwen",
)


def _mistral(path: str, sha256: str) -> TokenizerFile:
    return TokenizerFile(path, sha256, distribution="mistral-common", extra="mistral")


def _bpe(
    pattern: str,
    format: Literal["tiktoken", "tekken"] = "tiktoken",
    normalization: Literal["NFC"] | None = None,
    text_tokens: tuple[str, ...] = (),
    fastokens_parity: bool = True,
) -> Callable[[str, TokenizerFile], Tokenizer]:
    def build(name: str, file: TokenizerFile) -> Tokenizer:
        # seams: each pattern above starts a piece at a space after a non-space character, at
        # a character after a newline other than white space and "/" (a backtick, a letter, a
        # digit, a bracket: docs/tokenizers.md), so
        # counts add up across all three.
        encoding = BpeEncoding(
            file,
            format,
            pattern,
            normalization,
            text_tokens,
            seams=True,
            fastokens_parity=fastokens_parity,
        )
        return BpeTokenizer(name, encoding)

    return build


# The pinned Mistral SentencePiece files have seams (see ctxasm.tokens.sentencepiece_source;
# tests/unit/test_sentencepiece_seams.py checks what the claim rests on in each file).
_SEAMED = partial(SentencePieceTokenizer, seams=True)

PINNED: dict[str, PinnedTokenizer] = {
    "llama-3": PinnedTokenizer(
        _LLAMA3_FILE,
        "Meta Llama 3, 3.1, 3.2 and 3.3 (Meta's tokenizer.model, shipped by llama-models)",
        # fastokens refuses these ranks: some tokens are not the merge of two others.
        _bpe(LLAMA3_PATTERN, fastokens_parity=False),
    ),
    "qwen2.5": PinnedTokenizer(
        _QWEN_FILE,
        "Qwen 2 and 2.5 (Qwen's BPE ranks, shipped by Alibaba Cloud's dashscope SDK)",
        _bpe(QWEN_PATTERN, normalization="NFC", text_tokens=QWEN25_TEXT_TOKENS),
    ),
    "qwen3": PinnedTokenizer(
        _QWEN_FILE,
        "Qwen 3 (the same ranks with Qwen 3's added <think> and <tool_response> tokens)",
        _bpe(QWEN_PATTERN, normalization="NFC", text_tokens=QWEN3_TEXT_TOKENS),
    ),
    "mistral-tekken": PinnedTokenizer(
        _mistral(
            "mistral_common/data/tekken_240718.json",
            "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516",
        ),
        "Mistral's Tekken tokenizer (Mistral NeMo, Ministral 8B, Pixtral 12B)",
        _bpe(TEKKEN_PATTERN, format="tekken"),
    ),
    "mistral-v1": PinnedTokenizer(
        _mistral(
            "mistral_common/data/tokenizer.model.v1",
            "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055",
        ),
        "Mistral 7B v0.1 and v0.2, Mixtral 8x7B (SentencePiece, 32,000 pieces)",
        _SEAMED,
    ),
    "mistral-v3": PinnedTokenizer(
        _mistral(
            "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3",
            "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33",
        ),
        "Mistral 7B v0.3, Mixtral 8x22B, Mistral Large 2407, Mistral Small 2409, Codestral 22B"
        " (SentencePiece)",
        _SEAMED,
    ),
    "mistral-v7": PinnedTokenizer(
        _mistral(
            "mistral_common/data/mistral_instruct_tokenizer_241114.model.v7",
            "1b968b8dc352f42192367337c78ccc61e1eaddc6d641a579372d4f20694beb7a",
        ),
        "Mistral Large 2411 (SentencePiece)",
        _SEAMED,
    ),
}


def pinned_tokenizer(spec: str, argument: str) -> Tokenizer:
    """The tokenizer ``pinned:<name>`` or ``pinned:<name>@<path>`` names (nothing is read yet)."""
    entry, file = _pinned(spec, argument)
    return entry.build(spec, file)


def _pinned(spec: str, argument: str) -> tuple[PinnedTokenizer, TokenizerFile]:
    name, _, path = argument.partition("@")
    entry = PINNED.get(name)
    if entry is None:
        raise TokenizerError(
            f"unknown pinned tokenizer {name!r} in {spec!r}; ctxasm pins "
            f"{', '.join(sorted(PINNED))} (docs/tokenizers.md)"
        )
    file = entry.file
    if path:
        file = replace(file, path=path, distribution=None)
    return entry, file
