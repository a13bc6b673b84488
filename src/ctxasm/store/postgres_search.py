"""How a PostgreSQL store finds the chunks a principal may read: the visible access classes
and their statistics in one round trip, the candidates of BM25 read best bound first and scored
exactly (:class:`_Lexical`), and the nearest vectors, in the HNSW index and in the tail outside
it, read back with their documents' readers (see :mod:`ctxasm.store.postgres`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ctxasm.store.forms import form_ranges, with_forms
from ctxasm.store.postgres_rows import BOUND_SCALE, DIMENSION, _marker, _query_bound
from ctxasm.store.ranking import VisibleStats, exact_best
from ctxasm.store.records import CHUNK_COLUMNS, ChunkRow

_VISIBLE_CLASSES = """
    SELECT id, chunks, words FROM access_classes
    WHERE (tenant IS NULL OR tenant = %(tenant)s)
    AND (readers IS NULL OR readers && %(names)s::text[])
    AND (tenant IS NOT NULL OR readers IS NOT NULL OR %(public)s)
"""
# The distinct words of each range of the vocabulary (see ctxasm.store.forms) in the classes
# {classes} selects, with their document frequencies summed over those: each key's range of
# class_terms' key read in order, the other classes' rows in it passed over, until %(limit)s
# words are found.
_FORMS = """
SELECT DISTINCT f.term, f.df FROM unnest(%(firsts)s::text[], %(afters)s::text[]) AS k(first, after)
CROSS JOIN LATERAL (
    SELECT t.term, sum(t.df) AS df FROM class_terms t
    WHERE t.term >= k.first AND t.term < k.after {classes}
    GROUP BY t.term ORDER BY t.term LIMIT %(limit)s
) AS f
"""
# (The classes as one array: an index condition, so the range is read in order and the LIMIT
# ends it; compared with IN (SELECT ...), the planner read every visible row of it and sorted.)
_VISIBLE_FORMS = _FORMS.format(classes="AND t.class_id = ANY(ARRAY(SELECT id FROM visible))")
# The visible classes, their summed statistics (of the query's terms, and of the words of the
# ranges where their forms lie) and the store's state, in one round trip.
_STATISTICS = f"""
WITH visible AS ({_VISIBLE_CLASSES})
SELECT
    (SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM visible),
    (SELECT coalesce(sum(chunks), 0) FROM visible),
    (SELECT coalesce(sum(words), 0) FROM visible),
    (SELECT coalesce(json_object_agg(term, df), '{{}}') FROM (
        SELECT term, sum(df) AS df FROM class_terms
        WHERE term = ANY(%(terms)s) AND class_id IN (SELECT id FROM visible) GROUP BY term
    ) AS found),
    (SELECT coalesce(json_object_agg(term, df), '{{}}') FROM ({_VISIBLE_FORMS}) AS forms),
    (SELECT reference_words FROM store_state),
    (SELECT generation FROM store_state)
"""
# For hidden_matches: the words of the ranges where the forms of the query's terms lie, in
# the visible classes and in every class.
_FORM_WORDS = f"""
WITH visible AS ({_VISIBLE_CLASSES})
SELECT
    (SELECT coalesce(array_agg(term), '{{}}') FROM ({_VISIBLE_FORMS}) AS forms),
    (SELECT coalesce(array_agg(term), '{{}}') FROM ({_FORMS.format(classes="")}) AS forms)
"""
# The visible classes and the classes holding a query term, for hidden_matches.
_HOLDING = f"""
SELECT
    (SELECT coalesce(array_agg(id), '{{}}') FROM ({_VISIBLE_CLASSES}) AS visible),
    (SELECT coalesce(array_agg(DISTINCT class_id), '{{}}') FROM class_terms
     WHERE term = ANY(%(terms)s) AND df > 0)
"""
# A chunk read back: its columns and its document's readers (``found``: the ids found first).
_ROWS = f"""
SELECT found.key, {CHUNK_COLUMNS}, (SELECT array_agg(r.reader ORDER BY r.reader)
    FROM readers r WHERE r.doc_id = c.doc_id)
FROM found JOIN chunks c ON c.id = found.id JOIN documents d ON d.doc_id = c.doc_id
"""
# The visible chunks holding a query term, best bound first (bound vectors give ``-bound``),
# each with the reference length its bound vector was made at: read in the same statement, so
# from the same snapshot as the bounds (a small store's write may move it, see
# postgres_rows.REFERENCE_SETTLES).
_CANDIDATES = f"""
WITH found AS (
    SELECT c.id, c.bound <#> %(weights)s::sparsevec AS key FROM chunks c
    WHERE c.terms && %(terms)s::text[] AND c.terms && %(markers)s::text[]
    AND c.class_id = ANY(%(classes)s)
    ORDER BY key NULLS FIRST LIMIT %(fetch)s
){_ROWS.replace("found.key,", "found.key, (SELECT reference_words FROM store_state),", 1)}"""
# The nearest visible vectors: through the HNSW index up to the store's generation, exactly in
# the tail after it (``{{generation}}`` is written in, so the partial index applies). The index
# scan has no distance condition: pgvector's iterative scan stops once ``k`` rows pass its
# conditions, and where fewer than ``k`` visible neighbours are within the distance limit, a
# scan with that condition reads on to ``hnsw.max_scan_tuples`` looking for them. So the
# distance is filtered after the scan, outside a materialized CTE, as pgvector's documentation
# advises: the same rows are kept.
_NEAREST = f"""
WITH indexed AS MATERIALIZED (
    SELECT v.id, v.embedding <=> %(vector)s::vector AS key FROM chunk_vectors v
    WHERE v.generation <= {{generation}} AND v.class_id = ANY(%(classes)s)
    ORDER BY v.embedding <=> %(vector)s::vector LIMIT %(k)s
), found AS (
    (SELECT id, key FROM indexed WHERE key < %(distance)s)
    UNION ALL
    (SELECT v.id, v.embedding <=> %(vector)s::vector AS key FROM chunk_vectors v
     WHERE v.generation > {{generation}} AND v.class_id = ANY(%(classes)s)
     AND (v.embedding <=> %(vector)s::vector) < %(distance)s
     ORDER BY key LIMIT %(k)s)
){_ROWS}"""

# The nearest visible vectors, every one of them compared: for a principal who sees no more
# vectors than a store holds before it has an index (see nearest_query). Ties are broken by
# the chunk's row id, not the order the rows were read in, which other tenants' writes move.
_EXACT_NEAREST = f"""
WITH found AS (
    SELECT v.id, v.embedding <=> %(vector)s::vector AS key FROM chunk_vectors v
    WHERE v.class_id = ANY(%(classes)s) AND (v.embedding <=> %(vector)s::vector) < %(distance)s
    ORDER BY key, v.id LIMIT %(k)s
){_ROWS}"""


def nearest_query(visible: int, generation: int, exact_up_to: int) -> str:
    """The statement that finds the nearest vectors of a principal who sees ``visible`` chunks,
    in a store whose index covers the generations up to ``generation``. Up to ``exact_up_to``
    visible chunks, every visible vector is compared, as in a store with no index yet: the
    graph is shared by every principal, and which neighbours its scan reaches, and where the
    tail begins, depend on what the others wrote, so a document this principal cannot read
    would change its results. The count of visible chunks does not depend on them."""
    if visible <= exact_up_to:
        return _EXACT_NEAREST
    return _NEAREST.format(generation=generation)


_QUERY_VECTOR = "[" + ",".join(["%.9g"] * DIMENSION) + "]"  # float32 to the last bit


def _vector(values: Any) -> str:
    return _QUERY_VECTOR % tuple(values.tolist())


@dataclass(frozen=True, slots=True)
class PostgresRow(ChunkRow):
    """A chunk read back, with its document's readers (sorted; ``None`` for none)."""

    readers: list[str] | None


class _Lexical:
    """One question's exact BM25 top ``pool`` over the visible chunks, read by bound: the
    first ``5 pool / 4`` candidates, then four times as many each time until the last kept
    beats every bound left out."""

    def __init__(
        self,
        classes: list[int],
        stats: VisibleStats,
        terms: list[str],
        reference: float | None,
        pool: int,
    ) -> None:
        self._stats = stats
        self._terms = terms
        self._pool = pool
        self._weights = stats.weights(terms)
        # one float32 product and sum per term in pgvector: this much relative error at most
        self._margin = 1e-3 + 2.4e-7 * len(self._weights)
        self._params: dict[str, Any] = {
            "weights": _query_bound(self._weights),
            "terms": [t for t, _ in self._weights],
            "classes": classes,
            "markers": [_marker(c) for c in classes],
            "fetch": pool + pool // 4 if reference is not None else None,
        }

    def candidates(self, db: Any) -> Any:
        """A cursor over the next candidates (None when no visible chunk holds a term)."""
        if not self._weights:
            return None
        return db.cursor().execute(_CANDIDATES, self._params)

    def best(self, db: Any, cursor: Any) -> list[tuple[float, PostgresRow]]:
        """The exact top, from the candidates of ``cursor`` and more where needed."""
        while cursor is not None:
            found = cursor.fetchall()
            fetch = self._params["fetch"]
            ceiling = None
            if fetch is not None and len(found) >= fetch:
                bounds = [key for key, *_ in found if key is not None]
                reference = found[0][1]
                ceiling = math.inf
                if reference is not None and bounds:
                    factor = self._stats.ceiling(float(reference)) / BOUND_SCALE
                    ceiling = -max(bounds) * factor * (1.0 + self._margin)
            rows = [PostgresRow(*row) for _, _, *row in found]
            best = exact_best(rows, self._terms, self._stats, self._pool, ceiling)
            if best is not None:
                return best
            self._params["fetch"] = 4 * fetch
            cursor = self.candidates(db)
        return []


def form_parameters(terms: list[str]) -> dict[str, Any]:
    """The query's terms, and the parameters of :data:`_FORMS`: the ranges where their forms
    lie and how many words to read in each (see :func:`ctxasm.store.forms.form_ranges`)."""
    ranges, limit = form_ranges(terms)
    firsts, afters = [first for first, _ in ranges], [after for _, after in ranges]
    return {"terms": terms, "firsts": firsts, "afters": afters, "limit": limit}


def _statistics(
    db: Any, params: dict[str, Any]
) -> tuple[list[int], list[str], VisibleStats, float | None, int]:
    """The visible classes; the query's terms, each followed by its forms among the visible
    words; chunk count, word count and term frequencies summed over the visible classes; the
    store's reference length for bound vectors and its index generation."""
    row = db.execute(_STATISTICS, params).fetchone()
    classes, total, words, frequencies, forms, reference, generation = row
    found = {term: int(df) for term, df in (*frequencies.items(), *forms.items())}
    terms = with_forms(params["terms"], forms)
    stats = VisibleStats(int(total), int(words), {t: found[t] for t in terms if t in found})
    reference = None if reference is None else float(reference)
    # no store_state row: its tables were emptied by hand (TRUNCATE); no index is built then
    return list(classes), terms, stats, reference, int(generation or 0)


def form_words(db: Any, params: dict[str, Any]) -> list[str]:
    """The query's terms, each followed by its forms among the visible classes' words and
    among every class's (for ``hidden_matches``)."""
    visible, everywhere = db.execute(_FORM_WORDS, params).fetchone()
    return [*with_forms(params["terms"], visible), *with_forms(params["terms"], everywhere)]
