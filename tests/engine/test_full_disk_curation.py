"""A person's decisions on a full disk (issue 39, item 3): deciding a proposal, retiring a
fact, writing a chain's new head and changing a collection's policy each say the disk is
full, change nothing (the proposal stays pending, the fact current, the log as it was), and
work once space is freed. The home lives on a small tmpfs the test fills (tests/small_disk.py);
the service keeps the index open, so each decision fails where it writes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from small_disk import fill, mounted_small_disk

from engine.contract.errors import MemoryFailure
from engine.curation.chain_edits import ChainEdit
from engine.curation.review import Decision
from engine.facade.curation import Curation, CurationAction
from engine.facade.service import MemoryService, open_service
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus

pytestmark = pytest.mark.embedded_mode

PERSON = "person:curator"
LONG = " ".join(f"w{n}" for n in range(700))  # a fact file of about 3.5 KiB


def _state(service: MemoryService) -> dict[str, Any]:
    """What a person sees of the store: fact counts by status, policies, the decision log."""
    log = [(entry["action"], entry["target"]) for entry in service.curation.decision_log()]
    policies = {row.name: row.policy for row in service.collections()}
    return {"counts": service.facts.status_counts(), "policies": policies, "log": log}


def _says_the_disk_is_full(attempt: Callable[[], object], disk: Path) -> str:
    with pytest.raises(MemoryFailure) as caught:
        attempt()
    assert caught.value.code == "MEMORY_SYNC_FAILED", caught.value
    message = str(caught.value)
    assert "The disk is full" in message and str(disk) in message, message
    assert "free some space" in message.lower(), message
    return message


# 0 KiB: not even the decision's claim is written; 8: the claim is, the fact file is not;
# 16: the fact file is, the index's commit is not (the next write settles the file).
@pytest.mark.parametrize("leave_kib", [0, 8, 16])
def test_decisions_on_a_full_disk_say_so_change_nothing_and_work_after(
    tmp_path: Path, leave_kib: int
) -> None:
    with mounted_small_disk(tmp_path) as disk:
        service = open_service(home=disk / "home", embedder_status=EmbedderStatus(None, "off"))
        try:
            added = service.remember(
                RememberRequest("Bob lives in Paris", ["user:bob"], "test:agent", "s", "add")
            )
            head = added["record"]
            text = f"Alice drinks green tea {LONG}"
            held = RememberRequest(text, ["user:alice"], "test:agent", "s", "add")
            assert service.remember(held, hold_writes=True, origin="mcp")["outcome"] == "candidates"
            (proposal,) = service.curation.proposals()
            before = _state(service)
            filler = fill(disk, leave_kib)

            decide = Decision(proposal["id"], "add", actor=PERSON)
            retire = Curation(CurationAction.RETIRE, head["uri"], PERSON, reason="moved")
            new_head = ChainEdit(head["uri"], head["contentHash"], f"Bob lives in Berlin {LONG}",
                                 PERSON, "workbench")  # fmt: skip
            attempts: list[Callable[[], object]] = [
                lambda: service.curation.decide(decide),
                lambda: service.curation.curate(retire),
                lambda: service.curation.edit_chain(new_head),
                lambda: service.set_policy("memory", "remote", actor=PERSON),
            ]
            for attempt in attempts:
                _says_the_disk_is_full(attempt, disk)
                assert _state(service) == before  # no fact, policy or decision changed
            (still,) = service.curation.proposals(state=None)
            assert still["state"] in ("pending", "deciding")  # not decided

            filler.unlink()
            # Listing the queue settles a decision cut short: pending again, or decided with
            # the fact it wrote. Either way the fact is stored once.
            if service.curation.proposals():
                decided: Mapping[str, Any] = service.curation.decide(decide)
                assert decided["outcome"] == "added"
            assert service.curation.proposals() == []
            (decided,) = service.curation.proposals(state=None)
            assert decided["state"] == "added"
            service.remember(RememberRequest("Carol reads", ["user:carol"], "a", "s", "add"))
            assert service.facts.status_counts()["current"] == 3  # Bob, Alice once, Carol
            service.curation.curate(retire)
            assert service.facts.status_counts()["retired"] == 1
        finally:
            service.close()
