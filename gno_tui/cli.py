"""The `gno-tui` command line (docs/contract.md section 11).

Only argparse is imported up front: the engine, rich and textual load when a command needs
them, so `gno-tui --version` and `--help` answer at once."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from gno_tui import __version__
from gno_tui.cli_io import emit_json

POLICIES = ("local_only", "lan", "remote")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """Argument errors become MEMORY_USAGE_INVALID (exit 1, JSON with --json), not argparse's 2,
    which the contract reserves for store failures."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}. See `{self.prog} --help`.")


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gno-tui",
        formatter_class=_formatter,
        description="A terminal workbench for an AI agent's memory. Without a command it opens "
        "the workbench.",
        epilog="examples:\n  gno-tui remember 'Alice prefers tea' --scope user:alice --add\n"
        "  gno-tui recall 'what does alice drink' --scope user:alice --json",
    )
    parser.add_argument(
        "--home", metavar="DIR", help="store folder (default $GNO_TUI_HOME or the user data folder)"
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="SQLAlchemy URL of the index (default $GNO_TUI_DB or sqlite in the home)",
    )
    parser.add_argument(
        "--model",
        metavar="PATH",
        help="model2vec model folder (default $GNO_TUI_MODEL or the bundled model)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="open the workbench on a throwaway store seeded with demo facts (deleted on exit)",
    )
    parser.add_argument("--version", action="version", version=f"gno-tui {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    remember = commands.add_parser(
        "remember",
        formatter_class=_formatter,
        help="store a fact, or ask which facts it repeats",
        description="Propose (default), add or supersede a fact. A propose writes nothing and "
        "answers the near-duplicate candidates.",
        epilog="examples:\n  gno-tui remember 'Alice moved to Lyon' --scope user:alice\n"
        "  gno-tui remember 'Alice moved to Lyon' --scope user:alice --add --json\n"
        "  gno-tui remember 'Alice lives in Paris' --supersede gno://memory/facts/2026-11-30/"
        "mem-0123456789abcdef.md --predecessor-hash <sha256>",
    )
    remember.add_argument("text", nargs="?", metavar="TEXT", help="the fact ('-' reads stdin)")
    remember.add_argument(
        "--scope",
        action="append",
        dest="scopes",
        metavar="S",
        help="a scope the fact belongs to (repeat for more; 1 to 8)",
    )
    remember.add_argument("--add", action="store_true", help="write it (decision add)")
    remember.add_argument(
        "--supersede", metavar="URI", help="replace this fact (decision supersede)"
    )
    remember.add_argument("--decision", metavar="D", help="propose | add | supersede")
    remember.add_argument("--predecessor", metavar="URI", help="the fact a supersede replaces")
    remember.add_argument("--predecessor-hash", metavar="HASH", help="its contentHash, as read")
    remember.add_argument("--source", metavar="TEXT", help="evidence: where the fact came from")
    remember.add_argument(
        "--receipt",
        metavar="FILE",
        help="the last recall's --json output or its receipt (fences replays)",
    )
    remember.add_argument("--derived-from", metavar="URI", help="the text was derived from this")
    _common(remember, collection=True, identity=True)

    recall = commands.add_parser(
        "recall",
        formatter_class=_formatter,
        help="facts relevant to a query, under a budget",
        description="Recall current facts in the given scopes, best first, within --max-facts "
        "and --max-tokens; issues a content-free receipt.",
        epilog="examples:\n  gno-tui recall 'where does alice live' --scope user:alice\n"
        "  gno-tui recall 'deadlines' --scope project:x --max-tokens 200 --egress lan --json",
    )
    recall.add_argument("query", nargs="?", metavar="QUERY")
    recall.add_argument("--scope", action="append", dest="scopes", metavar="S")
    recall.add_argument("--max-facts", default="8", metavar="N", help="at most N facts (8)")
    recall.add_argument("--max-tokens", default="512", metavar="N", help="token budget (512)")
    recall.add_argument(
        "--egress", metavar="P", help="only facts that may leave for local_only | lan | remote"
    )
    recall.add_argument(
        "--format",
        default="gno",
        choices=("gno", "ob1"),
        help="result shape (gno: seed 001; ob1: OB1 recall response)",
    )
    _common(recall, collection=True, identity=True)

    collection = commands.add_parser(
        "collection",
        formatter_class=_formatter,
        help="list, add or re-police collections",
        description="Collections group facts under a root folder and an egress policy.",
        epilog="examples:\n  gno-tui collection add work --policy lan\n"
        "  gno-tui collection list --json\n  gno-tui collection set-policy work remote",
    )
    actions = collection.add_subparsers(dest="action", metavar="ACTION")
    add = actions.add_parser(
        "add",
        help="create a collection",
        formatter_class=_formatter,
        epilog="example:\n  gno-tui collection add work --policy lan",
    )
    add.add_argument("name", metavar="NAME")
    add.add_argument("--path", metavar="DIR", help="root folder (default under the home)")
    add.add_argument(
        "--policy", default="local_only", metavar="P", help="local_only (default) | lan | remote"
    )
    _common(add)
    listing = actions.add_parser(
        "list",
        help="show collections",
        formatter_class=_formatter,
        epilog="example:\n  gno-tui collection list --json",
    )
    _common(listing)
    policy = actions.add_parser(
        "set-policy",
        help="change a collection's egress policy",
        formatter_class=_formatter,
        epilog="example:\n  gno-tui collection set-policy work remote",
    )
    policy.add_argument("name", metavar="NAME")
    policy.add_argument("policy", metavar="P")
    _common(policy)

    review = commands.add_parser(
        "review",
        formatter_class=_formatter,
        help="the queue of writes held for a person",
        description="Open the workbench on the review queue; --list prints the pending "
        "proposals instead.",
        epilog="example:\n  gno-tui review --list --json",
    )
    review.add_argument("--list", action="store_true", help="print pending proposals")
    review.add_argument("--all", action="store_true", help="with --list: decided ones too")
    _common(review)

    reindex = commands.add_parser(
        "reindex",
        formatter_class=_formatter,
        help="rebuild the index from the fact files",
        description="The fact files are canonical; this makes the index agree with them.",
        epilog="example:\n  gno-tui reindex --json",
    )
    _common(reindex)

    importer = commands.add_parser(
        "import",
        formatter_class=_formatter,
        help="bring facts in from OB1, GNO, mem0 or JSONL",
        description="Import facts. The whole file is checked first (an error names the file and "
        "line and nothing is written). Exact duplicates are skipped, likely duplicates wait in "
        "the review queue, the rest are added as `imported`.",
        epilog="examples:\n  gno-tui import memories.jsonl --dry-run\n"
        "  gno-tui import ob1-recall.json --format ob1\n"
        "  gno-tui import ~/gno/memory --format gno\n  gno-tui import mem0.json --scope user:alice",
    )
    importer.add_argument("path", metavar="PATH", help="a file, or a GNO fact folder")
    importer.add_argument(
        "--format",
        choices=("jsonl", "ob1", "gno", "mem0"),
        help="the input format (default: guessed from the file)",
    )
    importer.add_argument(
        "--scope",
        action="append",
        dest="scopes",
        metavar="S",
        help="scopes for items that carry none",
    )
    importer.add_argument(
        "--dry-run", action="store_true", help="say what would happen; write nothing"
    )
    _common(importer, collection=True)

    exporter = commands.add_parser(
        "export",
        formatter_class=_formatter,
        help="write every fact out as JSONL, OB1 or GNO",
        description="Export the whole store (history included). jsonl and ob1 go to stdout or "
        "--output FILE; gno writes a fact folder to --output DIR.",
        epilog="examples:\n  gno-tui export --format jsonl > facts.jsonl\n"
        "  gno-tui export --format ob1 --output ob1.json\n"
        "  gno-tui export --format gno --output ./backup",
    )
    exporter.add_argument("--format", default="jsonl", choices=("jsonl", "ob1", "gno"))
    exporter.add_argument("--output", metavar="PATH", help="file (jsonl, ob1) or folder (gno)")
    _common(exporter)

    mcp = commands.add_parser(
        "mcp",
        formatter_class=_formatter,
        help="serve the memory to agents over MCP (stdio)",
        description="An MCP server over stdio. By default it is propose-only: an agent's add or "
        "supersede waits in the review queue for a person; --enable-write lets writes through.",
        epilog="examples:\n  gno-tui --home ~/agent-memory mcp --allow-scope user:alice\n"
        "  gno-tui mcp --enable-write",
    )
    mcp.add_argument(
        "--enable-write",
        action="store_true",
        help="apply agents' add/supersede directly instead of queueing them",
    )
    mcp.add_argument(
        "--allow-scope",
        action="append",
        dest="allow_scopes",
        metavar="S",
        help="bind the server to this scope (repeat for more): calls naming another scope "
        "are refused and resources show only these scopes; without it every scope is served",
    )
    _add_memory(commands)
    return parser


def _add_memory(commands: Any) -> None:
    """`gno-tui memory ...`: the keyed API (docs/contract.md section 8, docs/keyed-api.md)."""
    memory = commands.add_parser(
        "memory",
        formatter_class=_formatter,
        help="the keyed memory API (instantKV requests)",
        description="Keyed memories with revisions, tags, topic, TTL and byte-bounded pages. "
        "remember/recall/search read one seed-003 JSON request (--request FILE, or stdin) and "
        "print the response as compact JSON on stdout; errors follow --json.",
        epilog='examples:\n  echo \'{"key": "pref/tea", "memory": {"content": "Alice '
        'prefers green tea", "tags": ["food"]}}\' | gno-tui memory remember --json\n'
        '  echo \'{"tag": "food", "limit": 5}\' | gno-tui memory recall\n'
        "  gno-tui memory search --request query.json --namespace team-a\n"
        "  gno-tui memory history pref/tea",
    )
    actions = memory.add_subparsers(dest="action", metavar="ACTION")
    examples = {
        "remember": (
            "store a memory under a key (create, retry or update by if_revision)",
            "RememberRequest",
            '{"key": "pref/tea", "if_revision": 1, "memory": {"content": "Alice '
            'prefers black tea", "topic": "drinks", "tags": ["alice"]}}',
        ),
        "recall": (
            "memories newest event first; every query term must occur",
            "MemoryQuery",
            '{"query": "tea", "tag": "alice", "since_ms": 1764460800000, "limit": 10}',
        ),
        "search": (
            "memories ranked by BM25; any term may match",
            "SearchQuery",
            '{"query": "what does alice drink", "expand": true, "max_bytes": 4096}',
        ),
    }
    for name, (summary, title, example) in examples.items():
        sub = actions.add_parser(
            name,
            formatter_class=_formatter,
            help=summary,
            description=f"{summary[0].upper()}{summary[1:]}. The request is seed 003's {title} "
            "(schemas/keyed-memory-requests.schema.json).",
            epilog=f"example:\n  echo '{example}' | gno-tui memory {name} --json",
        )
        sub.add_argument(
            "--request",
            default="-",
            metavar="FILE",
            help="the JSON request ('-', the default, reads stdin)",
        )
        sub.add_argument(
            "--namespace",
            default="default",
            metavar="NAME",
            help="keyed namespace; its facts get the scope kv:NAME (default)",
        )
        _common(sub, identity=name == "remember")
    for name, summary in (
        ("get", "the current revision of a key"),
        ("history", "every revision of a key, oldest first"),
    ):
        sub = actions.add_parser(
            name,
            formatter_class=_formatter,
            help=summary,
            description=f"Print {summary} as JSON.",
            epilog=f"example:\n  gno-tui memory {name} pref/tea --json",
        )
        sub.add_argument("key", metavar="KEY")
        sub.add_argument(
            "--namespace", default="default", metavar="NAME", help="keyed namespace (default)"
        )
        _common(sub)


def _common(
    sub: argparse.ArgumentParser, *, collection: bool = False, identity: bool = False
) -> None:
    if collection:
        sub.add_argument("--collection", metavar="NAME", help="collection (default memory)")
    if identity:
        sub.add_argument(
            "--caller", metavar="ID", help="who writes (default $GNO_TUI_CALLER or cli:<user>)"
        )
        sub.add_argument(
            "--session",
            metavar="ID",
            help="session (default $GNO_TUI_SESSION or ppid:<parent pid>)",
        )
    sub.add_argument("--json", action="store_true", help="machine-readable output")


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in args_list
    try:
        args = build_parser().parse_args(args_list)
        from gno_tui.commands import run

        return run(args)
    except UsageError as exc:
        return _fail("MEMORY_USAGE_INVALID", str(exc), 1, wants_json)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: a code, not a traceback
        from engine.facade import MemoryFailure

        if isinstance(exc, MemoryFailure):
            return _fail(exc.code, exc.message, exc.exit_code, wants_json)
        return _fail("MEMORY_INTERNAL", f"{type(exc).__name__}: {exc}", 2, wants_json)


def _fail(code: str, message: str, exit_code: int, wants_json: bool) -> int:
    # A message may quote what the user typed, bytes that are not UTF-8 included: shown
    # escaped, never a second failure while reporting the first.
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    # One line, no terminal controls: what the user typed is shown escaped.
    message = "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in message)
    if wants_json:
        emit_json({"error": {"code": code, "message": message}})
    else:
        sys.stderr.write(f"gno-tui: {code}: {message}\n")
    return exit_code


def entry_point() -> None:
    sys.exit(main())
