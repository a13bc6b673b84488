"""The o200k_base and cl100k_base rank files ship inside the package and load with no
environment variable and no network; a tokenizer that cannot load stops ``ctxasm index`` once."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load

from ctxasm.tokens import tiktoken_source
from ctxasm.tokens.tiktoken_source import BUNDLED_RANKS, OFFICIAL_RANKS

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_files_are_the_official_ones() -> None:
    shipped = sorted(path.name for path in BUNDLED_RANKS.iterdir())
    assert shipped == ["NOTICE", "cl100k_base.tiktoken", "o200k_base.tiktoken"]
    for name, ranks in OFFICIAL_RANKS.items():
        data = (BUNDLED_RANKS / f"{name}.tiktoken").read_bytes()
        assert hashlib.sha256(data).hexdigest() == ranks.sha256
    notice = (BUNDLED_RANKS / "NOTICE").read_text(encoding="utf-8")
    assert "MIT License" in notice
    assert "Copyright (c) 2022 OpenAI, Shantanu Jain" in notice


@pytest.mark.usefixtures("fresh_encodings")
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_shipped_files_load_with_no_setting_and_no_network(
    name: str, monkeypatch: pytest.MonkeyPatch, no_network: list[Any]
) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("CTXASM_TIKTOKEN_DIR", raising=False)
    assert tiktoken_source.find_rank_file(name) == BUNDLED_RANKS / f"{name}.tiktoken"
    encoding = tiktoken_source.load_encoding(name)
    assert encoding.name == name
    assert encoding.encode_ordinary("Aristotle taught at the Lyceum.") == tiktoken.Encoding(
        name=f"{name}-check",
        pat_str=encoding._pat_str,
        mergeable_ranks=tiktoken.load.load_tiktoken_bpe(str(BUNDLED_RANKS / f"{name}.tiktoken")),
        special_tokens={},
    ).encode_ordinary("Aristotle taught at the Lyceum.")
    assert "TIKTOKEN_CACHE_DIR" not in os.environ
    assert no_network == []


@pytest.mark.usefixtures("fresh_encodings")
def test_settings_come_before_the_shipped_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copyfile(BUNDLED_RANKS / "o200k_base.tiktoken", tmp_path / "o200k_base.tiktoken")
    monkeypatch.delenv("CTXASM_TIKTOKEN_DIR", raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tiktoken_source.find_rank_file("o200k_base") == tmp_path / "o200k_base.tiktoken"
    monkeypatch.setenv("CTXASM_TIKTOKEN_DIR", str(tmp_path / "own"))
    (tmp_path / "own").mkdir()
    shutil.copyfile(BUNDLED_RANKS / "o200k_base.tiktoken", tmp_path / "own" / "o200k_base.tiktoken")
    assert tiktoken_source.find_rank_file("o200k_base") == tmp_path / "own" / "o200k_base.tiktoken"


def test_index_stops_once_when_the_tokenizer_cannot_load(tmp_path: Path) -> None:
    bad = tmp_path / "ranks"
    bad.mkdir()
    data = bytearray((BUNDLED_RANKS / "o200k_base.tiktoken").read_bytes())
    data[100] ^= 1
    (bad / "o200k_base.tiktoken").write_bytes(bytes(data))
    digest = hashlib.sha256(data).hexdigest()
    command = [sys.executable, "-c", "from ctxasm.cli.main import run; run()", "index"]
    command += [str(REPO_ROOT / "examples" / "corpus"), "--store", "sqlite:///store.db"]
    command += ["--tenant", "demo", "--readers", "everyone", "--no-progress"]
    env = {**os.environ, "CTXASM_TIKTOKEN_DIR": str(bad)}
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env)
    # the file is the user's, through the variable: bad input (exit 2), naming the variable
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"ctxasm: error: CTXASM_TIKTOKEN_DIR: {bad / 'o200k_base.tiktoken'} is not the "
        f"official o200k_base rank file: its SHA-256 is {digest}, expected "
        f"{OFFICIAL_RANKS['o200k_base'].sha256}; replace it with the file published by OpenAI, "
        "or remove it to use the copy shipped with ctxasm [CTXASM_TIKTOKEN_DIR]\n"
    )
