"""`gno-tui serve`, `gno-tui token ...` and `gno-tui request show`: the network server, the
tokens that let agents on other machines in, and what became of a write sent with a
requestId (docs/server.md). The parsers are built with every start (argparse only); the
handlers import the engine and the server when they run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from gno_tui.cli_io import default_caller, emit_json

# The engine loads when a command runs, never while the parsers are built (`--help` and
# `--version` load no engine).


def add_server_commands(
    commands: Any,
    *,
    formatter: Callable[[str], argparse.HelpFormatter],
    common: Callable[..., None],
) -> None:
    serve = commands.add_parser(
        "serve",
        formatter_class=formatter,
        help="serve the memory over HTTP: REST and MCP, with per-agent tokens",
        description="One HTTP server over this store: GNO's memory routes "
        "(/api/memory/remember, /api/memory/recall), OB1's agent-memory routes, the keyed API "
        "(/v1/namespaces/...), and MCP over Streamable HTTP at /mcp. Every request needs a "
        "token (`gno-tui token create`), which decides the caller, its scopes and whether its "
        "writes apply or wait for review. It listens on 127.0.0.1 unless --host says "
        "otherwise; /openapi.json describes the routes.",
        epilog="examples:\n  gno-tui token create ci-bot --scope project:gno\n"
        "  gno-tui serve --port 8765\n"
        "  gno-tui --db postgresql://me@db/gno serve --host 0.0.0.0 --workers 4",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    serve.add_argument("--port", type=int, default=8765, help="port (8765; 0 picks a free one)")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes (1); each opens the store and keeps its own index in memory",
    )
    serve.add_argument(
        "--no-auth",
        action="store_true",
        help="loopback only: answer requests without a token as http:local (every scope, "
        "writes held for review unless --enable-write); refused on any other address",
    )
    serve.add_argument(
        "--enable-write",
        action="store_true",
        help="with --no-auth: apply tokenless writes at once",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name to serve besides loopback (a proxy's name; repeat for more)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web origin whose requests are not refused (e.g. https://app.example; repeat "
        "for more); no CORS headers are sent",
    )
    serve.add_argument("--max-body", type=int, default=256 * 1024, help="body limit in bytes")
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=10.0,
        help="seconds a request's headers, and then its body, may take to arrive (10)",
    )

    token = commands.add_parser(
        "token",
        formatter_class=formatter,
        help="make, list and revoke the tokens agents use with `gno-tui serve`",
        description="A token is a principal (http:NAME) with grants: the scopes it may read "
        "and write, the keyed namespaces, whether its writes apply at once (--write; else "
        "they wait for review) and whether it may decide reviews (--curate). The token is "
        "printed once; the store keeps only its SHA-256 digest, shared by every server "
        "process on the store. A revoked token is refused at once.",
        epilog="examples:\n  gno-tui token create ci-bot --scope project:gno\n"
        "  gno-tui token create alice-laptop --scope user:alice --write --namespace notes\n"
        "  gno-tui token list --json\n  gno-tui token revoke ci-bot",
    )
    actions = token.add_subparsers(dest="action", metavar="ACTION")
    create = actions.add_parser(
        "create",
        formatter_class=formatter,
        help="make a token (printed once)",
        epilog="examples:\n  gno-tui token create ci-bot --scope project:gno\n"
        "  gno-tui token create alice --scope user:alice --write --namespace notes --json",
    )
    create.add_argument("name", metavar="NAME", help="who it is for: the caller is http:NAME")
    create.add_argument(
        "--scope", action="append", dest="scopes", default=[], metavar="S", help="a scope"
    )
    create.add_argument(
        "--namespace",
        action="append",
        dest="namespaces",
        default=[],
        metavar="NS",
        help="a keyed-API namespace (repeat for more)",
    )
    create.add_argument("--write", action="store_true", help="writes apply (else held)")
    create.add_argument("--curate", action="store_true", help="may decide reviews")
    create.add_argument(
        "--egress",
        default="local_only",
        metavar="P",
        help="the ceiling of its recalls: local_only (none, the default), lan or remote (only "
        "facts whose collection may leave for there); give lan or remote to an agent on "
        "another machine",
    )
    common(create)
    listing = actions.add_parser(
        "list",
        formatter_class=formatter,
        help="the live tokens (never the tokens themselves)",
        epilog="example:\n  gno-tui token list --all --json",
    )
    listing.add_argument("--all", action="store_true", help="revoked ones too")
    common(listing)
    revoke = actions.add_parser(
        "revoke",
        formatter_class=formatter,
        help="revoke a token, at once for every server",
        epilog="example:\n  gno-tui token revoke ci-bot",
    )
    revoke.add_argument("name", metavar="NAME", help="the token's name or id")
    common(revoke)

    request = commands.add_parser(
        "request",
        formatter_class=formatter,
        help="what became of a write sent with a requestId",
        description="A write sent with a requestId (remember --request-id, the REST body's "
        "requestId, gno_remember's) is applied at most once per caller; this prints its "
        "first answer, or MEMORY_REQUEST_NOT_FOUND when none was applied.",
        epilog="examples:\n  gno-tui request show 5f0c... --json\n"
        "  gno-tui request show 5f0c... --caller http:ci-bot",
    )
    request_actions = request.add_subparsers(dest="action", metavar="ACTION")
    show = request_actions.add_parser(
        "show",
        formatter_class=formatter,
        help="the first answer to a requestId",
        epilog="example:\n  gno-tui request show 5f0c2b9e --caller http:ci-bot --json",
    )
    show.add_argument("request_id", metavar="ID", help="the requestId the write was sent with")
    show.add_argument("--caller", metavar="ID", help="whose request (default: as remember's)")
    common(show)


def cmd_serve(args: argparse.Namespace) -> int:
    from gno_tui.http.serve import run_server
    from gno_tui.http.settings import ServeSettings

    settings = ServeSettings(
        host=args.host,
        port=args.port,
        workers=args.workers,
        open_loopback=args.no_auth,
        open_write=args.enable_write,
        allow_hosts=tuple(name.lower() for name in args.allow_host),
        allow_origins=tuple(origin.rstrip("/") for origin in args.allow_origin),
        max_body=args.max_body,
        body_timeout=args.body_timeout,
        home=args.home,
        db=args.db,
        model=args.model,
    )
    return run_server(settings)


def cmd_token(args: argparse.Namespace) -> int:
    from engine.facade import MemoryFailure
    from gno_tui.cli_store import open_store

    if args.action is None:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID", "Name an action: gno-tui token create|list|revoke."
        )
    access = open_store(args).access
    actor = default_caller(None)
    if args.action == "create":
        token, info = access.create_token(
            args.name,
            scopes=args.scopes,
            namespaces=args.namespaces,
            can_write=args.write,
            can_curate=args.curate,
            egress=args.egress,
            actor=actor,
        )
        if args.json:
            emit_json({"token": token, **_token_json(info)})
        else:
            sys.stdout.write(
                f"{token}\n\nThe token of http:{info.name} (id {info.id}); it is shown this "
                "once and stored only as a digest. Give it to the agent as\n"
                f"  Authorization: Bearer {token}\n"
            )
        return 0
    if args.action == "revoke":
        info = access.revoke_token(args.name, actor=actor)
        if args.json:
            emit_json(_token_json(info))
        else:
            sys.stdout.write(f"revoked http:{info.name} (id {info.id})\n")
        return 0
    rows = access.tokens(include_revoked=args.all)
    if args.json:
        emit_json({"tokens": [_token_json(info) for info in rows]})
        return 0
    for info in rows:
        grants = ["write" if info.can_write else "propose-only"]
        if info.can_curate:
            grants.append("curate")
        if info.egress != "local_only":
            grants.append(f"egress {info.egress}")
        revoked = f"  revoked {info.revoked_at}" if info.revoked_at else ""
        sys.stdout.write(
            f"{info.name}  id {info.id}  scopes {','.join(info.scopes) or '-'}  namespaces "
            f"{','.join(info.namespaces) or '-'}  {' '.join(grants)}  made {info.created_at}"
            f"{revoked}\n"
        )
    if not rows:
        sys.stdout.write("no tokens: make one with `gno-tui token create NAME --scope S`\n")
    return 0


def cmd_request(args: argparse.Namespace) -> int:
    from engine.facade import MemoryFailure
    from gno_tui.cli_store import open_store

    if args.action is None:
        raise MemoryFailure("MEMORY_USAGE_INVALID", "Name an action: gno-tui request show ID.")
    from gno_tui.http.gno_routes import request_document

    record = open_store(args).access.request(
        caller=default_caller(args.caller), request_id=args.request_id
    )
    document = request_document(record)
    if args.json:
        emit_json(document)
    else:
        outcome = record.result.get("outcome", "done")
        sys.stdout.write(f"{record.request_id}: {record.verb} {outcome} at {record.created_at}\n")
    return 0


def _token_json(info: Any) -> dict[str, Any]:
    return {
        "id": info.id,
        "name": info.name,
        "principal": f"http:{info.name}",
        "scopes": info.scopes,
        "namespaces": info.namespaces,
        "write": info.can_write,
        "curate": info.can_curate,
        "egress": info.egress,
        "createdAt": info.created_at,
        "createdBy": info.created_by,
        "revokedAt": info.revoked_at,
    }
