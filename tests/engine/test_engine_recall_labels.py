"""Labels on recall results: relevant / irrelevant for what a recall returned, missing for
what it should have returned; one label per person, receipt and fact."""

from __future__ import annotations

import pytest

from engine.contract.errors import MemoryFailure
from engine.curation.labels import label_recall_item, label_summary, labels_of
from engine.memory.receipts import delete_receipts

PERSON = "tui:alice"


def test_labels_are_kept_per_receipt_and_summed_into_a_precision(client, engine):
    tea = client.add("Alice drinks green tea", "user:alice")["record"]
    coffee = client.add("Alice drinks coffee at work", "user:alice")["record"]
    quiet = client.add("Alice likes quiet mornings", "user:alice")["record"]
    result = client.recall("drinks", ["user:alice"])
    digest = result["receipt"]["digest"]
    returned = {f["recordId"] for f in result["facts"]}
    assert {tea["recordId"], coffee["recordId"]} <= returned
    assert quiet["recordId"] not in returned

    label_recall_item(engine, digest=digest, ref=tea["uri"], label="relevant", actor=PERSON)
    label_recall_item(engine, digest=digest, ref=coffee["docid"], label="relevant", actor=PERSON)
    # Labelling again replaces the label.
    label_recall_item(engine, digest=digest, ref=coffee["docid"], label="irrelevant", actor=PERSON)
    label_recall_item(engine, digest=digest, ref=quiet["uri"], label="missing", actor=PERSON)
    assert labels_of(engine, digest=digest, actor=PERSON) == {
        tea["recordId"]: "relevant",
        coffee["recordId"]: "irrelevant",
        quiet["recordId"]: "missing",
    }
    # Another person's labels are their own.
    assert labels_of(engine, digest=digest, actor="tui:bob") == {}
    summary = label_summary(engine, actor=PERSON)
    assert (summary.receipts, summary.relevant, summary.irrelevant, summary.missing) == (
        1,
        1,
        1,
        1,
    )
    assert summary.precision == pytest.approx(0.5)
    # `none` takes a label away.
    label_recall_item(engine, digest=digest, ref=coffee["uri"], label="none", actor=PERSON)
    assert label_summary(engine, actor=PERSON).precision == 1.0
    # Deleting the receipt deletes its labels.
    delete_receipts(engine, digests=[digest], actor=PERSON)
    assert label_summary(engine, actor=PERSON).receipts == 0


def test_a_label_must_fit_what_the_recall_returned(client, engine):
    tea = client.add("Alice drinks green tea", "user:alice")["record"]
    quiet = client.add("Bob likes quiet mornings", "user:alice")["record"]
    digest = client.recall("green tea", ["user:alice"])["receipt"]["digest"]

    def refused(ref, label, code, hint, digest=digest):
        with pytest.raises(MemoryFailure) as caught:
            label_recall_item(engine, digest=digest, ref=ref, label=label, actor=PERSON)
        assert caught.value.code == code
        assert hint in caught.value.message

    refused(tea["uri"], "missing", "MEMORY_DECISION_INVALID", "label it relevant or irrelevant")
    refused(quiet["uri"], "relevant", "MEMORY_DECISION_INVALID", "label it missing instead")
    refused(tea["uri"], "useful", "MEMORY_DECISION_INVALID", "use one of")
    refused("#00000000", "relevant", "MEMORY_NOT_FOUND", "#docid or uri")
    refused(tea["uri"], "relevant", "MEMORY_RECEIPT_INVALID", "run the recall again", "0" * 64)
    assert labels_of(engine, digest=digest, actor=PERSON) == {}
