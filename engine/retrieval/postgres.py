"""The server backend of the retrieval seam: ranking inside PostgreSQL.

The lexical leg is full-text search (a tsvector per fact, english stemming, GIN; the query's
content words ORed) scored by BM25 in SQL from the stored document frequencies, in a big store
over each lexeme's best holders (engine/retrieval/pg_lexical.py); the semantic leg is
pgvector (HNSW, cosine) over every fact's whole-text and sentence vectors. Visibility
(scopes any-intersection, collection, expiry, exclusions; only current facts are in the
derived tables at all) is in the WHERE clause of every query, before any LIMIT. The two
shortlists are fused in the process with engine/retrieval/ranking.py's formula and constants
(read from that module at each query, so a change there is a change here):
BM25 over the query's ceiling + SEMANTIC_WEIGHT x best cosine + ALIGNMENT_WEIGHT x word
alignment, one round of pseudo-relevance feedback, ties to the older fact. The process holds
only the shortlists (at most a few MATCH_WINDOWs of facts), never the store.

Differences from the in-memory index, by design: PostgreSQL's english stemmer and stopwords
instead of engine/retrieval/lexical.py's; no fuzzy widening of misspelt query words (pg_trgm
is not everywhere); the semantic leg sees the MATCH_WINDOW best facts by cosine rather than
every fact above the floor, and the word coverage that admits a fact sharing no word is
computed over the shortlists only (the whole store when it is small); in a big store the
lexical leg can miss a fact outside every lexeme's list of best holders. pgvector 0.6 filters
HNSW results after its candidate list, so a filtered query asks HNSW for more candidates in
proportion, and a visibility of few facts is scanned exactly."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from math import ceil
from typing import TYPE_CHECKING, cast

import numpy as np
from sqlalchemy import Connection, Engine, text

from engine.retrieval import pg_derived, ranking
from engine.retrieval.embeddings import Embedder
from engine.retrieval.lexical import similarity as lexical_similarity
from engine.retrieval.matching import (
    LEXICAL_SHORTLIST,
    LEXICAL_TIERS,
    MAX_CANDIDATES,
    SEMANTIC_TIERS,
    ScoredCandidate,
    tier_of,
)
from engine.retrieval.pair_blocks import best_of
from engine.retrieval.pg_lexical import best_bm25, bm25_of, query_terms
from engine.retrieval.pg_support import (
    MatchesReadAsReached,
    QueryWords,
    Shortlisted,
    age,
    best_first_ids,
    best_first_keys,
    lexical_pairs,
    semantic_pairs,
    shortlisted,
    visible,
    visible_share,
)
from engine.retrieval.ranking import MATCH_WINDOW, ScoreParts
from engine.retrieval.seam import (
    DuplicatePair,
    Match,
    PairsFound,
    Ranking,
    Visibility,
)
from engine.retrieval.snapshot import IndexedFact
from engine.retrieval.word_alignment import WordVectors

if TYPE_CHECKING:
    from engine.retrieval.entry import Backend, FactReader

# Vector rows asked of HNSW per fact wanted. A fact has one row per sentence besides its whole
# text, so the rows wanted may be fewer facts than wanted; at a million facts asking for one row
# a fact rather than two changed 1 in 2,000 of recall's best 10 and took 18 ms off a 118 ms
# recall (paired runs, 2026-12-06).
ROWS_PER_FACT = 1
# At most this many times the rows a query wants, a store is scanned exactly, without HNSW.
SMALL_STORE_ROWS = 4
# hnsw.ef_search's largest value: the most rows one HNSW query returns.
MAX_EF_SEARCH = 1000
# Up to FEW_VISIBLE_FACTS visible facts (by the per-scope counts) the semantic leg scans their
# rows exactly instead of asking HNSW (about 5 us a fact); up to EXACT_SCAN_FACTS when HNSW
# could not give as many candidates as the filter needs (a recall in one scope of eight at
# 80k facts). Scanning 10k facts cost a propose in one scope 60 ms at 100k facts, where HNSW
# asked for its share of candidates costs a few.
FEW_VISIBLE_FACTS = 2_000
EXACT_SCAN_FACTS = 10_000


class PostgresIndex:
    def __init__(
        self, db: Engine, embedder: Embedder | None, *, backend: Backend, read_facts: FactReader
    ) -> None:
        self._db = db
        self._read_facts = read_facts
        self._embedder = embedder
        self._words = WordVectors(embedder) if embedder is not None else None
        self.name = backend.name
        self.capabilities = backend.usable(bool(embedder))
        self._docs = 0  # current facts, as the last catch-up saw them

    # -- the seam ---------------------------------------------------------------------------

    def catch_up(self) -> None:
        """Apply the writes logged in `fact_changes` to the derived tables (pg_derived.py)."""
        self._docs = pg_derived.sync(self._db, self._embedder)

    def rank(self, query: str, visibility: Visibility) -> Ranking:
        self.catch_up()
        with self._db.connect() as connection:
            return self._rank(connection, query, visibility)

    def candidates(self, text_: str, visibility: Visibility) -> list[ScoredCandidate]:
        self.catch_up()
        with self._db.connect() as connection:
            share = visible_share(connection, visibility)
            return self._candidates(connection, text_, visibility, share, None)

    def candidates_many(
        self,
        texts: Sequence[str],
        visibilities: Sequence[Visibility],
        vectors: np.ndarray | None,
        *,
        least: str = "weak",
    ) -> list[list[ScoredCandidate]]:
        """`candidates` for many texts (an import's dedup, BATCH_CANDIDATES): one catch-up and
        one connection for them all, and the texts' own vectors (`vectors`, one row each) when
        the caller has them. Every tier comes back whatever `least` asks: pgvector's search
        costs the same either way. A connection per text cost a pool check-out, a ping and a
        rollback each: four fifths of a server import's time went to its dedup."""
        self.catch_up()
        results = []
        with self._db.connect() as connection:
            shares: dict[tuple[str, ...] | None, float] = {}  # an import has few scope sets
            for i, (text_, visibility) in enumerate(zip(texts, visibilities, strict=True)):
                scopes = tuple(visibility.scopes) if visibility.scopes is not None else None
                if scopes not in shares:
                    shares[scopes] = visible_share(connection, visibility)
                vector = vectors[i] if vectors is not None else None
                results.append(
                    self._candidates(connection, text_, visibility, shares[scopes], vector)
                )
        return results

    def _candidates(
        self,
        connection: Connection,
        text_: str,
        visibility: Visibility,
        share: float,
        vector: np.ndarray | None,
    ) -> list[ScoredCandidate]:
        if self._embedder is not None:
            if vector is None:
                vector = self._embedder.embed([text_])[0]
            rows = self._nearest(
                connection, vector, visibility, share, MAX_CANDIDATES * 4, whole=True
            )
            scored = {rid: score for rid, score in rows.items() if score >= SEMANTIC_TIERS.weak}
            tiers = SEMANTIC_TIERS
        else:
            terms = query_terms(connection, text_)
            lexical = best_bm25(connection, terms, visibility, LEXICAL_SHORTLIST, share=share)
            texts = self._read_facts(connection, lexical)
            scored = {rid: lexical_similarity(text_, texts[rid].text) for rid in lexical}
            tiers = LEXICAL_TIERS
        facts = self._read_facts(connection, scored)
        results = []
        for record_id in best_first_ids(scored, facts, len(scored)):
            tier = tier_of(scored[record_id], tiers)
            if tier is not None:
                results.append(ScoredCandidate(facts[record_id], round(scored[record_id], 4), tier))
        return results[:MAX_CANDIDATES]

    def exact_duplicate(self, content_hash: str, visibility: Visibility) -> IndexedFact | None:
        self.catch_up()
        with self._db.connect() as connection:
            where, params = visible(visibility, share=visible_share(connection, visibility))
            found = connection.scalar(
                text(
                    f"""SELECT s.record_id FROM fact_search s
                    WHERE s.content_hash = :hash AND {where}
                    ORDER BY s.created_at, s.record_id LIMIT 1"""
                ),
                {**params, "hash": content_hash},
            )
            return self._read_facts(connection, [found])[found] if found else None

    def duplicate_pairs(
        self,
        visibility: Visibility,
        *,
        limit: int | None = None,
        skip: Collection[frozenset[str]] = (),
        newest: int | None = None,
    ) -> PairsFound:
        """As the in-memory index does, over the visible facts (every scope, or one): every
        pair's whole-text cosine, or shared lexemes then rapidfuzz; the `newest` of them."""
        self.catch_up()
        where, params = visible(visibility)
        with self._db.connect() as connection:
            counted = text(f"SELECT count(*) FROM fact_search s WHERE {where}")
            count = int(connection.scalar(counted, params) or 0)
            if newest is not None and count > newest:
                inner, _ = visible(visibility, "n")
                where += f""" AND s.record_id IN (SELECT n.record_id FROM fact_search n
                    WHERE {inner} ORDER BY n.created_at DESC, n.record_id DESC LIMIT :newest)"""
                params = {**params, "newest": newest}
            if self._embedder is not None:
                rows = connection.execute(
                    text(
                        f"""SELECT s.record_id, s.collection, v.embedding::text AS vector
                        FROM fact_search s JOIN fact_vectors v
                            ON v.record_id = s.record_id AND v.row_no = 0
                        WHERE {where}"""
                    ),
                    params,
                ).all()
                found = semantic_pairs(rows)
            else:
                found = lexical_pairs(connection, where, params, self._read_facts)
            shown, total = best_of(found, limit, skip)
            facts = self._read_facts(connection, {rid for pair in shown for rid in pair[:2]})
        pairs = []
        for left, right, score, tier, method in shown:
            a, b = sorted((facts[left], facts[right]), key=age)
            pairs.append(DuplicatePair(a, b, round(score, 4), tier, method))
        pairs.sort(key=lambda pair: (-pair.similarity, age(pair.left), age(pair.right)))
        compared = count if newest is None else min(count, newest)
        return PairsFound(pairs[:limit], total=total, compared=compared, visible=count)

    # -- ranking ----------------------------------------------------------------------------

    def _rank(self, connection: Connection, query: str, visibility: Visibility) -> Ranking:
        terms = query_terms(connection, query)
        share = visible_share(connection, visibility)
        lexical = best_bm25(connection, terms, visibility, MATCH_WINDOW, share=share)
        if self._embedder is None:
            order = best_first_keys(lexical, shortlisted(connection, set(lexical)), MATCH_WINDOW)
            only_lexical = MatchesReadAsReached(
                self._db,
                connection,
                order,
                lambda fact: Match(
                    fact, lexical[fact.record_id], ScoreParts(lexical[fact.record_id])
                ),
                self._read_facts,
            )
            return Ranking(only_lexical, "lexical")
        # Fewer lexical hits than the window: every fact sharing a lexeme is among them, and
        # a fact the semantic leg adds has no BM25 to look up.
        every_lexical_hit = len(lexical) < MATCH_WINDOW
        ceiling = terms.ceiling
        words = QueryWords(connection, self._words, query)
        query_vector = self._embedder.embed([query])[0]
        keys: dict[str, Shortlisted] = {}
        bm25 = dict(lexical)
        aligned: dict[str, float] = {}
        coverage: dict[str, float] = {}

        def shortlist(more: set[str]) -> None:
            """Order keys, word alignment and BM25 of facts new to the shortlist."""
            more -= keys.keys()
            found = shortlisted(connection, more)
            keys.update(found)
            alignment, covered = words.scores(found)
            aligned.update(alignment)
            coverage.update(covered)
            if not every_lexical_hit:
                bm25.update(bm25_of(connection, terms, visibility, more - bm25.keys()))

        nearest = self._nearest(connection, query_vector, visibility, share)
        shortlist(set(lexical) | set(nearest))
        cosine = self._cosines(connection, query_vector, keys.keys() - nearest.keys(), nearest)
        fused = self._fuse(keys, bm25, ceiling, (aligned, coverage), cosine)
        if fused:
            # Pseudo-relevance feedback (Rocchio), as ranking.rank does: the query moves
            # towards its best first-pass facts' whole-text vectors, and the legs run again.
            first = best_first_keys(fused, keys, ranking.FEEDBACK_FACTS)
            query_vector = query_vector + ranking.FEEDBACK_WEIGHT * self._whole(connection, first)
            query_vector /= max(float(np.linalg.norm(query_vector)), 1e-12)
            nearest = self._nearest(connection, query_vector, visibility, share)
            shortlist(set(nearest))
            cosine = self._cosines(connection, query_vector, keys.keys() - nearest.keys(), nearest)
            fused = self._fuse(keys, bm25, ceiling, (aligned, coverage), cosine)

        def match(fact: IndexedFact) -> Match:
            r = fact.record_id
            lexical = bm25.get(r, 0.0) / ceiling if ceiling else 0.0
            return Match(fact, fused[r], ScoreParts(lexical, cosine[r], aligned[r]))

        order = best_first_keys(fused, keys, MATCH_WINDOW)
        return Ranking(
            MatchesReadAsReached(self._db, connection, order, match, self._read_facts), "hybrid"
        )

    @staticmethod
    def _fuse(
        pool: Iterable[str],
        bm25: dict[str, float],
        ceiling: float,
        words: tuple[dict[str, float], dict[str, float]],
        cosine: dict[str, float],
    ) -> dict[str, float]:
        """The hybrid score of each match: a shared lexeme, a word coverage at its floor, or
        a cosine at its floor (ranking.rank's rule; `words`: alignment and coverage)."""
        aligned, coverage = words
        fused = {}
        for record_id in pool:
            lexical = bm25.get(record_id, 0.0)
            if (
                lexical <= 0
                and coverage.get(record_id, 0.0) < ranking.WORD_MATCH_FLOOR
                and cosine[record_id] < ranking.SEMANTIC_MATCH_FLOOR
            ):
                continue
            normalised = lexical / ceiling if ceiling > 0 else 0.0
            fused[record_id] = (
                normalised
                + ranking.ALIGNMENT_WEIGHT * aligned.get(record_id, 0.0)
                + ranking.SEMANTIC_WEIGHT * cosine[record_id]
            )
        return fused

    def _nearest(
        self,
        connection: Connection,
        vector: np.ndarray,
        visibility: Visibility,
        share: float,
        limit: int = MATCH_WINDOW,
        *,
        whole: bool = False,
    ) -> dict[str, float]:
        """The visible facts closest to `vector` (best row, or the whole text's row only),
        at most `limit`, with their cosines clipped to [0, 1]. `share`: the part of the
        store the visibility sees (pg_support.visible_share)."""
        rows_wanted = limit if whole else limit * ROWS_PER_FACT
        visible_facts = share * self._docs
        # HNSW returns at most ef_search candidates, and pgvector 0.6 filters them after: ask
        # for enough that the visible share of them is what is wanted (a quarter more under a
        # filter: the share is an estimate), then for the most it gives.
        wanted = rows_wanted if share >= 1 else ceil(rows_wanted / max(share, 1e-9) * 1.25)
        if (
            # A small store, or few visible facts: cheaper scanned than searched.
            self._docs * ROWS_PER_FACT <= SMALL_STORE_ROWS * rows_wanted
            or visible_facts <= FEW_VISIBLE_FACTS
            # HNSW cannot give that many, and the visible facts are few enough to scan.
            or (wanted > MAX_EF_SEARCH and visible_facts <= EXACT_SCAN_FACTS)
        ):
            attempts: list[int | None] = [None]
        else:
            # Past the most HNSW gives, its rows are taken as they are.
            first = min(max(wanted, 40), MAX_EF_SEARCH)
            attempts = [first] if first == MAX_EF_SEARCH else [first, MAX_EF_SEARCH]
        found: dict[str, float] = {}
        for ef_search in attempts:
            exact = ef_search is None
            # The exact scan of a narrow visibility reads its scopes' index; an HNSW query
            # checks each candidate's scopes as it comes.
            where, params = visible(visibility, share=share if exact else 1.0)
            params.update(q=pg_derived.vector_literal(vector), rows=rows_wanted)
            if not exact:
                connection.execute(text(f"SET LOCAL hnsw.ef_search = {ef_search}"))
            # `+ 0` keeps the planner off the HNSW index: the exact scan of the visible rows.
            order = "(v.embedding <=> CAST(:q AS vector))" + (" + 0" if exact else "")
            rows = connection.execute(
                text(
                    f"""SELECT v.record_id, 1 - (v.embedding <=> CAST(:q AS vector)) AS cosine
                    FROM fact_vectors v JOIN fact_search s ON s.record_id = v.record_id
                    WHERE {where} {"AND v.row_no = 0" if whole else ""}
                    ORDER BY {order} LIMIT :rows"""
                ),
                params,
            ).all()
            found = {}
            for row in rows:
                found[str(row[0])] = max(found.get(str(row[0]), 0.0), float(row[1]))
            if len(rows) == rows_wanted:
                break
        ranked = sorted(found.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return {record_id: float(np.clip(cosine, 0.0, 1.0)) for record_id, cosine in ranked}

    def _cosines(
        self,
        connection: Connection,
        vector: np.ndarray,
        ids: Iterable[str],
        known: dict[str, float],
    ) -> dict[str, float]:
        """`known` (the nearest facts' best cosines) and, for `ids`, each fact's best cosine
        (whole text or a sentence) to `vector`, clipped to [0, 1]."""
        found = dict(known)
        wanted = list(ids)
        if wanted:
            found.update(dict.fromkeys(wanted, 0.0))
            rows = connection.execute(
                text(
                    """SELECT record_id, max(1 - (embedding <=> CAST(:q AS vector)))
                    FROM fact_vectors WHERE record_id = ANY(:ids) GROUP BY record_id"""
                ),
                {"q": pg_derived.vector_literal(vector), "ids": wanted},
            )
            found.update((str(row[0]), min(max(float(row[1]), 0.0), 1.0)) for row in rows)
        return found

    def _whole(self, connection: Connection, ids: Sequence[str]) -> np.ndarray:
        """The mean whole-text vector of `ids`."""
        rows = connection.execute(
            text(
                """SELECT embedding::text FROM fact_vectors
                WHERE record_id = ANY(:ids) AND row_no = 0"""
            ),
            {"ids": list(ids)},
        ).all()
        return cast(np.ndarray, np.mean([pg_derived.parse_vector(row[0]) for row in rows], axis=0))
