"""Text embeddings: unit vectors that put passages with the same meaning close together.

An :class:`Embedder` turns texts into an ``(n, dimension)`` float32 array whose rows have unit
L2 norm (a text with no words gives a zero row), so a dot product is a cosine similarity. Two
come with ctxasm, chosen by a spec string with :func:`get_embedder`:

* ``"hashing"`` / ``"hashing:512"``: :class:`HashingEmbedder`, feature hashing of word unigrams
  and bigrams. Offline, model-free, deterministic across processes; it sees shared wording, not
  paraphrase.
* ``"sentence-transformers:/path/to/model"``: :class:`SentenceTransformerEmbedder`, a
  sentence-transformers model loaded from a local directory, never downloaded
  (the ``embeddings`` extra).

Passages may also bring their own vectors (``Passage.embedding``); :func:`passage_vectors`
prefers those. numpy is imported on first use, so importing this module stays cheap.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import operator
import sys
import threading
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import xxhash

from ctxasm.data import Passage
from ctxasm.errors import ConfigError, install_hint
from ctxasm.lexical import words

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

__all__ = [
    "EMBEDDER_SPECS",
    "Embedder",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "get_embedder",
    "passage_vectors",
    "unit_rows",
]

EMBEDDER_SPECS = ("hashing", "hashing:DIMENSION", "sentence-transformers:/path/to/model")
# Vectors are dense: n texts take n * dimension * 8 bytes where they are compared (2,000
# passages at 65,536 dimensions took 2.25 GB), and a request can name the dimension.
_MAX_HASHING_DIMENSION = 4096
_INSTALL_HINT = install_hint("embeddings")


class Embedder(Protocol):
    """Turns texts into unit vectors of one fixed dimension."""

    @property
    def name(self) -> str:
        """The spec that :func:`get_embedder` builds this embedder from."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """A float32 array of shape ``(len(texts), dimension)``, rows L2-normalised."""
        ...


class HashingEmbedder:
    """Feature hashing of lower-cased word n-grams (``ngram=(1, 2)``: unigrams and bigrams).

    Each distinct n-gram is hashed with xxh3 into one of ``dimension`` buckets; the top bit of
    its hash picks the sign, so colliding n-grams cancel out on average instead of piling up.
    An n-gram seen ``tf`` times weighs ``1 + log(tf)``. The result depends only on the text:
    the same in every process, whatever ``PYTHONHASHSEED`` is.
    """

    def __init__(self, dimension: int = 256, ngram: tuple[int, int] = (1, 2)) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int):
            raise ConfigError(f"hashing dimension must be an integer, got {dimension!r}")
        if not 1 <= dimension <= _MAX_HASHING_DIMENSION:
            raise ConfigError(
                f"hashing dimension must be between 1 and {_MAX_HASHING_DIMENSION}, got {dimension}"
            )
        low, high = ngram
        if not 1 <= low <= high:
            raise ConfigError(f"ngram must be (low, high) with 1 <= low <= high, got {ngram!r}")
        self.dimension = dimension
        self.ngram = (low, high)
        self.name = f"hashing:{dimension}"

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self.dimension}, ngram={self.ngram})"

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.embed_words([words(text) for text in texts])

    def embed_words(
        self, texts: Sequence[list[str]], counts: Sequence[Counter[str]] | None = None
    ) -> Vectors:
        """:meth:`embed` for texts already split by :func:`ctxasm.lexical.words`; ``counts``:
        each text's ``Counter`` of its words, where the caller has counted them already."""
        import numpy as np

        if counts is not None and len(counts) != len(texts):
            raise ValueError(f"{len(counts)} word counts for {len(texts)} texts")
        result = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), _EMBED_SLICE):
            part = texts[start : start + _EMBED_SLICE]
            counted = None if counts is None else counts[start : start + _EMBED_SLICE]
            result[start : start + len(part)] = self._unit_rows(part, counted)
        return result

    def _unit_rows(
        self, texts: Sequence[list[str]], word_counts: Sequence[Counter[str]] | None = None
    ) -> Any:
        """The texts' vectors (float64), summed in numpy: each n-gram's signed weight is added
        to its bucket in the order the n-grams first occur, as one text at a time would, so the
        rows are the same to the last bit."""
        import numpy as np

        digests: list[int] = []
        counts: list[int] = []
        lengths: list[int] = []
        for index, tokens in enumerate(texts):
            grams = self._ngrams(tokens, None if word_counts is None else word_counts[index])
            digests.extend(map(xxhash.xxh3_64_intdigest, map(_UTF8, grams)))
            counts.extend(grams.values())
            lengths.append(len(grams))
        found = np.array(digests, dtype=np.uint64)
        starts = np.arange(len(texts), dtype=np.int64) * self.dimension
        cells = (found % np.uint64(self.dimension)).astype(np.int64) + np.repeat(starts, lengths)
        seen = np.array(counts, dtype=np.int64)
        weights = np.ones(len(seen))
        repeated = seen > 1  # 1 + log(1) is 1.0; the rest from math.log, as one by one
        weights[repeated] = [_weight(count) for count in seen[repeated].tolist()]
        values = np.where(found >> np.uint64(63), -weights, weights)
        size = len(texts) * self.dimension
        rows: Any = np.bincount(cells, weights=values, minlength=size).reshape(len(texts), -1)
        for row in range(len(texts)):
            norm = float(np.linalg.norm(rows[row]))
            if norm > 0.0:
                rows[row] /= norm
        return rows

    def _ngrams(self, tokens: list[str], unigrams: Counter[str] | None = None) -> Counter[str]:
        """The text's n-grams and how often each occurs, in the order they first occur
        (``unigrams``: ``Counter(tokens)``, where counted already)."""
        # Words never contain spaces, so a space-joined bigram cannot collide with a unigram.
        low, high = self.ngram
        grams: Counter[str] = Counter()
        for n in range(low, high + 1):
            if n == 1:
                # the first n: the same counts, in the same order, as an update would make
                grams = Counter(tokens if unigrams is None else unigrams)
            else:
                grams.update(map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False)))
        return grams


_EMBED_SLICE = 1024  # texts summed at once: bounds the float64 scratch array
_UTF8 = operator.methodcaller("encode", "utf-8", "surrogatepass")


@lru_cache(maxsize=1024)
def _weight(count: int) -> float:
    """An n-gram seen ``count`` times weighs ``1 + log(count)`` (``math.log``, as always)."""
    return 1.0 + math.log(count)


class SentenceTransformerEmbedder:
    """A sentence-transformers model read from the local directory ``path``.

    Nothing is ever downloaded: the directory must exist and the model is loaded with
    ``local_files_only=True``. The package and the directory are checked when the embedder is
    built; the model itself loads on first use, once, under a lock.
    """

    def __init__(self, path: str, device: str = "cpu") -> None:
        try:
            is_dir = Path(path).is_dir()
        except (OSError, ValueError):  # a name too long for the file system, a NUL
            is_dir = False
        if not is_dir:
            raise ConfigError(
                f"sentence-transformers model directory {path[:200]!r} does not exist; give the "
                "path of a model saved with SentenceTransformer.save() (ctxasm never downloads)"
            )
        if not _installed("sentence_transformers"):
            raise ConfigError(
                "the sentence-transformers embedder needs the sentence-transformers package; "
                f"install it with: {_INSTALL_HINT}"
            )
        self.path = path
        self.device = device
        self.name = f"sentence-transformers:{path}"
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(path={self.path!r}, device={self.device!r})"

    @property
    def dimension(self) -> int:
        size = self._load().get_sentence_embedding_dimension()
        if size is None:  # some models only know it once they have embedded something
            size = self.embed(["dimension"]).shape[1]
        return int(size)

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:  # encode([]) gives a flat empty array, not (0, dimension)
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._load().encode(
            list(texts),
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    # import_module: the package is optional, and mypy need not know it.
                    package = importlib.import_module("sentence_transformers")
                except ImportError as exc:
                    raise ConfigError(
                        f"cannot import sentence-transformers ({exc}); install it with: "
                        f"{_INSTALL_HINT}"
                    ) from exc
                try:
                    self._model = package.SentenceTransformer(
                        self.path, device=self.device, local_files_only=True
                    )
                except Exception as exc:  # a foreign error, translated at the boundary
                    raise ConfigError(
                        f"cannot load the sentence-transformers model in {self.path!r}: {exc}"
                    ) from exc
            return self._model


def _installed(module: str) -> bool:
    # find_spec does not import the package (sentence-transformers pulls in torch).
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()
_MAX_CACHED = 32  # specs can come from requests: keep the cache bounded


def get_embedder(spec: str) -> Embedder:
    """The embedder ``spec`` names (see the module docstring), built once per spec."""
    with _CACHE_LOCK:
        cached = _CACHE.get(spec)
    if cached is not None:
        return cached
    embedder = _build(spec)
    with _CACHE_LOCK:
        if len(_CACHE) >= _MAX_CACHED:
            _CACHE.clear()
        # Another thread may have built the same spec meanwhile: keep the first one.
        return _CACHE.setdefault(spec, embedder)


def _build(spec: str) -> Embedder:
    if not isinstance(spec, str):
        raise ConfigError(f"an embedder spec must be a string, got {spec!r}")
    kind, colon, argument = spec.partition(":")
    if kind == "hashing":
        if not colon:
            return HashingEmbedder()
        if not argument.isascii() or not argument.isdigit():
            raise ConfigError(
                f"embedder {spec[:80]!r}: the hashing dimension must be a positive integer, "
                f"as in 'hashing:512'"
            )
        if len(argument.lstrip("0")) > 18:  # int() refuses over 4,300 digits
            raise ConfigError(
                f"hashing dimension must be between 1 and {_MAX_HASHING_DIMENSION}, got a number "
                f"of {len(argument):,} digits"
            )
        return HashingEmbedder(dimension=int(argument))
    if kind == "sentence-transformers" and argument:
        return SentenceTransformerEmbedder(argument)
    raise ConfigError(f"unknown embedder {spec[:80]!r}; use one of: {', '.join(EMBEDDER_SPECS)}")


def passage_vectors(passages: Sequence[Passage], embedder: Embedder | None) -> Vectors | None:
    """One unit row per passage, or None when there is nothing to compare with.

    The passages' own embeddings when every passage has one and all have the same dimension
    (L2-normalised here; a zero vector stays zero); otherwise ``embedder``'s vectors of their
    texts; otherwise None. An empty sequence uses the embedder (``(0, dimension)``) or gives None.
    """
    import numpy as np

    own = [p.embedding for p in passages]
    if own and all(e is not None for e in own) and len({len(e or ()) for e in own}) == 1:
        unit: Vectors = unit_rows(np.array(own, dtype=np.float64)).astype(np.float32)
        return unit
    if embedder is None:
        return None
    return embedder.embed([p.text for p in passages])


def unit_rows(matrix: Any) -> Any:
    """The rows of a float64 ``matrix`` scaled to unit length (a zero row stays zero), whatever
    their scale: a row whose squared length overflows (entries of 1e160) or underflows (1e-200)
    is scaled by its largest entry first, so its direction survives (it came out as nothing)."""
    import numpy as np

    with np.errstate(over="ignore", under="ignore"):
        norms = np.linalg.norm(matrix, axis=1)
        odd = ~np.isfinite(norms) | ((norms == 0.0) & matrix.any(axis=1))
        if odd.any():
            matrix = matrix.copy()
            peaks = np.max(np.abs(matrix[odd]), axis=1)
            matrix[odd] = matrix[odd] / peaks[:, None]
            norms[odd] = np.linalg.norm(matrix[odd], axis=1)
    norms[norms == 0.0] = 1.0
    return matrix / norms[:, None]
