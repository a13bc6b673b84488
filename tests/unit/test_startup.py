"""What a fresh process loads: ``import ctxasm`` loads none of the library until a name is used,
``ctxasm --help`` loads none of it, and a plain ``ctxasm assemble`` loads no CLI framework and
no package the command does not use."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ctxasm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "request.json"
# Loaded by `ctxasm --help` without being the library: the CLI itself and its error codes.
CLI_MODULES = ("ctxasm", "ctxasm.cli", "ctxasm.errors")


def _loaded_after(code: str) -> list[str]:
    """The top-level packages and the ``ctxasm`` modules in ``sys.modules`` after ``code`` (its
    output silenced) has run in a fresh interpreter."""
    probe = (
        "import contextlib, io, json, sys\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        + textwrap.indent(code, "    ")
        + "\nprint(json.dumps(sorted(m for m in sys.modules "
        "if '.' not in m or m.startswith('ctxasm.'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def _run_cli(*args: str) -> str:
    """Code that runs the console script's entry point on ``args`` and expects exit code 0."""
    return textwrap.dedent(
        f"""\
        sys.argv = ["ctxasm", *{list(args)!r}]
        from ctxasm.cli.main import run
        try:
            run()
        except SystemExit as exit:
            assert exit.code == 0, exit.code
        """
    )


def test_import_ctxasm_loads_no_submodule() -> None:
    loaded = _loaded_after("import ctxasm")
    assert [m for m in loaded if m.startswith("ctxasm")] == ["ctxasm"]


def test_every_public_name_is_the_object_its_module_defines() -> None:
    assert sorted(ctxasm._EXPORTS) == sorted(set(ctxasm.__all__) - {"__version__"})
    for name, module_name in ctxasm._EXPORTS.items():
        module = importlib.import_module(module_name)
        expected = module if module_name == f"ctxasm.{name}" else getattr(module, name)
        assert getattr(ctxasm, name) is expected, name


def test_dir_lists_the_public_names_before_they_are_used() -> None:
    probe = "import json, ctxasm\nprint(json.dumps(dir(ctxasm)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert set(ctxasm.__all__) <= set(json.loads(done.stdout))


def test_an_unknown_name_is_an_attribute_error_that_names_it() -> None:
    with pytest.raises(AttributeError) as caught:
        ctxasm.Assembeler  # type: ignore[attr-defined]  # noqa: B018
    assert str(caught.value) == "module 'ctxasm' has no attribute 'Assembeler'"


def test_help_loads_no_library_module() -> None:
    loaded = _loaded_after(_run_cli("--help"))
    library = [
        m
        for m in loaded
        if m.startswith("ctxasm") and m not in CLI_MODULES and not m.startswith("ctxasm.cli")
    ]
    assert library == []


def test_a_plain_assemble_loads_no_cli_framework_and_no_unused_package() -> None:
    loaded = set(_loaded_after(_run_cli("assemble", str(EXAMPLE))))
    unused = {
        "typer",
        "click",
        "pydantic",
        "rich",
        "numpy",
        "jinja2",
        "datasketch",
        "simplemma",
        "fastokens",
        "ctxasm.cli.app",
        "ctxasm.service",
        "ctxasm.store",
        "ctxasm.evaluation",
        "ctxasm.batch",
        "ctxasm.adapters",
    }
    assert "ctxasm.assembler" in loaded  # it did assemble
    assert sorted(loaded & unused) == []


def _after_warm_up(code: str) -> dict[str, bool]:
    """What a fresh interpreter has loaded after ``code``: simplemma's English dictionary (the
    table ctxasm reads it from) and the guard's tables (counting with tiktoken, so that no test
    waits for fastokens)."""
    probe = (
        textwrap.dedent(
            """\
        import json, os, sys
        os.environ["CTXASM_BPE_BACKEND"] = "tiktoken"
        """
        )
        + textwrap.dedent(code)
        + textwrap.dedent(
            """\
        phrases = sys.modules.get("ctxasm.stages.guard_phrases")
        lemmas = sys.modules.get("ctxasm.stages.lemmas")
        print(json.dumps({
            "simplemma": "simplemma" in sys.modules,
            "english": lemmas is not None
            and lemmas._table.cache_info().currsize == 1,
            "guard_tables": phrases is not None
            and phrases._automaton.cache_info().currsize == 1
            and phrases._index.cache_info().currsize == 1,
        }))
        """
        )
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded: dict[str, bool] = json.loads(done.stdout.splitlines()[-1])
    return loaded


def test_warm_up_loads_what_the_default_strategies_load_on_first_use() -> None:
    # Without it, the first request that compresses loads simplemma and its dictionary (about
    # 0.4 s) and the first scan builds the guard's tables.
    assert _after_warm_up("import ctxasm\nctxasm.Assembler()\n") == {
        "simplemma": False,
        "english": False,
        "guard_tables": False,
    }
    assert _after_warm_up("import ctxasm\nctxasm.Assembler().warm_up()\n") == {
        "simplemma": True,
        "english": True,
        "guard_tables": True,
    }


def test_warm_up_loads_nothing_for_slots_the_defaults_turn_off() -> None:
    config = {"defaults": {"strategy": {"compression": None, "guard": None}}}
    code = f"import ctxasm\nctxasm.Assembler({config!r}).warm_up()\n"
    assert _after_warm_up(code) == {"simplemma": False, "english": False, "guard_tables": False}


def test_the_service_warms_up_before_it_serves() -> None:
    code = "from ctxasm.service.app import create_app\ncreate_app()\n"
    assert _after_warm_up(code) == {"simplemma": True, "english": True, "guard_tables": True}
