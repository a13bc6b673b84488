"""Strategies are found through the ``ctxasm.strategies`` entry points, built-in or not.

A real plugin distribution (``tests/data/plugin_dist``) is installed with pip into a folder
that the tests put on ``sys.path``; a request then names its strategy.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.machinery import PathFinder
from pathlib import Path
from typing import ClassVar

import pytest

import ctxasm
from ctxasm import registry
from ctxasm.errors import PluginError, UnknownStrategyError
from ctxasm.strategy import Strategy

PLUGIN_DIST = Path(__file__).parents[1] / "data" / "plugin_dist"
PASSAGES = [
    {"id": "a", "text": "The Danube ends in the Black Sea.", "score": 0.9},
    {"id": "b", "text": "The Dnieper ends in the Black Sea.", "score": 0.8},
    {"id": "c", "text": "The Don ends in the Sea of Azov.", "score": 0.7},
]
QUERY = "Which rivers end in the Black Sea?"
BUILTIN_ORDERINGS = [
    "cache_stable",
    "chronological",
    "primacy_recency",
    "retrieval",
    "score",
    "source",
]


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the installed plugin distribution (code and entry-point metadata)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--no-build-isolation", "--no-index", "--target", str(target),
         str(PLUGIN_DIST)],
        check=True,
    )  # fmt: skip
    assert sorted(p.name for p in target.glob("ctxasm_reverse_order*")) == [
        "ctxasm_reverse_order",
        "ctxasm_reverse_order-0.1.0.dist-info",
    ]
    return target


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The registry as if nothing had been read yet; restored afterwards."""
    monkeypatch.setattr(registry, "_FOUND", None)
    monkeypatch.setattr(registry, "_REGISTRY", {slot: {} for slot in registry.SLOTS})
    yield
    importlib.invalidate_caches()


def _on_path(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()


def test_an_installed_plugin_is_used_by_name_from_a_request(
    plugin_site: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_path(monkeypatch, plugin_site)
    monkeypatch.delenv(registry.PLUGINS_ENV, raising=False)
    assert registry.names("ordering") == [*BUILTIN_ORDERINGS[:4], "reverse_retrieval", "score",
                                          "source"]  # fmt: skip
    request = {"query": QUERY, "passages": PASSAGES, "strategy": {"ordering": "reverse_retrieval"}}
    result = ctxasm.Assembler().assemble(request)
    assert [item.id for item in result.report.included] == ["c", "b", "a"]
    built = registry.build("ordering", "reverse_retrieval", "strategy.ordering")
    assert type(built).__module__ == "ctxasm_reverse_order"
    ctxasm.testing.check_strategy(built)


def test_builtin_switch_ignores_installed_plugins(plugin_site: Path) -> None:
    """``CTXASM_PLUGINS=builtin`` reads only ctxasm's own entry points."""
    script = textwrap.dedent(
        f"""
        import json, ctxasm
        from ctxasm import registry
        try:
            ctxasm.assemble({QUERY!r}, {PASSAGES!r}, strategy={{"ordering": "reverse_retrieval"}})
            error = None
        except ctxasm.CtxasmError as exc:
            error = exc.to_dict()
        print(json.dumps({{"names": registry.names("ordering"), "error": error}}))
        """
    )

    def run(setting: str | None) -> dict[str, object]:
        env = {k: v for k, v in os.environ.items() if k != registry.PLUGINS_ENV}
        env["PYTHONPATH"] = os.pathsep.join([str(plugin_site), env.get("PYTHONPATH", "")])
        if setting is not None:
            env[registry.PLUGINS_ENV] = setting
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        found: dict[str, object] = json.loads(done.stdout)
        return found

    assert run(None) == {
        "names": sorted([*BUILTIN_ORDERINGS, "reverse_retrieval"]),
        "error": None,
    }
    assert run("builtin") == {
        "names": BUILTIN_ORDERINGS,
        "error": {
            "code": "unknown_strategy",
            "message": "unknown ordering strategy 'reverse_retrieval'; choose one of "
            + ", ".join(BUILTIN_ORDERINGS),
            "field": "strategy.ordering",
        },
    }


def _fake_distribution(folder: Path, name: str, entry_points: str) -> Path:
    """A distribution's metadata alone (no code): enough for entry points to be found."""
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[ctxasm.strategies]\n{entry_points}\n")
    return folder


def test_a_plugin_taking_a_builtin_name_raises(
    tmp_path: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = "ordering.score = ctxasm_reverse_order:ReverseRetrievalOrder"
    _on_path(monkeypatch, _fake_distribution(tmp_path, "clash", entry))
    with pytest.raises(PluginError) as raised:
        registry.names("ordering")
    assert raised.value.to_dict() == {
        "code": "invalid_plugin",
        "message": "two ordering strategies are named 'score': "
        "ctxasm.stages.ordering:ByScoreOrdering and ctxasm_reverse_order:ReverseRetrievalOrder; "
        "strategy names are unique within a slot, so rename one of them (its class's name and "
        "its entry point)",
        "field": "ctxasm.strategies.ordering.score",
    }


def test_an_entry_point_that_misnames_its_class_raises(
    plugin_site: Path, tmp_path: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_path(monkeypatch, plugin_site)
    entry = "ordering.backwards = ctxasm_reverse_order:ReverseRetrievalOrder"
    _on_path(monkeypatch, _fake_distribution(tmp_path, "misnamed", entry))
    with pytest.raises(PluginError) as raised:
        registry.build("ordering", "backwards", "strategy.ordering")
    assert raised.value.message == (
        "ctxasm_reverse_order:ReverseRetrievalOrder says it is the ordering strategy "
        "'reverse_retrieval', but its entry point is named 'ordering.backwards'; name it "
        "ordering.reverse_retrieval"
    )


def test_an_entry_point_that_does_not_load_names_itself(
    tmp_path: Path, fresh_registry: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _on_path(monkeypatch, _fake_distribution(tmp_path, "broken", "guard.gone = no_such_mod:X"))
    with pytest.raises(PluginError) as raised:
        registry.build("guard", "gone", "strategy.guard")
    assert raised.value.message == (
        "the guard strategy 'gone' (no_such_mod:X) cannot be loaded: "
        "ModuleNotFoundError: No module named 'no_such_mod'"
    )
    assert registry.names("guard") == ["gone", "scan"]


def test_registering_a_taken_name_raises(fresh_registry: None) -> None:
    @dataclass(frozen=True)
    class Impostor(Strategy):
        name: ClassVar[str] = "scan"
        slot: ClassVar[str] = "guard"

    with pytest.raises(
        PluginError,
        match=r"two guard strategies are named 'scan': ctxasm.stages.guard:InjectionScanGuard and ",
    ):
        registry.register(Impostor)
    with pytest.raises(UnknownStrategyError):
        registry.build("guard", "nothing", "strategy.guard")


def test_the_builtin_strategies_are_entry_points_of_ctxasm() -> None:
    from importlib import metadata

    points = metadata.entry_points(group=registry.ENTRY_POINT_GROUP)
    ours = sorted(p.name for p in points if p.dist is not None and p.dist.name == "ctxasm")
    declared = sorted(f"{slot}.{name}" for slot in registry.SLOTS for name in registry.names(slot))
    assert ours == declared
    assert len(ours) == 24


def _importlib_points(
    monkeypatch: pytest.MonkeyPatch, paths: list[str]
) -> set[tuple[str, str, str | None]]:
    from importlib import metadata

    with monkeypatch.context() as patch:
        patch.setattr(sys, "path", paths)
        importlib.invalidate_caches()
        return {
            (p.name, p.value, registry._normalized(p.dist.name) if p.dist else None)
            for p in metadata.entry_points(group=registry.ENTRY_POINT_GROUP)
        }


def test_entry_points_are_read_as_importlib_metadata_reads_them(
    plugin_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry reads ``entry_points.txt`` files itself (a cold process saves importing
    importlib.metadata); it finds what importlib.metadata finds, on this environment's path
    and on folders laid out the ways it reads: upper-case names, two versions of one
    distribution (the first found counts), one distribution in two folders of the path, an
    egg-info folder, comments, other groups, a file with no group of ours."""
    first, second = tmp_path / "first", tmp_path / "second"
    _fake_distribution(first, "Clash_Name", "ordering.upper = mod_a:Upper")
    _fake_distribution(second, "clash.name", "ordering.later = mod_b:Later")  # shadowed
    info = first / "Two-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: Two\nVersion: 2.0\n")
    (info / "entry_points.txt").write_text(
        "# a comment\n[console_scripts]\nx = y:z\n\n[ctxasm.strategies]\n"
        "  guard.spaced   =   mod_c : Spaced  \n# ordering.commented = m:C\n"
    )
    egg = second / "eggy.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: eggy\nVersion: 1.0\n")
    (egg / "entry_points.txt").write_text("[ctxasm.strategies]\nordering.egg = mod_d:Egg\n")
    (second / "other-1.0.dist-info").mkdir()
    (second / "other-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\na=b\n")
    (second / "noinfo.egg-info").write_text("a file, as old setuptools wrote it")
    paths = [str(first), str(second), str(plugin_site), *sys.path]
    found = registry._read_folders(paths, sys.meta_path)
    assert found is not None
    read = {(p.name, p.value, p.distribution) for p in found}
    assert read == _importlib_points(monkeypatch, paths)
    assert ("guard.spaced", "mod_c : Spaced", "two") in read
    assert ("ordering.egg", "mod_d:Egg", "eggy") in read
    assert not any(p.value == "mod_b:Later" for p in found)
    assert len([p for p in found if p.distribution == "ctxasm"]) == 24


def test_entry_points_in_archives_are_left_to_importlib_metadata(tmp_path: Path) -> None:
    archive = tmp_path / "plugins.zip"
    archive.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip archive
    assert registry._read_folders([str(archive)], sys.meta_path) is None
    assert registry._read_folders([str(tmp_path / "old.egg")], [PathFinder]) == []  # absent
    (tmp_path / "old.egg").mkdir()
    assert registry._read_folders([str(tmp_path / "old.egg")], [PathFinder]) is None

    class Finder:
        @staticmethod
        def find_distributions(context: object = None) -> list[object]:
            return []

    standard = [PathFinder]
    assert registry._read_folders([], [*standard, Finder()]) is None
    assert registry._read_folders([], []) is None  # importlib.metadata then finds nothing
    assert registry._read_folders([], standard) == []
    (tmp_path / "upper-1.0.DIST-INFO").mkdir()  # named from its METADATA by importlib.metadata
    assert registry._read_folders([str(tmp_path)], standard) is None
    (tmp_path / "upper-1.0.DIST-INFO").rmdir()
    (tmp_path / "-1.0.dist-info").mkdir()  # no name before the version: the same
    assert registry._read_folders([str(tmp_path)], standard) is None


def test_a_malformed_entry_point_file_names_itself(tmp_path: Path) -> None:
    info = tmp_path / "bad-1.0.dist-info"
    info.mkdir()
    declared = info / "entry_points.txt"
    declared.write_text("[ctxasm.strategies]\nordering.bad\n")
    with pytest.raises(PluginError, match=r"the line 'ordering.bad' of ctxasm.strategies in "):
        registry._read_folders([str(tmp_path)], [PathFinder])
    declared.write_bytes(b"[ctxasm.strategies]\nordering.caf\xe9 = m:C\n")
    with pytest.raises(PluginError, match=r"declares ctxasm.strategies but is not UTF-8"):
        registry._read_folders([str(tmp_path)], [PathFinder])
    declared.write_bytes(b"[console_scripts]\ncaf\xe9 = m:C\n")  # not ours: not read
    assert registry._read_folders([str(tmp_path)], [PathFinder]) == []
    declared.unlink()
    declared.symlink_to(declared)  # a loop: importlib.metadata raises OSError too
    with pytest.raises(PluginError, match=r"cannot read .*entry_points.txt"):
        registry._read_folders([str(tmp_path)], [PathFinder])


def test_a_point_loads_its_object_as_importlib_metadata_does() -> None:
    point = registry._Point("ordering.score", "ctxasm.stages.ordering : ByScoreOrdering", None)
    from ctxasm.stages.ordering import ByScoreOrdering

    assert point.load() is ByScoreOrdering
    assert registry._Point("x.y", "ctxasm.registry", None).load() is registry
    with pytest.raises(ValueError, match="is not 'module' or 'module:attribute'"):
        registry._Point("x.y", "not a path", None).load()
