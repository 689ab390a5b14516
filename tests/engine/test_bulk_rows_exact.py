"""A bulk write's rows are what its fact files say, to the byte, however odd the text: on SQLite
they go in as one JSON array per batch (engine/storage/embedded/sqlite_batch.py), on PostgreSQL as
parameters; reindex, which reads every file back, finds nothing to change."""

from __future__ import annotations

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.retrieval.embeddings import embed_facts, vector_from_bytes
from engine.storage.bulk import BulkFact, add_many
from engine.storage.reindex import reindex
from engine.storage.schema import tables

ODD_TEXTS = [
    'She said "no" and left',
    "A back\\slash, a tab\tand a new\nline",
    "Emoji stay whole: 🦊 and 👩‍👩‍👧 and 𝄞",
    "Accents: café, naïve, Ærøskøbing; CJK: 東京",
    'JSON lookalikes: [1, 2] {"a": null} \\u0041',
    "Control-ish: \u2028 line separator and \u00a0 no-break space",
    "Quotes ' and ` and a trailing backslash \\",
]


def test_bulk_rows_match_their_files_and_vectors_for_odd_texts(semantic_engine):
    facts = [
        BulkFact(text=text, scopes=[f"odd:{n}", "shared"], caller="tester", session="s1")
        for n, text in enumerate(ODD_TEXTS)
    ]
    facts.append(
        BulkFact(
            text="A restored fact keeps its fields",
            scopes=["shared"],
            caller="tester",
            session="s1",
            source='notes, page 3 — "quoted"',
            workbench={"pinned": True, "labels": ["ünïcode", 'a"b']},
            created_at="2026-03-04T05:06:07.089Z",
        )
    )
    report = add_many(semantic_engine, facts, durable=False)
    assert len(report.added) == len(facts)
    with Session(semantic_engine.db) as session:
        rows = {row.record_id: row for row in session.scalars(select(tables.FactRow))}
        vectors = {row.record_id: row for row in session.scalars(select(tables.EmbeddingRow))}
        scopes = session.execute(
            select(col(tables.FactScopeRow.record_id), col(tables.FactScopeRow.scope))
        )
        scope_rows = sorted(tuple(r) for r in scopes)
    assert [rows[record_id].text for record_id in report.added] == [f.text for f in facts]
    restored = rows[report.added[-1]]
    assert restored.source == facts[-1].source
    assert restored.workbench["labels"] == ["ünïcode", 'a"b']
    assert restored.created_at is not None
    assert restored.created_at.isoformat().startswith("2026-03-04T05:06:07.089")
    assert scope_rows == sorted(
        (record_id, scope)
        for record_id, f in zip(report.added, facts, strict=True)
        for scope in f.scopes
    )
    embedder = semantic_engine.embedder_status.embedder
    expected = embed_facts(embedder, [f.text for f in facts])
    for record_id, block in zip(report.added, expected, strict=True):
        stored = vectors[record_id]
        assert stored.model_id == embedder.model_id
        assert stored.content_hash == rows[record_id].content_hash
        assert np.array_equal(vector_from_bytes(stored.vector, embedder.dims), block)
    found = reindex(semantic_engine)
    assert (found["added"], found["changed"], found["removed"]) == (0, 0, 0)
    assert found["indexed"] == len(facts)


def test_a_bulk_write_replaces_a_vector_left_behind_under_its_record_id(semantic_engine):
    """A vector whose fact reindex took out of the index stays in the table; a fact written
    again under that record id (an export restored) gets its own vector, not a clash."""
    record_id = "mem-00000000000000aa"
    with Session(semantic_engine.db) as session:
        session.add(
            tables.EmbeddingRow(
                record_id=record_id, model_id="old-model", content_hash="0" * 64, vector=b"\0" * 8
            )
        )
        session.commit()
    fact = BulkFact(text="Back again", scopes=["s"], caller="c", session="s", record_id=record_id)
    assert add_many(semantic_engine, [fact], durable=False).added == [record_id]
    embedder = semantic_engine.embedder_status.embedder
    with Session(semantic_engine.db) as session:
        stored = session.get(tables.EmbeddingRow, record_id)
    assert stored is not None and stored.model_id == embedder.model_id
    assert np.array_equal(
        vector_from_bytes(stored.vector, embedder.dims), embed_facts(embedder, ["Back again"])[0]
    )
