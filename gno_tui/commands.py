"""What each CLI command does, once its arguments are parsed.

gno_tui.cli imports this module only when a command runs (every command opens the store), so
the engine façade loads here, at the top, and `gno-tui --help` and `--version` never load it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from engine.facade import (
    ImportRequest,
    MemoryFailure,
    MemoryService,
    RecallRequest,
    RememberRequest,
    keyed_json,
    open_service,
    parse_keyed_request,
)
from gno_tui.cli_io import default_caller, default_session, emit_json


def open_store(args: argparse.Namespace) -> MemoryService:
    return open_service(home=args.home, db_url=args.db, model=args.model)


def run(args: argparse.Namespace) -> int:
    if args.command is None:
        from gno_tui.launch import open_workbench

        return open_workbench(args)
    handler = {
        "remember": cmd_remember,
        "recall": cmd_recall,
        "collection": cmd_collection,
        "review": cmd_review,
        "reindex": cmd_reindex,
        "mcp": cmd_mcp,
        "import": cmd_import,
        "export": cmd_export,
        "memory": cmd_memory,
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


def _read_receipt(path: str | None) -> Any:
    if path is None:
        return None
    try:
        raw = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"Cannot read the receipt file {path}: {exc.strerror}. Save a recall "
            "with `gno-tui recall ... --json > receipt.json` and pass that file.",
        ) from exc
    try:
        receipt = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} is not JSON ({exc.msg} at line {exc.lineno}). Pass the "
            "saved output of `gno-tui recall ... --json` or its receipt object.",
        ) from exc
    if not isinstance(receipt, dict):
        # A `null` would otherwise read as "no receipt" and silently skip the fence.
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} holds JSON {type(receipt).__name__}, not an object. Pass "
            "the saved output of `gno-tui recall ... --json` or its receipt object.",
        )
    return receipt


def cmd_remember(args: argparse.Namespace) -> int:
    decision, predecessor = _decision(args)
    text = sys.stdin.read() if args.text == "-" else args.text
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
        receipt=_read_receipt(args.receipt),
        derived_from=args.derived_from,
    )
    result = open_store(args).remember(request)
    if args.json:
        emit_json(result)
    else:
        from gno_tui.cli_render import render_remember

        render_remember(result)
    failed = result.get("sync", {}).get("status") == "failed"
    return 2 if failed else 0


def cmd_recall(args: argparse.Namespace) -> int:
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
    store = open_store(args)
    result = store.recall_ob1(request) if args.format == "ob1" else store.recall(request)
    if args.json:
        emit_json(result)
    else:
        from gno_tui.cli_render import render_recall

        render_recall(result, args.format)
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
        rows = [store.add_collection(args.name, path=args.path, policy=args.policy)]
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
        print(
            f"{report['indexed']} facts indexed from {report['files']} files: "
            f"{report['added']} added, {report['changed']} changed, "
            f"{report['removed']} removed."
        )
        for problem in report["problems"]:
            print(f"  skipped: {problem}")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from gno_tui.mcp_server import serve

    serve(open_store(args), enable_write=args.enable_write)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from gno_tui.cli_render import progress_reporter

    store = open_store(args)
    with progress_reporter(enabled=not args.json, label="Importing") as progress:
        request = ImportRequest(
            Path(args.path),
            fmt=args.format,
            scopes=args.scopes,
            collection=args.collection,
            dry_run=args.dry_run,
            caller=f"import:{default_caller(None)}",
        )
        report = store.interop.import_file(request, progress=progress)
    if args.json:
        emit_json(report.to_json())
    else:
        verb = "would be" if args.dry_run else "were"
        print(
            f"{len(report.actions)} items: {report.count('add')} {verb} added, "
            f"{report.count('skip')} skipped, {report.count('propose')} {verb} queued for "
            "review."
        )
        for action in report.actions:
            if action["action"] != "add":
                print(f"  {action['action']}: {action['where']}: {action['reason']}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    interop = open_store(args).interop
    if args.format == "gno":
        if not args.output:
            raise MemoryFailure(
                "MEMORY_USAGE_INVALID", "--format gno writes a folder: pass --output DIR."
            )
        count = interop.export_gno(Path(args.output))
        summary = {"format": "gno", "output": str(Path(args.output).resolve()), "facts": count}
        if args.json:
            emit_json(summary)
        else:
            print(f"{count} fact files written to {summary['output']}")
        return 0
    if args.format == "ob1":
        text = json.dumps(interop.export_ob1(), ensure_ascii=False) + "\n"
    else:
        text = "".join(
            json.dumps(item, ensure_ascii=False) + "\n" for item in interop.export_jsonl()
        )
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        if args.json:
            emit_json({"format": args.format, "output": str(Path(args.output).resolve())})
    else:
        sys.stdout.write(text)
    return 0


def cmd_memory(args: argparse.Namespace) -> int:
    """The keyed API: one seed-003 request in, the response as compact JSON out."""
    if args.action is None:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            "Name an action: gno-tui memory remember|recall|search|get|history (see --help).",
        )
    result: dict[str, Any]
    if args.action in ("get", "history"):
        keyed = open_store(args).keyed
        lookup = keyed.get if args.action == "get" else keyed.history
        result = lookup(args.key, namespace=args.namespace)
    else:
        where = "stdin" if args.request == "-" else args.request
        try:
            raw = (
                sys.stdin.read()
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
