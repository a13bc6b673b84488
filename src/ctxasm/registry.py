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
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

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

if TYPE_CHECKING:
    from importlib import metadata

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
_FOUND: dict[str, dict[str, metadata.EntryPoint]] | None = None
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


def _entry_points() -> dict[str, dict[str, metadata.EntryPoint]]:
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


def _discover(setting: str) -> dict[str, dict[str, metadata.EntryPoint]]:
    from importlib import metadata  # only when a strategy is first looked up: import stays cheap

    found: dict[str, dict[str, metadata.EntryPoint]] = {slot: {} for slot in SLOTS}
    builtins = 0
    # A distribution's points share one object, whose name parses its metadata on every read.
    distributions: dict[int, str | None] = {}
    for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        key = id(point.dist)
        if key not in distributions:
            distributions[key] = point.dist.name if point.dist is not None else None
        builtin = distributions[key] == _BUILTIN_DISTRIBUTION
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
