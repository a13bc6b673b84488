"""Named strategies per slot, found through the ``ctxasm.strategies`` entry points.

Built-in and third-party strategies are found the same way: each is an entry point of the
group ``ctxasm.strategies`` named ``<slot>.<name>`` whose object is the strategy class::

    [project.entry-points."ctxasm.strategies"]
    "ordering.by_title" = "my_package.ordering:ByTitle"

Entry points are read on first use and a class is imported only when a request names it, so
importing ctxasm stays cheap. ``CTXASM_PLUGINS=builtin`` reads only the entry points ctxasm
itself declares (``all``, the default, reads every installed distribution's). A name two
strategies claim in one slot raises :class:`~ctxasm.errors.PluginError`, as does an entry
point that does not load or whose class says another slot or name. :func:`register` adds a
class defined in a script or a test, under the same rules.

A strategy (see :mod:`ctxasm.strategy`) is rebuilt from ``{"name": ..., **params}``. Unknown
names and parameters fail with the allowed ones listed. Validation happens once, when the
strategy is built.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, TypeVar

from ctxasm.data import StrategySpec
from ctxasm.errors import ConfigError, PluginError, RequestError, UnknownStrategyError
from ctxasm.strategy import (
    SLOTS,
    ParamError,
    Strategy,
    require_choice,
    require_int,
    require_number,
)
from ctxasm.validation import key_path, plain, shown

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGINS_ENV",
    "SLOTS",
    "ParamError",
    "Strategy",
    "build",
    "names",
    "register",
    "require_choice",
    "require_int",
    "require_number",
]

ENTRY_POINT_GROUP = "ctxasm.strategies"
# "all" (the default) or "builtin": which distributions' entry points are read.
PLUGINS_ENV = "CTXASM_PLUGINS"
_PLUGIN_CHOICES = ("all", "builtin")
_BUILTIN_DISTRIBUTION = "ctxasm"

# Loaded classes, and the entry points found but not loaded yet, by slot and name.
_REGISTRY: dict[str, dict[str, type[Strategy]]] = {slot: {} for slot in SLOTS}
_FOUND: dict[str, dict[str, _Point]] | None = None
S = TypeVar("S", bound=type[Strategy])


def register(cls: S) -> S:
    """Class decorator: register ``cls`` under ``cls.name`` in ``cls.slot``."""
    found = _entry_points()
    _check_slot(cls.slot, _path(cls))
    point = found[cls.slot].get(cls.name)
    if point is not None and point.value != _path(cls):
        raise _duplicate(cls.slot, cls.name, _path(cls), point.value)
    _add(cls)
    return cls


def names(slot: str) -> list[str]:
    """The strategy names of ``slot``, sorted."""
    return sorted({*_entry_points()[slot], *_REGISTRY[slot]})


def build(slot: str, spec: StrategySpec | Mapping[str, Any] | str, field: str) -> Any:
    """The strategy ``spec`` names in ``slot``, with its parameters checked."""
    if isinstance(spec, str):
        spec = StrategySpec(spec)
    elif isinstance(spec, Mapping):
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise RequestError(f"{field}.name must be a strategy name", field=f"{field}.name")
        spec = StrategySpec(name, {k: v for k, v in spec.items() if k != "name"})
    cls = _lookup(slot, spec.name)
    if cls is None:
        available = names(slot)
        choices = (
            f"choose one of {', '.join(available)}"
            if available
            else f"no {slot} strategies are available yet; leave {field} null"
        )
        raise UnknownStrategyError(
            f"unknown {slot} strategy {shown(spec.name)}; {choices}", field=field
        )
    assert dataclasses.is_dataclass(cls)
    allowed = [f.name for f in dataclasses.fields(cls) if f.init]
    for key in spec.params:
        if key not in allowed:
            listed = ", ".join(allowed) if allowed else "none"
            raise RequestError(
                f"{slot} strategy {spec.name!r} has no parameter {shown(key)}; "
                f"parameters: {listed}",
                field=key_path(field, key),
            )
    try:
        # Parameters as the built-in values they subclass: a subclass may redefine the
        # comparisons a strategy checks its ranges with.
        return cls(**{key: plain(value) for key, value in spec.params.items()})
    except ParamError as exc:
        raise RequestError(f"{field}.{exc.param}: {exc}", field=f"{field}.{exc.param}") from None


def _lookup(slot: str, name: str) -> type[Strategy] | None:
    """The class registered as ``name`` in ``slot``, importing its entry point on first use."""
    found = _entry_points()
    cls = _REGISTRY[slot].get(name)
    if cls is not None or name not in found[slot]:
        return cls
    point = found[slot][name]
    try:
        loaded = point.load()
    except Exception as exc:  # a broken plugin: say which one, whatever it raised
        raise PluginError(
            f"the {slot} strategy {shown(name)} ({point.value}) cannot be loaded: "
            f"{type(exc).__name__}: {exc}",
            field=f"{ENTRY_POINT_GROUP}.{point.name}",
        ) from exc
    where = f"{ENTRY_POINT_GROUP}.{point.name}"
    if not (
        isinstance(loaded, type)
        and issubclass(loaded, Strategy)
        and dataclasses.is_dataclass(loaded)
    ):
        raise PluginError(
            f"{point.value} is not a strategy: an entry point of {ENTRY_POINT_GROUP} must name "
            "a dataclass that subclasses ctxasm.strategy.Strategy",
            field=where,
        )
    if (loaded.slot, loaded.name) != (slot, name):
        raise PluginError(
            f"{point.value} says it is the {loaded.slot} strategy {loaded.name!r}, but its entry "
            f"point is named {point.name!r}; name it {loaded.slot}.{loaded.name}",
            field=where,
        )
    _add(loaded)
    return loaded


def _add(cls: type[Strategy]) -> None:
    table = _REGISTRY[cls.slot]
    if cls.name in table and table[cls.name] is not cls:
        raise _duplicate(cls.slot, cls.name, _path(cls), _path(table[cls.name]))
    table[cls.name] = cls


def _entry_points() -> dict[str, dict[str, _Point]]:
    """The entry points of :data:`ENTRY_POINT_GROUP` by slot and name, read once."""
    global _FOUND  # noqa: PLW0603 - read once, on first use
    if _FOUND is None:
        _FOUND = _discover(_plugin_setting())
    return _FOUND


def _plugin_setting() -> str:
    value = os.environ.get(PLUGINS_ENV, "all").strip().lower() or "all"
    if value not in _PLUGIN_CHOICES:
        raise ConfigError(
            f"{PLUGINS_ENV} must be one of {', '.join(_PLUGIN_CHOICES)}, got {value!r}; "
            "builtin loads only the strategies that ship with ctxasm",
            field=PLUGINS_ENV,
        )
    return value


def _discover(setting: str) -> dict[str, dict[str, _Point]]:
    found: dict[str, dict[str, _Point]] = {slot: {} for slot in SLOTS}
    builtins = 0
    for point in _read_points():
        builtin = point.distribution == _BUILTIN_DISTRIBUTION
        builtins += builtin
        if setting == "builtin" and not builtin:
            continue
        slot, _, name = point.name.partition(".")
        _check_slot(slot, f"the entry point {point.name!r} ({point.value})")
        if not name:
            raise PluginError(
                f"the entry point {point.name!r} ({point.value}) of {ENTRY_POINT_GROUP} names "
                f"no strategy; name it {slot}.<strategy name>",
                field=f"{ENTRY_POINT_GROUP}.{point.name}",
            )
        earlier = found[slot].get(name)
        if earlier is not None and earlier.value != point.value:
            raise _duplicate(slot, name, point.value, earlier.value)
        found[slot][name] = point
    if not builtins:
        # ctxasm imported from a source tree that was never installed, or installed before
        # its strategies became entry points: every strategy name would look unknown.
        raise PluginError(
            f"ctxasm's own strategies are missing from the {ENTRY_POINT_GROUP} entry points: "
            "its package metadata is absent or stale; reinstall it (pip install -e . in a "
            "checkout)",
            field=ENTRY_POINT_GROUP,
        )
    return found


class _Point(NamedTuple):
    """An entry point of :data:`ENTRY_POINT_GROUP`: its name (``<slot>.<strategy>``), its
    object (``module:attribute``) and the normalized name of the distribution declaring it."""

    name: str
    value: str
    distribution: str | None

    def load(self) -> Any:
        """The object the entry point names, imported (as ``EntryPoint.load`` does)."""
        found = _OBJECT.match(self.value)
        if found is None:
            raise ValueError(f"{self.value!r} is not 'module' or 'module:attribute'")
        attributes = (found.group("attr") or "").split(".")
        return functools.reduce(
            getattr, filter(None, attributes), importlib.import_module(found.group("module"))
        )


# What an entry point's object may be (importlib.metadata.EntryPoint.pattern's syntax).
_OBJECT = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


def _read_points() -> list[_Point]:
    """The entry points of :data:`ENTRY_POINT_GROUP` that ``importlib.metadata`` finds, in its
    order: read straight from the ``entry_points.txt`` of each distribution on ``sys.path``
    (importing ``importlib.metadata`` and listing every distribution through it cost a cold
    ``ctxasm assemble`` about 60 ms of CPU), except where the layout calls for
    ``importlib.metadata`` itself (a zip archive or an egg on the path, another finder of
    distributions)."""
    points = _read_folders(sys.path, sys.meta_path)
    if points is not None:
        return points
    from importlib import metadata

    try:
        found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # a file it cannot read or parse
        raise PluginError(
            f"the installed distributions' entry points cannot be read: {exc}",
            field=ENTRY_POINT_GROUP,
        ) from None
    # A distribution's points share one object, whose name parses its metadata on every read.
    names: dict[int, str | None] = {}
    for point in found:
        if id(point.dist) not in names:
            name = point.dist.name if point.dist is not None else None
            names[id(point.dist)] = _normalized(name) if name else None
    return [_Point(p.name, p.value, names[id(p.dist)]) for p in found]


def _read_folders(paths: Iterable[str], finders: Iterable[object]) -> list[_Point] | None:
    """:func:`_read_points` from the folders of ``paths`` as ``importlib.metadata`` reads them
    (its ``MetadataPathFinder``: the ``*.dist-info`` and ``*.egg-info`` folders of each path
    in turn, each distribution's first found by its normalized name); ``None`` where it would
    read something else too."""
    from importlib.machinery import PathFinder

    finders = list(finders)
    if PathFinder not in finders or any(
        f is not PathFinder and hasattr(f, "find_distributions") for f in finders
    ):
        return None
    points: list[_Point] = []
    seen: set[str] = set()
    for path in paths:
        root = path or "."
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.isfile(root):
                return None  # a zip archive, whose metadata importlib.metadata reads
            continue
        if os.path.basename(path).lower().endswith(".egg"):
            return None
        grouped: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                name = low.rpartition(".")[0].partition("-")[0]
                grouped.setdefault(_normalized(name), []).append(child)
        for child in (child for children in grouped.values() for child in children):
            stem, extension = os.path.splitext(child)
            name = stem.partition("-")[0]
            if extension not in (".dist-info", ".egg-info") or not name:
                return None  # named from its metadata, which only importlib.metadata reads
            distribution = _normalized(name)
            if distribution in seen:
                continue
            seen.add(distribution)
            points.extend(_declared(os.path.join(root, child), distribution))
    return points


def _declared(folder: str, distribution: str) -> list[_Point]:
    """The entry points of :data:`ENTRY_POINT_GROUP` in ``folder``'s ``entry_points.txt`` (a
    line ``[group]`` opens a section, ``name = value`` lines follow, ``#`` starts a comment)."""
    path = os.path.join(folder, "entry_points.txt")
    try:
        with open(path, "rb") as declared:
            data = declared.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return []  # no entry points, as importlib.metadata reads it
    except OSError as exc:  # importlib.metadata raises it too: say which file
        raise PluginError(f"cannot read {path}: {exc}", field=ENTRY_POINT_GROUP) from None
    if ENTRY_POINT_GROUP.encode() not in data:
        return []  # another library's entry points, whatever they hold
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PluginError(
            f"{path} declares {ENTRY_POINT_GROUP} but is not UTF-8 ({exc})", field=ENTRY_POINT_GROUP
        ) from None
    points = []
    section = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section == ENTRY_POINT_GROUP:
            name, equals, value = line.partition("=")
            if not equals:
                raise PluginError(
                    f"the line {line!r} of {ENTRY_POINT_GROUP} in {folder} is not "
                    "'<slot>.<name> = <module>:<class>'",
                    field=ENTRY_POINT_GROUP,
                )
            points.append(_Point(name.strip(), value.strip(), distribution))
    return points


def _normalized(name: str) -> str:
    """A distribution's name as ``importlib.metadata`` compares them (PEP 503, with ``_``)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _check_slot(slot: str, what: str) -> None:
    if slot not in SLOTS:
        raise PluginError(
            f"{what} names the slot {slot!r}; slots: {', '.join(SLOTS)}",
            field=ENTRY_POINT_GROUP,
        )


def _duplicate(slot: str, name: str, one: str, other: str) -> PluginError:
    first, second = sorted((one, other))
    return PluginError(
        f"two {slot} strategies are named {name!r}: {first} and {second}; strategy names are "
        "unique within a slot, so rename one of them (its class's name and its entry point)",
        field=f"{ENTRY_POINT_GROUP}.{slot}.{name}",
    )


def _path(cls: type[Strategy]) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"
