"""The engine that counts tiktoken-format BPE encodings: tiktoken, or the faster fastokens.

tiktoken is the reference. fastokens (the ``fast`` extra) counts the same encodings about ten
times faster on passages; ctxasm uses it only for encodings whose counts the test suite
compares with tiktoken's on 10,000+ hard texts and a probe of code points (o200k_base,
cl100k_base, and the pinned Qwen and Tekken files), and asks tiktoken for any text fastokens
refuses (a lone surrogate) or fails on. Counts, tokenizer names and reports are the same
either way.

The engine is chosen by ``$CTXASM_BPE_BACKEND``, or by :func:`set_bpe_backend` (which wins):

``auto`` (the default)
    fastokens when it can be imported, else tiktoken;
``tiktoken``
    tiktoken only: nothing else loads (a short-lived process saves fastokens' slower load);
``fastokens``
    fastokens, and a :class:`~ctxasm.errors.TokenizerError` when it is not installed or
    cannot load an encoding.

The variable is read when a process first counts; :func:`set_bpe_backend` changes the choice
at any time. Each encoding is loaded by fastokens once per process, on first use, from rank
bytes whose SHA-256 the caller has checked.
"""

from __future__ import annotations

import importlib
import os
import tempfile
import threading
from collections.abc import Callable, Sized
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Literal, Protocol

from ctxasm.errors import TokenizerError, install_hint

__all__ = [
    "BPE_BACKENDS",
    "BPE_BACKEND_VARIABLE",
    "FastBpe",
    "FastBpeSource",
    "bpe_backend",
    "fast_bpe",
    "set_bpe_backend",
]

BPE_BACKEND_VARIABLE = "CTXASM_BPE_BACKEND"
BPE_BACKENDS = ("auto", "tiktoken", "fastokens")
_INSTALL = install_hint("fast")

_FORCED: list[str] = []  # set_bpe_backend's choice; empty: the environment variable decides
# The backend named and what it resolved to, worked out once (a count asks for it every time).
_CHOICE: list[tuple[str, Literal["tiktoken", "fastokens"]]] = []
_LOCK = threading.Lock()
_LOADED: dict[str, FastBpe | None] = {}  # None: nothing for fastokens to load
_FAILED: dict[str, str] = {}  # why fastokens could not load an encoding (auto uses tiktoken)
_MODULE: list[ModuleType | None] = []  # the fastokens module once imported, or None


class _Encoder(Protocol):
    def encode_ordinary(self, input: str) -> Sized: ...


@dataclass(frozen=True, slots=True)
class FastBpeSource:
    """What fastokens builds an encoding from: the rank file's bytes in tiktoken format
    (already checked against their pinned SHA-256) and either the pre-tokenizer ``pattern``
    or the name of one of fastokens' own ``preset`` encodings (``o200k_base``)."""

    label: str
    ranks: bytes
    pattern: str | None = None
    preset: str | None = None


class FastBpe:
    """One encoding loaded by fastokens."""

    def __init__(self, encoder: _Encoder) -> None:
        self._encoder = encoder

    def count(self, text: str) -> int | None:
        """The number of tokens in ``text`` as ordinary text (special-token strings are
        text), or ``None`` when fastokens cannot count it: the caller then asks tiktoken,
        whose handling of such texts (lone surrogates, panics) stays the reference."""
        try:
            return len(self._encoder.encode_ordinary(text))
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException:  # UnicodeEncodeError on a lone surrogate; a Rust panic
            return None


def set_bpe_backend(name: str | None) -> None:
    """Count tiktoken-format encodings with ``name`` (``auto``, ``tiktoken`` or
    ``fastokens``) in this process, whatever ``$CTXASM_BPE_BACKEND`` says; ``None`` hands
    the choice back to the variable (read again). Counts are the same with every backend.

    Raises :class:`~ctxasm.errors.TokenizerError` for another name, and for ``fastokens``
    when it is not installed.
    """
    if name is not None:
        _resolve(name, f"set_bpe_backend({name!r})")
    _FORCED[:] = [] if name is None else [name]
    _CHOICE.clear()


def bpe_backend() -> Literal["tiktoken", "fastokens"]:
    """The engine that counts now, from :func:`set_bpe_backend` or ``$CTXASM_BPE_BACKEND``."""
    return (_CHOICE[0] if _CHOICE else _choose())[1]


def _choose() -> tuple[str, Literal["tiktoken", "fastokens"]]:
    if _FORCED:
        name = _FORCED[0]
        resolved = _resolve(name, f"set_bpe_backend({name!r})")
    else:
        name = os.environ.get(BPE_BACKEND_VARIABLE, "") or "auto"
        resolved = _resolve(name, f"{BPE_BACKEND_VARIABLE}={name!r}")
    choice = (name, resolved)
    _CHOICE[:] = [choice]
    return choice


def _resolve(name: str, where: str) -> Literal["tiktoken", "fastokens"]:
    if name == "tiktoken":
        return "tiktoken"
    if name == "auto":
        return "tiktoken" if _fastokens() is None else "fastokens"
    if name == "fastokens":
        if _fastokens() is None:
            raise TokenizerError(
                f"{where} asks for fastokens, which is not installed: {_INSTALL}, or choose "
                f"'auto' or 'tiktoken'"
            )
        return "fastokens"
    raise TokenizerError(
        f"{where} is not a BPE backend; choose one of {', '.join(BPE_BACKENDS)} "
        f"(set {BPE_BACKEND_VARIABLE} or call set_bpe_backend)"
    )


def _fastokens() -> ModuleType | None:
    if not _MODULE:
        try:
            module: ModuleType | None = importlib.import_module("fastokens")
        except ImportError:  # not installed, or a wheel built for another platform
            module = None
        _MODULE.append(module)
    return _MODULE[0]


def fast_bpe(key: str, source: Callable[[], FastBpeSource | None]) -> FastBpe | None:
    """The fastokens encoding ``key`` when fastokens is the backend, else ``None``.

    It is loaded once per process from ``source()`` (``None``: no local ranks, count with
    tiktoken). When fastokens cannot load it, ``auto`` counts with tiktoken and
    ``fastokens`` raises a :class:`~ctxasm.errors.TokenizerError`.
    """
    named, backend = _CHOICE[0] if _CHOICE else _choose()
    if backend != "fastokens":
        return None
    loaded = _LOADED.get(key)
    if loaded is not None:
        return loaded
    if key not in _LOADED and key not in _FAILED:
        with _LOCK:
            if key not in _LOADED and key not in _FAILED:
                _load(key, source)
    if key in _FAILED and named == "fastokens":
        raise TokenizerError(_FAILED[key])
    return _LOADED.get(key)


def _load(key: str, source: Callable[[], FastBpeSource | None]) -> None:
    """Build ``key`` under ``_LOCK``: a TokenizerError from ``source`` (a file whose hash
    differs) propagates; a failure of fastokens itself is remembered in ``_FAILED``."""
    found = source()
    if found is None:
        _LOADED[key] = None
        return
    module = _fastokens()
    assert module is not None  # fast_bpe is only reached with fastokens importable
    try:
        with tempfile.TemporaryDirectory(prefix="ctxasm-fastokens-") as folder:
            path = Path(folder) / "ranks.tiktoken"
            path.write_bytes(found.ranks)
            if found.preset is not None:
                encoder = module.Tokenizer.from_tiktoken(str(path), encoding=found.preset)
            else:
                encoder = module.Tokenizer.from_tiktoken(
                    str(path), pattern=found.pattern, special_tokens={}
                )
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # ValueError for ranks it cannot use; OSError: no temp folder
        _FAILED[key] = (
            f"fastokens cannot load {found.label} ({type(exc).__name__}: {exc}); choose the "
            f"auto or tiktoken backend ({BPE_BACKEND_VARIABLE} or set_bpe_backend) to count "
            "it with tiktoken"
        )
        return
    _LOADED[key] = FastBpe(encoder)
