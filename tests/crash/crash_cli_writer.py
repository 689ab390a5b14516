"""A CLI writer for test_crash_kill.py: a loop of `gno-tui remember --add` and
`gno-tui remember --supersede` launches of the installed console script, as an agent's shell
would run them, until the test SIGKILLs this process and its children.

Run as: python crash_cli_writer.py GNO_TUI HOME SEED NAME COUNT

A supersede first asks `gno-tui recall ledger --scope chain:cN --json` for the chain's head (the
chains are shared by every writer of the test, so a writer may meet what an earlier, killed one
left behind) and supersedes the first fact it returns with the contentHash it read.

One JSON line per event on stdout, flushed at once (the test counts acknowledgements as they
come, to pick its kill point):

- {"event": "ready"}
- {"event": "ack", "kind": "gno", "result": <remember result>}: the console script exited 0 and
  printed outcome added/superseded with a completed sync: an acknowledged write
- {"event": "refused", "code": CODE}: a conflict (exit 4), which a racing writer may cause
- {"event": "unexpected", ...}: anything else (another code, a traceback, no JSON); the test
  fails on it
- {"event": "done"}"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

CHAINS = ("chain:c0", "chain:c1", "chain:c2", "chain:c3")
CONFLICTS = ("MEMORY_SUPERSEDE_CONFLICT", "MEMORY_WRITE_LEASE_BUSY")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def words(rng: random.Random, count: int) -> str:
    """Random made-up words: texts that are not near-duplicates of one another."""
    return " ".join(
        "".join(rng.choice(LETTERS) for _ in range(rng.randint(4, 9))) for _ in range(count)
    )


def run(script: str, home: str, *args: str) -> tuple[int, Any, str]:
    done = subprocess.run(
        [script, "--home", home, *args], capture_output=True, text=True, timeout=60, check=False
    )
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        doc = None
    return done.returncode, doc, done.stderr


def report(args: list[str], code: int, doc: Any, stderr: str) -> None:
    if (
        code == 0
        and isinstance(doc, dict)
        and doc.get("outcome") in ("added", "superseded")
        and doc.get("sync") == {"status": "completed"}
    ):
        emit({"event": "ack", "kind": "gno", "result": doc})
    elif code == 4 and isinstance(doc, dict) and doc.get("error", {}).get("code") in CONFLICTS:
        emit({"event": "refused", "code": doc["error"]["code"]})
    else:
        emit(
            {
                "event": "unexpected",
                "args": args,
                "returncode": code,
                "doc": doc,
                "stderr": stderr[-3000:],
            }
        )


def main() -> int:
    script, home, seed, name, count = sys.argv[1:6]
    rng = random.Random(f"{seed}:{name}")
    emit({"event": "ready"})
    for index in range(int(count)):
        if rng.random() < 0.5:
            args = [
                "remember",
                f"{name} note {index}: {words(rng, 6)}",
                "--scope",
                "crash",
                "--scope",
                f"writer:{name}",
                "--add",
                "--json",
            ]
        else:
            chain = rng.choice(CHAINS)
            lookup = ["recall", "ledger", "--scope", chain, "--max-facts", "8", "--json"]
            code, doc, stderr = run(script, home, *lookup)
            if code != 0 or not isinstance(doc, dict) or not doc.get("facts"):
                emit(
                    {
                        "event": "unexpected",
                        "args": lookup,
                        "returncode": code,
                        "doc": doc,
                        "stderr": stderr[-3000:],
                    }
                )
                continue
            head = doc["facts"][0]
            args = [
                "remember",
                f"{chain} ledger {name} {index}: {words(rng, 6)}",
                "--supersede",
                head["uri"],
                "--predecessor-hash",
                head["contentHash"],
                "--json",
            ]
        report(args, *run(script, home, *args))
    emit({"event": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
