"""The wheel, installed into a fresh virtual environment, works offline and on its own.

The project's wheel is built (as ``pip wheel`` does, with the hatchling of this environment),
installed with ``--no-deps --no-index`` into a new virtual environment whose dependencies come
from this environment's site-packages (a ``.pth`` path line, so nothing is downloaded and the
editable ctxasm here stays out of it). There, with no ``TIKTOKEN_CACHE_DIR``, no
``CTXASM_TIKTOKEN_DIR``, in a folder with no ``../shared``, and with every internet socket
refused (``no_network.py``), the README's Python quick start prints what the README shows, and
``ctxasm assemble``, ``index`` and ``ask`` print what they print from the source tree.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.install

REPO_ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
# Variables that would let a run find rank files or packages outside the fresh environment.
_LEAKY_PREFIXES = ("TIKTOKEN_", "CTXASM_", "PIP_", "PYTHON", "VIRTUAL_ENV", "DATA_GYM_")
QUESTION = "Where does the Danube end, and which capitals lie on it?"


@dataclass(frozen=True)
class FreshInstall:
    python: Path
    ctxasm: Path
    work: Path  # a working folder with examples/ and no ../shared
    network_log: Path

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_LEAKY_PREFIXES)}
        env["CTXASM_TEST_NETWORK_LOG"] = str(self.network_log)
        return env


def _run(args: list[str | Path], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _pip(*args: str | Path) -> list[str | Path]:
    """pip of this environment, reading no configuration and no index."""
    return [sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check", *args]


def _build_wheel(folder: Path) -> Path:
    if importlib.util.find_spec("hatchling") is None:
        pytest.fail("building the wheel needs hatchling: install the dev extra (make test does)")
    _run(
        _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", folder, "."),
        cwd=REPO_ROOT,
    )
    (wheel,) = folder.glob("ctxasm-*.whl")
    return wheel


def _site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(_run([python, "-c", code]).stdout.strip())


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> FreshInstall:
    root = tmp_path_factory.mktemp("fresh-install")
    wheel = _build_wheel(root / "wheels")
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    _run(_pip("--python", python, "install", "--no-deps", "--no-index", "-q", wheel))
    site = _site_packages(python)
    # Only after the install, so pip never sees the editable ctxasm of this environment.
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site / "_ctxasm_test_deps.pth").write_text("".join(f"{path}\n" for path in ours))
    shutil.copyfile(HERE / "no_network.py", site / "_ctxasm_test_no_network.py")
    (site / "_ctxasm_test_no_network.pth").write_text("import _ctxasm_test_no_network\n")
    work = root / "work"
    shutil.copytree(REPO_ROOT / "examples", work / "examples")
    assert not (work.parent / "shared").exists()
    return FreshInstall(python, venv / "bin" / "ctxasm", work, root / "network.log")


def _run_fresh(fresh: FreshInstall, args: list[str | Path]) -> subprocess.CompletedProcess[str]:
    result = _run(args, cwd=fresh.work, env=fresh.env())
    log = fresh.network_log.read_text() if fresh.network_log.exists() else ""
    assert log == "", f"the network was used:\n{log}"
    return result


def _readme_quick_start() -> tuple[str, str]:
    """The README's first Python block under "Quick start", and the output it shows: the
    comment lines at the start of a line."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Quick start") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None, "README.md has no ```python block under ## Quick start"
    shown = [line[2:] for line in code[1].splitlines() if line.startswith("# ")]
    return code[1], "".join(f"{line}\n" for line in shown)


def test_the_environment_refuses_the_network(fresh: FreshInstall, tmp_path: Path) -> None:
    probe = "import socket; socket.create_connection(('pypi.org', 443), timeout=5)"
    result = subprocess.run(
        [fresh.python, "-c", probe], capture_output=True, text=True, env=fresh.env()
    )
    assert result.returncode == 1
    assert "OSError: network access is blocked in this environment" in result.stderr
    assert fresh.network_log.read_text().startswith("socket.create_connection(('pypi.org', 443)")
    fresh.network_log.unlink()


def test_ctxasm_comes_from_the_wheel_with_its_rank_files(fresh: FreshInstall) -> None:
    code = (
        "import ctxasm, ctxasm.tokens.tiktoken_source as t; "
        "print(ctxasm.__file__); print(t.find_rank_file('o200k_base')); "
        "print(t.find_rank_file('cl100k_base'))"
    )
    lines = _run_fresh(fresh, [fresh.python, "-c", code]).stdout.splitlines()
    package = fresh.python.parent.parent / "lib"
    assert [Path(line).is_relative_to(package) for line in lines] == [True, True, True]
    assert [Path(line).name for line in lines] == [
        "__init__.py",
        "o200k_base.tiktoken",
        "cl100k_base.tiktoken",
    ]


def test_readme_quick_start(fresh: FreshInstall) -> None:
    code, shown = _readme_quick_start()
    check = "\nprint(result.report.tokenizer, result.report.exact_count)\n"
    output = _run_fresh(fresh, [fresh.python, "-c", code + check]).stdout
    assert output == shown + "tiktoken:o200k_base True\n"


def test_assemble_the_example_request(fresh: FreshInstall) -> None:
    import ctxasm

    output = _run_fresh(fresh, [fresh.ctxasm, "assemble", "examples/request.json"]).stdout
    result = json.loads(output)
    request = json.loads((REPO_ROOT / "examples" / "request.json").read_text(encoding="utf-8"))
    expected = ctxasm.assemble(**request).to_dict()
    for timed in (result, expected):
        timed["report"].pop("timings_ms")
    assert result == expected
    assert (result["report"]["tokenizer"], result["report"]["exact_count"]) == (
        "tiktoken:o200k_base",
        True,
    )


def test_index_and_ask_as_the_demo_does(fresh: FreshInstall, tmp_path: Path) -> None:
    def demo(ctxasm: Path | str, cwd: Path, env: dict[str, str] | None) -> list[str]:
        store = "sqlite:///store.db"
        index = ["index", "examples/corpus", "--store", store, "--tenant", "demo"]
        index += ["--readers", "everyone", "--chunk-tokens", "64", "--overlap", "16"]
        ask = ["ask", QUESTION, "--store", store, "--principal", "ann", "--tenant", "demo"]
        ask += ["--groups", "everyone", "--budget", "400"]
        indexed = _run([ctxasm, *index], cwd=cwd, env=env)
        asked = _run([ctxasm, *ask], cwd=cwd, env=env)
        return [indexed.stdout, indexed.stderr, asked.stdout]

    here = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    assert here is not None
    shutil.copytree(REPO_ROOT / "examples", tmp_path / "examples")
    expected = demo(here, tmp_path, None)
    assert "5 added" in expected[1]
    assert demo(fresh.ctxasm, fresh.work, fresh.env()) == expected
    log = fresh.network_log.read_text() if fresh.network_log.exists() else ""
    assert log == "", f"the network was used:\n{log}"
