"""Issue 11, item 4: a configuration that would fail every request is refused when the
assembler (or the service) is built, with a ConfigError naming the ``defaults.`` field."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ctxasm
from ctxasm.errors import ConfigError, TokenizerError
from ctxasm.service.app import create_app

STRATEGIES = "auto, bridge, coverage, greedy_by_score, knapsack, mmr, priority, utility_per_token"


@pytest.mark.parametrize(
    ("defaults", "field", "message"),
    [
        (
            {"model": "gpt4o"},
            "defaults.model",
            "defaults.model: unknown model 'gpt4o'; did you mean gpt-4o, gpt-4, gpt-4.1, "
            "gpt-4o-mini, gpt-4-turbo? Run `ctxasm models` for the full list, or add the model "
            "with context_window, max_output and tokenizer in a config file.",
        ),
        (
            {"format": "xml"},
            "defaults.format",
            "defaults.format: unknown format 'xml'; choose one of anthropic, markdown, openai, "
            "text, template",
        ),
        (
            {"format": "template"},
            "defaults.template",
            "defaults.template: format 'template' needs a template: give the Jinja2 source in "
            "the request's template field",
        ),
        (
            {"strategy": {"selection": "knap"}},
            "defaults.strategy.selection",
            f"defaults.strategy.selection: unknown selection strategy 'knap'; choose one of "
            f"{STRATEGIES}",
        ),
        (
            {"strategy": {"selection": {"name": "mmr", "lambda_": 0.5}}},
            "defaults.strategy.selection.lambda_",
            "defaults.strategy.selection.lambda_: selection strategy 'mmr' has no parameter "
            "'lambda_'; parameters: lam, max_candidates, embedder",
        ),
        (
            {"top_k": -1},
            "defaults.top_k",
            "defaults.top_k must be an integer >= 1 or null; got int -1",
        ),
        (
            {"reserve_output_tokens": 999_999},
            "defaults.reserve_output_tokens",
            "defaults.reserve_output_tokens (999999) exceeds gpt-4o's maximum output of 16384 "
            "tokens",
        ),
        (
            {"model": "gpt-4o-mini", "context_window": 200_000},
            "defaults.context_window",
            "defaults.context_window (200000) exceeds gpt-4o-mini's window of 128000 tokens; to "
            "use a larger deployment, override the model in a config file",
        ),
    ],
)
def test_defaults_that_fail_every_request_fail_the_build(
    defaults: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"defaults": defaults})
    assert (caught.value.field, caught.value.message) == (field, message)


def _missing_tokenizer(tmp_path: Path) -> dict[str, Any]:
    spec = f"hf:{tmp_path / 'absent' / 'tokenizer.json'}"
    model = {"provider": "house", "context_window": 4096, "max_output": 512, "tokenizer": spec}
    return {"models": {"house": model}, "defaults": {"model": "house"}}


def test_a_missing_tokenizer_file_fails_the_build(tmp_path: Path) -> None:
    path = tmp_path / "absent" / "tokenizer.json"
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler(_missing_tokenizer(tmp_path))
    assert (caught.value.field, caught.value.message) == (
        "models.house.tokenizer",
        f"models.house.tokenizer: tokenizer file {path} does not exist; give the file's path",
    )


def test_a_default_tokenizer_that_cannot_load_names_defaults_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a tokenizer that fails once the config is read (offline, a package missing): the message
    # names defaults.model only when the config set it, and ends one sentence before the next
    import ctxasm.assembler

    def offline(spec: str) -> object:
        raise TokenizerError("cannot load the tokenizer: no network.")

    monkeypatch.setattr(ctxasm.assembler, "get_counter", offline)
    for config, which, name in (
        (None, "the default model", "gpt-4o"),
        ({"defaults": {"model": "gpt-4.1"}}, "defaults.model", "gpt-4.1"),
    ):
        with pytest.raises(ConfigError) as caught:
            ctxasm.Assembler(config)
        assert caught.value.to_dict() == {
            "code": "invalid_config",
            "message": (
                f"{which} {name!r} counts with 'tiktoken:o200k_base', which cannot be loaded: "
                f"cannot load the tokenizer: no network; fix the tokenizer "
                f"(models.{name}.tokenizer in a config) or choose another defaults.model"
            ),
            "field": "defaults.model",
        }


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nope", "invalid tokenizer spec 'nope'; expected 'tiktoken:<encoding>'"),
        ("tiktoken:nope", "unknown tiktoken encoding 'nope'"),
        ("pinned:nope", "unknown pinned tokenizer 'nope'"),
        ("estimate:cl100k_base*abc", "the factor after '*' must be a number, got 'abc'"),
        ("estimate:cl100k_base*0", "estimate factor must be a number from 0.5 to 10"),
        # a factor far below 1 let a 3,000-token passage be counted as 5 and fit any budget
        ("estimate:o200k_base*0.001", "got 0.001"),
        ("estimate:o200k_base*1e300", "got 1e+300"),
        ("estimate:o200k_base*nan", "got nan"),
        ("tekken:t.json#sha256=12", "invalid SHA-256 '12'"),
        ("sentencepiece:{folder}", "is not a file"),
    ],
)
def test_a_tokenizer_spec_is_checked_when_the_config_loads(
    tmp_path: Path, spec: str, message: str
) -> None:
    # a model the defaults do not name: it failed only at its first request, without the key
    model = {"context_window": 4096, "max_output": 512, "tokenizer": spec.format(folder=tmp_path)}
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"models": {"spare": model}})
    assert caught.value.field == "models.spare.tokenizer"
    assert caught.value.message.startswith("models.spare.tokenizer: ")
    assert message in caught.value.message


def test_a_tokenizer_file_is_located_and_its_hash_checked_when_the_config_loads(
    tmp_path: Path,
) -> None:
    # both loaded fine and failed every request for the model (exit 1, no key named)
    copy = tmp_path / "tokenizer.json"
    copy.write_text("{}", encoding="utf-8")
    for spec, message in (
        (f"pinned:llama-3@{tmp_path / 'absent.json'}", "does not exist"),
        (f"hf:{copy}#sha256={'0' * 64}", "is not the expected tokenizer file"),
    ):
        model = {"context_window": 4096, "max_output": 512, "tokenizer": spec}
        with pytest.raises(ConfigError) as caught:
            ctxasm.Assembler({"models": {"spare": model}})
        assert caught.value.field == "models.spare.tokenizer"
        assert message in caught.value.message


@pytest.mark.parametrize(
    ("kind", "data", "reason"),
    [
        ("hf", b'{"a":', "is not a valid tokenizer.json: expected `,` or `}` at line 1 column 5"),
        (
            "hf",
            b"\x80junk",
            "is not a valid tokenizer.json: it is not UTF-8 text (byte 0x80 at offset 0)",
        ),
        # the C++ core's "INTERNAL: src/sentencepiece_processor.cc(109) [...]" said nothing
        (
            "sentencepiece",
            b'{"a":',
            "is not a valid SentencePiece model: its bytes do not parse as a model protobuf",
        ),
        ("sentencepiece", b"", "is not a valid SentencePiece model: it is empty or holds no model"),
        ("tekken", b'{"a":', "is not a tekken.json file"),
    ],
)
def test_a_corrupt_tokenizer_file_is_refused_when_the_config_loads(
    tmp_path: Path, kind: str, data: bytes, reason: str
) -> None:
    # it was only located: the first count failed, exit 1, no key named, the C++ core's text
    path = tmp_path / "broken"
    path.write_bytes(data)
    model = {"context_window": 4096, "max_output": 512, "tokenizer": f"{kind}:{path}"}
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"models": {"spare": model}})
    assert (caught.value.field, caught.value.exit_code) == ("models.spare.tokenizer", 2)
    assert caught.value.message.startswith(f"models.spare.tokenizer: {path} {reason}")


def _save_word_tokenizer(path: Path) -> None:
    """A small valid tokenizer.json at ``path``: a few words, anything else one [UNK]."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[UNK]", "the", "danube", "ends"]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(path))


def test_a_tokenizer_file_checked_by_the_config_is_not_loaded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxasm.tokens.files import TokenizerFile

    path = tmp_path / "tokenizer.json"
    _save_word_tokenizer(path)
    loads: list[str] = []
    load = TokenizerFile.load

    def counted(file: TokenizerFile, parse: Any) -> Any:
        loads.append(file.path)
        return load(file, parse)

    monkeypatch.setattr(TokenizerFile, "load", counted)
    model = {"context_window": 4096, "max_output": 512, "tokenizer": f"hf:{path}"}
    assembler = ctxasm.Assembler({"models": {"spare": model}})
    passages = [{"id": "a", "text": "the danube ends"}]
    result = assembler.assemble("the danube", passages, model="spare")
    assert [c.id for c in result.report.included] == ["a"]
    assert loads == [str(path)]


def test_a_default_model_the_config_breaks_is_named_not_the_defaults() -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"models": {"gpt-4o": {"context_window": 100}}})
    assert caught.value.field == "models.gpt-4o"
    assert caught.value.message.startswith(
        "models.gpt-4o: the request does not fit gpt-4o even with no passages"
    )


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("body_timeout_s", 10**309, "at most 86,400, got (an integer of 1,027 bits)"),
        # too long for repr (over 4,300 digits): a ValueError came out of the check itself
        ("max_connections", -(10**5000), "got (a negative integer of 16,610 bits)"),
        ("header_timeout_s", 0, "must be a number over 0, at most 86,400, got 0"),
        ("max_connections", 2.5, "must be an integer over 0, at most 1,000,000, got 2.5"),
        ("request_timeout_s", 0, "must be a number over 0, at most 86,400, got 0"),
        ("request_timeout_s", -1.5, "must be a number over 0, at most 86,400, got -1.5"),
        ("request_timeout_s", 86_401, "must be a number over 0, at most 86,400, got 86401"),
        ("request_timeout_s", "30", "must be a number over 0, at most 86,400, got '30'"),
        ("request_timeout_s", True, "must be a number over 0, at most 86,400, got True"),
    ],
    ids=[
        "huge",
        "too-long-to-print",
        "zero",
        "not-an-integer",
        "request-timeout-zero",
        "request-timeout-negative",
        "request-timeout-over-a-day",
        "request-timeout-a-string",
        "request-timeout-a-bool",
    ],
)
def test_service_settings_are_bounded_and_named(setting: str, value: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"service": {setting: value}})
    assert caught.value.field == f"service.{setting}" and message in caught.value.message


def test_the_request_time_limit_defaults_to_30_s_and_takes_any_number_in_range() -> None:
    assert ctxasm.Assembler().config.service["request_timeout_s"] == 30.0
    for value in (0.2, 5, 86_400):
        assembler = ctxasm.Assembler({"service": {"request_timeout_s": value}})
        assert assembler.config.service["request_timeout_s"] == value


def test_a_limit_too_long_to_print_is_refused_by_its_size() -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"limits": {"max_body_bytes": -(10**5000)}})
    assert caught.value.field == "limits.max_body_bytes"
    assert caught.value.message.endswith("got (a negative integer of 16,610 bits)")


def test_create_app_refuses_a_bad_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        create_app({"defaults": {"model": "gpt4o"}})
    assert caught.value.field == "defaults.model"
    with pytest.raises(ConfigError):
        create_app(_missing_tokenizer(tmp_path))


def test_good_defaults_build_and_are_used() -> None:
    assembler = ctxasm.Assembler({"defaults": {"model": "gpt-4o-mini", "format": "text"}})
    result = assembler.assemble(query="Who?", passages=[{"id": "a", "text": "Ann."}])
    assert (result.report.model, result.messages) == ("gpt-4o-mini", ())


def test_serve_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "ctxasm.toml"
    config.write_text('[defaults]\nmodel = "gpt4o"\n', encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "ctxasm", "serve", "--port", "1", "--config", str(config)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode().splitlines() == [
        "ctxasm: error: defaults.model: unknown model 'gpt4o'; did you mean gpt-4o, gpt-4, "
        "gpt-4.1, gpt-4o-mini, gpt-4-turbo? Run `ctxasm models` for the full list, or add the "
        "model with context_window, max_output and tokenizer in a config file. [defaults.model]"
    ]


@pytest.mark.parametrize("config", [5, 1.5, b"ctxasm.toml", ["a"], True])
def test_a_config_of_another_kind_is_refused_naming_it(config: object) -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler(config)  # type: ignore[arg-type]
    assert caught.value.field == "config"
    assert "a mapping, a path to a TOML or JSON file, or None" in caught.value.message


def test_a_config_path_that_never_ends_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # /dev/zero was read until the memory ran out (MemoryError, an internal error).
    from ctxasm import config

    monkeypatch.setattr(config, "MAX_CONFIG_BYTES", 1000)
    with pytest.raises(ConfigError) as caught:
        config.load_config_file("/dev/zero")
    assert str(caught.value) == (
        "config file /dev/zero is too large: it holds more than 1,000 bytes"
    )


@pytest.mark.parametrize("name", ["", "   ", "gpt\n4"])
def test_a_model_name_no_request_could_give_is_refused(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler(config={"models": {name: {"context_window": 8000, "max_output": 100}}})
    assert caught.value.field == "models"
    assert "a model's name must be printable text, not blank" in str(caught.value)


def test_a_bad_request_size_limit_names_its_field() -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler(config={"limits": {"max_request_chars": 0}})
    assert caught.value.field == "limits.max_request_chars"


def test_a_relative_tokenizer_path_is_read_from_the_config_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # it was read from the working folder: the config worked from its own folder only
    folder = tmp_path / "conf"
    folder.mkdir()
    _save_word_tokenizer(folder / "tokenizer.json")
    sha256 = hashlib.sha256((folder / "tokenizer.json").read_bytes()).hexdigest()
    (folder / "ctxasm.toml").write_text(
        '[models.house]\ncontext_window = 4096\nmax_output = 512\ntokenizer = "hf:tokenizer.json"\n'
        f"[models.pinned]\ncontext_window = 4096\nmax_output = 512\n"
        f'tokenizer = "hf:./tokenizer.json#sha256={sha256}"\n',
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assembler = ctxasm.Assembler(Path("..") / "conf" / "ctxasm.toml")
    models = assembler.config.models
    assert models.get("house").tokenizer == f"hf:{elsewhere / '..' / 'conf' / 'tokenizer.json'}"
    assert models.get("pinned").tokenizer == (
        f"hf:{elsewhere / '..' / 'conf' / '.' / 'tokenizer.json'}#sha256={sha256}"
    )
    result = assembler.assemble(
        "the danube", [{"id": "a", "text": "the danube ends"}], model="house"
    )
    assert result.report.total_tokens > 0


@pytest.mark.parametrize(
    ("spec", "resolved"),
    [
        ("hf:tokenizer.json", "hf:/conf/tokenizer.json"),
        ("sentencepiece:sub/t.model#sha256=ab", "sentencepiece:/conf/sub/t.model#sha256=ab"),
        ("tekken:tekken.json", "tekken:/conf/tekken.json"),
        ("pinned:llama-3@tokenizer.model", "pinned:llama-3@/conf/tokenizer.model"),
        ("hf:/abs/tokenizer.json", "hf:/abs/tokenizer.json"),
        ("hf:~/tokenizer.json", "hf:~/tokenizer.json"),
        ("pinned:llama-3", "pinned:llama-3"),
        ("tiktoken:o200k_base", "tiktoken:o200k_base"),
        ("estimate:o200k_base*1.2", "estimate:o200k_base*1.2"),
        ("hf:", "hf:"),
    ],
)
def test_resolve_spec_path(spec: str, resolved: str) -> None:
    from ctxasm.tokens import resolve_spec_path

    assert resolve_spec_path(spec, Path("/conf")) == resolved


def test_a_missing_relative_tokenizer_file_shows_the_absolute_path_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a mapping has no folder of its own: its paths are read from the working folder, and the
    # message says which absolute path that was
    monkeypatch.chdir(tmp_path)
    model = {"context_window": 4096, "max_output": 512, "tokenizer": "hf:absent.json"}
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"models": {"house": model}})
    assert caught.value.message == (
        f"models.house.tokenizer: tokenizer file absent.json (looked for at "
        f"{tmp_path / 'absent.json'}) does not exist; give the file's path"
    )
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "ctxasm.toml").write_text(
        '[models.house]\ncontext_window = 4096\nmax_output = 512\ntokenizer = "hf:absent.json"\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler(tmp_path / "conf" / "ctxasm.toml")
    assert caught.value.message == (
        f"models.house.tokenizer: tokenizer file {tmp_path / 'conf' / 'absent.json'} does not "
        "exist; give the file's path"
    )
