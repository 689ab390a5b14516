"""The writer of tests/cli/test_cli_backup.py's backup-while-writing test: supersedes one
chain's head over and over through the façade until the STOP file exists, printing each
acknowledged write as a JSON line with the time it was acknowledged (CLOCK_MONOTONIC, which
the test's own clock shares).

    python backup_writer.py HOME STOP"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

WRITER_CHAIN = "chain:w"


def writer_main(home: Path, stop: Path) -> None:
    from engine.facade import RememberRequest, open_service

    service = open_service(home=home)
    head = service.remember(
        RememberRequest(
            text="writer version 0",
            scopes=[WRITER_CHAIN],
            caller="test:writer",
            session="w",
            decision="add",
        )
    )["record"]
    number = 0
    while not stop.exists():
        number += 1
        result = service.remember(
            RememberRequest(
                text=f"writer version {number}",
                scopes=None,
                decision="supersede",
                predecessor=head["uri"],
                predecessor_hash=head["contentHash"],
                caller="test:writer",
                session="w",
            )
        )
        head = result["record"]
        print(
            json.dumps({"n": number, "recordId": head["recordId"], "at": time.monotonic()}),
            flush=True,
        )
    service.close()


if __name__ == "__main__":
    os.environ.setdefault("GNO_TUI_MODEL", "/nonexistent/gno-tui-test-model")
    writer_main(Path(sys.argv[1]), Path(sys.argv[2]))
