"""The `gno-tui` command line (docs/contract.md section 11).

Only argparse is imported up front: the engine, rich and textual load when a command needs
them, so `gno-tui --version` and `--help` answer at once."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from gno_tui import __version__
from gno_tui.cli_backup import add_backup_commands
from gno_tui.cli_io import emit_json
from gno_tui.cli_memory import add_memory
from gno_tui.cli_server import add_server_commands

POLICIES = ("local_only", "lan", "remote")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """Argument errors become MEMORY_USAGE_INVALID (exit 1, JSON with --json), not argparse's 2,
    which the contract reserves for store failures."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}. See `{self.prog} --help`.")

    def format_help(self) -> str:
        # The retrieval backends' words come from their registry (through the façade), read
        # only when help is shown: the parser is built on every call, which needs none of it.
        if self.description and RETRIEVAL_WORDS in self.description:
            from engine.facade import RETRIEVAL_BACKENDS

            described = RETRIEVAL_BACKENDS.described()
            self.description = self.description.replace(RETRIEVAL_WORDS, described)
        return super().format_help()


RETRIEVAL_WORDS = "{retrieval backends}"


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
        help="open the workbench on a store seeded with demo facts: a throwaway one (deleted "
        "on exit), or with --home a new one in that folder (empty or new; it stays)",
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
    remember.add_argument(
        "--request-id",
        metavar="ID",
        help="your id for this write: sent again, it answers the first result and writes "
        "nothing more (`gno-tui request show ID`)",
    )
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
    recall.add_argument("query", nargs="?", metavar="QUERY", help="what to look for, in words")
    recall.add_argument(
        "--scope",
        action="append",
        dest="scopes",
        metavar="S",
        help="a scope to recall from (repeat for more): a fact is returned when it shares one",
    )
    recall.add_argument("--max-facts", default="8", metavar="N", help="at most N facts (8)")
    recall.add_argument("--max-tokens", default="512", metavar="N", help="token budget (512)")
    recall.add_argument(
        "--egress",
        metavar="P",
        help="where the answer goes: local_only (this machine, the default) | lan | remote; "
        "only facts whose collection's policy allows it are returned",
    )
    recall.add_argument(
        "--format",
        default="gno",
        choices=("gno", "ob1"),
        help="result shape: gno (GNO's memory-recall@1.0 result, the default) or ob1 (an "
        "OB1 recall response)",
    )
    recall.add_argument(
        "--collection", metavar="NAME", help="only facts of this collection (default: all)"
    )
    _common(recall, identity=True, reads=True)

    collection = commands.add_parser(
        "collection",
        formatter_class=_formatter,
        help="list or add collections, or change their egress policy",
        description="Collections group facts under a root folder and an egress policy: where "
        "their facts may be sent (local_only: this machine, lan, remote).",
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
    add.add_argument("name", metavar="NAME", help="the new collection's name")
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
    policy.add_argument("name", metavar="NAME", help="the collection")
    policy.add_argument("policy", metavar="P", help="local_only | lan | remote")
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

    status = commands.add_parser(
        "status",
        formatter_class=_formatter,
        help="where the store lives and which retrieval backend ranks",
        description="The home, the database (sqlite or postgresql), the retrieval backend and "
        "the matching mode. $GNO_TUI_RETRIEVAL chooses the backend: " + RETRIEVAL_WORDS + ".",
        epilog="example:\n  gno-tui --db postgresql://me@server/gno status --json",
    )
    _common(status)

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
    exporter.add_argument(
        "--format",
        default="jsonl",
        choices=("jsonl", "ob1", "gno"),
        help="jsonl (one fact a line, the default), ob1 (an OB1 recall response) or gno (a "
        "folder of GNO fact files)",
    )
    exporter.add_argument("--output", metavar="PATH", help="file (jsonl, ob1) or folder (gno)")
    _common(exporter)

    mcp = commands.add_parser(
        "mcp",
        formatter_class=_formatter,
        help="serve the memory to agents over MCP (stdio)",
        description="An MCP server over stdio. By default it is propose-only: an agent's add or "
        "supersede waits in the review queue for a person; --enable-write lets writes through. "
        "Global options (--home, --db, --model) go before `mcp`. To connect an agent, "
        "--print-config CLIENT prints the configuration for Claude Code, Claude Desktop, "
        "Codex, Cursor or any client taking the standard mcpServers JSON.",
        epilog="examples:\n  gno-tui --home ~/agent-memory mcp --allow-scope user:alice\n"
        "  gno-tui mcp --enable-write\n"
        "  gno-tui --home ~/agent-memory mcp --print-config claude-code --allow-scope user:alice",
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
    mcp.add_argument(
        "--print-config",
        metavar="CLIENT",
        help="print the configuration that starts this server in CLIENT (claude-code, "
        "claude-desktop, codex, cursor, or json: any client taking the standard mcpServers "
        "JSON), with this machine's paths and the flags given here; starts nothing",
    )
    mcp.add_argument(
        "--http",
        action="store_true",
        help="with --print-config: the form that connects CLIENT to `gno-tui serve` over HTTP "
        "(URL + Authorization header from $GNO_TUI_TOKEN) instead of starting a local server",
    )
    mcp.add_argument(
        "--url",
        metavar="URL",
        help="with --print-config: the server's MCP address (default http://127.0.0.1:8765/mcp)",
    )
    add_memory(commands, formatter=_formatter, common=_common)
    add_server_commands(commands, formatter=_formatter, common=_common)
    add_backup_commands(commands, formatter=_formatter, common=_common)
    return parser


def _common(
    sub: argparse.ArgumentParser,
    *,
    collection: bool = False,
    identity: bool = False,
    reads: bool = False,
) -> None:
    """--collection (where a fact is written), --caller and --session (who writes, or with
    `reads` who asks: recorded in the receipt), and --json."""
    if collection:
        sub.add_argument("--collection", metavar="NAME", help="collection (default memory)")
    if identity:
        who = "who asks, recorded in the receipt" if reads else "who writes"
        sub.add_argument(
            "--caller", metavar="ID", help=f"{who} (default $GNO_TUI_CALLER or cli:<user>)"
        )
        sub.add_argument(
            "--session",
            metavar="ID",
            help="the agent's run or conversation, recorded with the "
            + ("receipt" if reads else "fact")
            + " (default $GNO_TUI_SESSION or ppid:<parent pid>)",
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
