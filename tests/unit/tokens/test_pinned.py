"""Pinned tokenizer files: found offline in their packages, checked against their SHA-256."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from ctxasm import TokenizerError, default_registry
from ctxasm.errors import TokenizerFileError
from ctxasm.tokens import (
    PINNED,
    BpeTokenizer,
    HuggingFaceTokenizer,
    SentencePieceTokenizer,
    TokenizerFile,
    make_tokenizer,
)
from ctxasm.tokens.files import TOKENIZER_DIR_VARIABLE

# name: (distribution, path in it, SHA-256), as docs/tokenizers.md lists them
FILES = {
    "llama-3": (
        "llama-models",
        "llama_models/llama3/tokenizer.model",
        "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55",
    ),
    "qwen2.5": (
        "dashscope",
        "dashscope/resources/qwen.tiktoken",
        "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
    ),
    "qwen3": (
        "dashscope",
        "dashscope/resources/qwen.tiktoken",
        "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
    ),
    "mistral-tekken": (
        "mistral-common",
        "mistral_common/data/tekken_240718.json",
        "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516",
    ),
    "mistral-v1": (
        "mistral-common",
        "mistral_common/data/tokenizer.model.v1",
        "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055",
    ),
    "mistral-v3": (
        "mistral-common",
        "mistral_common/data/mistral_instruct_tokenizer_240323.model.v3",
        "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33",
    ),
    "mistral-v7": (
        "mistral-common",
        "mistral_common/data/mistral_instruct_tokenizer_241114.model.v7",
        "1b968b8dc352f42192367337c78ccc61e1eaddc6d641a579372d4f20694beb7a",
    ),
}
KINDS = {
    "llama-3": BpeTokenizer,
    "qwen2.5": BpeTokenizer,
    "qwen3": BpeTokenizer,
    "mistral-tekken": BpeTokenizer,
    "mistral-v1": SentencePieceTokenizer,
    "mistral-v3": SentencePieceTokenizer,
    "mistral-v7": SentencePieceTokenizer,
}


def test_the_catalogue_is_the_documented_one() -> None:
    assert {
        n: (e.file.distribution, e.file.path, e.file.sha256) for n, e in PINNED.items()
    } == FILES
    assert {n: type(make_tokenizer(f"pinned:{n}")) for n in PINNED} == KINDS
    docs = (Path(__file__).parents[3] / "docs" / "tokenizers.md").read_text()
    for name, (distribution, path, sha256) in FILES.items():
        assert all(part in docs for part in (f"`pinned:{name}`", distribution, path, sha256)), name


@pytest.mark.parametrize("name", sorted(FILES))
def test_installed_files_have_the_pinned_hash(name: str) -> None:
    data = PINNED[name].file.read()
    assert hashlib.sha256(data).hexdigest() == FILES[name][2]
    tokenizer = make_tokenizer(f"pinned:{name}")
    assert (tokenizer.name, tokenizer.exact, tokenizer.count("Hello world")) == (
        f"pinned:{name}",
        True,
        tokenizer.count("Hello") + tokenizer.count(" world") - (name.startswith("mistral-v")),
    )


def test_every_registry_tokenizer_builds_and_pinned_names_are_known() -> None:
    used = {spec.tokenizer for spec in default_registry()}
    for spec in used:
        make_tokenizer(spec)
    assert {s.split(":", 1)[1] for s in used if s.startswith("pinned:")} == set(PINNED)


def test_a_copy_in_the_tokenizer_dir_is_preferred(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = PINNED["mistral-v1"].file.locate()
    shutil.copy(original, tmp_path / original.name)
    monkeypatch.setenv(TOKENIZER_DIR_VARIABLE, str(tmp_path))
    assert PINNED["mistral-v1"].file.locate() == tmp_path / original.name
    assert make_tokenizer("pinned:mistral-v1").count("Hello world") == 2


def test_a_corrupt_file_is_refused_with_both_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = PINNED["mistral-v1"].file.locate()
    corrupt = tmp_path / original.name
    data = original.read_bytes()
    corrupt.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    monkeypatch.setenv(TOKENIZER_DIR_VARIABLE, str(tmp_path))
    with pytest.raises(TokenizerFileError) as caught:
        make_tokenizer("pinned:mistral-v1").count("x")
    actual = hashlib.sha256(corrupt.read_bytes()).hexdigest()
    # the user put the file there: bad input (exit 2), naming the variable that led to it
    assert caught.value.to_dict() == {
        "code": "invalid_tokenizer_file",
        "message": (
            f"{TOKENIZER_DIR_VARIABLE}: {corrupt} is not the expected tokenizer file: its "
            f"SHA-256 is {actual}, expected {FILES['mistral-v1'][2]}; replace it with the "
            "official file, or remove it to read the mistral-common package's copy"
        ),
        "field": TOKENIZER_DIR_VARIABLE,
    }
    assert caught.value.exit_code == 2


def test_a_pinned_name_can_read_a_given_copy(tmp_path: Path) -> None:
    original = PINNED["llama-3"].file.locate()
    copy = tmp_path / "tokenizer.model"
    shutil.copy(original, copy)
    assert make_tokenizer(f"pinned:llama-3@{copy}").count("Hello world") == 2
    copy.write_bytes(b"x")
    with pytest.raises(TokenizerError) as caught:
        make_tokenizer(f"pinned:llama-3@{copy}").count("Hello world")
    assert f"{copy} is not the expected tokenizer file" in caught.value.message


def test_a_missing_package_says_which_extra_installs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKENIZER_DIR_VARIABLE, str(tmp_path))
    file = TokenizerFile("absent_pkg/tokenizer.model", "0" * 64, "absent-pkg", extra="absent")
    with pytest.raises(TokenizerError) as caught:
        file.read()
    assert caught.value.message == (
        "the tokenizer file absent_pkg/tokenizer.model ships with the absent-pkg package, which "
        "is not installed: pip install -c constraints.txt '.[absent]' in the ctxasm folder, or "
        "put a copy of tokenizer.model "
        f"(SHA-256 {'0' * 64}) in a folder named by {TOKENIZER_DIR_VARIABLE}"
    )


def test_unknown_pinned_name_lists_the_known_ones() -> None:
    with pytest.raises(TokenizerError) as caught:
        make_tokenizer("pinned:llama-2")
    assert caught.value.message == (
        "unknown pinned tokenizer 'llama-2' in 'pinned:llama-2'; ctxasm pins "
        f"{', '.join(sorted(FILES))} (docs/tokenizers.md)"
    )


@pytest.mark.parametrize(
    "spec",
    [
        "pinned:",
        "sentencepiece:",
        "tekken:",
        "hf:#sha256=" + "0" * 64,
        "hf:/x/tokenizer.json#sha256=",
        "hf:/x/tokenizer.json#sha256=xyz",
    ],
)
def test_invalid_file_specs(spec: str) -> None:
    with pytest.raises(TokenizerError):
        make_tokenizer(spec)


def test_file_specs_check_a_pinned_hash(tmp_path: Path) -> None:
    model = PINNED["mistral-v3"].file.locate()
    sha256 = FILES["mistral-v3"][2]
    right = make_tokenizer(f"sentencepiece:{model}#sha256={sha256}")
    assert (right.name, right.count("Hello world")) == (f"sentencepiece:{model}", 2)
    wrong = make_tokenizer(f"sentencepiece:{model}#sha256={'f' * 64}")
    with pytest.raises(TokenizerError) as caught:
        wrong.count("Hello world")
    assert f"its SHA-256 is {sha256}, expected {'f' * 64}" in caught.value.message
    tekken = PINNED["mistral-tekken"].file.locate()
    unpinned = make_tokenizer(f"tekken:{tekken}")
    assert isinstance(unpinned, BpeTokenizer)
    # an unchecked pattern gives no seams to split at, and a trivial lower bound
    assert (unpinned.splits_at_spaces, unpinned.lower_bound("a b c")) == (False, 1)
    assert unpinned.count("Hello, how are you?") == 6


def test_hf_files_count_control_tokens_as_text(tmp_path: Path) -> None:
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

    words = ["[UNK]", "a", "b", "<", "|", "eot", "_", "id", ">"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Punctuation()
    tokenizer.add_special_tokens([AddedToken("<|eot_id|>", special=True)])
    tokenizer.add_tokens([AddedToken("<think>", special=False)])
    path = tmp_path / "tokenizer.json"
    tokenizer.save(str(path))
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    counted = make_tokenizer(f"hf:{path}#sha256={sha256}")
    assert isinstance(counted, HuggingFaceTokenizer)
    # "<|eot_id|>" is special: counted as its text, a < | eot _ id | > b; "<think>" is an
    # ordinary added token, matched in any text as the model matches it: a <think> b
    assert counted.count("a<|eot_id|>b") == 9
    assert counted.count("a<think>b") == 3
    assert len(tokenizer.encode("a<|eot_id|>b").ids) == 3  # what a server's parse gives


def test_a_tokenizer_file_too_large_to_be_one_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read whole before its hash was checked, an 8 GiB file filled the memory (MemoryError,
    # an internal error).
    from ctxasm.tokens import files
    from ctxasm.tokens.files import TokenizerFile

    monkeypatch.setattr(files, "MAX_TOKENIZER_BYTES", 1000)
    big = tmp_path / "tokenizer.json"
    with open(big, "wb") as out:
        out.truncate(8 * 1024**3)  # sparse: no disk used
    with pytest.raises(TokenizerError) as caught:
        TokenizerFile(str(big), "0" * 64).read()
    assert str(caught.value) == (
        f"{big} is too large to be a tokenizer file: it is 8,589,934,592 bytes, more than 1,000"
    )
