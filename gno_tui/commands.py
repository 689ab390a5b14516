"""What each CLI command does, once its arguments are parsed.

gno_tui.cli imports this module only when a command runs, and each command imports what its
verb needs (`gno-tui --help` and `--version` load no engine; a `recall --json` loads the recall
path and no rich, textual or mcp). Opening the store and reading arguments is
gno_tui/cli_store.py; import and export are gno_tui/cli_transfer.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.facade import MemoryFailure
from gno_tui.cli_io import default_caller, default_session, emit_json
from gno_tui.cli_store import (
    check_text_arguments,
    open_recall,
    open_store,
    open_store_patiently,
    read_receipt,
    stdin_text,
)

if TYPE_CHECKING:
    from engine.facade import (
        KeyedHistoryResponse,
        KeyedHit,
        KeyedRecallResponse,
        KeyedSearchResponse,
        MemoryService,
    )

# The engine's request types and verbs are imported in each command: a cold call loads the
# path of its one verb (a recall never loads curation, the keyed API or import/export).


def cmd_import(args: argparse.Namespace) -> int:
    from gno_tui.cli_transfer import cmd_import as run_import

    return run_import(args)


def cmd_export(args: argparse.Namespace) -> int:
    from gno_tui.cli_transfer import cmd_export as run_export

    return run_export(args)


def cmd_serve(args: argparse.Namespace) -> int:
    from gno_tui.cli_server import cmd_serve as serve

    return serve(args)


def cmd_token(args: argparse.Namespace) -> int:
    from gno_tui.cli_server import cmd_token as token

    return token(args)


def cmd_request(args: argparse.Namespace) -> int:
    from gno_tui.cli_server import cmd_request as request

    return request(args)


def cmd_backup(args: argparse.Namespace) -> int:
    from gno_tui.cli_backup import cmd_backup as backup

    return backup(args)


def cmd_restore(args: argparse.Namespace) -> int:
    from gno_tui.cli_backup import cmd_restore as restore

    return restore(args)


def run(args: argparse.Namespace) -> int:
    check_text_arguments(args)
    if args.command is None:
        from gno_tui.launch import open_workbench

        return open_workbench(args)
    handler = {
        "remember": cmd_remember,
        "recall": cmd_recall,
        "collection": cmd_collection,
        "review": cmd_review,
        "reindex": cmd_reindex,
        "status": cmd_status,
        "mcp": cmd_mcp,
        "import": cmd_import,
        "export": cmd_export,
        "memory": cmd_memory,
        "serve": cmd_serve,
        "token": cmd_token,
        "request": cmd_request,
        "backup": cmd_backup,
        "restore": cmd_restore,
    }[args.command]
    return handler(args)


def _decision(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """Merge --add / --supersede URI with --decision / --predecessor; contradictions are errors."""
    implied = "add" if args.add else "supersede" if args.supersede else None
    if args.add and args.supersede:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            "--add and --supersede contradict each other; pass one of them.",
        )
    if implied and args.decision and args.decision != implied:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            f"--{'add' if args.add else 'supersede'} contradicts --decision {args.decision}; "
            "pass one of them.",
        )
    if args.supersede and args.predecessor and args.predecessor != args.supersede:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            "--supersede and --predecessor name different facts; pass one.",
        )
    return implied or args.decision, args.supersede or args.predecessor


# Arguments that do not make a remember a different write (a retry may change them).
_NOT_THE_WRITE = frozenset(
    {"json", "request_id", "home", "db", "model", "demo", "command", "session", "caller"}
)


def cmd_remember(args: argparse.Namespace) -> int:
    from engine.facade import RememberRequest

    decision, predecessor = _decision(args)
    text = (
        stdin_text(
            "The fact text on stdin",
            "MEMORY_TEXT_INVALID",
            "Pass UTF-8 text (re-encode it, e.g. `iconv -f latin1 -t utf-8 | gno-tui remember -`).",
        )
        if args.text == "-"
        else args.text
    )
    request = RememberRequest(
        text=text,
        scopes=args.scopes,
        caller=default_caller(args.caller),
        session=default_session(args.session),
        decision=decision,
        predecessor=predecessor,
        predecessor_hash=args.predecessor_hash,
        collection=args.collection,
        source=args.source,
        receipt=read_receipt(args.receipt),
        derived_from=args.derived_from,
    )
    # A propose writes nothing: the read path (no ORM on a sound SQLite home) serves it.
    if args.request_id is not None and decision not in (None, "propose"):
        store = open_store(args)
        body = {key: value for key, value in vars(args).items() if key not in _NOT_THE_WRITE}
        body["text"], body["receipt"] = text, request.receipt
        result, _ = store.access.once(
            caller=default_caller(args.caller),
            request_id=args.request_id,
            verb="remember",
            body=body,
            run=lambda: store.remember(request),
        )
    elif decision in (None, "propose"):
        result = open_recall(args).propose(request)
    else:
        result = open_store(args).remember(request)
    if args.json:
        emit_json(result)
    else:
        from gno_tui.cli_render import render_remember

        render_remember(result)
    failed = result.get("sync", {}).get("status") == "failed"
    return 2 if failed else 0


def cmd_recall(args: argparse.Namespace) -> int:
    from engine.facade import RecallRequest

    request = RecallRequest(
        query=args.query,
        scopes=args.scopes,
        caller=default_caller(args.caller),
        session=default_session(args.session),
        max_facts=args.max_facts,
        max_tokens=args.max_tokens,
        collection=args.collection,
        egress=args.egress,
    )
    if args.json and args.format == "gno":  # the read path: no ORM on a sound SQLite home
        emit_json(open_recall(args).recall(request))
        return 0
    store = open_store(args)
    if args.json:
        emit_json(store.recall_ob1(request))
        return 0
    from gno_tui.cli_render import render_recall

    result = store.recall(request)
    empty = store.facts.no_match(request, result)  # why nothing came back, for a person
    shown = store.recall_as_ob1(result) if args.format == "ob1" else result
    render_recall(shown, args.format, no_match=empty)
    return 0


def cmd_collection(args: argparse.Namespace) -> int:
    from gno_tui.cli_render import collection_json, render_collections

    if args.action is None:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            "Name an action: gno-tui collection add|list|set-policy (see --help).",
        )
    store = open_store(args)
    if args.action == "add":
        rows = [_add_collection(store, args)]
    elif args.action == "set-policy":
        store.collection(args.name)  # an unknown name first, before the policy is checked
        rows = [store.set_policy(args.name, args.policy, actor=default_caller(None))]
    else:
        rows = store.collections()
    if args.json:
        listing = [collection_json(row) for row in rows]
        emit_json({"collections": listing} if args.action == "list" else listing[0])
    else:
        render_collections(rows)
    return 0


def _add_collection(store: MemoryService, args: argparse.Namespace) -> Any:
    """Add a collection, its root checked first: the engine records the collection before it
    creates the folder, so an unusable root would leave a collection whose facts cannot be
    written. Folders made for the check are removed again if the add is refused."""
    import tempfile  # here: only adding a collection needs it

    store.check_writable()  # a read-only home: its own code, before any folder is tried
    if args.name in {row.name for row in store.collections()} or not store.keeps_fact_files:
        # An existing name is refused by the engine; in the server mode a collection has no
        # folder (the engine refuses --path there).
        return store.add_collection(args.name, path=args.path, policy=args.policy)
    root = (
        Path(args.path).expanduser().resolve()
        if args.path
        else store.home / "collections" / args.name
    )
    created: list[Path] = []
    try:
        for folder in reversed([root / "facts", *(root / "facts").parents]):
            if not folder.exists():
                folder.mkdir()
                created.append(folder)
        with tempfile.TemporaryFile(dir=root / "facts"):
            pass
    except OSError as exc:
        _remove_empty(created)
        raise MemoryFailure(
            "MEMORY_COLLECTION_INVALID",
            f"Cannot use {root} as the root of collection {args.name!r}: "
            f"{exc.strerror or exc}. Pass --path DIR with a folder you can write to; no "
            "collection was added.",
        ) from None
    try:
        return store.add_collection(args.name, path=args.path, policy=args.policy)
    except BaseException:
        _remove_empty(created)
        raise


def _remove_empty(folders: list[Path]) -> None:
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:
            return


def cmd_review(args: argparse.Namespace) -> int:
    if not args.list:
        from gno_tui.launch import open_workbench

        return open_workbench(args, screen="review")
    proposals = open_store(args).curation.proposals(state=None if args.all else "pending")
    if args.json:
        emit_json({"proposals": proposals})
    else:
        from gno_tui.cli_render import render_proposals

        render_proposals(proposals)
    return 0


def cmd_reindex(args: argparse.Namespace) -> int:
    from gno_tui.cli_render import progress_reporter

    store = open_store(args)
    with progress_reporter(enabled=not args.json, label="Reindexing fact files") as progress:
        report = store.reindex(progress)
    if args.json:
        emit_json(report)
    else:
        from gno_tui.cli_render import render_reindex

        render_reindex(report)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    report = open_store(args, reading=True).status()
    if args.json:
        emit_json(report)
    else:
        retrieval = report["retrieval"]
        print(f"home       {report['home']}")
        print(f"database   {report['database']}")
        print(f"mode       {report['mode']}")
        print(f"retrieval  {retrieval['backend']} ({', '.join(retrieval['capabilities'])})")
        print(f"matching   {report['matching']['mode']}")
        if report["readOnly"]:
            print(f"read-only  {report['readOnlyReason']}: reads work, writes are refused")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    if args.print_config is not None:  # a snippet for an MCP client: nothing is opened
        from gno_tui.mcp_config import print_config

        return print_config(args)
    from gno_tui.mcp_server import serve

    service = open_store_patiently(args, "mcp")
    serve(service, enable_write=args.enable_write, allowed_scopes=args.allow_scopes)
    return 0


def cmd_memory(args: argparse.Namespace) -> int:
    """The keyed API: one seed-003 request in, the response as compact JSON out."""
    from engine.facade import keyed_json, parse_keyed_request

    if args.action is None:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            "Name an action: gno-tui memory remember|recall|search|get|history (see --help).",
        )
    result: KeyedHit | KeyedHistoryResponse | KeyedRecallResponse | KeyedSearchResponse
    if args.action in ("get", "history"):
        keyed = open_store(args).keyed
        lookup = keyed.get if args.action == "get" else keyed.history
        result = lookup(args.key, namespace=args.namespace)
    else:
        where = "stdin" if args.request == "-" else args.request
        try:
            raw = (
                stdin_text(
                    "The request on stdin",
                    "MEMORY_REQUEST_INVALID",
                    "Pass the JSON request as UTF-8.",
                )
                if args.request == "-"
                else Path(args.request).read_text(encoding="utf-8")
            )
        except (OSError, UnicodeDecodeError) as exc:
            raise MemoryFailure(
                "MEMORY_REQUEST_INVALID",
                f"Cannot read the request from {where}: {exc}. Pass a JSON "
                "file with --request FILE, or the JSON on stdin.",
            ) from exc
        request = parse_keyed_request(raw, where=f"The request ({where})")
        keyed = open_store(args).keyed
        if args.action == "remember":
            result = keyed.remember(
                request,
                namespace=args.namespace,
                caller=default_caller(args.caller),
                session=default_session(args.session),
            )
        else:
            run_query = keyed.recall if args.action == "recall" else keyed.search
            result = run_query(request, namespace=args.namespace)
    sys.stdout.write(keyed_json(result) + "\n")
    return 0
