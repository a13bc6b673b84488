"""The package's layers, declared in ``[tool.importlinter]`` (pyproject.toml), hold.

``make test`` runs ``lint-imports`` on its own; these tests run it too and show that a contract
it checks can fail.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_declared_contracts_are_the_layers_of_the_design() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert [c["id"] for c in config["contracts"]] == [
        "layers",
        "data",
        "stages",
        "tokens",
        "edges",
        "acyclic",
    ]


def test_every_contract_is_kept() -> None:
    done = _lint(ROOT / "pyproject.toml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 6 kept, 0 broken." in done.stdout


def test_a_broken_layer_fails(tmp_path: Path) -> None:
    """The stages do import the data model: a contract saying otherwise must fail."""
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "ctxasm"\n\n'
        "[[tool.importlinter.contracts]]\n"
        'name = "upside down"\ntype = "layers"\n'
        'layers = ["ctxasm.data", "ctxasm.stages"]\n'
    )
    done = _lint(config)
    assert done.returncode == 1
    assert "upside down BROKEN" in done.stdout
    assert "ctxasm.stages.access -> ctxasm.data" in done.stdout
