"""A CLI-like writer for test_stress.py: one process that opens the engine the way the CLI does
(engine.facade.open_service) and adds COUNT distinct facts, one remember call each.

Run as: python stress_writer.py HOME NAME COUNT OUT.jsonl GO_FILE
It waits for GO_FILE to exist (so every writer starts at once), then writes one JSON line per
call to OUT.jsonl: the remember result, or {"error": ...} for a contract error, or
{"crash": "<traceback>"} for anything else."""

from __future__ import annotations

import json
import sys
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engine.contract.errors import MemoryFailure
from engine.facade.service import open_service
from engine.memory.remember import RememberRequest


def main() -> int:
    home, name, count, out, go = (
        sys.argv[1],
        sys.argv[2],
        int(sys.argv[3]),
        sys.argv[4],
        sys.argv[5],
    )
    memory = open_service(home=home)
    deadline = time.monotonic() + 120
    while not Path(go).exists():
        if time.monotonic() > deadline:
            return 3
        time.sleep(0.01)
    with Path(out).open("w", encoding="utf-8") as lines:
        for index in range(count):
            request = RememberRequest(
                text=f"Stress fact {index} written by {name}: the {name} ledger entry {index}",
                scopes=["stress", f"writer:{name}"],
                caller=f"cli:{name}",
                session=f"{name}-session",
                decision="add",
            )
            line: Mapping[str, Any]
            try:
                line = memory.remember(request)
            except MemoryFailure as failure:
                line = failure.to_json()
            except Exception:  # noqa: BLE001 - reported to the test, which fails on it
                line = {"crash": traceback.format_exc()}
            lines.write(json.dumps(line) + "\n")
    memory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
