"""English lemmas for compression: simplemma, with its dictionary read from a table on disk.

simplemma decodes its English dictionary (181,000 word forms) into a dict the first time a
process asks for a lemma: about 180 ms and 27 MB, which a short-lived process that compresses
(``ctxasm assemble``, a batch worker) paid in full. The first process to need the dictionary
writes the same pairs once as a hash table file in the user's cache folder
(``$CTXASM_CACHE_DIR``, else ``$XDG_CACHE_HOME/ctxasm``, else ``~/.cache/ctxasm``); later
processes read the file (a few milliseconds, its checksum included) and look up only the words
they meet. Lemmas are simplemma's own: the lookups run through its strategies, unchanged, and
the table holds exactly the pairs its dictionary holds.

A table that cannot be written (a read-only home) is built in memory and used as it is; one
that is damaged, truncated or written by another version fails its checks and is built again.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import tempfile
import time
from array import array
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import xxhash

if TYPE_CHECKING:
    from simplemma import Lemmatizer

__all__ = ["CACHE_FOLDER_VARIABLE", "LemmaTable", "cache_folder", "lemmatizer"]

CACHE_FOLDER_VARIABLE = "CTXASM_CACHE_DIR"
_MAGIC = b"ctxasm-lemmas-1\n"
# After the magic: the checksum of everything after the header, the number of slots (a power
# of two), the number of pairs and the size of the pair area, in bytes.
_HEADER = struct.Struct("<QIIQ")
_SLOT_BYTES = array("I").itemsize
_EMPTY = 0  # a slot's value: 0 for none, else 1 + where its pair starts in the area


class LemmaTable(Mapping[str, str]):
    """A read-only ``str -> str`` mapping over a hash table in one bytes object: a slot per
    power of two at least twice the pairs (linear probing, xxh3 of the key's UTF-8; 32-bit
    slots in the machine's byte order: the file is this machine's cache), then the pairs as
    ``key NUL value NUL``."""

    __slots__ = ("_area", "_count", "_mask", "_slots")

    def __init__(self, data: bytes) -> None:
        """Read a table :meth:`build` made; ``ValueError`` when ``data`` is not one."""
        start = len(_MAGIC) + _HEADER.size
        if len(data) < start or not data.startswith(_MAGIC):
            raise ValueError("not a lemma table")
        checksum, slots, count, area = _HEADER.unpack_from(data, len(_MAGIC))
        if (
            slots < 2
            or slots & (slots - 1)
            or slots < 2 * count
            or len(data) != start + _SLOT_BYTES * slots + area
        ):
            raise ValueError("a lemma table of the wrong size")
        if xxhash.xxh3_64_intdigest(memoryview(data)[start:]) != checksum:
            raise ValueError("a damaged lemma table")
        self._slots = memoryview(data)[start : start + _SLOT_BYTES * slots].cast("I")
        self._area = data[start + _SLOT_BYTES * slots :]
        self._mask = slots - 1
        self._count: int = count

    @staticmethod
    def build(pairs: Iterable[tuple[str, str]]) -> bytes:
        """The table of ``pairs`` (their keys distinct, neither side holding a NUL)."""
        encoded = [(key.encode(), value.encode()) for key, value in pairs]
        size = 2
        while size < 2 * len(encoded):
            size *= 2
        slots = [_EMPTY] * size
        area = bytearray()
        for key, value in encoded:
            if b"\0" in key or b"\0" in value:
                raise ValueError("a lemma table cannot hold a NUL character")
            at = xxhash.xxh3_64_intdigest(key) & (size - 1)
            while slots[at] != _EMPTY:
                at = (at + 1) & (size - 1)
            slots[at] = 1 + len(area)
            area += key + b"\0" + value + b"\0"
        body = array("I", slots).tobytes() + bytes(area)
        header = _HEADER.pack(xxhash.xxh3_64_intdigest(body), size, len(encoded), len(area))
        return _MAGIC + header + body

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        # A key that is no valid UTF-8 (a lone surrogate) raises, as simplemma's own does.
        wanted = key.encode()
        slots, area, mask = self._slots, self._area, self._mask
        at = xxhash.xxh3_64_intdigest(wanted) & mask
        for _ in range(mask + 1):  # a damaged table cannot loop: at most every slot once
            where = slots[at]
            if where == _EMPTY:
                return default
            start = where - 1
            end = start + len(wanted)
            if area.startswith(wanted, start) and area[end : end + 1] == b"\0":
                stop = area.find(b"\0", end + 1)
                return area[end + 1 : stop].decode() if stop != -1 else default
            at = (at + 1) & mask
        return default

    def __getitem__(self, key: str) -> str:
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        for where in self._slots:
            if where != _EMPTY:
                start = where - 1
                yield self._area[start : self._area.index(b"\0", start)].decode()

    def __len__(self) -> int:
        return self._count


def cache_folder() -> Path:
    """Where ctxasm keeps files it derives from installed packages (see the module)."""
    named = os.environ.get(CACHE_FOLDER_VARIABLE)
    if named:
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "ctxasm"


@lru_cache(maxsize=8)
def _table(language: str) -> Mapping[str, str]:
    """simplemma's dictionary of ``language`` as a table: read from the cache folder, or built
    from simplemma's own and written there when the file is missing or fails its checks (a
    dictionary the table cannot hold, with a NUL in a word, is used as simplemma gives it)."""
    import simplemma
    from simplemma.strategies.dictionaries.dictionary_factory import DefaultDictionaryFactory

    try:
        path = cache_folder() / f"lemmas-simplemma-{simplemma.__version__}-{language}.bin"
    except RuntimeError:  # no home folder to put the cache in
        path = None
    if path is not None:
        try:
            return LemmaTable(_read_file(path))
        except (OSError, ValueError):
            pass
    dictionary = DefaultDictionaryFactory().get_dictionary(language)
    try:
        data = LemmaTable.build(dictionary.items())
    except ValueError:
        return dictionary
    if path is not None:
        _write(path, data)
    return LemmaTable(data)


_MOST_BYTES = 64 * 1024 * 1024  # a table is about 5.6 MB: anything larger is no table


def _read_file(path: Path) -> bytes:
    """The bytes of the regular file at ``path``; ``ValueError`` for anything else (a FIFO
    would block the reader, a link to ``/dev/zero`` fill its memory)."""
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode) or status.st_size > _MOST_BYTES:
            raise ValueError("not a lemma table")
        with os.fdopen(os.dup(handle), "rb") as stream:
            return stream.read(_MOST_BYTES + 1)
    finally:
        os.close(handle)


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a file of its own, then renamed), and
    silently not where the folder cannot be written."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _drop_stale(path.parent)
        handle, name = tempfile.mkstemp(dir=path.parent, prefix=".lemmas-")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(name, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name)


_STALE_SECONDS = 3600.0  # a table being written is renamed within seconds


def _drop_stale(folder: Path) -> None:
    """Remove tables a killed process left half written (an hour old: no writer is at it)."""
    now = time.time()
    for left in folder.glob(".lemmas-*"):
        with contextlib.suppress(OSError):
            if now - left.lstat().st_mtime > _STALE_SECONDS:
                left.unlink()


@lru_cache(maxsize=1)
def lemmatizer() -> Lemmatizer:
    """simplemma's default lemmatizer (its strategies, not greedy), over the tables above."""
    from simplemma import Lemmatizer
    from simplemma.strategies import DefaultStrategy

    return Lemmatizer(lemmatization_strategy=DefaultStrategy(dictionary_factory=_Tables()))


class _Tables:
    """simplemma's ``DictionaryFactory``: each language's table, read once per process."""

    def get_dictionary(self, lang: str) -> Mapping[str, str]:
        return _table(lang)
