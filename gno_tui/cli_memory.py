"""The parser of `gno-tui memory ...`, the keyed API (docs/contract.md section 8,
docs/keyed-api.md): memories under stable keys with revisions, one JSON request each.

Only argparse is needed here (gno_tui.cli builds every parser on each start)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

# What `gno-tui memory remember|recall|search` read, described for --help (the JSON Schema is
# engine/contract/schemas/keyed-memory-requests.schema.json in the installed package).
REMEMBER_REQUEST = """\
The request (JSON): {"memory": {"content": TEXT, "tags": [...], "topic": T,
"metadata": {...}, "occurred_at_ms": N}, "key": K, "if_revision": N, "ttl_seconds": N}.
Only memory.content is required (at most 16 KiB; up to 8 tags; a topic of at most 64
bytes). Without "key" a new UUID key is made. Without "if_revision" the save is
create-only: the same save again answers the stored revision, other content under an
existing key is MEMORY_KEY_EXISTS. With "if_revision" it updates the key if that is still
its current revision (else MEMORY_REVISION_CONFLICT); every revision stays readable."""
RECALL_REQUEST = """\
The request (JSON, every field optional): {"query": words that must all occur,
"tag": T, "topic": T, "since_ms": N, "until_ms": N (event time, Unix milliseconds),
"limit": N, "max_bytes": N (the whole response), "cursor": the last page's next_cursor}."""
SEARCH_REQUEST = """\
The request (JSON): {"query": TEXT, "expand": true (adds English synonyms),
"expansion_terms": [up to 8 related words], "tag": T, "topic": T, "since_ms": N,
"until_ms": N, "limit": N, "max_bytes": N, "cursor": the last page's next_cursor}.
A cursor is stale after any write: search again."""


def add_memory(
    commands: Any,
    *,
    formatter: Callable[[str], argparse.HelpFormatter],
    common: Callable[..., None],
) -> None:
    """`gno-tui memory ...`: the keyed API (docs/contract.md section 8, docs/keyed-api.md)."""
    memory = commands.add_parser(
        "memory",
        formatter_class=formatter,
        help="memories under stable keys, with revisions (JSON requests)",
        description="Keyed memories: each is stored under a key you choose (or a new UUID), "
        "keeps every revision, and may carry tags, a topic, metadata and a time to live. "
        "remember/recall/search read one JSON request (--request FILE, or stdin) and print "
        "the response as compact JSON on stdout; errors follow --json. Each action's --help "
        "describes its request.",
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
            REMEMBER_REQUEST,
            '{"key": "pref/tea", "if_revision": 1, "memory": {"content": "Alice '
            'prefers black tea", "topic": "drinks", "tags": ["alice"]}}',
        ),
        "recall": (
            "memories newest event first; every query term must occur",
            RECALL_REQUEST,
            '{"query": "tea", "tag": "alice", "since_ms": 1764460800000, "limit": 10}',
        ),
        "search": (
            "memories ranked by BM25; any term may match",
            SEARCH_REQUEST,
            '{"query": "what does alice drink", "expand": true, "max_bytes": 4096}',
        ),
    }
    for name, (summary, request, example) in examples.items():
        sub = actions.add_parser(
            name,
            formatter_class=formatter,
            help=summary,
            description=f"{summary[0].upper()}{summary[1:]}.\n\n{request}",
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
            help="keyed namespace; its facts get the scope kv:NAME (default: default)",
        )
        common(sub, identity=name == "remember")
    for name, summary in (
        ("get", "the current revision of a key"),
        ("history", "every revision of a key, oldest first"),
    ):
        sub = actions.add_parser(
            name,
            formatter_class=formatter,
            help=summary,
            description=f"Print {summary} as JSON.",
            epilog=f"example:\n  gno-tui memory {name} pref/tea --json",
        )
        sub.add_argument("key", metavar="KEY", help="the memory's key")
        sub.add_argument(
            "--namespace",
            default="default",
            metavar="NAME",
            help="keyed namespace (default: default)",
        )
        common(sub)
