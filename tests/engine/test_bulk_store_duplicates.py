"""A bulk write skips a text the store already holds in one of the fact's scopes, and only
then: the store is asked about the texts about to be written (a batch looked up at once, or
a fact added without that, looked up alone), not read whole when the write begins."""

from __future__ import annotations

import pytest

from engine.contract.normalize import content_hash
from engine.storage.bulk import BulkFact, add_many
from engine.storage.bulk.writer import BulkWriter


def fact(text: str, scope: str) -> BulkFact:
    return BulkFact(text=text, scopes=[scope], caller="tester", session="s1")


@pytest.mark.parametrize("looked_up", [True, False])
def test_a_bulk_write_skips_only_the_texts_held_in_a_shared_scope(engine, looked_up):
    add_many(engine, [fact("Alice drinks green tea", "user:alice")], durable=False)
    add_many(engine, [fact("Bob keeps two cats", "user:bob")], durable=False)
    incoming = [
        fact("Alice drinks green tea", "user:alice"),  # held in its scope: skipped
        fact("Alice drinks green tea", "user:carol"),  # another scope: written
        fact("Bob keeps two cats", "team:pets"),  # another scope: written
        fact("Bob keeps two cats", "user:bob"),  # held in its scope: skipped
        fact("A new text entirely", "user:alice"),
        fact("A new text entirely", "user:alice"),  # the write's own text: skipped
    ]
    with BulkWriter(engine, expected=len(incoming), durable=False) as writer:
        if looked_up:
            writer.look_up(content_hash(item.text) for item in incoming)
        added = [writer.add(item) for item in incoming]
        report = writer.commit()
    assert [record is not None for record in added] == [False, True, True, False, True, False]
    again = add_many(engine, incoming, durable=False)  # all of them held now
    assert again.added == [] and again.skipped == list(range(len(incoming)))
    assert len(report.added) == 3
