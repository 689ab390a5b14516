"""Output for people (the CLI without --json): rich tables and a progress bar on a terminal.

Everything printed here that came from the store or the command line (fact texts, scopes,
callers, sources, uris, paths, reasons) is data, never Rich markup: it goes into `Text`
objects (markup and emoji codes are not parsed in them), and control characters and bidi
overrides are shown as escapes so that a fact cannot colour, hide, reorder or rewrite the
terminal. Only the literal strings of this module carry styles."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from engine.facade import (
        CollectionRecord,
        ImportReport,
        NoMatch,
        Proposal,
        ReindexReport,
        RememberResult,
    )

# On a terminal Rich wraps to the terminal's width. Piped or redirected, nothing is wrapped at
# a guessed 80 columns: a line (a file path, a uri) stays whole for grep, cut and copy, and a
# table is as wide as its cells.
PIPE_WIDTH = 100_000
console = Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else PIPE_WIDTH)

# Bidi embeddings, overrides and isolates reorder what follows them on the screen.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _visible(value: object) -> str:
    """`value` as text with control characters (ESC, NUL, CR, ...) and bidi controls written
    as escapes (`\\x1b`, `\\u202e`); tabs and newlines are kept."""
    text = str(value)
    if text.isprintable():
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\n\t" or (ch.isprintable() and ch not in _BIDI_CONTROLS):
            out.append(ch)
        elif code < 0x20 or 0x7F <= code < 0xA0 or ch in _BIDI_CONTROLS:
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)  # other non-printables (spaces, format characters) are harmless
    return "".join(out)


def plain(value: object, style: str = "") -> Text:
    """Data as a Text: never parsed as markup, controls escaped."""
    return Text(_visible(value), style=style)


def line(*parts: str | Text | tuple[str, str]) -> Text:
    """A line of literal pieces (this module's own words) and data (`Text`, or `(data, style)`);
    plain `str` parts are this module's own text and are not parsed as markup either."""
    assembled = Text()
    for part in parts:
        if isinstance(part, tuple):
            assembled.append(plain(*part))
        else:
            assembled.append(part)
    return assembled


def say(*parts: str | Text | tuple[str, str]) -> None:
    console.print(line(*parts))


def _short(text: str, width: int = 70) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _cell(value: object, width: int | None = None) -> Text:
    return plain(_short(str(value), width) if width else value)


def render_remember(result: RememberResult) -> None:
    outcome = result["outcome"]
    matching = result["matching"]
    method: str = matching["mode"]
    if matching.get("semanticUnavailable"):
        method += f" ({matching['semanticUnavailable']})"
    if outcome in ("added", "superseded", "existing"):
        record = result["record"]
        say((outcome, "bold"), " ", plain(record["docid"]), " ", plain(record["uri"]))
        say("  ", plain(_short(record["text"], 100)))
        if outcome != "existing":
            if result["absPath"] != record["uri"]:  # server mode: no file, absPath is the uri
                say("  file: ", plain(result["absPath"]))
            sync = result["sync"]
            if sync["status"] == "failed":
                say("  ", ("index sync failed:", "red"), " ", plain(sync.get("error", "")))
        return
    candidates = result["candidates"]
    say(
        ("candidates", "bold"),
        f": {len(candidates)} (matching ",
        plain(method),
        f", likely ≥ {matching['threshold']}); nothing was written.",
    )
    if candidates:
        table = Table("tier", "similarity", "docid", "text")
        table.add_column("uri", overflow="fold")
        for c in candidates:
            table.add_row(
                _cell(c["match"]),
                f"{c['similarity']:.3f}",
                _cell(c["docid"]),
                _cell(c["text"], 50),
                _cell(c["uri"]),
            )
        console.print(table)
    say("Write it with --add, or replace one with --supersede URI --predecessor-hash HASH.")


def _say_no_match(no_match: NoMatch | None, hint: str) -> None:
    say(plain(no_match.message if no_match else hint))
    if no_match is not None and no_match.reason == "empty":
        say('Store one with: gno-tui remember "<fact>" --scope <scope> --add')


def render_recall(result: Mapping[str, Any], fmt: str, *, no_match: NoMatch | None = None) -> None:
    """A recall (gno) or its OB1 shape (ob1); `no_match` says why nothing was returned."""
    if fmt == "ob1":
        if result["memories"]:
            table = Table("memory_id", "status", "summary")
            for memory in result["memories"]:
                table.add_row(
                    _cell(memory["memory_id"]),
                    _cell(memory["provenance"]["status"]),
                    _cell(memory["summary"], 70),
                )
            console.print(table)
        else:
            _say_no_match(no_match, "No memory matched.")
        say("request_id (receipt digest): ", plain(result["request_id"]))
        return
    budget, retrieval = result["budget"], result["retrieval"]
    mode = retrieval["mode"]
    if retrieval.get("semanticUnavailable"):
        mode += f" ({retrieval['semanticUnavailable']})"
    if not result["facts"]:
        _say_no_match(no_match, result.get("hint", "No facts."))
    else:
        table = Table("#", "score", "docid", "text", "egress")
        for rank, fact in enumerate(result["facts"], start=1):
            table.add_row(
                str(rank),
                f"{fact['score']:.3f}",
                _cell(fact["docid"]),
                _cell(fact["text"], 60),
                _cell(fact["egressLineage"]["effectivePolicy"]),
            )
        console.print(table)
    say(
        "retrieval ",
        plain(mode),
        f"; tokens {budget['usedTokens']}/{budget['maxTokens']}, "
        f"{len(result['facts'])}/{budget['maxFacts']} facts, {budget['omitted']} omitted",
    )
    if "egressLineage" in result:
        say("lineage: ", plain(result["egressLineage"]["effectivePolicy"]))
    say("receipt ", plain(result["receipt"]["digest"]))


def collection_json(row: CollectionRecord) -> dict[str, Any]:
    return {
        "name": row.name,
        "root": row.root or None,  # None: server mode, the collection has no folder
        "policy": row.policy,
        "policySource": row.policy_source,
        "policyRevision": row.policy_revision,
    }


def render_collections(rows: list[CollectionRecord]) -> None:
    table = Table("name", "policy", "source", "revision")
    # A narrow terminal folds the root onto more lines rather than cutting it short.
    table.add_column("root", overflow="fold")
    for row in rows:
        table.add_row(
            _cell(row.name),
            _cell(row.policy),
            _cell(row.policy_source),
            str(row.policy_revision),
            _cell(row.root or "(in the database)"),
        )
    console.print(table)


def render_proposals(proposals: list[Proposal]) -> None:
    if not proposals:
        say("The review queue is empty.")
        return
    table = Table("id", "state", "decision", "caller", "scopes", "text", "candidates")
    for p in proposals:
        table.add_row(
            _cell(p["id"]),
            _cell(p["state"]),
            _cell(p["decision"]),
            _cell(p["caller"]),
            _cell(", ".join(str(scope) for scope in p["scopes"])),
            _cell(p["text"], 50),
            str(len(p["candidates"])),
        )
    console.print(table)


def render_reindex(report: ReindexReport) -> None:
    say(
        f"{report['indexed']} facts indexed from {report['files']} files: "
        f"{report['added']} added, {report['changed']} changed, {report['removed']} removed."
    )
    for problem in report["problems"]:
        say("  skipped: ", plain(problem))
    # Forks and duplicate record ids stay on disk until a person removes the extra files, so
    # every reindex names them (docs/decisions.md, "Crash and corruption"). Their lines are
    # not wrapped by Rich (the terminal wraps them), so a path or uri can be copied whole.
    for fork in report.get("forks", []):
        if "predecessor" in fork:
            what = line("two or more facts supersede ", plain(fork["predecessor"]))
        else:
            what = line(
                "two or more facts hold revision ",
                plain(fork.get("revision")),
                " of key ",
                plain(fork.get("key")),
            )
        _say_unwrapped(
            ("  fork: ", "bold yellow"),
            what,
            ": kept ",
            plain(fork.get("kept")),
            ", not indexed ",
            plain(", ".join(str(uri) for uri in fork.get("notKept", []))),
            " (",
            plain(fork.get("reason")),
            ")",
        )
    for duplicate in report.get("duplicates", []):
        _say_unwrapped(
            ("  duplicate record id ", "bold yellow"),
            plain(duplicate.get("recordId")),
            ": indexed ",
            plain(duplicate.get("kept")),
            ", ignored ",
            plain(", ".join(str(path) for path in duplicate.get("ignored", []))),
        )
    if report.get("forks") or report.get("duplicates"):
        say(
            "  The files not indexed stay on disk, untouched: remove (or move out of the "
            "collection) the ones that should not be there, then run `gno-tui reindex` again."
        )
    for note in report.get("notes", []):
        _say_unwrapped("  note: ", plain(note))


def _say_unwrapped(*parts: str | Text | tuple[str, str]) -> None:
    console.print(line(*parts), soft_wrap=True)


def render_import(report: ImportReport, *, dry_run: bool) -> None:
    verb = "would be" if dry_run else "were"
    say(
        f"{len(report.actions)} items: {report.count('add')} {verb} added, "
        f"{report.count('skip')} skipped, {report.count('propose')} {verb} queued for review."
    )
    for action in report.actions:
        if action["action"] != "add":
            say(
                "  ",
                plain(action["action"]),
                ": ",
                plain(action["where"]),
                ": ",
                plain(action["reason"]),
            )


def render_export(count: int, output: str) -> None:
    say(f"{count} fact files written to ", plain(output))


@contextmanager
def progress_reporter(*, enabled: bool, label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on a terminal; nothing with --json or when output is not a terminal."""
    if not enabled or not sys.stdout.isatty():
        yield None
        return
    from rich.progress import Progress

    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(label, total=None)

        def report(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield report
