"""Tokenizer files on disk, found without a network and checked against a pinned SHA-256.

An open-weight model's tokenizer is a file: Meta's ``tokenizer.model``, Mistral's
``tekken.json``, a Hugging Face ``tokenizer.json``. A :class:`TokenizerFile` says where one comes
from: a path the user gives, or a path inside an installed Python distribution (read in place,
never imported, never downloaded). A file with a pinned hash is read only when its SHA-256
matches, so a corrupt or substituted file cannot silently change every count.

A file shipped by a distribution is looked up in this order:

1. ``$CTXASM_TOKENIZER_DIR/<file name>`` (a folder you fill yourself, e.g. in a container image);
2. the installed distribution, e.g. ``llama-models`` for ``llama_models/llama3/tokenizer.model``.

A file someone gave (a local path, or a copy in ``$CTXASM_TOKENIZER_DIR``) that is missing, cannot
be read, has another hash or does not parse raises a :class:`~ctxasm.errors.TokenizerFileError`
(bad input, naming the variable when one led to it); a file an installed distribution ships
that does so raises a plain :class:`~ctxasm.errors.TokenizerError` (a broken install).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TypeVar

from ctxasm.errors import TokenizerError, TokenizerFileError, install_hint

__all__ = ["TOKENIZER_DIR_VARIABLE", "TokenizerFile", "check_sha256"]

TOKENIZER_DIR_VARIABLE = "CTXASM_TOKENIZER_DIR"

_Parsed = TypeVar("_Parsed")


@dataclass(frozen=True, slots=True)
class TokenizerFile:
    """One tokenizer file: a local ``path``, or ``path`` inside the installed ``distribution``,
    with the SHA-256 it must have (``None``: not checked).

    ``extra`` names the ctxasm extra that installs the distribution, for error messages.
    """

    path: str
    sha256: str | None = None
    distribution: str | None = None
    extra: str | None = None

    def __post_init__(self) -> None:
        if self.sha256 is not None and not _is_sha256(self.sha256):
            raise TokenizerError(
                f"invalid SHA-256 {self.sha256!r} for {self.path}: expected 64 hexadecimal digits"
            )

    @property
    def name(self) -> str:
        """The file name, e.g. ``tokenizer.model``."""
        return PurePosixPath(self.path).name

    @property
    def label(self) -> str:
        """How messages name the file: ``<distribution>:<path>`` or the local path."""
        return self.path if self.distribution is None else f"{self.distribution}:{self.path}"

    def locate(self) -> Path:
        """The file on disk; a :class:`TokenizerError` that says how to provide it if absent."""
        return self._find()[0]

    def read(self) -> bytes:
        """The file's bytes, after checking its SHA-256 when one is pinned."""
        return self.load(lambda data: data)

    def load(self, parse: Callable[[bytes], _Parsed]) -> _Parsed:
        """``parse`` applied to the file's bytes, once found, read and hash-checked.

        A :class:`TokenizerError` on the way (``parse``'s too: it raises nothing else for bad
        bytes) is a :class:`TokenizerFileError` for a file someone gave, naming
        ``$CTXASM_TOKENIZER_DIR`` (as its ``field`` too) when the file was found there.
        """
        path, variable = self._find()
        try:
            data = read_tokenizer_file(path)
            if self.sha256 is not None:
                check_sha256(path, data, self.sha256, fix=self._fix(variable))
            return parse(data)
        except TokenizerFileError:
            raise
        except TokenizerError as error:
            if variable is not None:
                raise TokenizerFileError(f"{variable}: {error.message}", field=variable) from None
            if self.distribution is None:
                raise TokenizerFileError(error.message) from None
            raise  # the installed distribution's own file: the install is broken

    def _fix(self, variable: str | None) -> str:
        """What to do about a file with another hash, found where it was found."""
        if variable is not None:
            return (
                f"replace it with the official file, or remove it to read the "
                f"{self.distribution} package's copy"
            )
        if self.distribution is not None:
            return (
                f"reinstall the {self.distribution} package: pip install --force-reinstall "
                f"{self.distribution}"
            )
        return "replace it with the official file, or fix the pinned hash"

    def _install(self) -> str:
        if self.extra:
            return install_hint(self.extra)
        return f"pip install {self.distribution}"

    def _find(self) -> tuple[Path, str | None]:
        """The file on disk, and the environment variable that led to it (or ``None``)."""
        if self.distribution is None:
            local = Path(self.path).expanduser()
            if local.is_file():
                return local, None
            what = "is not a file" if local.exists() else "does not exist"
            shown = _shown_path(local)
            raise TokenizerFileError(f"tokenizer file {shown} {what}; give the file's path")
        if own := os.environ.get(TOKENIZER_DIR_VARIABLE):
            candidate = Path(own) / self.name
            if candidate.is_file():
                return candidate, TOKENIZER_DIR_VARIABLE
        installed = _installed_file(self.distribution, self.path)
        if installed is not None:
            return installed, None
        raise TokenizerError(
            f"the tokenizer file {self.path} ships with the {self.distribution} package, which "
            f"is not installed: {self._install()}, or put a copy of {self.name} (SHA-256 "
            f"{self.sha256}) in a folder named by {TOKENIZER_DIR_VARIABLE}"
        )


def _shown_path(path: Path) -> str:
    """``path``, and the absolute path it was looked for at when it is relative (read from the
    working folder, which a message should not leave to guesswork)."""
    return str(path) if path.is_absolute() else f"{path} (looked for at {path.absolute()})"


# The most a tokenizer file may hold: the largest official ones (Gemma's tokenizer.json) are
# about 35 MB; a file far larger is no tokenizer, and read whole it could fill the memory.
MAX_TOKENIZER_BYTES = 256 * 1024 * 1024


def read_tokenizer_file(path: Path) -> bytes:
    """The bytes of the tokenizer file at ``path``; a :class:`TokenizerError` naming it where it
    cannot be read or holds more than ``MAX_TOKENIZER_BYTES``."""
    from ctxasm.files import TooLargeError, read_bounded  # on use: it imports tempfile

    try:
        return read_bounded(path, MAX_TOKENIZER_BYTES)
    except OSError as exc:
        raise TokenizerError(f"cannot read tokenizer file {path}: {exc}") from None
    except TooLargeError as exc:
        raise TokenizerError(f"{path} is too large to be a tokenizer file: {exc}") from None


def check_sha256(
    path: Path,
    data: bytes,
    expected: str,
    *,
    fix: str = "replace it with the official file, or fix the pinned hash",
) -> None:
    """Raise a :class:`TokenizerError` naming ``path``, both hashes and what to do (``fix``)
    unless they match."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected.lower():
        raise TokenizerError(
            f"{path} is not the expected tokenizer file: its SHA-256 is {actual}, expected "
            f"{expected.lower()}; {fix}"
        )


def _is_sha256(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdefABCDEF" for c in text)


def _installed_file(distribution: str, path: str) -> Path | None:
    """``path`` inside the installed ``distribution``, found from its metadata (no import)."""
    from importlib import metadata

    try:
        found = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return None
    located = Path(str(found.locate_file(path)))
    return located if located.is_file() else None
