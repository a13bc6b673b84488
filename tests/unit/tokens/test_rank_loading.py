"""ctxasm builds the tiktoken encodings from its verified rank files itself: the result must be
tiktoken's own encoding, rank for rank, with the same pattern and special tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken

from ctxasm.tokens.tiktoken_source import BUNDLED_RANKS, OFFICIAL_RANKS, _build, _verify


@pytest.fixture(params=sorted(OFFICIAL_RANKS))
def name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _tiktoken_own(name: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> tiktoken.Encoding:
    """tiktoken's encoding, read by tiktoken from the shipped file (its cache layout)."""
    (folder / OFFICIAL_RANKS[name].cache_name).symlink_to(BUNDLED_RANKS / f"{name}.tiktoken")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(folder))
    from tiktoken_ext import openai_public

    return tiktoken.Encoding(**getattr(openai_public, name)())


def test_the_ranks_run_in_file_order(name: str) -> None:
    lines = (BUNDLED_RANKS / f"{name}.tiktoken").read_bytes().split(b"\n")
    ranks = [int(line.split()[1]) for line in lines if line]
    assert ranks == list(range(len(ranks)))


def test_the_built_encoding_is_tiktokens_own(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = _tiktoken_own(name, tmp_path, monkeypatch)
    built = _build(name, _verify(name, BUNDLED_RANKS / f"{name}.tiktoken"))
    assert built._pat_str == own._pat_str
    assert built._special_tokens == own._special_tokens
    assert built._mergeable_ranks == own._mergeable_ranks
    text = "Hello, world!  It's 2026 — déjà vu, 東京 🚀\n\n\tdef f(x): return x**2"
    assert built.encode_ordinary(text) == own.encode_ordinary(text)
