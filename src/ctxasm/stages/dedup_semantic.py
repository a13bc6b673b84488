"""Semantic dedup: drop a passage whose embedding is as good as a kept passage's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ctxasm.data import Candidate
from ctxasm.embeddings import Embedder, get_embedder, unit_rows
from ctxasm.errors import ConfigError
from ctxasm.stages.dedup import DedupSession, Duplicate, Verdict
from ctxasm.strategy import ParamError, Strategy, require_number
from ctxasm.validation import shown

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Unit = npt.NDArray[np.float64]
    # A vector's kind ("embedding" or "embedder:<name>", and its dimension) and the vector.
    Keyed = tuple[tuple[str, int], Unit]

__all__ = ["SemanticDedup"]

# Cosines are sums of rounded products: a vector compared with itself may give 0.9999999.
_TOLERANCE = 1e-6


@dataclass(frozen=True)
class SemanticDedup(Strategy):
    """Drop a passage whose vector has cosine similarity at least ``threshold`` with a kept one.

    A passage's vector is its own ``embedding`` when it has one, else ``embedder``'s vector of
    its text (an embedder spec such as ``"hashing"``; see :func:`ctxasm.embeddings.get_embedder`).
    With neither it is never a duplicate. Vectors are only compared within one kind: given
    embeddings with given embeddings of the same dimension, the embedder's with the embedder's.
    Use when sources restate each other in different words (with a neural embedder or the
    retriever's own vectors) or with different formatting (``"hashing"``).
    """

    name: ClassVar[str] = "semantic"
    slot: ClassVar[str] = "dedup"
    threshold: float = 0.9
    embedder: str | None = None

    def __post_init__(self) -> None:
        require_number("threshold", self.threshold, low=0.0, high=1.0)
        if self.embedder is not None:
            _resolve("embedder", self.embedder)

    def session(self) -> DedupSession:
        embedder = None if self.embedder is None else _resolve("embedder", self.embedder)
        return _SemanticSession(self.threshold, embedder)


def _resolve(param: str, spec: object) -> Embedder:
    if not isinstance(spec, str):
        raise ParamError(param, f"must be an embedder spec string or null, got {shown(spec)}")
    try:
        return get_embedder(spec)
    except ConfigError as exc:
        raise ParamError(param, exc.message) from None


class _Space:
    """The kept vectors of one kind, as the rows of a matrix that doubles when full."""

    def __init__(self, dimension: int) -> None:
        import numpy as np

        self.ids: list[str] = []
        self.matrix = np.zeros((8, dimension), dtype=np.float64)

    def closest(self, vector: Unit) -> tuple[str, float] | None:
        if not self.ids:
            return None
        import numpy as np

        cosines = self.matrix[: len(self.ids)] @ vector
        best = int(np.argmax(cosines))  # the first maximum: the earliest kept passage
        return self.ids[best], float(cosines[best])

    def add(self, kept_id: str, vector: Unit) -> None:
        import numpy as np

        if len(self.ids) == len(self.matrix):
            self.matrix = np.concatenate([self.matrix, np.zeros_like(self.matrix)])
        self.matrix[len(self.ids)] = vector
        self.ids.append(kept_id)

    def replace(self, old_id: str, new_id: str, vector: Unit) -> None:
        row = self.ids.index(old_id)
        self.ids[row] = new_id
        self.matrix[row] = vector

    def remove(self, kept_id: str) -> None:
        import numpy as np

        row = self.ids.index(kept_id)
        del self.ids[row]
        self.matrix = np.delete(self.matrix, row, axis=0)


class _SemanticSession:
    def __init__(self, threshold: float, embedder: Embedder | None) -> None:
        self.threshold = threshold
        self.embedder = embedder
        self.spaces: dict[tuple[str, int], _Space] = {}
        self.space_of: dict[str, tuple[str, int]] = {}
        # verdict() and then accept() ask for the same candidate's vector: embed it once.
        self._last: tuple[tuple[int, str], Keyed | None] | None = None

    def placement(self, candidate: Candidate) -> Verdict:
        return None

    def verdict(self, candidate: Candidate) -> Verdict:
        found = self._vector(candidate)
        if found is None:
            return None
        key, vector = found
        space = self.spaces.get(key)
        closest = None if space is None else space.closest(vector)
        if closest is None or closest[1] < self.threshold - _TOLERANCE:
            return None
        kept_id, cosine = closest
        return Duplicate(kept_id, f"semantic duplicate of {kept_id} (cosine {cosine:.2f})")

    def accept(self, candidate: Candidate, replaced: Candidate | None) -> None:
        found = self._vector(candidate)
        old_id = None if replaced is None else replaced.id
        old_key = None if old_id is None else self.space_of.pop(old_id, None)
        if old_id is not None and old_key is not None:
            if found is not None and found[0] == old_key:
                # In place: the merged passage keeps its rank among equally close ones.
                self.spaces[old_key].replace(old_id, candidate.id, found[1])
                self.space_of[candidate.id] = old_key
                return
            self.spaces[old_key].remove(old_id)
        if found is None:
            return
        key, vector = found
        space = self.spaces.get(key)
        if space is None:
            space = self.spaces[key] = _Space(key[1])
        space.add(candidate.id, vector)
        self.space_of[candidate.id] = key

    def _vector(self, candidate: Candidate) -> Keyed | None:
        """The candidate's unit vector and the kind it belongs to, or None (no vector, or a
        zero one, which is close to nothing)."""
        memo_key = (candidate.request_index, candidate.text)
        if self._last is not None and self._last[0] == memo_key:
            return self._last[1]
        import numpy as np

        own = candidate.passage.embedding
        found: Keyed | None = None
        if own is not None:
            vector = np.asarray(own, dtype=np.float64)
            found = (("embedding", len(own)), vector)
        elif self.embedder is not None:
            vector = self.embedder.embed([candidate.text])[0].astype(np.float64)
            found = (("embedder:" + self.embedder.name, len(vector)), vector)
        if found is not None:
            key, vector = found
            with np.errstate(over="ignore", under="ignore"):
                norm = float(np.linalg.norm(vector))
            if norm > 0.0 and np.isfinite(norm):
                found = (key, vector / norm)
            else:  # a length that overflows or underflows (or a zero vector: none)
                unit = unit_rows(vector[None, :])[0]
                found = (key, unit) if unit.any() else None
        self._last = (memo_key, found)
        return found
